//! Durations as people write them, for limits and goals: `30m`, `2h`, `1h30m`, `1h 30min`,
//! `90 min`, `1.5h`, `2 hours`, `1:30` (hours and minutes), `120s`. Limits are kept in whole
//! minutes, so a duration that is not a whole number of minutes (`45s`, `1.01h`) is refused
//! rather than rounded, and a bare number (`90`) is refused with the two readings it could have.

use crate::error::{Error, Result};

/// The units understood, each with how many seconds it is.
const UNITS: &[(&[&str], u64)] = &[
    (&["s", "sec", "secs", "second", "seconds"], 1),
    (&["m", "min", "mins", "minute", "minutes"], 60),
    (&["h", "hr", "hrs", "hour", "hours"], 3600),
];

fn unit_seconds(unit: &str) -> Option<u64> {
    UNITS
        .iter()
        .find(|(names, _)| names.contains(&unit))
        .map(|&(_, s)| s)
}

fn refuse(input: &str, why: &str) -> Error {
    Error::InvalidInput(format!(
        "{:?} is not a duration: {why} (write it as 30m, 2h, 1h30m, 90 min or 1:30)",
        crate::error::truncate_chars(input.trim(), 40)
    ))
}

/// `input` in whole minutes.
pub fn parse_minutes(input: &str) -> Result<u32> {
    let text = input.trim().to_lowercase();
    if text.is_empty() {
        return Err(refuse(input, "it is empty"));
    }
    if text.len() > 40 {
        return Err(refuse(input, "it is too long"));
    }
    if let Some((h, m)) = text.split_once(':') {
        let (Ok(h), Ok(m)) = (h.trim().parse::<u32>(), m.trim().parse::<u32>()) else {
            return Err(refuse(input, "hours:minutes are two whole numbers"));
        };
        if m >= 60 {
            return Err(refuse(input, "the minutes of hours:minutes are 00 to 59"));
        }
        return h
            .checked_mul(60)
            .and_then(|h| h.checked_add(m))
            .ok_or_else(|| refuse(input, "it is too long"));
    }
    if text.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(refuse(
            input,
            &format!("a number needs a unit: {text}m for minutes or {text}h for hours"),
        ));
    }
    // Numbers each followed by a unit, spaces allowed anywhere between them.
    let mut seconds_x100: u64 = 0;
    let mut rest = text.as_str();
    let mut seen = 0;
    while !rest.trim_start().is_empty() {
        rest = rest.trim_start();
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return Err(refuse(input, "each part is a number and a unit"));
        }
        let hundredths = parse_hundredths(&rest[..num_len]).map_err(|why| refuse(input, why))?;
        rest = rest[num_len..].trim_start();
        let unit_len = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        if unit.is_empty() {
            return Err(refuse(input, "a number needs a unit (s, m or h)"));
        }
        let per = unit_seconds(unit)
            .ok_or_else(|| refuse(input, &format!("{unit:?} is not a unit (s, m or h)")))?;
        seconds_x100 = hundredths
            .checked_mul(per)
            .and_then(|v| seconds_x100.checked_add(v))
            .ok_or_else(|| refuse(input, "it is too long"))?;
        rest = &rest[unit_len..];
        seen += 1;
        if seen > 3 {
            return Err(refuse(input, "it has too many parts"));
        }
    }
    if seconds_x100 % 6000 != 0 {
        return Err(refuse(
            input,
            "limits and goals are whole minutes (a minute is the smallest)",
        ));
    }
    u32::try_from(seconds_x100 / 6000).map_err(|_| refuse(input, "it is too long"))
}

/// `1`, `1.5`, `1.25` in hundredths, or why not (`.`, `1.2.3`, three decimals, too long).
fn parse_hundredths(number: &str) -> std::result::Result<u64, &'static str> {
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if whole.len() > 9 {
        return Err("it is too long");
    }
    if (whole.is_empty() && frac.is_empty()) || frac.len() > 2 || frac.contains('.') {
        return Err("a number has at most two decimals");
    }
    let digits = |d: &str| d.parse::<u64>().map_err(|_| "a number is digits");
    let whole = if whole.is_empty() { 0 } else { digits(whole)? };
    let frac = match frac.len() {
        0 => 0,
        1 => digits(frac)? * 10,
        _ => digits(frac)?,
    };
    Ok(whole * 100 + frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_people_write_them() {
        for (typed, minutes) in [
            ("30m", 30),
            ("30 min", 30),
            ("30mins", 30),
            ("30 minutes", 30),
            ("2h", 120),
            ("2 hours", 120),
            ("2 HR", 120),
            ("1h30m", 90),
            ("1h 30min", 90),
            ("1 h 30 min", 90),
            ("90 min", 90),
            ("1.5h", 90),
            ("0.25h", 15),
            ("1:30", 90),
            ("0:05", 5),
            ("120s", 2),
            ("1m 60s", 2),
            ("0m", 0),
            (" 45m ", 45),
        ] {
            assert_eq!(parse_minutes(typed).unwrap(), minutes, "{typed}");
        }
    }

    #[test]
    fn what_is_not_a_whole_number_of_minutes_is_refused_with_a_reason() {
        for (typed, says) in [
            ("", "empty"),
            ("90", "90m for minutes or 90h"),
            ("45s", "whole minutes"),
            ("1.01h", "whole minutes"),
            ("1.234h", "two decimals"),
            ("2 days", "not a unit"),
            ("h", "a number and a unit"),
            ("1:75", "00 to 59"),
            ("1:x", "two whole numbers"),
            ("5m 5m 5m 5m", "too many parts"),
            ("99999999999h", "too long"),
            ("30 m -", "a number and a unit"),
        ] {
            let e = parse_minutes(typed).unwrap_err().to_string();
            assert!(e.contains(says), "{typed:?}: {e}");
            assert!(e.contains("30m, 2h"), "{typed:?} shows how: {e}");
        }
    }
}
