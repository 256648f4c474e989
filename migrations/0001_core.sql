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

CREATE INDEX website_category_idx ON website (category);

CREATE TABLE visit (
    id              BLOB    NOT NULL PRIMARY KEY CHECK (length(id) = 16),
    website_id      BLOB    NOT NULL REFERENCES website (id),
    url             TEXT    NOT NULL,
    title           TEXT    NULL,
    visited_at      INTEGER NOT NULL,
    source          TEXT    NOT NULL,
    source_visit_id TEXT    NULL,
    UNIQUE (source, source_visit_id)
) WITHOUT ROWID;

-- History pages are keyset-paginated on (visited_at, id); per-site views on (website_id, visited_at).
CREATE INDEX visit_visited_at_idx ON visit (visited_at);
CREATE INDEX visit_website_idx ON visit (website_id, visited_at);

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

-- The claim's first choice: never-attempted PENDING jobs, oldest first. Only live rows are indexed,
-- so the cost of a claim does not grow with the number of COMPLETED jobs.
CREATE INDEX outbox_fresh_idx
    ON website_category_classification_outbox (created_at)
    WHERE status = 'PENDING' AND attempted_at IS NULL;

-- The claim's second choice: retries and timed-out PROCESSING jobs, oldest attempt first.
CREATE INDEX outbox_retry_idx
    ON website_category_classification_outbox (attempted_at)
    WHERE status IN ('PENDING', 'PROCESSING') AND attempted_at IS NOT NULL;

-- Status counts and the FAILED list.
CREATE INDEX outbox_status_idx ON website_category_classification_outbox (status);
