-- The worker's pause state: one row, read by `sitetrail status` and the app from any process.
-- paused_kind says why the worker is not classifying (NULL while it runs normally):
--   'offline'      the provider could not be reached; retried with growing backoff;
--   'rate_limited' the provider asked to slow down; resumes at paused_until;
--   'needs_user'   bad API key, no quota or unknown model; waits for `sitetrail resume` or
--                  new settings (paused_until NULL).
-- paused_reason is the message shown to the user; it never contains the API key.
CREATE TABLE worker_state (
    id            INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    paused_kind   TEXT    NULL CHECK (paused_kind IN ('offline', 'rate_limited', 'needs_user')),
    paused_reason TEXT    NULL,
    paused_until  INTEGER NULL,
    updated_at    INTEGER NOT NULL,
    CHECK ((paused_kind IS NULL) = (paused_reason IS NULL))
);

INSERT INTO worker_state (id, paused_kind, paused_reason, paused_until, updated_at) VALUES (1, NULL, NULL, NULL, 0);
