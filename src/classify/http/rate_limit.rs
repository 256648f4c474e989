//! How long a rate-limited provider asks us to wait: the rate-limit headers (`retry-after-ms`,
//! `Retry-After`, `x-ratelimit-reset-*`, `ratelimit-reset`) read into one bounded wait.
//!
//! Reading them is pure (headers and a clock, no network) and cannot panic on any value; every
//! wait is at most [`MAX_RATE_LIMIT_WAIT`].

use std::time::Duration;

use reqwest::header::HeaderMap;

/// Longest wait a rate-limit header can impose. A longer or infinite one becomes this: the
/// worker asks again after an hour, and waits again if it is told to.
pub const MAX_RATE_LIMIT_WAIT: Duration = Duration::from_secs(3600);

/// A wait read from one header.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Wait {
    /// A wait between zero and [`MAX_RATE_LIMIT_WAIT`].
    Sane(Duration),
    /// More than [`MAX_RATE_LIMIT_WAIT`], or infinite.
    TooLong,
}

/// `secs` as a wait; `None` for NaN and negative values (a time in the past cannot be a wait).
fn wait_secs(secs: f64) -> Option<Wait> {
    if secs.is_nan() || secs < 0.0 {
        None
    } else if secs > MAX_RATE_LIMIT_WAIT.as_secs_f64() {
        Some(Wait::TooLong)
    } else {
        Duration::try_from_secs_f64(secs).ok().map(Wait::Sane)
    }
}

/// How long a 429 asks us to wait, from the most explicit header that gives a sane value:
/// 1. `retry-after-ms` (milliseconds), 2. `Retry-After` (seconds or an HTTP date), 3. OpenAI's
///    `x-ratelimit-reset-requests` / `-tokens` (the one whose `x-ratelimit-remaining-*` is 0, else
///    the longer), 4. `x-ratelimit-reset` / `ratelimit-reset`.
///
/// Reset headers are read as durations (`1m30s`, `20ms`, a number of seconds), as points in time
/// when the number can only be one (at least 10⁹: Unix seconds; at least 10¹²: Unix
/// milliseconds), or as dates (RFC 3339, HTTP date). A value that cannot be right (unparseable,
/// negative, a time in the past, longer than [`MAX_RATE_LIMIT_WAIT`]) gives way to the next
/// header; if every value given was too long, the wait is [`MAX_RATE_LIMIT_WAIT`]; if none could
/// be read, `None` (the worker then backs off as when offline).
pub fn retry_after(headers: &HeaderMap, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    let now_secs = now.timestamp_millis() as f64 / 1000.0;
    let mut candidates: Vec<Option<Wait>> = Vec::new();
    candidates.push(
        get("retry-after-ms")
            .and_then(|v| v.parse::<f64>().ok())
            .and_then(|ms| wait_secs(ms / 1000.0)),
    );
    candidates.push(get("retry-after").and_then(|v| match v.parse::<f64>() {
        Ok(secs) => wait_secs(secs),
        Err(_) => date_secs(v).and_then(|at| wait_secs(at - now_secs)),
    }));
    let requests = get("x-ratelimit-reset-requests").and_then(|v| reset_wait(v, now_secs));
    let tokens = get("x-ratelimit-reset-tokens").and_then(|v| reset_wait(v, now_secs));
    let exhausted = |name: &str| get(name).and_then(|v| v.parse::<f64>().ok()) == Some(0.0);
    candidates.push(
        match (
            exhausted("x-ratelimit-remaining-requests"),
            exhausted("x-ratelimit-remaining-tokens"),
        ) {
            (true, false) if requests.is_some() => requests,
            (false, true) if tokens.is_some() => tokens,
            _ => longer(requests, tokens),
        },
    );
    candidates.push(get("x-ratelimit-reset").and_then(|v| reset_wait(v, now_secs)));
    candidates.push(get("ratelimit-reset").and_then(|v| reset_wait(v, now_secs)));
    let sane = candidates.iter().find_map(|c| match c {
        Some(Wait::Sane(d)) => Some(*d),
        _ => None,
    });
    sane.or_else(|| {
        candidates
            .contains(&Some(Wait::TooLong))
            .then_some(MAX_RATE_LIMIT_WAIT)
    })
}

/// The longer of two waits, a sane one before a too long one.
fn longer(a: Option<Wait>, b: Option<Wait>) -> Option<Wait> {
    match (a, b) {
        (Some(Wait::Sane(x)), Some(Wait::Sane(y))) => Some(Wait::Sane(x.max(y))),
        (Some(Wait::Sane(x)), _) | (_, Some(Wait::Sane(x))) => Some(Wait::Sane(x)),
        (x, y) => x.or(y),
    }
}

/// A reset header's value as a wait from `now_secs` (Unix seconds).
fn reset_wait(v: &str, now_secs: f64) -> Option<Wait> {
    if let Ok(n) = v.parse::<f64>() {
        return if n >= 1e12 {
            wait_secs(n / 1000.0 - now_secs)
        } else if n >= 1e9 {
            wait_secs(n - now_secs)
        } else {
            wait_secs(n)
        };
    }
    if let Some(secs) = parse_go_duration(v) {
        return wait_secs(secs);
    }
    date_secs(v).and_then(|at| wait_secs(at - now_secs))
}

/// An RFC 3339 or HTTP (RFC 2822) date as Unix seconds.
fn date_secs(v: &str) -> Option<f64> {
    chrono::DateTime::parse_from_rfc3339(v)
        .or_else(|_| chrono::DateTime::parse_from_rfc2822(v))
        .ok()
        .map(|at| at.timestamp_millis() as f64 / 1000.0)
}

/// Seconds in durations like `1s`, `6m0s`, `1h2m3.5s`, `20ms`; `None` for anything else. The sum
/// may be infinite for absurd input; [`wait_secs`] bounds it.
fn parse_go_duration(s: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut rest = s;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let n: f64 = rest.get(..end)?.parse().ok()?;
        rest = rest.get(end..)?;
        let unit_end = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let scale = match rest.get(..unit_end)? {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            "us" | "µs" => 0.000_001,
            "ns" => 0.000_000_001,
            _ => return None,
        };
        total += n * scale;
        rest = rest.get(unit_end..)?;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::http::test_support::{headers, now};
    use reqwest::header::HeaderValue;

    fn wait(pairs: &[(&'static str, &str)]) -> Option<Duration> {
        retry_after(&headers(pairs), now())
    }

    #[test]
    fn rate_limit_waits_are_read_from_every_header() {
        assert_eq!(wait(&[("retry-after", "3")]), Some(Duration::from_secs(3)));
        assert_eq!(
            wait(&[("retry-after-ms", "250")]),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            wait(&[
                ("x-ratelimit-reset-requests", "1m30s"),
                ("x-ratelimit-reset-tokens", "20ms")
            ]),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            wait(&[
                ("x-ratelimit-reset-requests", "1m30s"),
                ("x-ratelimit-reset-tokens", "20ms"),
                ("x-ratelimit-remaining-tokens", "0"),
                ("x-ratelimit-remaining-requests", "12"),
            ]),
            Some(Duration::from_millis(20)),
            "the exhausted bucket's reset"
        );
        let later = (now() + chrono::Duration::seconds(30)).to_rfc2822();
        assert_eq!(wait(&[("retry-after", &later)]), Some(Duration::from_secs(30)));
        assert_eq!(wait(&[]), None);
        assert_eq!(parse_go_duration("1h2m3.5s"), Some(3723.5));
        assert_eq!(parse_go_duration("soon"), None);
        assert_eq!(parse_go_duration(""), None);
    }

    #[test]
    fn epoch_resets_are_points_in_time_and_the_most_explicit_header_wins() {
        let epoch = |secs: i64| (now().timestamp() + secs).to_string();
        let epoch_ms = |secs: i64| ((now().timestamp() + secs) * 1000).to_string();
        assert_eq!(
            wait(&[("x-ratelimit-reset", &epoch(42))]),
            Some(Duration::from_secs(42))
        );
        assert_eq!(
            wait(&[("x-ratelimit-reset", &epoch_ms(42))]),
            Some(Duration::from_secs(42))
        );
        assert_eq!(
            wait(&[("x-ratelimit-reset", "17")]),
            Some(Duration::from_secs(17))
        );
        assert_eq!(
            wait(&[("retry-after", "2"), ("x-ratelimit-reset", &epoch(86_400))]),
            Some(Duration::from_secs(2)),
            "Retry-After is more explicit than a reset time"
        );
        assert_eq!(
            wait(&[("retry-after", "2"), ("retry-after-ms", "2500")]),
            Some(Duration::from_millis(2500))
        );
        // A reset in the past cannot be right: the next header is used, or none.
        assert_eq!(
            wait(&[
                ("x-ratelimit-reset-requests", &epoch(-5)),
                ("x-ratelimit-reset", "9")
            ]),
            Some(Duration::from_secs(9))
        );
        assert_eq!(wait(&[("x-ratelimit-reset", &epoch(-5))]), None);
        let iso = (now() + chrono::Duration::seconds(8)).to_rfc3339();
        assert_eq!(wait(&[("x-ratelimit-reset", &iso)]), Some(Duration::from_secs(8)));
        // An absurd value gives way to a sane one, and alone becomes the cap.
        assert_eq!(
            wait(&[("retry-after", "1e20"), ("x-ratelimit-reset", &epoch(30))]),
            Some(Duration::from_secs(30))
        );
    }

    #[test]
    fn no_header_value_can_panic_and_every_wait_is_bounded() {
        let hostile = [
            "inf",
            "-inf",
            "Infinity",
            "NaN",
            "1e20",
            "1e30",
            "1e308",
            "-1",
            "-0",
            "0",
            "1.7976931348623157e308",
            "99999999999999999999999999",
            "9223372036854775807",
            "18446744073709551616",
            "1e400",
            "0x10",
            "",
            " ",
            "1h1h1h1h",
            "1e300h",
            "999999999999999999999h",
            "1.5.5s",
            "s",
            "ms",
            "µs",
            "5µ",
            "🙂",
            "1m-5s",
            "Mon, 99 Feb 9999 99:99:99 GMT",
            "Fri, 31 Dec 9999 23:59:59 GMT",
            "Thu, 01 Jan 1970 00:00:00 GMT",
            "9999-12-31T23:59:59Z",
            "+262143-12-31T23:59:59Z",
        ];
        let names = [
            "retry-after",
            "retry-after-ms",
            "x-ratelimit-reset-requests",
            "x-ratelimit-reset-tokens",
            "x-ratelimit-reset",
            "ratelimit-reset",
        ];
        for name in names {
            for v in hostile {
                let Ok(value) = HeaderValue::from_str(v) else {
                    continue;
                };
                let mut h = HeaderMap::new();
                h.insert(name, value);
                if let Some(d) = retry_after(&h, now()) {
                    assert!(d <= MAX_RATE_LIMIT_WAIT, "{name}: {v} → {d:?}");
                }
            }
        }
        for v in ["inf", "1e20", "Infinity", "1e308"] {
            assert_eq!(wait(&[("retry-after", v)]), Some(MAX_RATE_LIMIT_WAIT), "{v}");
        }
        assert_eq!(
            wait(&[("x-ratelimit-reset-requests", "1e30")]),
            Some(MAX_RATE_LIMIT_WAIT)
        );
        assert_eq!(wait(&[("retry-after", "NaN")]), None);
        assert_eq!(wait(&[("retry-after", "-3")]), None);
        // Header bytes that are not UTF-8 are ignored.
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_bytes(b"\xff\xfe").unwrap());
        assert_eq!(retry_after(&h, now()), None);
    }
}
