-- Reminders of limits and goals (issue 30): desktop notifications, off until the user turns them
-- on (`reminder_setting`, one row), and which were sent on this device (`reminder_sent`): one row
-- per limit or goal (`limit_key`, its sync register key), period (its first day) and threshold
-- (`warning`, `reached`, `met`), inserted before the notification is shown, so the app and the
-- daemon running together never show one twice. Not synced: a reminder is shown where the time is
-- spent.
CREATE TABLE reminder_setting (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    enabled       INTEGER NOT NULL DEFAULT 0 CHECK (enabled IN (0, 1)),
    warn_percent  INTEGER CHECK (warn_percent BETWEEN 1 AND 99),
    quiet_from    TEXT,
    quiet_until   TEXT,
    updated_at    INTEGER NOT NULL
);

CREATE TABLE reminder_sent (
    limit_key         TEXT    NOT NULL,
    period_first_day  TEXT    NOT NULL,
    threshold         TEXT    NOT NULL CHECK (threshold IN ('warning', 'reached', 'met')),
    sent_at           INTEGER NOT NULL,
    PRIMARY KEY (limit_key, period_first_day, threshold)
) WITHOUT ROWID;
