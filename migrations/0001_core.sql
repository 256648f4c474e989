-- Core schema: websites, their visits, and the classification outbox.
-- Ids are UUIDv7 as 16-byte BLOBs; timestamps are INTEGER microseconds since the Unix epoch (UTC).

CREATE TABLE website (
    id              BLOB    NOT NULL PRIMARY KEY CHECK (length(id) = 16),
    domain          TEXT    NOT NULL UNIQUE,
    favicon_url     TEXT    NULL,
    category        TEXT    NULL,
    category_source TEXT    NULL CHECK (category_source IN ('ai', 'builtin', 'user')),
    classified_at   INTEGER NULL,
    created_at      INTEGER NOT NULL,
    version         INTEGER NOT NULL DEFAULT 0,
    CHECK ((category IS NULL) = (category_source IS NULL))
) WITHOUT ROWID;

-- No index on category: websites number in the thousands, a filter scans them in a millisecond,
-- and every index is one more page written to the WAL on every classification.

CREATE TABLE visit (
    id              BLOB    NOT NULL PRIMARY KEY CHECK (length(id) = 16),
    website_id      BLOB    NOT NULL REFERENCES website (id),
    url             TEXT    NOT NULL,
    title           TEXT    NULL,
    visited_at      INTEGER NOT NULL,
    source          TEXT    NOT NULL,
    source_visit_id TEXT    NULL
) WITHOUT ROWID;

-- UNIQUE (source, source_visit_id). Partial because NULLs never conflict anyway: live visits (no
-- source id) then add no entry, and a live visit writes one B-tree page instead of two.
CREATE UNIQUE INDEX visit_source_visit_idx ON visit (source, source_visit_id) WHERE source_visit_id IS NOT NULL;

-- A visit's id is a UUIDv7 made from its visited_at, so the primary key is already in visit-time
-- order: history pages are keyset-paginated on id, and there is no separate visited_at index to
-- write on every visit.

CREATE TABLE website_category_classification_outbox (
    id                 BLOB    NOT NULL PRIMARY KEY CHECK (length(id) = 16),
    website_id         BLOB    NOT NULL UNIQUE REFERENCES website (id) ON DELETE CASCADE,
    status             TEXT    NOT NULL CHECK (status IN ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
    attempt_count      INTEGER NOT NULL CHECK (attempt_count >= 0),
    attempted_at       INTEGER NULL,
    last_error_message TEXT    NULL,
    created_at         INTEGER NOT NULL,
    version            INTEGER NOT NULL,
    -- Earliest time a PENDING job that has been attempted may be claimed again (its retry delay).
    next_attempt_at    INTEGER NULL
) WITHOUT ROWID;

-- The live jobs (everything not COMPLETED), ordered for the claim: never-attempted PENDING jobs
-- (attempted_at NULL sorts first) by created_at, then attempted jobs by attempted_at; FAILED jobs
-- for their list. COMPLETED rows leave the index, so a claim costs the same at any history size,
-- and one index (not one per purpose) keeps the write per state change to one index page.
CREATE INDEX outbox_live_idx
    ON website_category_classification_outbox (status, attempted_at, created_at)
    WHERE status <> 'COMPLETED';
