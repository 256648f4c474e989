-- Forgetting, round two.
--
-- What was forgotten, matched by what it was rather than where it came from: a forgotten visit
-- leaves the first 8 bytes of SHA-256(its URL as stored, NUL, its time in microseconds as
-- decimal digits) as an integer. Every path that records a visit (an import from any source or
-- copy of the file, the extension, `visit`, sync) refuses one with a forgotten key, so importing a
-- copy of the same history, or the same file under another `--source`, brings nothing back. No
-- URL, title or time is kept in readable form. (`forgotten_import`, keyed by source, stays for the
-- visits forgotten before this table existed.)
CREATE TABLE forgotten_visit (
    key INTEGER NOT NULL PRIMARY KEY
);

-- A forgetting whose last step, truncating the write-ahead log so that no copy of the deleted
-- pages is left in it, could not run because another connection was reading (one row). The next
-- Sitetrail process to open the file finishes it, then deletes the row.
CREATE TABLE scrub_pending (
    id         INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    since      INTEGER NOT NULL
);
