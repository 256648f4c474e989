//! Time spent: how long each visit was actually looked at, and its sums per website, category and
//! day.
//!
//! A visit's time lives in `visit_time` (migration 0005), one row per visit whose time is known:
//! `active_ms` measured by the browser extension, or `estimated_ms` from an imported history that
//! records durations (Chromium). A visit without a row has no known time; views say "unknown",
//! never zero.
//!
//! Invariants:
//! - Writes are idempotent: the extension reports a visit's running total, and
//!   [`set_active_ms_in`] keeps the larger of the stored and the reported total, so a report
//!   delivered twice, or an older one delivered after a newer one, changes nothing.
//! - A visit counts once: its measured time if it has one, else its estimate. `active_ms` and
//!   `estimated_ms` of a [`TimeRow`] therefore add up to the best-known total, and
//!   `measured_visits + estimated_visits <= visits`.
//! - Days are the caller's calendar days (a [`chrono::TimeZone`]), not UTC days.

use std::collections::HashMap;

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};
use rusqlite::{named_params, Connection, Transaction};

use crate::error::{Error, Result};
use crate::ids::VisitId;
use crate::store::Store;
use crate::time::Timestamp;

pub mod headline;
pub mod period;

/// Largest estimate taken from an imported duration (10 minutes). Chromium's `visit_duration`
/// runs until the next navigation in the tab or its closing, background time included: a tab left
/// open overnight would otherwise count as a night of reading.
pub const MAX_ESTIMATE_MS: i64 = 10 * 60 * 1000;

/// Largest active time accepted for one visit (31 days): anything above is a bug or hostile input.
pub const MAX_ACTIVE_MS: i64 = 31 * 24 * 60 * 60 * 1000;

/// Most days [`list_days`] returns at once.
pub const MAX_DAYS: u32 = 366;

/// Sets `visit`'s measured active time to `active_ms`, unless a larger total is already stored
/// (the extension reports running totals: the largest is the newest).
pub fn set_active_ms_in(tx: &Transaction<'_>, visit: VisitId, active_ms: i64, now: Timestamp) -> Result<()> {
    if !(0..=MAX_ACTIVE_MS).contains(&active_ms) {
        return Err(Error::InvalidInput(format!(
            "an active time of {active_ms} ms is outside 0..={MAX_ACTIVE_MS}"
        )));
    }
    let changed = tx
        .prepare_cached(
            r#"INSERT INTO visit_time (visit_id, active_ms, estimated_ms, updated_at)
           VALUES (:visit, :ms, NULL, :now)
           ON CONFLICT (visit_id) DO UPDATE
              SET active_ms = max(coalesce(active_ms, 0), excluded.active_ms),
                  updated_at = excluded.updated_at
              WHERE active_ms IS NULL OR active_ms < excluded.active_ms"#,
        )?
        .execute(named_params! { ":visit": visit, ":ms": active_ms, ":now": now })?;
    if changed == 1 && !crate::sync_log::local::is_applying() {
        let id = crate::sync_log::local::global_visit_id(tx, visit)?;
        crate::sync_log::local::queue_in(tx, &crate::sync_log::ops::Op::ActiveTime { id, ms: active_ms })?;
    }
    Ok(())
}

/// Stores an imported duration of `visit` as its estimated time, capped at [`MAX_ESTIMATE_MS`].
/// A duration of zero or less is no information and stores nothing.
pub fn set_estimated_ms_in(
    tx: &Transaction<'_>,
    visit: VisitId,
    duration_ms: i64,
    now: Timestamp,
) -> Result<()> {
    if duration_ms <= 0 {
        return Ok(());
    }
    let ms = insert_estimate_in(tx, visit, duration_ms, now)?;
    if !crate::sync_log::local::is_applying() {
        let id = crate::sync_log::local::global_visit_id(tx, visit)?;
        crate::sync_log::local::queue_in(tx, &crate::sync_log::ops::Op::EstimatedTime { id, ms })?;
    }
    Ok(())
}

/// The estimated times of the visits a transaction inserts in a batch (an import's), stored
/// together at its end ([`EstimateBatch::flush_in`]).
#[derive(Debug, Default)]
pub struct EstimateBatch {
    /// (visit, estimated ms), positive and capped.
    estimates: Vec<(VisitId, i64)>,
    /// The time they are stored at (the transaction's).
    at: Option<Timestamp>,
}

impl EstimateBatch {
    /// Stores the batch's estimates, in the transaction that inserted their visits, before it
    /// commits: as [`set_estimated_ms_in`] stores one, in one statement.
    pub fn flush_in(&mut self, tx: &Transaction<'_>) -> Result<()> {
        if let Some(now) = self.at.take() {
            insert_estimates_in(tx, &self.estimates, now)?;
            self.estimates.clear();
        }
        Ok(())
    }
}

/// [`set_estimated_ms_in`] for a visit inserted in this transaction in a batch (an import's): its
/// id is the one every device knows it by (it came from no other device), nothing is queued
/// unless `queues` (the visits' batch read whether this device queues changes for sync:
/// `crate::visits::VisitBatch::queues`), and the row waits in `batch` to be stored with the
/// others of the transaction ([`EstimateBatch::flush_in`]).
pub fn set_new_visit_estimated_ms_in(
    tx: &Transaction<'_>,
    visit: VisitId,
    duration_ms: i64,
    now: Timestamp,
    (batch, queues): (&mut EstimateBatch, bool),
) -> Result<()> {
    if duration_ms <= 0 {
        return Ok(());
    }
    let ms = duration_ms.min(MAX_ESTIMATE_MS);
    batch.estimates.push((visit, ms));
    batch.at = Some(now);
    if queues {
        crate::sync_log::local::queue_in(tx, &crate::sync_log::ops::Op::EstimatedTime { id: visit, ms })?;
    }
    Ok(())
}

/// Stores each (visit, estimated ms) of `estimates` (positive, capped) as [`set_estimated_ms_in`]
/// stores one, in one statement: what a batch of imported visits' durations costs.
fn insert_estimates_in(tx: &Transaction<'_>, estimates: &[(VisitId, i64)], now: Timestamp) -> Result<()> {
    if estimates.is_empty() {
        return Ok(());
    }
    let rows = crate::ids::id_number_rows(estimates.iter().map(|(visit, ms)| (visit.0, *ms)));
    // `WHERE true`: an upsert after a SELECT needs it to be read as one.
    tx.prepare_cached(
        r#"INSERT INTO visit_time (visit_id, active_ms, estimated_ms, updated_at)
           SELECT unhex(value ->> 0), NULL, value ->> 1, :now FROM json_each(:rows) WHERE true
           ON CONFLICT (visit_id) DO UPDATE SET estimated_ms = excluded.estimated_ms,
                                                updated_at = excluded.updated_at"#,
    )?
    .execute(named_params! { ":rows": rows, ":now": now })?;
    Ok(())
}

/// Stores `duration_ms` (positive), capped, as the visit's estimated time; returns what was stored.
fn insert_estimate_in(tx: &Transaction<'_>, visit: VisitId, duration_ms: i64, now: Timestamp) -> Result<i64> {
    let ms = duration_ms.min(MAX_ESTIMATE_MS);
    tx.prepare_cached(
        r#"INSERT INTO visit_time (visit_id, active_ms, estimated_ms, updated_at)
           VALUES (:visit, NULL, :ms, :now)
           ON CONFLICT (visit_id) DO UPDATE SET estimated_ms = excluded.estimated_ms,
                                                updated_at = excluded.updated_at"#,
    )?
    .execute(named_params! { ":visit": visit, ":ms": ms, ":now": now })?;
    Ok(ms)
}

/// How [`list_time`] groups visits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupBy {
    /// By website: the key is the domain.
    Website,
    /// By category: the key is the category id, or `uncategorized`.
    Category,
    /// By calendar day: the key is `YYYY-MM-DD`.
    Day,
    /// By the device that recorded the visit (sync): the key is its name (`this device` for
    /// visits recorded here without sync).
    Device,
}

/// The key of the visits of this device without sync, grouped by device.
pub const THIS_DEVICE: &str = "this device";

impl std::str::FromStr for GroupBy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "website" => Ok(GroupBy::Website),
            "category" => Ok(GroupBy::Category),
            "day" => Ok(GroupBy::Day),
            "device" => Ok(GroupBy::Device),
            other => Err(Error::InvalidInput(format!(
                "group by website, category, day or device, not {other:?}"
            ))),
        }
    }
}

/// Which visits [`list_time`] sums.
#[derive(Clone, Copy, Debug)]
pub struct TimeQuery {
    /// Visits at or after this time.
    pub since: Option<Timestamp>,
    /// Visits before this time.
    pub until: Option<Timestamp>,
    /// The grouping.
    pub by: GroupBy,
}

/// Time spent on one group of visits.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TimeRow {
    /// The domain, category id (`uncategorized` for none yet) or day (`YYYY-MM-DD`).
    pub key: String,
    /// Measured active time (ms).
    pub active_ms: i64,
    /// Estimated time (ms) of the visits that have no measured time.
    pub estimated_ms: i64,
    /// Every visit in the group.
    pub visits: i64,
    /// Visits with a measured time.
    pub measured_visits: i64,
    /// Visits with only an estimate.
    pub estimated_visits: i64,
    /// Grouped by device: the device's name (the key); else `None`.
    pub device: Option<String>,
}

impl TimeRow {
    fn add(&mut self, t: VisitTimes) {
        self.visits += 1;
        match t {
            VisitTimes { active: Some(a), .. } => {
                self.active_ms += a;
                self.measured_visits += 1;
            }
            VisitTimes {
                estimated: Some(e), ..
            } => {
                self.estimated_ms += e;
                self.estimated_visits += 1;
            }
            _ => {}
        }
    }

    /// Measured plus estimated time.
    pub fn total_ms(&self) -> i64 {
        self.active_ms + self.estimated_ms
    }
}

/// A visit's known times, as [`for_each_visit`] gives them.
#[derive(Clone, Copy)]
pub(crate) struct VisitTimes {
    /// Measured active time (ms).
    pub(crate) active: Option<i64>,
    /// Estimated time (ms).
    pub(crate) estimated: Option<i64>,
}

/// The id range `[low, below)` of the visits made in `[since, until)`.
fn id_range(since: Option<Timestamp>, until: Option<Timestamp>) -> (VisitId, VisitId) {
    let low = since
        .map(VisitId::lower_bound)
        .unwrap_or(VisitId(uuid::Uuid::nil()));
    let below = until
        .map(VisitId::lower_bound)
        .unwrap_or(VisitId(uuid::Uuid::max()));
    (low, below)
}

/// A visit to `url` now with `active_ms` measured: for the unit tests of what reads measured time.
#[cfg(test)]
pub(crate) fn measured_visit_for_tests(store: &crate::Store, url: &str, active_ms: i64) -> VisitId {
    let rec = store
        .record_visit(&crate::NewVisit {
            url,
            title: None,
            visited_at: store.now(),
            source: "test",
            source_visit_id: None,
        })
        .unwrap();
    let id = rec.visit_id.unwrap();
    store
        .write(None, |tx| set_active_ms_in(tx, id, active_ms, store.now()))
        .unwrap();
    id
}

/// Calls `f` with every visit made in `[since, until)`: its time, domain, category and times.
pub(crate) fn for_each_visit(
    conn: &Connection,
    since: Option<Timestamp>,
    until: Option<Timestamp>,
    mut f: impl FnMut(Timestamp, &str, Option<&str>, VisitTimes, Option<&str>),
) -> Result<()> {
    let (low, below) = id_range(since, until);
    let mut stmt = conn.prepare_cached(concat!(
        r#"SELECT v.visited_at, w.domain, w.category, t.active_ms, t.estimated_ms, "#,
        crate::history::device_name_of_v!(),
        r#" AS device
           FROM visit v
           JOIN website w ON w.id = v.website_id
           LEFT JOIN visit_time t ON t.visit_id = v.id
           WHERE v.id >= :low AND v.id < :below"#
    ))?;
    let mut rows = stmt.query(named_params! { ":low": low, ":below": below })?;
    while let Some(r) = rows.next()? {
        let at: Timestamp = r.get("visited_at")?;
        // A visit id's time is its millisecond: the range is exact to the millisecond, this check
        // makes it exact to the microsecond.
        if since.is_some_and(|s| at < s) || until.is_some_and(|u| at >= u) {
            continue;
        }
        let domain: String = r.get("domain")?;
        let category: Option<String> = r.get("category")?;
        let times = VisitTimes {
            active: r.get("active_ms")?,
            estimated: r.get("estimated_ms")?,
        };
        let device: Option<String> = r.get("device")?;
        f(at, &domain, category.as_deref(), times, device.as_deref());
    }
    Ok(())
}

/// The calendar day of `t` in `tz`.
pub fn day_of<Tz: TimeZone>(t: Timestamp, tz: &Tz) -> NaiveDate {
    DateTime::<Utc>::from_timestamp_micros(t.as_micros())
        .unwrap_or_default()
        .with_timezone(tz)
        .date_naive()
}

fn day_key(d: NaiveDate) -> String {
    format!("{:04}-{:02}-{:02}", d.year(), d.month(), d.day())
}

/// The key of a category id for rows (`uncategorized` for none yet).
fn category_key(category: Option<&str>) -> &str {
    category.unwrap_or("uncategorized")
}

/// Most time first, then most visits, then by key: the order of every "by time" list.
fn by_time(a: &TimeRow, b: &TimeRow) -> std::cmp::Ordering {
    b.total_ms()
        .cmp(&a.total_ms())
        .then(b.visits.cmp(&a.visits))
        .then(a.key.cmp(&b.key))
}

/// Time spent per website, category, day (`tz`'s calendar days) or device on the visits `q`
/// selects.
/// Websites and categories come most time first (then most visits, then key); days in order.
pub fn list_time<Tz: TimeZone>(conn: &Connection, q: &TimeQuery, tz: &Tz) -> Result<Vec<TimeRow>> {
    if let (Some(s), Some(u)) = (q.since, q.until) {
        if s >= u {
            return Err(Error::InvalidInput("the time range ends before it starts".into()));
        }
    }
    let mut groups: HashMap<String, TimeRow> = HashMap::new();
    for_each_visit(conn, q.since, q.until, |at, domain, category, times, device| {
        let key = match q.by {
            GroupBy::Website => domain.to_owned(),
            GroupBy::Category => category_key(category).to_owned(),
            GroupBy::Day => day_key(day_of(at, tz)),
            GroupBy::Device => device.unwrap_or(THIS_DEVICE).to_owned(),
        };
        groups
            .entry(key)
            .or_insert_with_key(|k| TimeRow {
                key: k.clone(),
                device: (q.by == GroupBy::Device).then(|| k.clone()),
                ..TimeRow::default()
            })
            .add(times);
    })?;
    let mut rows: Vec<TimeRow> = groups.into_values().collect();
    match q.by {
        GroupBy::Day => rows.sort_by(|a, b| a.key.cmp(&b.key)),
        _ => rows.sort_by(by_time),
    }
    Ok(rows)
}

/// One calendar day: its totals, and the same per category.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DayTime {
    /// `YYYY-MM-DD`.
    pub day: String,
    /// The day's totals (`key` is the day).
    pub total: TimeRow,
    /// Per category, most time first; empty on a day with no visits.
    pub categories: Vec<TimeRow>,
}

/// Every calendar day from `first` for `days` days (in `tz`), each with its time per category;
/// a day without visits is listed with zero visits, so a view can say "nothing recorded".
pub fn list_days<Tz: TimeZone>(
    conn: &Connection,
    first: NaiveDate,
    days: u32,
    tz: &Tz,
) -> Result<Vec<DayTime>> {
    if days == 0 || days > MAX_DAYS {
        return Err(Error::InvalidInput(format!(
            "ask for 1 to {MAX_DAYS} days, not {days}"
        )));
    }
    let start = start_of_day(first, tz)?;
    let last = first
        .checked_add_days(chrono::Days::new(u64::from(days)))
        .ok_or_else(|| Error::InvalidInput("that day range is outside the calendar".into()))?;
    let end = start_of_day(last, tz)?;
    let mut per_day: HashMap<NaiveDate, (TimeRow, HashMap<String, TimeRow>)> = HashMap::new();
    for_each_visit(
        conn,
        Some(start),
        Some(end),
        |at, _domain, category, times, _device| {
            let (total, cats) = per_day.entry(day_of(at, tz)).or_default();
            total.add(times);
            let key = category_key(category);
            cats.entry(key.to_owned())
                .or_insert_with(|| TimeRow {
                    key: key.to_owned(),
                    ..TimeRow::default()
                })
                .add(times);
        },
    )?;
    let mut out = Vec::with_capacity(days as usize);
    for day in first.iter_days().take(days as usize) {
        let (mut total, cats) = per_day.remove(&day).unwrap_or_default();
        total.key = day_key(day);
        let mut categories: Vec<TimeRow> = cats.into_values().collect();
        categories.sort_by(by_time);
        out.push(DayTime {
            day: day_key(day),
            total,
            categories,
        });
    }
    Ok(out)
}

/// The first instant of `day` in `tz` (the earliest, where a time change skips midnight).
pub(crate) fn start_of_day<Tz: TimeZone>(day: NaiveDate, tz: &Tz) -> Result<Timestamp> {
    let midnight = day.and_time(chrono::NaiveTime::MIN);
    // A day that starts in a DST gap has no midnight: its first hour that exists starts it.
    (0..=3)
        .find_map(|h| {
            tz.from_local_datetime(&(midnight + chrono::Duration::hours(h)))
                .earliest()
        })
        .map(|t| Timestamp(t.with_timezone(&Utc).timestamp_micros()))
        .ok_or_else(|| Error::InvalidInput(format!("{day} has no start in this time zone")))
}

/// The known time of one visit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct VisitTime {
    /// The visit.
    pub visit_id: VisitId,
    /// Measured active time (ms), if measured.
    pub active_ms: Option<i64>,
    /// Estimated time (ms), if estimated.
    pub estimated_ms: Option<i64>,
}

/// Most visits [`list_visit_times`] looks up at once.
pub const MAX_VISIT_TIMES: usize = 1_000;

/// The known times of `visits` (those without a known time are left out).
pub fn list_visit_times(conn: &Connection, visits: &[VisitId]) -> Result<Vec<VisitTime>> {
    if visits.len() > MAX_VISIT_TIMES {
        return Err(Error::InvalidInput(format!(
            "look up at most {MAX_VISIT_TIMES} visits at a time, not {}",
            visits.len()
        )));
    }
    let mut stmt =
        conn.prepare_cached(r#"SELECT active_ms, estimated_ms FROM visit_time WHERE visit_id = :visit"#)?;
    let mut out = Vec::new();
    for &visit_id in visits {
        let mut rows = stmt.query(named_params! { ":visit": visit_id })?;
        if let Some(r) = rows.next()? {
            out.push(VisitTime {
                visit_id,
                active_ms: r.get("active_ms")?,
                estimated_ms: r.get("estimated_ms")?,
            });
        }
    }
    Ok(out)
}

impl Store {
    /// Time spent per website, category or day (calendar days of `tz`).
    pub fn time_spent<Tz: TimeZone>(&self, q: &TimeQuery, tz: &Tz) -> Result<Vec<TimeRow>> {
        self.with_conn(|c| list_time(c, q, tz))
    }

    /// Time per category on each of `days` days from `first` (calendar days of `tz`).
    pub fn time_by_day<Tz: TimeZone>(&self, first: NaiveDate, days: u32, tz: &Tz) -> Result<Vec<DayTime>> {
        self.with_conn(|c| list_days(c, first, days, tz))
    }

    /// The known times of `visits`.
    pub fn visit_times(&self, visits: &[VisitId]) -> Result<Vec<VisitTime>> {
        self.with_conn(|c| list_visit_times(c, visits))
    }

    /// The last `days` local calendar days up to today (by the store's clock), oldest first, each
    /// with its time per category: what the app's overview charts.
    pub fn recent_days(&self, days: u32) -> Result<Vec<DayTime>> {
        let (first, _) = recent_window(self.now(), days)?;
        self.time_by_day(first, days, &chrono::Local)
    }

    /// The `n` websites with the most time (measured, then estimated) over the last `days` local
    /// calendar days; websites without any known time are left out.
    pub fn top_websites_by_time(&self, days: u32, n: usize) -> Result<Vec<TimeRow>> {
        let (_, since) = recent_window(self.now(), days)?;
        let q = TimeQuery {
            since: Some(since),
            until: None,
            by: GroupBy::Website,
        };
        let mut rows = self.time_spent(&q, &chrono::Local)?;
        rows.retain(|r| r.total_ms() > 0);
        rows.truncate(n);
        Ok(rows)
    }
}

/// The first local day of the `days` days ending today, and the instant it starts.
fn recent_window(now: Timestamp, days: u32) -> Result<(NaiveDate, Timestamp)> {
    if days == 0 || days > MAX_DAYS {
        return Err(Error::InvalidInput(format!(
            "ask for 1 to {MAX_DAYS} days, not {days}"
        )));
    }
    let today = day_of(now, &chrono::Local);
    let first = today
        .checked_sub_days(chrono::Days::new(u64::from(days - 1)))
        .ok_or_else(|| Error::InvalidInput("that day range is outside the calendar".into()))?;
    Ok((first, start_of_day(first, &chrono::Local)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::FixedOffset;

    #[test]
    fn a_visit_counts_its_measured_time_before_its_estimate() {
        let mut row = TimeRow::default();
        row.add(VisitTimes {
            active: Some(5),
            estimated: Some(100),
        });
        row.add(VisitTimes {
            active: None,
            estimated: Some(7),
        });
        row.add(VisitTimes {
            active: None,
            estimated: None,
        });
        assert_eq!(
            (
                row.active_ms,
                row.estimated_ms,
                row.visits,
                row.measured_visits,
                row.estimated_visits
            ),
            (5, 7, 3, 1, 1)
        );
        assert_eq!(row.total_ms(), 12);
    }

    #[test]
    fn days_are_the_time_zones_calendar_days() {
        // 2026-11-29T23:30:00Z is already the 30th two hours east of UTC.
        let t = Timestamp::parse_rfc3339("2026-11-29T23:30:00Z").unwrap();
        assert_eq!(day_key(day_of(t, &Utc)), "2026-11-29");
        let east = FixedOffset::east_opt(2 * 3600).unwrap();
        assert_eq!(day_key(day_of(t, &east)), "2026-11-30");
        let day = NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
        assert_eq!(
            start_of_day(day, &east).unwrap(),
            Timestamp::parse_rfc3339("2026-11-29T22:00:00Z").unwrap()
        );
    }

    #[test]
    fn group_names_parse() {
        assert_eq!("Day".parse::<GroupBy>().unwrap(), GroupBy::Day);
        assert!("week"
            .parse::<GroupBy>()
            .unwrap_err()
            .to_string()
            .contains("week"));
    }
}
