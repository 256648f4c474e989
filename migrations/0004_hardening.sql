-- Hardening: Sitetrail's mark on its files, leases on claimed jobs, pause ownership and crashes.

-- SQLite's application_id ("STTR"): a non-empty database without it (and without Sitetrail's
-- schema_migrations) is another program's file and is refused before anything is written to it.
-- Databases created before this migration are recognised by their schema_migrations and get the
-- mark here.
PRAGMA application_id = 1398035538;

-- Leases: a PROCESSING job belongs to the worker `worker_id` until `lease_until`. A live worker
-- renews the lease while its classifier call is in flight; only a job whose lease has expired (its
-- worker died) is reclaimed. Both are NULL while the job is not PROCESSING. A PROCESSING job with
-- a NULL lease (claimed before this migration) expires `processing_timeout` after `attempted_at`.
ALTER TABLE website_category_classification_outbox ADD COLUMN lease_until INTEGER NULL;
ALTER TABLE website_category_classification_outbox ADD COLUMN worker_id BLOB NULL CHECK (worker_id IS NULL OR length(worker_id) = 16);

-- Which provider a pause belongs to: `<provider> <base URL without credentials>` ("builtin" for
-- the built-in rules). A worker using another provider is not held by it, and only a successful
-- call to the same provider (or the user) lifts it. NULL for pauses written before this migration
-- (they hold every worker).
ALTER TABLE worker_state ADD COLUMN paused_provider TEXT NULL;

-- Worker crashes (a panic caught by the supervisor): how many since the file was created, and the
-- last one, for `sitetrail status` and the app.
ALTER TABLE worker_state ADD COLUMN crash_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE worker_state ADD COLUMN last_crash_at INTEGER NULL;
ALTER TABLE worker_state ADD COLUMN last_crash_message TEXT NULL;
