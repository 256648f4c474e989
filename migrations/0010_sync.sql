-- Sync across a person's devices (src/sync, docs/SYNC.md). Every change this device makes is
-- written as an operation to `sync_op` in the transaction of the change itself; a push seals
-- operations into numbered, encrypted records (`sync_sealed`) and sends them; a pull applies
-- other devices' records and moves `sync_applied`. Nothing here is sent in the clear.

-- The link to an account on a hub: at most one row. The account secret is never stored here (it
-- is in the key file, src/sync/keystore.rs).
CREATE TABLE sync_link (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    hub TEXT NOT NULL,
    account_id BLOB NOT NULL,
    device_id BLOB NOT NULL,
    device_name TEXT NOT NULL,
    linked_at INTEGER NOT NULL,
    last_sync_at INTEGER,
    last_error TEXT,
    -- The hybrid logical clock's last value (wall milliseconds << 16 | counter).
    hlc INTEGER NOT NULL DEFAULT 0,
    -- The index the next sealed record of this device's series gets.
    next_idx INTEGER NOT NULL DEFAULT 1,
    -- What this device held before it was linked is queued in batches, oldest visit first:
    -- the last visit queued (NULL: none yet), and whether all of it is queued.
    backfill_after BLOB,
    backfill_done INTEGER NOT NULL DEFAULT 0
) STRICT;

-- Operations waiting to be sealed into a record, in the order they were made.
CREATE TABLE sync_op (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    hlc INTEGER NOT NULL,
    op TEXT NOT NULL
) STRICT;

-- Records sealed (encrypted) and not yet acknowledged by the hub: pushed again until they are.
CREATE TABLE sync_sealed (
    idx INTEGER PRIMARY KEY,
    record_id BLOB NOT NULL,
    payload BLOB NOT NULL,
    ops INTEGER NOT NULL
) STRICT;

-- Per series of another device: the last index applied here.
CREATE TABLE sync_applied (
    device_id BLOB NOT NULL,
    series TEXT NOT NULL,
    last_idx INTEGER NOT NULL,
    PRIMARY KEY (device_id, series)
) STRICT;

-- The names of the account's devices (this one's too), last writer wins.
CREATE TABLE sync_device (
    device_id BLOB PRIMARY KEY,
    name TEXT NOT NULL,
    hlc INTEGER NOT NULL
) STRICT;

-- Last-writer-wins registers: a user's category of a domain (`user:<domain>`), an AI's
-- (`ai:<domain>`), blocked/unblocked (`block:<domain>`) and a visit's title (`title:<visit id>`),
-- with the clock of the write that won
-- (the clock, then the device id, break ties). `value` is the category id, or 1/0 for blocking.
CREATE TABLE sync_register (
    key TEXT PRIMARY KEY,
    hlc INTEGER NOT NULL,
    device_id BLOB NOT NULL,
    value TEXT
) STRICT;

-- The device that recorded a visit (NULL: this one), and for another device's visit its id
-- there: a visit's id on every device is `coalesce(sync_id, id)` (its local id may differ when
-- its search key was taken here by a visit of the same millisecond).
ALTER TABLE visit ADD COLUMN device_id BLOB;
ALTER TABLE visit ADD COLUMN sync_id BLOB;
-- The clock of the change that recorded a visit, and of a website's forgetting (NULL: before this
-- device was linked): a website's forgetting takes the visits recorded before it, by this clock,
-- on every device, and those recorded after stay everywhere.
ALTER TABLE visit ADD COLUMN sync_hlc INTEGER;
ALTER TABLE tombstone ADD COLUMN sync_hlc INTEGER;
CREATE UNIQUE INDEX visit_sync_id_idx ON visit (sync_id) WHERE sync_id IS NOT NULL;

-- A synced visit is dropped on arrival when a forgetting covers it: by its id, or by its
-- website's domain hash for a visit recorded before the forgetting (by `sync_hlc`).
CREATE INDEX tombstone_visit_idx ON tombstone (visit_id) WHERE kind = 'visit';
CREATE INDEX tombstone_domain_idx ON tombstone (domain_sha256) WHERE kind = 'website';
