-- Browser history import: one cursor per source profile.
-- `last_visit_id` is the highest visit id (in the browser's own table) that a committed import batch
-- has read, imported or skipped; it moves only in the transaction that commits the batch's visits.

CREATE TABLE import_cursor (
    source        TEXT    NOT NULL PRIMARY KEY,
    browser       TEXT    NOT NULL CHECK (browser IN ('chrome', 'firefox', 'safari')),
    path          TEXT    NOT NULL,
    last_visit_id INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
) WITHOUT ROWID;
