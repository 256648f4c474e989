-- The hub's schema: accounts, their devices, per-device series of end-to-end encrypted records,
-- and classification jobs keyed by blinded tokens. What is here is all the hub knows: no URL,
-- title, domain, category, device name or visit time ever reaches it (docs/SYNC.md).

-- An account: its id (derived by the devices from the account secret) and the SHA-256 of its
-- login, so a copy of this table logs nobody in.
CREATE TABLE account (
    account_id   uuid        PRIMARY KEY,
    login_sha256 bytea       NOT NULL CHECK (length(login_sha256) = 32),
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- A device of an account. A device that left keeps its row (and its records): it can push no
-- more and cannot register again under the same id.
CREATE TABLE device (
    account_id   uuid        NOT NULL REFERENCES account ON DELETE CASCADE,
    device_id    uuid        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    -- To the minute: a request touches the row at most once a minute.
    last_seen_at timestamptz NOT NULL DEFAULT date_trunc('minute', now()),
    left_at      timestamptz,
    PRIMARY KEY (account_id, device_id)
);

-- The head of one series: records 1..=last_idx are stored. A push locks the heads it writes
-- (FOR UPDATE, in key order) and moves them in its own transaction, so a series stays
-- contiguous whatever number of pushes and hub processes run at once.
CREATE TABLE series_head (
    account_id uuid   NOT NULL,
    device_id  uuid   NOT NULL,
    series     text   NOT NULL CHECK (series ~ '^[a-z0-9_-]{1,32}$'),
    last_idx   bigint NOT NULL DEFAULT 0 CHECK (last_idx >= 0),
    PRIMARY KEY (account_id, device_id, series),
    FOREIGN KEY (account_id, device_id) REFERENCES device ON DELETE CASCADE
);

-- The records: an opaque ciphertext at its place. The primary key is the place, so a page of a
-- series is a range of it; a place is written once (a repeated push is answered `duplicate`).
-- No foreign key to series_head: the push writes both in one transaction under the head's lock,
-- and a per-row check would cost every insert of a first sync.
CREATE TABLE record (
    account_id  uuid        NOT NULL,
    device_id   uuid        NOT NULL,
    series      text        NOT NULL,
    idx         bigint      NOT NULL CHECK (idx >= 1),
    record_id   uuid        NOT NULL,
    payload     bytea       NOT NULL CHECK (length(payload) BETWEEN 1 AND 262144),
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, device_id, series, idx)
);
-- Ciphertext does not compress: store it out of line without trying (EXTERNAL), which also
-- lets a page read each payload's length without fetching it.
ALTER TABLE record ALTER COLUMN payload SET STORAGE EXTERNAL;

-- One classification job per account and blinded token (32 bytes: an HMAC the devices compute;
-- the hub cannot tell which website it is). Claimed with SELECT ... FOR UPDATE SKIP LOCKED.
--   open:    nobody holds it (new, or released)
--   claimed: claim_id/device_id hold it until lease_until
--   done:    answered at done_at (the answer is a record); `again` re-grants it
CREATE TABLE claim_job (
    account_id  uuid        NOT NULL REFERENCES account ON DELETE CASCADE,
    token       bytea       NOT NULL CHECK (length(token) = 32),
    state       text        NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'claimed', 'done')),
    claim_id    uuid,
    device_id   uuid,
    lease_until timestamptz,
    attempts    integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    done_at     timestamptz,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, token),
    CHECK ((state = 'claimed') = (claim_id IS NOT NULL AND device_id IS NOT NULL AND lease_until IS NOT NULL)),
    CHECK ((state = 'done') = (done_at IS NOT NULL))
);

-- Account creations per network address (an IPv6 address by its /64) in the last minute, for
-- ACCOUNTS_PER_ADDRESS_PER_MINUTE: one row per creation, older rows deleted by the next
-- creation. In PostgreSQL, so every hub process counts the same.
CREATE TABLE account_creation (
    address inet        NOT NULL,
    at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX account_creation_address_idx ON account_creation (address, at);
CREATE INDEX account_creation_at_idx ON account_creation (at);
