-- Browser history import: one cursor per source profile.
-- `last_visit_id` is the highest visit id (in the browser's own table) that a committed import batch
-- has read, imported or skipped; it moves only in the transaction that commits the batch's visits.
-- `last_visit_time` is that visit's time as the browser stores it (NULL if it was not a number): if
-- the browser's row with that id is gone or has another time, its history was cleared or replaced
-- (ids can then be reused) and the next import reads the whole file again.

CREATE TABLE import_cursor (
    source        TEXT    NOT NULL PRIMARY KEY,
    browser       TEXT    NOT NULL CHECK (browser IN ('chrome', 'firefox', 'safari')),
    path          TEXT    NOT NULL,
    last_visit_id INTEGER NOT NULL,
    last_visit_time INTEGER NULL,
    updated_at    INTEGER NOT NULL
) WITHOUT ROWID;
