-- The hosts never sent to a remote provider, as the user keeps them on all of their devices
-- (`sitetrail exclusions`, the app's Settings), synced like the never-record list (issue 15).
-- `pattern` is normalised: `bank.example` or `*.corp.example`. The settings file's exclusions add
-- to these on their machine only.
CREATE TABLE excluded_host (
    pattern     TEXT    NOT NULL PRIMARY KEY,
    excluded_at INTEGER NOT NULL
) WITHOUT ROWID;
