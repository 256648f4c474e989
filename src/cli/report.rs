//! The `report` command: the weekly report (`sitetrail::limits::progress::week_report`): each
//! category's measured active time this ISO week against last week, and each limit's and goal's
//! state per day (or for the week), as text, Markdown or JSON.

use chrono::NaiveDate;
use clap::{Args, ValueEnum};

use sitetrail::limits::progress::{LimitWeek, WeekReport};
use sitetrail::limits::{Kind, Period};
use sitetrail::{Error, Result, Store};

use super::human;
use super::limits::{state_cell, COUNTED};
use super::out::{self, Align, Cell, Table};

/// How the report is written.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Format {
    /// Tables for a terminal.
    Text,
    /// Markdown (a note, an e-mail, a wiki page).
    Markdown,
    /// JSON for scripts.
    Json,
}

#[derive(Args, Debug)]
pub(crate) struct ReportArgs {
    /// The weekly report: this ISO week (Monday to today, local time) against last week.
    #[arg(long)]
    week: bool,
    /// How to write it. JSON keys: week_first_day, week_last_day, today,
    /// previous_week_first_day, counted, categories (category, name, this_week_ms,
    /// last_week_ms), limits (the keys of `limits --json` without the progress, plus
    /// target_name, kept, periods: first_day, last_day, active_ms, state).
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

/// `+25 min`, `-1 h 05 min`, `same`.
fn change(now: i64, before: i64) -> String {
    match now - before {
        0 => "same".into(),
        d if d > 0 => format!("+{}", human::duration(d)),
        d => format!("-{}", human::duration(-d)),
    }
}

fn day_name(day: &str) -> String {
    NaiveDate::parse_from_str(day, "%Y-%m-%d")
        .map(|d| d.format("%a").to_string())
        .unwrap_or_else(|_| day.to_owned())
}

fn long_day(day: &str) -> String {
    NaiveDate::parse_from_str(day, "%Y-%m-%d")
        .map(|d| d.format("%a %-d %b %Y").to_string())
        .unwrap_or_else(|_| day.to_owned())
}

fn what(l: &LimitWeek) -> String {
    let word = match l.limit.kind {
        Kind::Max => "at most",
        Kind::Min => "at least",
    };
    let per = match l.limit.period {
        Period::Day => "a day",
        Period::Week => "a week",
    };
    format!(
        "{word} {} {per}",
        human::duration(i64::from(l.limit.minutes) * 60_000)
    )
}

/// `4 of 6 days` or `1 of 1 week`.
fn kept(l: &LimitWeek) -> String {
    let unit = match (l.limit.period, l.periods.len()) {
        (Period::Day, 1) => "day",
        (Period::Day, _) => "days",
        (Period::Week, _) => "week",
    };
    format!("{} of {} {unit}", l.kept, l.periods.len())
}

/// `Mon kept, Tue over` or the week's state with its time.
fn periods(l: &LimitWeek) -> String {
    l.periods
        .iter()
        .map(|p| match l.limit.period {
            Period::Day => format!(
                "{} {}",
                day_name(&p.first_day),
                p.state.as_str().replace('_', " ")
            ),
            Period::Week => format!(
                "{} ({})",
                p.state.as_str().replace('_', " "),
                human::duration(p.active_ms)
            ),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn text(r: &WeekReport) -> Result<()> {
    out::line(&format!(
        "Week of {} (to {}) against last week",
        long_day(&r.week_first_day),
        long_day(&r.today)
    ))?;
    if r.categories.is_empty() {
        out::line("no measured time this week or last week")?;
    } else {
        let mut t = Table::new()
            .flex("CATEGORY")
            .column("THIS WEEK", Align::Right)
            .column("LAST WEEK", Align::Right)
            .column("CHANGE", Align::Right);
        for c in &r.categories {
            t.row(vec![
                c.name.clone().into(),
                human::duration(c.this_week_ms).into(),
                human::duration(c.last_week_ms).into(),
                change(c.this_week_ms, c.last_week_ms).into(),
            ]);
        }
        out::table(&t)?;
    }
    if !r.limits.is_empty() {
        out::line("")?;
        let mut t = Table::new()
            .flex("TARGET")
            .column("LIMIT/GOAL", Align::Left)
            .column("KEPT", Align::Left)
            .column("NOW", Align::Left)
            .column("BY DAY", Align::Left);
        for l in &r.limits {
            let last = l
                .periods
                .last()
                .map(|p| state_cell(p.state))
                .unwrap_or_else(|| Cell::from(""));
            t.row(vec![
                out::escape(&l.target_name).into_owned().into(),
                what(l).into(),
                kept(l).into(),
                last,
                periods(l).into(),
            ]);
        }
        out::table(&t)?;
    }
    out::note(COUNTED);
    Ok(())
}

/// `text` with Markdown's table separator escaped (`out::line` escapes control characters).
fn md(text: &str) -> String {
    text.replace('|', "\\|")
}

fn markdown(r: &WeekReport) -> Result<()> {
    let mut s = format!(
        "# Week of {} to {}\n\nThis week so far (to {}) against last week. {}.\n\n",
        long_day(&r.week_first_day),
        long_day(&r.week_last_day),
        long_day(&r.today),
        COUNTED.replace("counted:", "Counted:")
    );
    s.push_str("| Category | This week | Last week | Change |\n|---|---:|---:|---:|\n");
    for c in &r.categories {
        s.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            md(&c.name),
            human::duration(c.this_week_ms),
            human::duration(c.last_week_ms),
            change(c.this_week_ms, c.last_week_ms)
        ));
    }
    if r.categories.is_empty() {
        s.push_str("| (no measured time) | | | |\n");
    }
    if !r.limits.is_empty() {
        s.push_str(
            "\n## Limits and goals\n\n| Target | Limit or goal | Kept | By day |\n|---|---|---|---|\n",
        );
        for l in &r.limits {
            s.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                md(&l.target_name),
                what(l),
                kept(l),
                periods(l)
            ));
        }
    }
    // One line at a time, as `out::line` prints (and escapes) them.
    for line in s.lines() {
        out::line(line)?;
    }
    Ok(())
}

/// Runs `sitetrail report`.
pub(crate) fn run_report(store: &Store, args: ReportArgs) -> Result<()> {
    if !args.week {
        return Err(Error::InvalidInput(
            "say which report: --week (this week against last week) is the one there is".into(),
        ));
    }
    let r = store.week_report()?;
    match args.format {
        Format::Text => text(&r),
        Format::Markdown => markdown(&r),
        Format::Json => {
            let mut v = serde_json::to_value(&r).map_err(|e| Error::Io(e.into()))?;
            if let Some(o) = v.as_object_mut() {
                o.insert("counted".into(), "active_ms".into());
            }
            out::json(&v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_are_signed_durations() {
        assert_eq!(change(25 * 60_000, 0), "+25 min");
        assert_eq!(change(0, 65 * 60_000), "-1 h 05 min");
        assert_eq!(change(5, 5), "same");
        assert_eq!(md("a|b"), "a\\|b");
    }
}
