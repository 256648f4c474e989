//! The one figure a period is summed up in, and what it is compared with: the headline of the
//! app's overview and the total of `sitetrail time`, so both say the same.
//!
//! Invariants:
//! - One basis for a whole screen ([`Basis`]): time (measured plus estimated, as
//!   [`TimeRow::total_ms`] counts it) whenever any visit of the period has a known time, else
//!   visits. A few measured minutes never replace hours of estimated time: they are added to it.
//! - A figure that holds any estimated time is approximate ([`is_approximate`]) and says how much
//!   of it is estimated ([`estimated_percent`]).
//! - A comparison compares like with like: time with time (both totals), visits with visits; a
//!   period before that has visits but no known time is "not comparable", never "nothing".

use super::TimeRow;

/// What a period's figures count: its headline, the split by category and device, the lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Time: measured plus estimated (ms).
    Time,
    /// Visits: no visit of the period has a known time.
    Visits,
}

impl Basis {
    /// The basis of the figures of a period whose totals are `total`.
    pub fn of(total: &TimeRow) -> Basis {
        if total.total_ms() > 0 {
            Basis::Time
        } else {
            Basis::Visits
        }
    }

    /// `row`'s figure on this basis: its time (ms) or its visits.
    pub fn value(self, row: &TimeRow) -> i64 {
        match self {
            Basis::Time => row.total_ms(),
            Basis::Visits => row.visits,
        }
    }
}

/// True if `row`'s time holds any estimated time (it is shown marked ≈).
pub fn is_approximate(row: &TimeRow) -> bool {
    row.estimated_ms > 0
}

/// The share of `row`'s time that is estimated, in whole percent: 0 for none, at least 1 for
/// any, 100 only when nothing of it was measured.
pub fn estimated_percent(row: &TimeRow) -> u8 {
    let total = row.total_ms();
    if row.estimated_ms <= 0 || total <= 0 {
        return 0;
    }
    if row.active_ms <= 0 {
        return 100;
    }
    // Rounded to the nearest whole percent, in integers (a sum of milliseconds times 100 stays
    // far inside i64).
    let p = (row.estimated_ms.saturating_mul(100) + total / 2) / total;
    u8::try_from(p.clamp(1, 99)).unwrap_or(99)
}

/// How the period compares with the one before.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Comparison {
    /// Both have a figure on the same basis.
    Change {
        /// The period before's figure (ms or visits).
        previous: i64,
        /// True if the period before's time holds estimated time.
        previous_approximate: bool,
        /// This period's figure minus the period before's.
        change: i64,
    },
    /// The period before has visits but no known time, while this one has time: not comparable.
    NoTimeBefore {
        /// The period before's visits.
        previous_visits: i64,
    },
    /// Nothing was recorded in the period before.
    NothingBefore,
}

/// A period's headline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Headline {
    /// What the figure counts.
    pub basis: Basis,
    /// The figure: measured plus estimated time (ms), or visits.
    pub value: i64,
    /// True if the time holds estimated time (shown ≈).
    pub approximate: bool,
    /// The measured part of the time (ms).
    pub measured_ms: i64,
    /// The estimated part of the time (ms).
    pub estimated_ms: i64,
    /// The estimated share of the time in whole percent ([`estimated_percent`]).
    pub estimated_percent: u8,
    /// Every visit of the period.
    pub visits: i64,
    /// Visits with no known time.
    pub untimed_visits: i64,
    /// Against the period before.
    pub comparison: Comparison,
}

impl Headline {
    /// The headline of a period whose totals are `total`, against `previous`.
    pub fn new(total: &TimeRow, previous: &TimeRow) -> Headline {
        let basis = Basis::of(total);
        let value = basis.value(total);
        let comparison = if previous.visits == 0 {
            Comparison::NothingBefore
        } else if basis == Basis::Time && previous.total_ms() == 0 {
            Comparison::NoTimeBefore {
                previous_visits: previous.visits,
            }
        } else {
            let before = basis.value(previous);
            Comparison::Change {
                previous: before,
                previous_approximate: basis == Basis::Time && is_approximate(previous),
                change: value - before,
            }
        };
        Headline {
            basis,
            value,
            approximate: basis == Basis::Time && is_approximate(total),
            measured_ms: total.active_ms,
            estimated_ms: total.estimated_ms,
            estimated_percent: estimated_percent(total),
            visits: total.visits,
            untimed_visits: total.visits - total.measured_visits - total.estimated_visits,
            comparison,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(active_ms: i64, estimated_ms: i64, visits: i64, measured: i64, estimated: i64) -> TimeRow {
        TimeRow {
            active_ms,
            estimated_ms,
            visits,
            measured_visits: measured,
            estimated_visits: estimated,
            ..TimeRow::default()
        }
    }

    #[test]
    fn a_few_measured_minutes_add_to_hours_of_estimates() {
        // 177 h estimated, then 3 min measured: the figure is both, marked as mostly estimated.
        let h = Headline::new(
            &row(180_000, 177 * 3_600_000, 3_000, 2, 2_990),
            &row(0, 0, 0, 0, 0),
        );
        assert_eq!(h.basis, Basis::Time);
        assert_eq!(h.value, 180_000 + 177 * 3_600_000);
        assert!(h.approximate);
        assert_eq!(h.estimated_percent, 99);
        assert_eq!(h.untimed_visits, 8);
        assert_eq!(h.comparison, Comparison::NothingBefore);
    }

    #[test]
    fn comparisons_are_like_with_like() {
        // Today measured, yesterday estimated: time against time, yesterday marked ≈.
        let h = Headline::new(&row(600_000, 0, 3, 3, 0), &row(0, 8 * 3_600_000, 50, 0, 50));
        assert_eq!(
            h.comparison,
            Comparison::Change {
                previous: 8 * 3_600_000,
                previous_approximate: true,
                change: 600_000 - 8 * 3_600_000
            }
        );
        assert!(!h.approximate);
        // Yesterday's visits have no time: not comparable, and not "nothing".
        let h = Headline::new(&row(600_000, 0, 3, 3, 0), &row(0, 0, 7, 0, 0));
        assert_eq!(h.comparison, Comparison::NoTimeBefore { previous_visits: 7 });
        // No time anywhere: visits against visits.
        let h = Headline::new(&row(0, 0, 4, 0, 0), &row(0, 60_000, 7, 0, 1));
        assert_eq!((h.basis, h.value, h.approximate), (Basis::Visits, 4, false));
        assert_eq!(
            h.comparison,
            Comparison::Change {
                previous: 7,
                previous_approximate: false,
                change: -3
            }
        );
    }

    #[test]
    fn the_estimated_share_is_never_rounded_away() {
        assert_eq!(estimated_percent(&row(1_000_000, 1, 2, 1, 1)), 1);
        assert_eq!(estimated_percent(&row(1, 1_000_000, 2, 1, 1)), 99);
        assert_eq!(estimated_percent(&row(0, 5, 1, 0, 1)), 100);
        assert_eq!(estimated_percent(&row(5, 0, 1, 1, 0)), 0);
        assert_eq!(estimated_percent(&row(750, 250, 2, 1, 1)), 25);
    }
}
