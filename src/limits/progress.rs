//! How each limit and goal stands: the measured active time of its target in its period (today,
//! this ISO week; calendar days of the caller's time zone), over every visit in this database,
//! so every synced device's; and the weekly report (each category this week against last week,
//! each limit's state per day).
//!
//! Only measured active time (`visit_time.active_ms`, from the browser extension) counts: an
//! imported estimate is a guess from a tab's open time, and a limit kept or broken on a guess
//! would be noise. A visit with only an estimate counts nothing.

use std::collections::HashMap;

use chrono::{Datelike, NaiveDate, TimeZone};
use rusqlite::Connection;

use super::{list_in, Kind, Limit, Period, Target};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::time::Timestamp;
use crate::time_spent::{day_of, for_each_visit, start_of_day};

/// Where a limit or goal stands in a period.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// A limit not passed (so far).
    Kept,
    /// A limit passed.
    Over,
    /// A goal reached.
    Met,
    /// A goal not reached (yet).
    NotYet,
}

crate::names::named!(State {
    Kept = "kept",
    Over = "over",
    Met = "met",
    NotYet = "not_yet",
});

impl State {
    /// The state of `kind` of `minutes` after `active_ms`.
    pub fn of(kind: Kind, minutes: u32, active_ms: i64) -> State {
        let limit_ms = i64::from(minutes) * 60_000;
        match kind {
            Kind::Max if active_ms > limit_ms => State::Over,
            Kind::Max => State::Kept,
            Kind::Min if active_ms >= limit_ms => State::Met,
            Kind::Min => State::NotYet,
        }
    }

    /// True for a limit kept or a goal met.
    pub fn is_good(self) -> bool {
        matches!(self, State::Kept | State::Met)
    }
}

/// A limit or goal with its progress in the current period.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Progress {
    /// The limit or goal.
    #[serde(flatten)]
    pub limit: Limit,
    /// The target's name: the category's, or the domain in its own script.
    pub target_name: String,
    /// The minutes in milliseconds.
    pub limit_ms: i64,
    /// The period's first day (`YYYY-MM-DD`).
    pub period_first_day: String,
    /// The period's last day (`YYYY-MM-DD`).
    pub period_last_day: String,
    /// The measured active time in the period so far (estimated time is not counted).
    pub active_ms: i64,
    /// `kept`, `over`, `met` or `not_yet`.
    pub state: State,
}

/// The Monday of `day`'s ISO week.
pub fn week_start(day: NaiveDate) -> NaiveDate {
    day - chrono::Days::new(u64::from(day.weekday().num_days_from_monday()))
}

fn day_key(d: NaiveDate) -> String {
    d.format("%Y-%m-%d").to_string()
}

fn calendar(what: &str) -> Error {
    Error::InvalidInput(format!("{what} is outside the calendar"))
}

/// Measured active time per limit (index into `limits`) and per day from `first` for `days` days.
fn active_per_day<Tz: TimeZone>(
    conn: &Connection,
    limits: &[Limit],
    first: NaiveDate,
    days: usize,
    tz: &Tz,
    mut per_category: impl FnMut(usize, Option<&str>, i64),
) -> Result<Vec<Vec<i64>>> {
    let targets: Vec<Target> = limits.iter().map(Limit::target).collect();
    let last = first
        .checked_add_days(chrono::Days::new(days as u64))
        .ok_or_else(|| calendar("that week"))?;
    let mut sums = vec![vec![0_i64; days]; limits.len()];
    for_each_visit(
        conn,
        Some(start_of_day(first, tz)?),
        Some(start_of_day(last, tz)?),
        |at, domain, category, times, _device| {
            // Measured time only: an estimate counts nothing toward a limit or a goal.
            let Some(active) = times.active else { return };
            let Ok(i) = usize::try_from((day_of(at, tz) - first).num_days()) else {
                return;
            };
            if i >= days {
                return;
            }
            per_category(i, category, active);
            for (t, sum) in targets.iter().zip(sums.iter_mut()) {
                if t.covers(domain, category) {
                    sum[i] += active;
                }
            }
        },
    )?;
    Ok(sums)
}

/// Every limit and goal with its measured active time today (day) or this ISO week (week), on
/// `tz`'s calendar at `now`.
pub fn list_progress<Tz: TimeZone>(conn: &Connection, now: Timestamp, tz: &Tz) -> Result<Vec<Progress>> {
    let limits = list_in(conn)?;
    let today = day_of(now, tz);
    let monday = week_start(today);
    let sums = active_per_day(conn, &limits, monday, 7, tz, |_, _, _| {})?;
    let today_i = today.weekday().num_days_from_monday() as usize;
    Ok(limits
        .into_iter()
        .zip(sums)
        .map(|(limit, per_day)| {
            let (first, last, active_ms) = match limit.period {
                Period::Day => (today, today, per_day[today_i]),
                Period::Week => (monday, monday + chrono::Days::new(6), per_day.iter().sum()),
            };
            Progress {
                target_name: limit.target().name(),
                limit_ms: i64::from(limit.minutes) * 60_000,
                period_first_day: day_key(first),
                period_last_day: day_key(last),
                active_ms,
                state: State::of(limit.kind, limit.minutes, active_ms),
                limit,
            }
        })
        .collect())
}

/// One category's measured active time this week and last week.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CategoryWeek {
    /// The category id (`uncategorized` for websites not classified yet).
    pub category: String,
    /// Its name.
    pub name: String,
    /// This week so far.
    pub this_week_ms: i64,
    /// All of last week.
    pub last_week_ms: i64,
}

/// A limit's or goal's state in one of its periods.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PeriodState {
    /// The period's first day.
    pub first_day: String,
    /// The period's last day.
    pub last_day: String,
    /// Measured active time in it (so far, for the current one).
    pub active_ms: i64,
    /// `kept`, `over`, `met` or `not_yet`.
    pub state: State,
}

/// A limit or goal over this week: each day so far (a daily one) or the week (a weekly one).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LimitWeek {
    /// The limit or goal.
    #[serde(flatten)]
    pub limit: Limit,
    /// The target's name.
    pub target_name: String,
    /// Its periods this week, oldest first (a daily one's from the day it was set).
    pub periods: Vec<PeriodState>,
    /// How many of them it was kept (a limit) or met (a goal) in.
    pub kept: usize,
}

/// The weekly report: this ISO week so far against last week.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct WeekReport {
    /// This week's Monday.
    pub week_first_day: String,
    /// This week's Sunday.
    pub week_last_day: String,
    /// Today (this week's days after it are not counted yet).
    pub today: String,
    /// Last week's Monday.
    pub previous_week_first_day: String,
    /// Per category with time in either week, most time this week first.
    pub categories: Vec<CategoryWeek>,
    /// Per limit and goal.
    pub limits: Vec<LimitWeek>,
}

fn category_name(id: &str) -> String {
    id.parse::<crate::Category>()
        .map(|c| c.name().to_owned())
        .unwrap_or_else(|_| "Not classified yet".to_owned())
}

/// The weekly report at `now` on `tz`'s calendar.
pub fn week_report<Tz: TimeZone>(conn: &Connection, now: Timestamp, tz: &Tz) -> Result<WeekReport> {
    let limits = list_in(conn)?;
    let today = day_of(now, tz);
    let monday = week_start(today);
    let previous = monday
        .checked_sub_days(chrono::Days::new(7))
        .ok_or_else(|| calendar("last week"))?;
    let mut cats: HashMap<String, (i64, i64)> = HashMap::new();
    let sums = active_per_day(conn, &limits, previous, 14, tz, |i, category, ms| {
        let e = cats
            .entry(category.unwrap_or("uncategorized").to_owned())
            .or_default();
        if i < 7 {
            e.1 += ms;
        } else {
            e.0 += ms;
        }
    })?;
    let mut categories: Vec<CategoryWeek> = cats
        .into_iter()
        .map(|(category, (this_week_ms, last_week_ms))| CategoryWeek {
            name: category_name(&category),
            category,
            this_week_ms,
            last_week_ms,
        })
        .collect();
    categories.sort_by(|a, b| {
        (b.this_week_ms, b.last_week_ms, &a.category).cmp(&(a.this_week_ms, a.last_week_ms, &b.category))
    });
    let days_so_far = today.weekday().num_days_from_monday() as usize + 1;
    let limits = limits
        .into_iter()
        .zip(sums)
        .map(|(limit, per_day)| {
            let this_week = &per_day[7..];
            let state = |first: NaiveDate, last: NaiveDate, active_ms: i64| PeriodState {
                first_day: day_key(first),
                last_day: day_key(last),
                active_ms,
                state: State::of(limit.kind, limit.minutes, active_ms),
            };
            // A daily limit set this week is counted from the day it was set.
            let set_on = day_of(limit.created_at, tz);
            let periods: Vec<PeriodState> = match limit.period {
                Period::Day => (0..days_so_far)
                    .filter(|&i| monday + chrono::Days::new(i as u64) >= set_on)
                    .map(|i| {
                        let d = monday + chrono::Days::new(i as u64);
                        state(d, d, this_week[i])
                    })
                    .collect(),
                Period::Week => vec![state(
                    monday,
                    monday + chrono::Days::new(6),
                    this_week.iter().sum(),
                )],
            };
            LimitWeek {
                target_name: limit.target().name(),
                kept: periods.iter().filter(|p| p.state.is_good()).count(),
                periods,
                limit,
            }
        })
        .collect();
    Ok(WeekReport {
        week_first_day: day_key(monday),
        week_last_day: day_key(monday + chrono::Days::new(6)),
        today: day_key(today),
        previous_week_first_day: day_key(previous),
        categories,
        limits,
    })
}

impl Store {
    /// Every limit and goal with its progress now (local calendar).
    #[tracing::instrument(level = "debug", skip_all)]
    pub fn limit_progress(&self) -> Result<Vec<Progress>> {
        let now = self.now();
        self.with_conn(|c| list_progress(c, now, &chrono::Local))
    }

    /// The weekly report now (local calendar).
    #[tracing::instrument(level = "debug", skip_all)]
    pub fn week_report(&self) -> Result<WeekReport> {
        let now = self.now();
        self.with_conn(|c| week_report(c, now, &chrono::Local))
    }

    /// The weekly report of the ISO week of `day` (`YYYY-MM-DD`, local calendar): the current
    /// week's so far, as [`Store::week_report`]; a past week's whole, as it was reported on its
    /// Sunday's last instant (the week before it to compare).
    #[tracing::instrument(level = "debug", skip_all)]
    pub fn week_report_of(&self, day: &str) -> Result<WeekReport> {
        let tz = chrono::Local;
        let now = self.now();
        let bad = || {
            Error::InvalidInput(format!(
                "{:?} is not a day: write it as YYYY-MM-DD",
                crate::error::truncate_chars(day, 40)
            ))
        };
        let day = NaiveDate::parse_from_str(day.trim(), "%Y-%m-%d").map_err(|_| bad())?;
        let monday = week_start(day);
        if monday > week_start(day_of(now, &tz)) {
            return Err(Error::InvalidInput(
                "that week has not begun: there is no report of it yet".into(),
            ));
        }
        let next = monday
            .checked_add_days(chrono::Days::new(7))
            .ok_or_else(|| calendar("that week"))?;
        let end = start_of_day(next, &tz)?;
        let at = if end <= now {
            end.minus(std::time::Duration::from_micros(1))
        } else {
            now
        };
        self.with_conn(|c| week_report(c, at, &tz))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_of_limits_and_goals() {
        assert_eq!(State::of(Kind::Max, 30, 30 * 60_000), State::Kept);
        assert_eq!(State::of(Kind::Max, 30, 30 * 60_000 + 1), State::Over);
        assert_eq!(State::of(Kind::Min, 30, 30 * 60_000 - 1), State::NotYet);
        assert_eq!(State::of(Kind::Min, 30, 30 * 60_000), State::Met);
        let wed = NaiveDate::from_ymd_opt(2026, 12, 2).unwrap();
        assert_eq!(week_start(wed), NaiveDate::from_ymd_opt(2026, 11, 30).unwrap());
        assert_eq!(week_start(week_start(wed)), week_start(wed));
    }
}
