-- Limits and goals (issue 30): at most (`max`, a limit) or at least (`min`, a goal) so many
-- minutes of measured active time per day or per ISO week, on a category (`target_type`
-- 'category', `target` its id) or on a website (`target_type` 'domain', `target` the normalised
-- domain, which covers its subdomains). Synced to the user's other devices as a register per
-- (target_type, target, period, kind): see `sitetrail::limits`. `sync_created_hlc` is the clock of
-- the change that created this incarnation of the limit (NULL until this device is linked): a
-- removal wins over every edit of the incarnation it removed.
CREATE TABLE time_limit (
    target_type      TEXT    NOT NULL CHECK (target_type IN ('category', 'domain')),
    target           TEXT    NOT NULL,
    period           TEXT    NOT NULL CHECK (period IN ('day', 'week')),
    kind             TEXT    NOT NULL CHECK (kind IN ('max', 'min')),
    minutes          INTEGER NOT NULL CHECK (minutes BETWEEN 0 AND 10080),
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    sync_created_hlc INTEGER,
    PRIMARY KEY (target_type, target, period, kind)
) WITHOUT ROWID;
