-- Other devices' records this device could not read (issue 27, docs/SYNC.md "A record that
-- cannot be read"): a record that does not open with the account's key (changed, moved, of
-- another account, garbage), whose contents do not inflate or parse, or that would inflate past
-- its cap, is skipped (never applied) and noted here, so that `sync status` says which. A record
-- the hub served at the wrong place ('misplaced') stops its series for that sync only; the row
-- goes once the record at that place is applied.
CREATE TABLE sync_unreadable (
    device_id BLOB NOT NULL,
    series TEXT NOT NULL,
    idx INTEGER NOT NULL,
    reason TEXT NOT NULL CHECK (reason IN ('does_not_open', 'damaged', 'too_large', 'misplaced')),
    seen_at INTEGER NOT NULL,
    PRIMARY KEY (device_id, series, idx)
) STRICT, WITHOUT ROWID;
