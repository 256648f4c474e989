-- Focus sessions (issue 30): for a while, pages of the categories and websites in `blocks` are
-- held back in the browser with no "Continue". One session at a time (the row with id 1), synced
-- to the user's other devices as one register (the last start or stop wins): see
-- `sitetrail::focus`. Times are microseconds since the epoch; `blocks` is a JSON array of targets
-- ("category:social", "domain:youtube.com"); `stopped_at` is set when it was stopped early.
CREATE TABLE focus_session (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    started_at  INTEGER NOT NULL,
    ends_at     INTEGER NOT NULL CHECK (ends_at > started_at),
    blocks      TEXT    NOT NULL,
    stopped_at  INTEGER,
    updated_at  INTEGER NOT NULL
);
