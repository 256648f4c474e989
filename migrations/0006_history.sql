-- History search, forgetting, blocking and favicons (issue 10).

-- The full-text index of visits. Contentless (the text lives in `visit`; the index keeps only
-- tokens), so it costs tokens, not a second copy of every title and URL. One row per visit; its
-- rowid is the first 8 bytes of the visit's id read as a big-endian integer (the id's millisecond
-- and sub-millisecond time), so rowid order is visit-time order and `ORDER BY rowid DESC` pages
-- newest first straight off the index. The write path keeps those 8 bytes unique (`search.rs`).
-- Columns: the domain (in Unicode, and in punycode when that differs), the title, and the URL's
-- path and query (the scheme and host are the domain already). `unicode61 remove_diacritics 2`
-- matches words case- and accent-insensitively; dots and slashes separate tokens, so each label
-- of a domain is a word. `detail = column` keeps which column a word is in (for column filters
-- and per-column ranking) but not its positions: no phrase queries, a smaller, faster index.
-- A row is deleted with FTS5's 'delete' command, given the text it was indexed with (rebuilt
-- from the visit by `search::IndexedText`, which must never change for stored visits), and the
-- `secure-delete` option makes that remove its tokens from the index pages at once: a forgotten
-- title leaves no word in the file. (`contentless_delete = 1` would delete by rowid alone, but
-- only marks the row deleted: its words stay in the file until a merge rewrites their segment.)
CREATE VIRTUAL TABLE visit_fts USING fts5(
    domain, title, url,
    content = '', detail = column,
    tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO visit_fts (visit_fts, rank) VALUES ('secure-delete', 1);

-- The index's upkeep, one row. Filling it for visits stored before this migration is not done
-- here (one transaction over every visit would hold the write lock for as long as it takes):
-- `search::backfill` does it in committed batches, newest visits first, from the CLI and the app.
-- `below` is where the next batch continues (visits with a smaller id are still to do); NULL once
-- done. A forgetting of most of the history empties the index and sets it to the start again
-- (`search::reset_index_in`): rebuilding what is left is faster than deleting row by row.
CREATE TABLE search_state (
    id         INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    below      BLOB    NULL,
    total      INTEGER NOT NULL,
    done       INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
INSERT INTO search_state (id, below, total, done, updated_at)
SELECT 1, CASE WHEN count(*) > 0 THEN X'ffffffffffffffffffffffffffffffff' END, count(*), 0, 0
FROM visit;

-- Domains never to record again, with their subdomains (`sitetrail blocked`, `forget --block`).
CREATE TABLE blocked_domain (
    domain     TEXT    NOT NULL PRIMARY KEY,
    blocked_at INTEGER NOT NULL
) WITHOUT ROWID;

-- What was forgotten and when, without the content: a later sync can forget it on other devices.
-- kind 'visit': `visit_id`; 'website': the SHA-256 of its domain (`website_id` while its visits are
-- being deleted); 'range': `since`..=`until` (visit times). A forgetting that deletes many visits
-- commits them in batches; until `completed_at` is set it is resumed where `resume_at` says.
CREATE TABLE tombstone (
    id            BLOB    NOT NULL PRIMARY KEY CHECK (length(id) = 16),
    kind          TEXT    NOT NULL CHECK (kind IN ('visit', 'website', 'range')),
    visit_id      BLOB    NULL,
    domain_sha256 BLOB    NULL,
    website_id    BLOB    NULL,
    since         INTEGER NULL,
    until         INTEGER NULL,
    blocked       INTEGER NOT NULL DEFAULT 0,
    visits        INTEGER NOT NULL DEFAULT 0,
    resume_at     BLOB    NULL,
    forgotten_at  INTEGER NOT NULL,
    completed_at  INTEGER NULL,
    CHECK (kind <> 'visit' OR visit_id IS NOT NULL),
    CHECK (kind <> 'website' OR domain_sha256 IS NOT NULL),
    CHECK (kind <> 'range' OR (since IS NOT NULL AND until IS NOT NULL AND since <= until))
) WITHOUT ROWID;
-- Every path that records a visit refuses one whose time lies in a forgotten range.
CREATE INDEX tombstone_range_idx ON tombstone (since, until) WHERE kind = 'range';
CREATE INDEX tombstone_pending_idx ON tombstone (forgotten_at) WHERE completed_at IS NULL;

-- Websites whose visits a range forgetting deleted: once the range is done, those left without
-- any visit are deleted too (their domain is content).
CREATE TABLE forget_candidate (
    tombstone_id BLOB NOT NULL REFERENCES tombstone (id) ON DELETE CASCADE,
    website_id   BLOB NOT NULL,
    PRIMARY KEY (tombstone_id, website_id)
) WITHOUT ROWID;

-- Imported visits that were forgotten, so that no later import (even one that reads the browser's
-- whole file again) brings them back: the first 8 bytes of SHA-256(source, NUL, source visit id)
-- as an integer. No URL, title or time is kept.
CREATE TABLE forgotten_import (
    key INTEGER NOT NULL PRIMARY KEY
);

-- Each website's icon, imported with the browser's history from its own icon database (never
-- fetched from the network): a small raster image, served to the UI as a data: URL.
CREATE TABLE website_favicon (
    website_id BLOB    NOT NULL PRIMARY KEY REFERENCES website (id) ON DELETE CASCADE,
    mime       TEXT    NOT NULL CHECK (mime IN ('image/png', 'image/x-icon', 'image/jpeg', 'image/gif', 'image/webp')),
    data       BLOB    NOT NULL CHECK (length(data) BETWEEN 1 AND 16384),
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;
