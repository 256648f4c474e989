//! The `time` command: time spent per website, category or day (`sitetrail::time_spent`). Days are
//! local calendar days (the `TZ` environment variable is honoured).

use chrono::NaiveDate;
use clap::{Args, ValueEnum};

use sitetrail::domain::unicode_form;
use sitetrail::time_spent::headline::{estimated_percent, is_approximate, Basis};
use sitetrail::time_spent::{GroupBy, TimeQuery, TimeRow};
use sitetrail::{Category, Result, Store};

use super::out::{self, Align, Cell, Style, Table};
use super::{human, when};

/// How `time` groups visits. More groupings are more variants here (and in
/// `sitetrail::time_spent::GroupBy`); every match on it names each one.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum TimeBy {
    /// Per website (the default).
    Website,
    /// Per category.
    Category,
    /// Per local calendar day.
    Day,
    /// Per device that recorded the visits (when this device syncs).
    Device,
}

impl TimeBy {
    fn group(self) -> GroupBy {
        match self {
            TimeBy::Website => GroupBy::Website,
            TimeBy::Category => GroupBy::Category,
            TimeBy::Day => GroupBy::Day,
            TimeBy::Device => GroupBy::Device,
        }
    }

    fn header(self) -> &'static str {
        match self {
            TimeBy::Website => "WEBSITE",
            TimeBy::Category => "CATEGORY",
            TimeBy::Day => "DAY",
            TimeBy::Device => "DEVICE",
        }
    }

    /// A row's key as people read it: the domain in Unicode, the category's name, the day.
    fn label(self, key: &str, today: NaiveDate) -> String {
        match self {
            TimeBy::Website => unicode_form(key).into_owned(),
            TimeBy::Category => human::category_name(key.parse::<Category>().ok()).to_owned(),
            TimeBy::Day => NaiveDate::parse_from_str(key, "%Y-%m-%d")
                .map(|d| human::day(d, today))
                .unwrap_or_else(|_| key.to_owned()),
            TimeBy::Device => out::escape(key).into_owned(),
        }
    }
}

#[derive(Args, Debug)]
pub(crate) struct TimeArgs {
    /// Only visits at or after this time: RFC 3339, a date (local midnight), today, yesterday,
    /// 7d, 30d (the last N days), week or month.
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Only visits before this time: exclusive (as for --since; a date or a word is the moment
    /// its day starts, so `--until today` ends at local midnight).
    #[arg(long, value_name = "WHEN")]
    until: Option<String>,
    /// How to group the visits.
    #[arg(long, value_enum, default_value = "website")]
    by: TimeBy,
    /// Print JSON: rows with key, active_ms, estimated_ms, visits, measured_visits,
    /// estimated_visits, device (the device's name with --by device).
    #[arg(long)]
    json: bool,
}

/// A share in whole percent: `40%`, `<1%` for a little, `0%` for nothing.
fn percent(part: i64, whole: i64) -> String {
    if part <= 0 || whole <= 0 {
        return "0%".into();
    }
    let p = (part as f64 * 100.0 / whole as f64).round();
    if p < 1.0 {
        "<1%".into()
    } else {
        format!("{p:.0}%")
    }
}

/// A time that is known only for some visits says so instead of showing a measured-looking zero.
fn known(ms: i64, visits_with_it: i64) -> Cell {
    if visits_with_it > 0 {
        human::duration(ms).into()
    } else {
        Cell::styled("-", Style::Dim)
    }
}

/// An estimated time, marked as the app marks it (`≈ 3 min`), or `-` where none is known.
fn estimated(ms: i64, visits_with_it: i64) -> Cell {
    if visits_with_it > 0 {
        human::estimate(ms).into()
    } else {
        Cell::styled("-", Style::Dim)
    }
}

/// A row's whole time, measured and estimated together (the app's headline figure), marked `≈`
/// as the app marks it when any of it is estimated; `-` when no time is known.
fn time_cell(r: &TimeRow) -> Cell {
    if r.total_ms() == 0 {
        return Cell::styled("-", Style::Dim);
    }
    if is_approximate(r) {
        human::estimate(r.total_ms()).into()
    } else {
        human::duration(r.total_ms()).into()
    }
}

/// What the total's `≈` means: how much of it is estimated, and from what.
fn estimate_note(total: &TimeRow) -> Option<String> {
    if !is_approximate(total) {
        return None;
    }
    let share = estimated_percent(total);
    let rest = if total.active_ms > 0 {
        format!(
            ", {} measured by the browser extension",
            human::duration(total.active_ms)
        )
    } else {
        ", none measured".to_owned()
    };
    Some(format!(
        "≈ marks time partly estimated: {} of the total ({share}%) is estimated from imported history \
         (how long pages stayed open, at most 10 minutes a visit){rest}",
        human::duration(total.estimated_ms)
    ))
}

/// Runs `sitetrail time`.
pub(crate) fn run_time(store: &Store, args: TimeArgs) -> Result<()> {
    let q = TimeQuery {
        since: when::parse_opt("--since", args.since.as_deref())?,
        until: when::parse_opt("--until", args.until.as_deref())?,
        by: args.by.group(),
    };
    let rows = store.time_spent(&q, &chrono::Local)?;
    if args.json {
        return out::json(&rows);
    }
    if rows.is_empty() {
        return out::line("no visits in that time");
    }
    let mut total = TimeRow::default();
    for r in &rows {
        total.active_ms += r.active_ms;
        total.estimated_ms += r.estimated_ms;
        total.visits += r.visits;
        total.measured_visits += r.measured_visits;
        total.estimated_visits += r.estimated_visits;
    }
    // Shares are of the whole time spent (measured and estimated, as the app's headline); where
    // no time is known at all, of the visits.
    let basis = Basis::of(&total);
    let by_visits = basis == Basis::Visits;
    let share = |r: &TimeRow| percent(basis.value(r), basis.value(&total));
    let today = human::local_today();
    let mut t = Table::new()
        .flex(args.by.header())
        .column("TIME", Align::Right)
        .column("ACTIVE", Align::Right)
        .column("ESTIMATED", Align::Right)
        .column("VISITS", Align::Right)
        .column("SHARE", Align::Right);
    for r in &rows {
        t.row(vec![
            args.by.label(&r.key, today).into(),
            time_cell(r),
            known(r.active_ms, r.measured_visits),
            estimated(r.estimated_ms, r.estimated_visits),
            r.visits.to_string().into(),
            share(r).into(),
        ]);
    }
    t.row(vec![
        Cell::styled("total", Style::Bold),
        time_cell(&total),
        known(total.active_ms, total.measured_visits),
        estimated(total.estimated_ms, total.estimated_visits),
        total.visits.to_string().into(),
        share(&total).into(),
    ]);
    out::table(&t)?;
    if let Some(text) = estimate_note(&total) {
        out::note(&text);
    }
    if by_visits {
        out::note("no time is known for these visits (imported without durations): shares are of visits");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_whole_percents() {
        assert_eq!(percent(40, 100), "40%");
        assert_eq!(percent(1, 3), "33%");
        assert_eq!(percent(1, 1000), "<1%");
        assert_eq!(percent(0, 10), "0%");
        assert_eq!(percent(5, 0), "0%");
    }

    #[test]
    fn keys_read_as_names_and_days() {
        let today = NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
        assert_eq!(
            TimeBy::Category.label("dev_tech", today),
            "Development & technology"
        );
        assert_eq!(
            TimeBy::Category.label("uncategorized", today),
            "Not classified yet"
        );
        assert_eq!(TimeBy::Day.label("2026-11-29", today), "yesterday");
        assert_eq!(TimeBy::Day.label("2026-11-27", today), "Fri 27 Nov");
        assert_eq!(
            TimeBy::Website.label("xn--mnchen-3ya.example", today),
            "münchen.example"
        );
    }
}
