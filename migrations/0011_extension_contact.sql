-- Which browsers' extensions have talked to this database, and when (the native host writes a row
-- when the extension says hello, and again at most once a minute while it sends pages). A browser
-- counts as linked once its extension has connected, whatever profile directory it runs in: the
-- host manifest alone only says that the browser could start the host.
CREATE TABLE extension_contact (
    browser           TEXT    NOT NULL PRIMARY KEY,
    first_seen_at     INTEGER NOT NULL,
    last_seen_at      INTEGER NOT NULL,
    extension_version TEXT    NULL
) WITHOUT ROWID;
