//! The times people give `--since` and `--until`: an RFC 3339 date-time, a date (local
//! midnight), or a word: `today`, `yesterday`, `Nd` (`7d`, `30d`: the last N days, today
//! included), `week` (since Monday) and `month` (since the 1st). A date or a word stands for the
//! moment its day or period starts, in the local time zone, for `--since` and `--until` alike:
//! `--since yesterday --until today` is yesterday.

use chrono::{Datelike, Duration, NaiveDate, TimeZone};

use sitetrail::time_spent::day_of;
use sitetrail::{Error, Result, Timestamp};

/// Most days `Nd` goes back (a hundred years).
const MAX_DAYS_BACK: i64 = 36_525;

/// What the error says is accepted.
const ACCEPTED: &str = "an RFC 3339 date-time (2026-11-29T10:00:00Z), a date (2026-11-29, from local \
                        midnight), today, yesterday, 7d or 30d (the last N days, today included), week \
                        (since Monday) or month (since the 1st)";

/// Parses `value`, given as `flag`, in the local time zone.
pub(crate) fn parse(flag: &str, value: &str) -> Result<Timestamp> {
    parse_in(flag, value, &chrono::Local, super::clock::now())
}

/// Parses an optional `flag` (see [`parse`]).
pub(crate) fn parse_opt(flag: &str, value: Option<&str>) -> Result<Option<Timestamp>> {
    value.map(|v| parse(flag, v)).transpose()
}

/// Parses `value` in `tz`, "today" being the day of `now` there.
pub(crate) fn parse_in<Tz: TimeZone>(flag: &str, value: &str, tz: &Tz, now: Timestamp) -> Result<Timestamp> {
    let typed = value.trim();
    if let Some(t) = Timestamp::parse_rfc3339(typed) {
        return Ok(t);
    }
    let today = day_of(now, tz);
    let day = match typed.to_ascii_lowercase().as_str() {
        "today" => Some(today),
        "yesterday" => today.pred_opt(),
        "week" => today.checked_sub_signed(Duration::days(i64::from(today.weekday().num_days_from_monday()))),
        "month" => today.with_day(1),
        word => match word.strip_suffix('d').map(str::parse::<i64>) {
            Some(Ok(n)) if (1..=MAX_DAYS_BACK).contains(&n) => {
                today.checked_sub_signed(Duration::days(n - 1))
            }
            _ => NaiveDate::parse_from_str(typed, "%Y-%m-%d").ok(),
        },
    };
    day.and_then(|d| midnight(d, tz)).ok_or_else(|| {
        let shown: String = typed.chars().take(100).collect();
        Error::InvalidInput(format!("{flag} {shown:?} is not a time: give {ACCEPTED}"))
    })
}

/// When `day` starts in `tz`: midnight, or the first hour that exists where a clock change skips
/// midnight; the earlier of two where it repeats.
fn midnight<Tz: TimeZone>(day: NaiveDate, tz: &Tz) -> Option<Timestamp> {
    (0..24).find_map(|hour| {
        let local = day.and_hms_opt(hour, 0, 0)?;
        let start = tz.from_local_datetime(&local).earliest()?;
        Some(Timestamp(start.timestamp_micros()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::FixedOffset;

    fn at(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(s).unwrap()
    }

    /// Parses in UTC+9 on Wednesday 2 December 2026, 10:00 local.
    fn p(value: &str) -> Result<Timestamp> {
        let tz = FixedOffset::east_opt(9 * 3600).unwrap();
        parse_in("--since", value, &tz, at("2026-12-02T01:00:00Z"))
    }

    #[test]
    fn every_form_means_the_start_of_its_day_or_period() {
        assert_eq!(p("2026-11-29T10:00:00Z").unwrap(), at("2026-11-29T10:00:00Z"));
        assert_eq!(
            p("2026-11-29T10:00:00+02:00").unwrap(),
            at("2026-11-29T08:00:00Z")
        );
        assert_eq!(
            p("2026-11-30").unwrap(),
            at("2026-11-29T15:00:00Z"),
            "local midnight"
        );
        assert_eq!(p("today").unwrap(), at("2026-12-01T15:00:00Z"));
        assert_eq!(p(" Yesterday ").unwrap(), at("2026-11-30T15:00:00Z"));
        assert_eq!(p("1d").unwrap(), p("today").unwrap());
        assert_eq!(
            p("7d").unwrap(),
            at("2026-11-25T15:00:00Z"),
            "today and the 6 days before"
        );
        assert_eq!(p("30d").unwrap(), at("2026-11-02T15:00:00Z"));
        assert_eq!(
            p("week").unwrap(),
            at("2026-11-29T15:00:00Z"),
            "Monday 30 November"
        );
        assert_eq!(p("month").unwrap(), at("2026-11-30T15:00:00Z"), "1 December");
    }

    #[test]
    fn anything_else_says_what_is_accepted() {
        for bad in [
            "",
            "tomorrow",
            "0d",
            "-3d",
            "7 days",
            "2026-13-01",
            "29/11/2026",
            "99999999d",
        ] {
            let e = p(bad).unwrap_err().to_string();
            assert!(
                e.starts_with("--since")
                    && e.contains("RFC 3339")
                    && e.contains("yesterday")
                    && e.contains("30d"),
                "{bad:?}: {e}"
            );
        }
    }

    #[test]
    fn midnight_is_the_zone_s() {
        let tz = FixedOffset::west_opt(3 * 3600).unwrap();
        let d = NaiveDate::from_ymd_opt(2026, 3, 8).unwrap();
        assert_eq!(midnight(d, &tz).unwrap(), at("2026-03-08T03:00:00Z"));
    }
}
