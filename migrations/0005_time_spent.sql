-- Time spent on each visit (issue 9): one row per visit whose time is known, none where it is not.
--   active_ms     measured by the browser extension: the time the page was in the active tab of
--                 the focused window while the user was not idle. The native host writes the
--                 visit's running total, never an increment, and only ever raises it
--                 (max(old, new)), so a report delivered twice or late changes nothing.
--   estimated_ms  an estimate from an imported history that records durations (Chromium's
--                 `visits.visit_duration`, capped at 10 minutes: it runs until the next navigation
--                 in the tab, background time included). Firefox and Safari keep no durations:
--                 their visits get no row, i.e. "unknown", never zero.
-- A visit with both counts its measured time (views read active_ms first). The row goes with its
-- visit (ON DELETE CASCADE), so forgetting a visit forgets its time.
CREATE TABLE visit_time (
    visit_id     BLOB    NOT NULL PRIMARY KEY REFERENCES visit (id) ON DELETE CASCADE,
    active_ms    INTEGER NULL CHECK (active_ms >= 0),
    estimated_ms INTEGER NULL CHECK (estimated_ms >= 0),
    updated_at   INTEGER NOT NULL,
    CHECK (active_ms IS NOT NULL OR estimated_ms IS NOT NULL)
) WITHOUT ROWID;
