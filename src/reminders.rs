//! Reminders of limits and goals: a desktop notification when a limit is reached (and, if the user
//! wants it, once at a warning point), and when a goal is met. Off until the user turns them on;
//! quiet hours; shown on the device where the time is being spent; never twice.
//!
//! Invariants:
//! - At most one notification per limit or goal, period and threshold on a device: the row in
//!   `reminder_sent` is inserted (in its own transaction) before the notification is shown, so the
//!   app and the daemon running together never both show it; a notification that could not be
//!   shown takes its row back, to be tried at the next check.
//! - A limit gives at most two a period (the warning and "reached"), a goal one ("met").
//! - Nothing is shown while reminders are off, in quiet hours, or when this device measured no
//!   time on the target in the last [`ACTIVE_WITHIN`] (the time was spent on another device).

use chrono::{NaiveTime, TimeZone};
use rusqlite::{named_params, Connection, OptionalExtension, Transaction};

use crate::changes::Change;
use crate::error::{Error, Result};
use crate::limits::progress::{list_progress, Progress};
use crate::limits::{register_key, Kind, Period};
use crate::store::Store;
use crate::time::{duration_words, Timestamp};

/// A reminder is shown only if this device measured time on its target this recently.
pub const ACTIVE_WITHIN: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Whether, when and how reminders are shown.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReminderSettings {
    /// Shown at all (off until the user turns them on).
    pub enabled: bool,
    /// A warning once a limit's time reaches this share of it (1 to 99), if set.
    pub warn_percent: Option<u8>,
    /// No reminder from the first time to the second (local, `HH:MM`; may pass midnight).
    pub quiet: Option<(NaiveTime, NaiveTime)>,
}

/// `22:00-07:00` as quiet hours.
pub fn parse_quiet(s: &str) -> Result<(NaiveTime, NaiveTime)> {
    let bad = || {
        Error::InvalidInput(format!(
            "{:?} is not quiet hours: write them as 22:00-07:00",
            s.chars().take(40).collect::<String>()
        ))
    };
    let (a, b) = s.trim().split_once('-').ok_or_else(bad)?;
    let t = |x: &str| NaiveTime::parse_from_str(x.trim(), "%H:%M").map_err(|_| bad());
    let (from, until) = (t(a)?, t(b)?);
    if from == until {
        return Err(bad());
    }
    Ok((from, until))
}

fn in_quiet((from, until): (NaiveTime, NaiveTime), at: NaiveTime) -> bool {
    if from < until {
        from <= at && at < until
    } else {
        at >= from || at < until
    }
}

/// The settings stored (off if never set).
pub fn settings_in(conn: &Connection) -> Result<ReminderSettings> {
    Ok(stored_in(conn)?.unwrap_or_default())
}

/// The settings stored, `None` if the user was never asked (they were never saved): the app asks
/// once, and an answer either way is saved.
pub fn stored_in(conn: &Connection) -> Result<Option<ReminderSettings>> {
    type Row = (bool, Option<u8>, Option<String>, Option<String>);
    let row: Option<Row> = conn
        .prepare_cached(
            r#"SELECT enabled, warn_percent, quiet_from, quiet_until FROM reminder_setting WHERE id = 1"#,
        )?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .optional()?;
    let Some((enabled, warn_percent, from, until)) = row else {
        return Ok(None);
    };
    let time = |s: Option<String>| s.and_then(|s| NaiveTime::parse_from_str(&s, "%H:%M").ok());
    Ok(Some(ReminderSettings {
        enabled,
        warn_percent,
        quiet: time(from).zip(time(until)),
    }))
}

/// Stores the settings.
pub fn set_settings_in(tx: &Transaction<'_>, s: &ReminderSettings, now: Timestamp) -> Result<()> {
    if s.warn_percent.is_some_and(|p| !(1..=99).contains(&p)) {
        return Err(Error::InvalidInput("a warning is at 1 to 99 % of a limit".into()));
    }
    let hm = |t: NaiveTime| t.format("%H:%M").to_string();
    tx.prepare_cached(
        r#"INSERT INTO reminder_setting (id, enabled, warn_percent, quiet_from, quiet_until, updated_at)
           VALUES (1, :e, :w, :f, :u, :now)
           ON CONFLICT (id) DO UPDATE SET enabled = excluded.enabled, warn_percent = excluded.warn_percent,
               quiet_from = excluded.quiet_from, quiet_until = excluded.quiet_until, updated_at = excluded.updated_at"#,
    )?
    .execute(named_params! {
        ":e": s.enabled, ":w": s.warn_percent, ":f": s.quiet.map(|q| hm(q.0)), ":u": s.quiet.map(|q| hm(q.1)), ":now": now.0,
    })?;
    Ok(())
}

/// Which point of a limit or goal a reminder is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Threshold {
    /// A limit's warning point.
    Warning,
    /// A limit's time used up.
    Reached,
    /// A goal met.
    Met,
}

impl Threshold {
    fn as_str(self) -> &'static str {
        match self {
            Threshold::Warning => "warning",
            Threshold::Reached => "reached",
            Threshold::Met => "met",
        }
    }
}

/// A reminder due now.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Due {
    /// The limit's or goal's register key.
    pub limit_key: String,
    /// Its period's first day.
    pub period_first_day: String,
    /// Which point.
    pub threshold: Threshold,
    /// The notification's title.
    pub title: String,
    /// Its text.
    pub body: String,
}

fn words(p: &Progress, threshold: Threshold, warn: u8) -> (String, String) {
    let (so_far, per) = match p.limit.period {
        Period::Day => ("today", "a day"),
        Period::Week => ("this week", "a week"),
    };
    let (spent, of) = (duration_words(p.active_ms), duration_words(p.limit_ms));
    match threshold {
        Threshold::Warning => (
            format!("{warn} % of your limit: {}", p.target_name),
            format!("{spent} {so_far} of {of} {per}, on all your devices."),
        ),
        Threshold::Reached => (
            format!("Limit reached: {}", p.target_name),
            format!("{spent} {so_far}; your limit is {of} {per}, on all your devices."),
        ),
        Threshold::Met => (
            format!("Goal met: {}", p.target_name),
            format!("{spent} {so_far}; your goal was {of} {per}."),
        ),
    }
}

/// The thresholds `p` has passed.
fn passed(p: &Progress, warn: Option<u8>) -> Vec<Threshold> {
    match p.limit.kind {
        // A limit of 0 is reached by the first time spent, not by none.
        Kind::Max if p.active_ms > 0 && p.active_ms >= p.limit_ms => vec![Threshold::Reached],
        Kind::Max => match warn {
            Some(w) if p.active_ms > 0 && p.active_ms * 100 >= p.limit_ms * i64::from(w) => {
                vec![Threshold::Warning]
            }
            _ => Vec::new(),
        },
        Kind::Min if p.active_ms >= p.limit_ms => vec![Threshold::Met],
        Kind::Min => Vec::new(),
    }
}

fn sent_in(conn: &Connection, d: &Due) -> Result<bool> {
    Ok(conn
        .prepare_cached(r#"SELECT 1 FROM reminder_sent WHERE limit_key = :k AND period_first_day = :p AND threshold = :t"#)?
        .query_row(named_params! { ":k": d.limit_key, ":p": d.period_first_day, ":t": d.threshold.as_str() }, |_| Ok(()))
        .optional()?
        .is_some())
}

/// The reminders due at `now` on `tz`'s calendar and clock (none while off or in quiet hours).
pub fn due_in<Tz: TimeZone>(conn: &Connection, now: Timestamp, tz: &Tz) -> Result<Vec<Due>> {
    let settings = settings_in(conn)?;
    if !settings.enabled {
        return Ok(Vec::new());
    }
    let local = chrono::DateTime::<chrono::Utc>::from_timestamp_micros(now.0)
        .ok_or_else(|| Error::InvalidInput("the clock is outside the calendar".into()))?
        .with_timezone(tz);
    if settings.quiet.is_some_and(|q| in_quiet(q, local.time())) {
        return Ok(Vec::new());
    }
    let progress = list_progress(conn, now, tz)?;
    // What this device measured lately: a reminder is shown where the time is being spent.
    let within = i64::try_from(ACTIVE_WITHIN.as_micros()).unwrap_or(i64::MAX);
    let since = Timestamp(now.0.saturating_sub(within));
    let mut here: Vec<(String, Option<String>)> = Vec::new();
    crate::time_spent::for_each_visit(conn, Some(since), None, |_, domain, category, times, device| {
        if device.is_none() && times.active.is_some_and(|a| a > 0) {
            here.push((domain.to_owned(), category.map(str::to_owned)));
        }
    })?;
    let mut due = Vec::new();
    for p in &progress {
        let target = p.limit.target();
        if !here.iter().any(|(d, c)| target.covers(d, c.as_deref())) {
            continue;
        }
        for threshold in passed(p, settings.warn_percent) {
            let (title, body) = words(p, threshold, settings.warn_percent.unwrap_or(0));
            let d = Due {
                limit_key: register_key(&target, p.limit.period, p.limit.kind),
                period_first_day: p.period_first_day.clone(),
                threshold,
                title,
                body,
            };
            if !sent_in(conn, &d)? {
                due.push(d);
            }
        }
    }
    Ok(due)
}

/// Claims `d` for this process: true if no process showed it before (the row is new).
pub fn claim_in(tx: &Transaction<'_>, d: &Due, now: Timestamp) -> Result<bool> {
    Ok(tx
        .prepare_cached(
            r#"INSERT OR IGNORE INTO reminder_sent (limit_key, period_first_day, threshold, sent_at)
               VALUES (:k, :p, :t, :now)"#,
        )?
        .execute(named_params! { ":k": d.limit_key, ":p": d.period_first_day, ":t": d.threshold.as_str(), ":now": now.0 })?
        == 1)
}

fn unclaim_in(tx: &Transaction<'_>, d: &Due) -> Result<()> {
    tx.prepare_cached(
        r#"DELETE FROM reminder_sent WHERE limit_key = :k AND period_first_day = :p AND threshold = :t"#,
    )?
    .execute(named_params! { ":k": d.limit_key, ":p": d.period_first_day, ":t": d.threshold.as_str() })?;
    Ok(())
}

/// Where reminders are shown.
pub trait Notifier {
    /// Shows one notification.
    fn show(&self, title: &str, body: &str) -> Result<()>;
}

/// The desktop's notification service (freedesktop notifications over the session D-Bus).
pub struct Desktop;

impl Notifier for Desktop {
    fn show(&self, title: &str, body: &str) -> Result<()> {
        notify_rust::Notification::new()
            .appname("Sitetrail")
            .summary(title)
            .body(body)
            .show()
            .map(|_| ())
            .map_err(|e| {
                Error::Task(format!(
                    "the desktop's notification service did not take the reminder: {e}"
                ))
            })
    }
}

impl Store {
    /// The reminder settings.
    pub fn reminder_settings(&self) -> Result<ReminderSettings> {
        self.with_conn(settings_in)
    }

    /// The reminder settings as saved, `None` if never saved (the user was not asked yet).
    pub fn stored_reminder_settings(&self) -> Result<Option<ReminderSettings>> {
        self.with_conn(stored_in)
    }

    /// Stores the reminder settings.
    #[tracing::instrument(level = "debug", skip_all, fields(enabled = s.enabled))]
    pub fn set_reminder_settings(&self, s: &ReminderSettings) -> Result<()> {
        let now = self.now();
        self.write(Change::Limits, |tx| set_settings_in(tx, s, now))
    }

    /// Shows the reminders due now (local calendar) through `notifier`, each once; returns those
    /// shown. One that could not be shown is tried again at the next call.
    #[tracing::instrument(level = "debug", skip_all)]
    pub fn send_due_reminders(&self, notifier: &dyn Notifier) -> Result<Vec<Due>> {
        let now = self.now();
        let mut shown = Vec::new();
        for d in self.with_conn(|c| due_in(c, now, &chrono::Local))? {
            if !self.write(None, |tx| claim_in(tx, &d, now))? {
                continue;
            }
            match notifier.show(&d.title, &d.body) {
                Ok(()) => shown.push(d),
                Err(e) => {
                    tracing::warn!(error = %e, "a reminder could not be shown; it is tried again at the next check");
                    self.write(None, |tx| unclaim_in(tx, &d))?;
                }
            }
        }
        Ok(shown)
    }
}

/// How often the daemon (and the app) look for reminders due.
pub const CHECK_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Shows the reminders due, every `every`, until `stop` turns true (the daemon's loop; the
/// database work and the D-Bus call run on the blocking pool).
pub async fn remind_every(
    store: Store,
    every: std::time::Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        match store.run(|s| s.send_due_reminders(&Desktop)).await {
            Ok(shown) if !shown.is_empty() => tracing::info!(shown = shown.len(), "reminders shown"),
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "could not check the reminders"),
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.changed() => {}
        }
        if *stop.borrow() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_hours_may_pass_midnight() {
        let q = parse_quiet("22:00-07:00").unwrap();
        let t = |s| NaiveTime::parse_from_str(s, "%H:%M").unwrap();
        assert!(
            in_quiet(q, t("23:30"))
                && in_quiet(q, t("06:59"))
                && !in_quiet(q, t("07:00"))
                && !in_quiet(q, t("12:00"))
        );
        let day = parse_quiet("12:00-13:00").unwrap();
        assert!(in_quiet(day, t("12:30")) && !in_quiet(day, t("13:00")));
        for bad in ["22-07", "22:00", "25:00-07:00", "07:00-07:00", ""] {
            assert!(parse_quiet(bad).is_err(), "{bad}");
        }
    }
}
