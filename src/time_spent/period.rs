//! A chosen period's time, as the app's overview answers "where did my time go": the headline
//! total against the comparison period, the split by category, the top websites (by time and by
//! visits) with their category, each day's time, a day's visits on a timeline, and one website's
//! time per day.
//!
//! A period is whole calendar days of the caller's time zone ([`Period`]); the comparison period is
//! the caller's choice too (the day before, the same days of last week), so the overview can say
//! "40 min more than yesterday".
//!
//! Invariants: the same counting as [`super::list_time`] (a visit counts its measured time if it
//! has one, else its estimate, and is counted once), so a period's total equals the sum of its days
//! and of its categories; websites with no known time are never in a "by time" list. The headline
//! ([`super::headline`]) is that total, measured and estimated together, never the measured part
//! alone.

use std::collections::HashMap;

use chrono::{NaiveDate, TimeZone};
use rusqlite::{named_params, Connection, OptionalExtension};

use super::{
    by_time, category_key, day_key, day_of, for_each_visit, list_days, start_of_day, DayTime, TimeRow,
    MAX_DAYS,
};
use crate::category::{Category, CategorySource};
use crate::confidence::Confidence;
use crate::error::{Error, Result};
use crate::ids::VisitId;
use crate::store::Store;
use crate::time::Timestamp;

/// Whole calendar days: `days` days from `first`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Period {
    /// The first day.
    pub first: NaiveDate,
    /// How many days (1..=[`MAX_DAYS`]).
    pub days: u32,
}

impl Period {
    /// The period of `days` days from `first`, checked.
    pub fn new(first: NaiveDate, days: u32) -> Result<Period> {
        if days == 0 || days > MAX_DAYS {
            return Err(Error::InvalidInput(format!(
                "a period is 1 to {MAX_DAYS} days, not {days}"
            )));
        }
        first
            .checked_add_days(chrono::Days::new(u64::from(days)))
            .ok_or_else(|| Error::InvalidInput("that period is outside the calendar".into()))?;
        Ok(Period { first, days })
    }

    /// The period of `days` days from `first` written `YYYY-MM-DD` (what the app's UI sends).
    pub fn parse(first: &str, days: u32) -> Result<Period> {
        let day = NaiveDate::parse_from_str(first.trim(), "%Y-%m-%d").map_err(|_| {
            Error::InvalidInput(format!(
                "{:?} is not a day (expected YYYY-MM-DD, e.g. 2026-11-30)",
                crate::error::truncate_chars(first, 40)
            ))
        })?;
        Period::new(day, days)
    }

    /// The period of the same length just before this one.
    pub fn previous(&self) -> Result<Period> {
        let first = self
            .first
            .checked_sub_days(chrono::Days::new(u64::from(self.days)))
            .ok_or_else(|| Error::InvalidInput("that period is outside the calendar".into()))?;
        Period::new(first, self.days)
    }

    /// The day after the period's last.
    fn end(&self) -> NaiveDate {
        // Checked in `new`.
        self.first
            .checked_add_days(chrono::Days::new(u64::from(self.days)))
            .unwrap_or(NaiveDate::MAX)
    }

    /// The instants `[since, until)` the period covers in `tz`.
    pub fn bounds<Tz: TimeZone>(&self, tz: &Tz) -> Result<(Timestamp, Timestamp)> {
        Ok((start_of_day(self.first, tz)?, start_of_day(self.end(), tz)?))
    }
}

/// A website's time with its category, for the overview's lists.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct WebsiteTime {
    /// The domain (as stored: punycode for an internationalised name).
    pub domain: String,
    /// The domain as people read it (Unicode).
    pub display: String,
    /// Its category, once classified.
    pub category: Option<Category>,
    /// Who set it.
    pub category_source: Option<CategorySource>,
    /// How sure it is.
    pub category_confidence: Option<Confidence>,
    /// Its time and visits in the period (`key` is the domain).
    pub time: TimeRow,
}

/// The overview of one period.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PeriodOverview {
    /// The period's first day (`YYYY-MM-DD`).
    pub first: String,
    /// Its length in days.
    pub days: u32,
    /// The period's totals (`key` is its first day).
    pub total: TimeRow,
    /// The comparison period's totals (`key` is its first day).
    pub previous: TimeRow,
    /// The period summed up in one figure on the basis every list of the overview uses, against
    /// the comparison period.
    pub headline: super::headline::Headline,
    /// Per category (`uncategorized` for none yet), most time first, then most visits.
    pub categories: Vec<TimeRow>,
    /// Per device that recorded the visits (sync; `key` and `device` are its name), most time
    /// first; empty on a device that does not sync.
    pub devices: Vec<TimeRow>,
    /// The websites with the most time; none without any known time.
    pub top_by_time: Vec<WebsiteTime>,
    /// The most visited websites.
    pub top_by_visits: Vec<WebsiteTime>,
    /// Every day of the period with its time per category.
    pub per_day: Vec<DayTime>,
    /// When the newest visit of the whole history was made, if there is one (an empty period can
    /// point the user to the last day that has something).
    pub latest_visit: Option<Timestamp>,
}

/// The time of the newest visit, if any: the last key of the visit table.
fn latest_visit(conn: &Connection) -> Result<Option<Timestamp>> {
    Ok(conn
        .prepare_cached(r#"SELECT visited_at FROM visit ORDER BY id DESC LIMIT 1"#)?
        .query_row([], |r| r.get("visited_at"))
        .optional()?)
}

/// The totals of the visits in `[since, until)`.
fn total_of(conn: &Connection, since: Timestamp, until: Timestamp, key: String) -> Result<TimeRow> {
    let mut total = TimeRow {
        key,
        ..TimeRow::default()
    };
    for_each_visit(conn, Some(since), Some(until), |_, _, _, times, _| {
        total.add(times);
    })?;
    Ok(total)
}

/// `domain`'s category, its source and confidence.
fn website_category(
    conn: &Connection,
    domain: &str,
) -> Result<(Option<Category>, Option<CategorySource>, Option<Confidence>)> {
    Ok(conn
        .prepare_cached(
            r#"SELECT category, category_source, category_confidence FROM website WHERE domain = :domain"#,
        )?
        .query_row(named_params! { ":domain": domain }, |r| {
            Ok((
                r.get("category")?,
                r.get("category_source")?,
                r.get("category_confidence")?,
            ))
        })
        .optional()?
        .unwrap_or((None, None, None)))
}

fn with_category(conn: &Connection, time: TimeRow) -> Result<WebsiteTime> {
    let (category, category_source, category_confidence) = website_category(conn, &time.key)?;
    Ok(WebsiteTime {
        domain: time.key.clone(),
        display: crate::domain::unicode_form(&time.key).into_owned(),
        category,
        category_source,
        category_confidence,
        time,
    })
}

/// The overview of `period`, compared with `compare`, with at most `top` websites per list
/// (calendar days of `tz`).
pub fn get_overview<Tz: TimeZone>(
    conn: &Connection,
    period: Period,
    compare: Period,
    top: usize,
    tz: &Tz,
) -> Result<PeriodOverview> {
    let (since, until) = period.bounds(tz)?;
    let mut total = TimeRow {
        key: day_key(period.first),
        ..TimeRow::default()
    };
    let mut categories: HashMap<String, TimeRow> = HashMap::new();
    let mut websites: HashMap<String, TimeRow> = HashMap::new();
    let mut devices: HashMap<String, TimeRow> = HashMap::new();
    for_each_visit(
        conn,
        Some(since),
        Some(until),
        |_, domain, category, times, device| {
            total.add(times);
            if let Some(d) = device {
                devices
                    .entry(d.to_owned())
                    .or_insert_with(|| TimeRow {
                        key: d.to_owned(),
                        device: Some(d.to_owned()),
                        ..TimeRow::default()
                    })
                    .add(times);
            }
            let key = category_key(category);
            categories
                .entry(key.to_owned())
                .or_insert_with(|| TimeRow {
                    key: key.to_owned(),
                    ..TimeRow::default()
                })
                .add(times);
            websites
                .entry(domain.to_owned())
                .or_insert_with(|| TimeRow {
                    key: domain.to_owned(),
                    ..TimeRow::default()
                })
                .add(times);
        },
    )?;
    let mut categories: Vec<TimeRow> = categories.into_values().collect();
    categories.sort_by(by_time);
    let mut devices: Vec<TimeRow> = devices.into_values().collect();
    devices.sort_by(by_time);
    let mut sites: Vec<TimeRow> = websites.into_values().collect();
    sites.sort_by(by_time);
    let top_by_time = sites
        .iter()
        .filter(|r| r.total_ms() > 0)
        .take(top)
        .cloned()
        .map(|t| with_category(conn, t))
        .collect::<Result<Vec<_>>>()?;
    sites.sort_by(|a, b| b.visits.cmp(&a.visits).then(a.key.cmp(&b.key)));
    let top_by_visits = sites
        .into_iter()
        .take(top)
        .map(|t| with_category(conn, t))
        .collect::<Result<Vec<_>>>()?;
    let (prev_since, prev_until) = compare.bounds(tz)?;
    let previous = total_of(conn, prev_since, prev_until, day_key(compare.first))?;
    Ok(PeriodOverview {
        first: day_key(period.first),
        days: period.days,
        headline: super::headline::Headline::new(&total, &previous),
        total,
        previous,
        categories,
        devices,
        top_by_time,
        top_by_visits,
        per_day: list_days(conn, period.first, period.days, tz)?,
        latest_visit: latest_visit(conn)?,
    })
}

/// One visit on a day's timeline.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TimelineVisit {
    /// The visit.
    pub visit_id: VisitId,
    /// When it started.
    pub visited_at: Timestamp,
    /// The page.
    pub url: String,
    /// Its title.
    pub title: Option<String>,
    /// The website's domain (as stored).
    pub domain: String,
    /// The domain as people read it.
    pub display: String,
    /// The website's category.
    pub category: Option<Category>,
    /// Measured time (ms), if measured.
    pub active_ms: Option<i64>,
    /// Estimated time (ms), if only estimated.
    pub estimated_ms: Option<i64>,
}

/// A day's (or any range's) visits in time order.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Timeline {
    /// The visits, oldest first.
    pub visits: Vec<TimelineVisit>,
    /// True if there were more than [`MAX_TIMELINE`] visits (the oldest are shown).
    pub truncated: bool,
}

/// Most visits one timeline holds (a day of very busy browsing is a few thousand).
pub const MAX_TIMELINE: usize = 5_000;

/// The visits made in `[since, until)`, oldest first, with their website's category and time.
pub fn list_timeline(conn: &Connection, since: Timestamp, until: Timestamp) -> Result<Timeline> {
    if since >= until {
        return Err(Error::InvalidInput("the time range ends before it starts".into()));
    }
    let mut stmt = conn.prepare_cached(
        r#"SELECT v.id, v.visited_at, v.url, v.title, w.domain, w.category, t.active_ms, t.estimated_ms
           FROM visit v
           JOIN website w ON w.id = v.website_id
           LEFT JOIN visit_time t ON t.visit_id = v.id
           WHERE v.id >= :low AND v.id < :below
           ORDER BY v.id"#,
    )?;
    let mut rows = stmt.query(named_params! {
        ":low": VisitId::lower_bound(since),
        ":below": VisitId::lower_bound(until),
    })?;
    let mut out = Timeline::default();
    while let Some(r) = rows.next()? {
        let at: Timestamp = r.get("visited_at")?;
        if at < since || at >= until {
            continue;
        }
        if out.visits.len() == MAX_TIMELINE {
            out.truncated = true;
            break;
        }
        let domain: String = r.get("domain")?;
        out.visits.push(TimelineVisit {
            visit_id: r.get("id")?,
            visited_at: at,
            url: r.get("url")?,
            title: r.get("title")?,
            display: crate::domain::unicode_form(&domain).into_owned(),
            domain,
            category: r.get("category")?,
            active_ms: r.get("active_ms")?,
            estimated_ms: r.get("estimated_ms")?,
        });
    }
    Ok(out)
}

/// `domain`'s time on every day of `period` (days without a visit have zero visits), oldest
/// first (calendar days of `tz`).
pub fn list_website_days<Tz: TimeZone>(
    conn: &Connection,
    domain: &str,
    period: Period,
    tz: &Tz,
) -> Result<Vec<TimeRow>> {
    let (since, until) = period.bounds(tz)?;
    let mut per_day: HashMap<NaiveDate, TimeRow> = HashMap::new();
    for_each_visit(conn, Some(since), Some(until), |at, d, _, times, _| {
        if d == domain {
            per_day.entry(day_of(at, tz)).or_default().add(times);
        }
    })?;
    Ok(period
        .first
        .iter_days()
        .take(period.days as usize)
        .map(|day| {
            let mut row = per_day.remove(&day).unwrap_or_default();
            row.key = day_key(day);
            row
        })
        .collect())
}

impl Store {
    /// The overview of `period` against `compare` (local calendar days).
    pub fn period_overview(&self, period: Period, compare: Period, top: usize) -> Result<PeriodOverview> {
        self.with_conn(|c| get_overview(c, period, compare, top, &chrono::Local))
    }

    /// The visits of `period` (local calendar days), oldest first.
    pub fn timeline(&self, period: Period) -> Result<Timeline> {
        let (since, until) = period.bounds(&chrono::Local)?;
        self.with_conn(|c| list_timeline(c, since, until))
    }

    /// `domain`'s time on each day of `period` (local calendar days).
    pub fn website_days(&self, domain: &str, period: Period) -> Result<Vec<TimeRow>> {
        self.with_conn(|c| list_website_days(c, domain, period, &chrono::Local))
    }

    /// Today, by the store's clock, as a local calendar day.
    pub fn today(&self) -> NaiveDate {
        day_of(self.now(), &chrono::Local)
    }

    /// The last `days` local days, today included.
    pub fn recent_period(&self, days: u32) -> Result<Period> {
        let (first, _) = super::recent_window(self.now(), days)?;
        Period::new(first, days)
    }

    /// The newest visits (at most `limit`) to `domain` in `period` (local calendar days).
    pub fn website_visits_in(
        &self,
        domain: &str,
        period: Period,
        limit: usize,
    ) -> Result<Vec<crate::history::HistoryRow>> {
        let (since, _) = period.bounds(&chrono::Local)?;
        self.website_visits(domain, since, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::visits::NewVisit;
    use chrono::{FixedOffset, Utc};

    fn day(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    fn at(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(s).unwrap()
    }

    /// Records a visit at `when` with `active_ms` measured (or `estimate` estimated).
    fn seed(store: &Store, domain: &str, when: &str, active: Option<i64>, estimate: Option<i64>) -> VisitId {
        let rec = store
            .record_visit(&NewVisit {
                url: &format!("https://{domain}/{when}"),
                title: Some(domain),
                visited_at: at(when),
                source: "test",
                source_visit_id: Some(&format!("{domain}{when}")),
            })
            .unwrap();
        let id = rec.visit_id.unwrap();
        store
            .write(None, |tx| {
                if let Some(ms) = active {
                    super::super::set_active_ms_in(tx, id, ms, store.now())?;
                }
                if let Some(ms) = estimate {
                    super::super::set_estimated_ms_in(tx, id, ms, store.now())?;
                }
                Ok(())
            })
            .unwrap();
        id
    }

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("t.db")).unwrap();
        (dir, store)
    }

    #[test]
    fn a_periods_total_splits_by_category_and_compares_with_the_period_before() {
        let (_dir, store) = store();
        // Monday: 10 min news, 2 min chat; one visit with only an estimate, one with no time.
        seed(&store, "news.test", "2026-11-30T09:00:00Z", Some(600_000), None);
        seed(&store, "chat.test", "2026-11-30T10:00:00Z", Some(120_000), None);
        seed(&store, "old.test", "2026-11-30T11:00:00Z", None, Some(30_000));
        seed(&store, "untimed.test", "2026-11-30T12:00:00Z", None, None);
        // Sunday: 5 min news. Tuesday (outside both): 1 h.
        seed(&store, "news.test", "2026-11-29T09:00:00Z", Some(300_000), None);
        seed(&store, "news.test", "2026-12-01T09:00:00Z", Some(3_600_000), None);
        store.set_user_category("news.test", Category::News).unwrap();
        store
            .set_user_category("chat.test", Category::Communication)
            .unwrap();

        let monday = Period::new(day("2026-11-30"), 1).unwrap();
        let sunday = Period::new(day("2026-11-29"), 1).unwrap();
        let o = store
            .with_conn(|c| get_overview(c, monday, sunday, 10, &Utc))
            .unwrap();
        assert_eq!(
            (o.total.active_ms, o.total.estimated_ms, o.total.visits),
            (720_000, 30_000, 4)
        );
        assert_eq!(o.previous.total_ms(), 300_000);
        let cats: Vec<(&str, i64)> = o
            .categories
            .iter()
            .map(|c| (c.key.as_str(), c.total_ms()))
            .collect();
        assert_eq!(cats[0], ("news", 600_000));
        assert_eq!(cats[1], ("communication", 120_000));
        assert_eq!(
            o.categories.iter().map(TimeRow::total_ms).sum::<i64>(),
            o.total.total_ms()
        );
        // By time: the untimed website is left out; by visits, it is there.
        let by_time: Vec<&str> = o.top_by_time.iter().map(|w| w.domain.as_str()).collect();
        assert_eq!(by_time, ["news.test", "chat.test", "old.test"]);
        assert_eq!(o.top_by_time[0].category, Some(Category::News));
        assert_eq!(o.top_by_time[0].category_source, Some(CategorySource::User));
        assert!(o.top_by_visits.iter().any(|w| w.domain == "untimed.test"));
        assert_eq!(o.per_day.len(), 1);
        assert_eq!(o.per_day[0].total.total_ms(), o.total.total_ms());
        assert_eq!(o.latest_visit, Some(at("2026-12-01T09:00:00Z")));
    }

    #[test]
    fn periods_are_the_time_zones_days() {
        let (_dir, store) = store();
        // 23:30 UTC on the 29th is already the 30th two hours east.
        seed(&store, "late.test", "2026-11-29T23:30:00Z", Some(60_000), None);
        let east = FixedOffset::east_opt(2 * 3600).unwrap();
        let p30 = Period::new(day("2026-11-30"), 1).unwrap();
        let p29 = Period::new(day("2026-11-29"), 1).unwrap();
        let o = store.with_conn(|c| get_overview(c, p30, p29, 5, &east)).unwrap();
        assert_eq!((o.total.total_ms(), o.previous.visits), (60_000, 0));
        let o = store.with_conn(|c| get_overview(c, p30, p29, 5, &Utc)).unwrap();
        assert_eq!((o.total.visits, o.previous.total_ms()), (0, 60_000));
    }

    #[test]
    fn a_timeline_lists_the_days_visits_in_order_with_their_time() {
        let (_dir, store) = store();
        let b = seed(&store, "b.test", "2026-11-30T10:00:00Z", None, Some(45_000));
        let a = seed(&store, "a.test", "2026-11-30T08:00:00Z", Some(90_000), None);
        seed(&store, "other-day.test", "2026-12-01T08:00:00Z", Some(1), None);
        let (since, until) = Period::new(day("2026-11-30"), 1).unwrap().bounds(&Utc).unwrap();
        let t = store.with_conn(|c| list_timeline(c, since, until)).unwrap();
        let got: Vec<(VisitId, Option<i64>, Option<i64>)> = t
            .visits
            .iter()
            .map(|v| (v.visit_id, v.active_ms, v.estimated_ms))
            .collect();
        assert_eq!(got, [(a, Some(90_000), None), (b, None, Some(45_000))]);
        assert!(!t.truncated);
        assert!(store.with_conn(|c| list_timeline(c, until, since)).is_err());
    }

    #[test]
    fn a_websites_days_are_every_day_of_the_period() {
        let (_dir, store) = store();
        seed(&store, "site.test", "2026-11-28T10:00:00Z", Some(60_000), None);
        seed(&store, "site.test", "2026-11-30T10:00:00Z", Some(30_000), None);
        seed(&store, "else.test", "2026-11-30T11:00:00Z", Some(99_000), None);
        let p = Period::new(day("2026-11-28"), 3).unwrap();
        let days = store
            .with_conn(|c| list_website_days(c, "site.test", p, &Utc))
            .unwrap();
        let got: Vec<(&str, i64, i64)> = days
            .iter()
            .map(|d| (d.key.as_str(), d.total_ms(), d.visits))
            .collect();
        assert_eq!(
            got,
            [
                ("2026-11-28", 60_000, 1),
                ("2026-11-29", 0, 0),
                ("2026-11-30", 30_000, 1)
            ]
        );
    }

    #[test]
    fn a_period_outside_the_limits_is_refused() {
        assert!(Period::new(day("2026-11-30"), 0).is_err());
        assert!(Period::new(day("2026-11-30"), MAX_DAYS + 1).is_err());
        assert!(Period::new(NaiveDate::MAX, 1).is_err());
        assert!(Period::parse("30.11.2026", 1).is_err());
        let p = Period::parse("2026-11-30", 7).unwrap();
        assert_eq!(p.previous().unwrap(), Period::new(day("2026-11-23"), 7).unwrap());
    }
}
