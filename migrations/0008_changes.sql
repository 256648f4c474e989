-- Change counters for notifications across processes (src/changes.rs): every write transaction
-- adds 1 to the counter of each kind of data it touched ('visits', 'websites', 'outbox',
-- 'worker', ...), in the same transaction. Another process that sees PRAGMA data_version move
-- reads this small table to learn which kinds changed. A handful of rows in one page.
CREATE TABLE store_changes (
    kind TEXT    NOT NULL PRIMARY KEY,
    n    INTEGER NOT NULL
) WITHOUT ROWID;
