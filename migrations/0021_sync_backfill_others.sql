-- A rotation of the recovery key founds the account anew from the rotating device (issue 27):
-- `backfill_others` set, the link's backfill (`sync::reconcile::backfill_step`) queues every visit
-- this device holds, other devices' included (a lost device's visits, or those a restored database
-- got back from its old series, which no device would send to the new account otherwise). A join
-- or a heal sends the device's own visits only: the account holds the others' already.
ALTER TABLE sync_link ADD COLUMN backfill_others INTEGER NOT NULL DEFAULT 0 CHECK (backfill_others IN (0, 1));
