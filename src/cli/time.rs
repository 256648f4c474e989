//! The `time` command: time spent per website, category or day (`sitetrail::time_spent`). Days are
//! local calendar days (the `TZ` environment variable is honoured).

use clap::{Args, ValueEnum};

use sitetrail::time_spent::{GroupBy, TimeQuery};
use sitetrail::{Error, Result, Store, Timestamp};

use super::print_json;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum TimeBy {
    Website,
    Category,
    Day,
}

#[derive(Args, Debug)]
pub(crate) struct TimeArgs {
    /// Only visits at or after this time (RFC 3339).
    #[arg(long, value_name = "RFC3339")]
    since: Option<String>,
    /// Only visits before this time (RFC 3339).
    #[arg(long, value_name = "RFC3339")]
    until: Option<String>,
    /// How to group the visits.
    #[arg(long, value_enum, default_value = "website")]
    by: TimeBy,
    /// Print JSON: rows with key, active_ms, estimated_ms, visits, measured_visits,
    /// estimated_visits.
    #[arg(long)]
    json: bool,
}

fn parse(flag: &str, value: Option<&str>) -> Result<Option<Timestamp>> {
    value
        .map(|s| {
            Timestamp::parse_rfc3339(s).ok_or_else(|| {
                Error::InvalidInput(format!(
                    "{flag} {s:?} is not an RFC 3339 date-time (e.g. 2026-11-29T10:00:00Z)"
                ))
            })
        })
        .transpose()
}

/// "1:02:03", "4:05", "0:00".
fn hms(ms: i64) -> String {
    let s = ms / 1000;
    let (h, m, s) = (s / 3600, (s / 60) % 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// Runs `sitetrail time`.
pub(crate) fn run_time(store: &Store, args: TimeArgs) -> Result<()> {
    let q = TimeQuery {
        since: parse("--since", args.since.as_deref())?,
        until: parse("--until", args.until.as_deref())?,
        by: match args.by {
            TimeBy::Website => GroupBy::Website,
            TimeBy::Category => GroupBy::Category,
            TimeBy::Day => GroupBy::Day,
        },
    };
    let rows = store.time_spent(&q, &chrono::Local)?;
    if args.json {
        return print_json(&rows);
    }
    if rows.is_empty() {
        println!("no visits in that time");
        return Ok(());
    }
    let width = rows
        .iter()
        .map(|r| r.key.chars().count())
        .max()
        .unwrap_or(0)
        .max(3);
    println!(
        "{:<width$}  {:>9}  {:>9}  {:>7}",
        "key", "active", "estimated", "visits"
    );
    for r in &rows {
        // A group with no known time says so instead of showing a measured-looking zero.
        let active = if r.measured_visits > 0 {
            hms(r.active_ms)
        } else {
            "-".into()
        };
        let estimated = if r.estimated_visits > 0 {
            hms(r.estimated_ms)
        } else {
            "-".into()
        };
        println!("{:<width$}  {active:>9}  {estimated:>9}  {:>7}", r.key, r.visits);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_clock_times() {
        assert_eq!(hms(0), "0:00");
        assert_eq!(hms(65_400), "1:05");
        assert_eq!(hms(3_723_000), "1:02:03");
    }
}
