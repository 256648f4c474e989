-- A device whose series no longer matches the hub heals itself (docs/SYNC.md "What a device does
-- when ...", issue 27): it notices from these, and says what it did.

-- The highest index of this device's series the hub acknowledged: a hub whose index is below it
-- lost records it had stored (it was restored from an older dump).
ALTER TABLE sync_link ADD COLUMN acked_idx INTEGER NOT NULL DEFAULT 0;
-- This device's clock when it was linked (or healed): its own visits with a clock below it (or
-- none) are queued again then, the account may lack them. NULL (linked before this column):
-- only the visits without a clock.
ALTER TABLE sync_link ADD COLUMN backfill_before INTEGER;
-- What sync did on its own that the user should know (it went on as a new device after a
-- restore), in a sentence, and when.
ALTER TABLE sync_link ADD COLUMN notice TEXT;
ALTER TABLE sync_link ADD COLUMN notice_at INTEGER;
