//! How the CLI speaks to people, and what it takes from them: durations (`1 h 05 min`, `12 min`,
//! `45 s`), local times (`14:05`, `yesterday 09:12`, `Sun 29 Nov 14:05`) and days, categories by
//! name (typed as ids or names, with a "did you mean" for near misses), who set a category. Pure
//! functions of their input, the time zone and "now", so tests pass both.

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};

use sitetrail::time_spent::day_of;
use sitetrail::{Category, CategorySource, Error, Result, Timestamp};

/// `1 h 05 min`, `12 min`, `45 s`, never a clock-like `0:50`: [`sitetrail::time::duration_words`],
/// the same words as the app and the extension (tests/fixtures/durations.json).
pub(crate) fn duration(ms: i64) -> String {
    sitetrail::time::duration_words(ms)
}

/// The mark of a figure estimated from a browser's own history (how long pages stayed open), not
/// measured: the app's and the extension's too.
pub(crate) const ESTIMATE_MARK: &str = "≈";

/// An estimated duration: `≈ 3 min`.
pub(crate) fn estimate(ms: i64) -> String {
    format!("{ESTIMATE_MARK} {}", duration(ms))
}

/// `t` in the local time zone, as [`time_in`] says it.
pub(crate) fn local_time(t: Timestamp) -> String {
    time_in(t, &chrono::Local, super::clock::now())
}

/// `t` in `tz`, said the short way for recent times: `14:05` today, `yesterday 09:12`,
/// `Sun 29 Nov 14:05` this year, `Sat 29 Nov 2025 14:05` before.
pub(crate) fn time_in<Tz: TimeZone>(t: Timestamp, tz: &Tz, now: Timestamp) -> String
where
    Tz::Offset: std::fmt::Display,
{
    let Some(utc) = DateTime::<Utc>::from_timestamp_micros(t.as_micros()) else {
        return t.to_rfc3339();
    };
    let at = utc.with_timezone(tz);
    let clock = at.format("%H:%M");
    let today = day_of(now, tz);
    match day_words(at.date_naive(), today) {
        Some("today") => clock.to_string(),
        Some(word) => format!("{word} {clock}"),
        None => format!("{} {clock}", date(at.date_naive(), today)),
    }
}

/// `t` in the local time zone in full, for a question where "14:05" could be read two ways:
/// `Sun 29 Nov 2026 14:05`.
pub(crate) fn local_time_in_full(t: Timestamp) -> String {
    match DateTime::<Utc>::from_timestamp_micros(t.as_micros()) {
        Some(utc) => utc
            .with_timezone(&chrono::Local)
            .format("%a %-d %b %Y %H:%M")
            .to_string(),
        None => t.to_rfc3339(),
    }
}

/// A calendar day: `today`, `yesterday`, `Sun 29 Nov` this year, `Sat 29 Nov 2025` before.
pub(crate) fn day(d: NaiveDate, today: NaiveDate) -> String {
    match day_words(d, today) {
        Some(word) => word.to_owned(),
        None => date(d, today),
    }
}

/// Today's local calendar day.
pub(crate) fn local_today() -> NaiveDate {
    day_of(super::clock::now(), &chrono::Local)
}

fn day_words(d: NaiveDate, today: NaiveDate) -> Option<&'static str> {
    if d == today {
        Some("today")
    } else if Some(d) == today.pred_opt() {
        Some("yesterday")
    } else {
        None
    }
}

fn date(d: NaiveDate, today: NaiveDate) -> String {
    if d.year() == today.year() {
        d.format("%a %-d %b").to_string()
    } else {
        d.format("%a %-d %b %Y").to_string()
    }
}

/// A category's name, or what a website without one is waiting for.
pub(crate) fn category_name(c: Option<Category>) -> &'static str {
    c.map_or("Not classified yet", Category::name)
}

/// Who set a category, in words.
pub(crate) fn source_name(s: CategorySource) -> &'static str {
    match s {
        CategorySource::Ai => "AI",
        CategorySource::Builtin => "built-in",
        CategorySource::User => "you",
    }
}

/// Lower-case letters and digits only, `&` read as "and": `Development & technology`,
/// `development and technology` and `DEVELOPMENT-AND-TECHNOLOGY` are the same.
fn squash(s: &str) -> String {
    s.to_lowercase()
        .replace('&', "and")
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect()
}

/// The value parser of every argument that takes a category: any text (an id or a name, checked
/// by [`parse_category`] where it is used, with its "did you mean"), whose possible values, the
/// category ids, are what shell completion offers (never file names). They are hidden from
/// `--help`, which points to `sitetrail categories` instead.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CategoryArg;

impl clap::builder::TypedValueParser for CategoryArg {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            Category::ALL
                .iter()
                .map(|c| clap::builder::PossibleValue::new(c.id()).help(c.name())),
        ))
    }
}

/// A category as a person types it: its id (`dev_tech`) or its name (`"Development &
/// technology"`, any case). Anything else is refused with the nearest categories, if any are near.
pub(crate) fn parse_category(input: &str) -> Result<Category> {
    if let Ok(c) = input.parse::<Category>() {
        return Ok(c);
    }
    let typed = squash(input);
    if let Some(c) = Category::ALL
        .iter()
        .find(|c| squash(c.id()) == typed || squash(c.name()) == typed)
    {
        return Ok(*c);
    }
    let near = nearest_categories(&typed);
    if near.is_empty() {
        return Err(Error::UnknownCategory(input.trim().chars().take(100).collect()));
    }
    let list: Vec<String> = near
        .iter()
        .map(|c| format!("{} ({})", c.id(), c.name()))
        .collect();
    Err(Error::InvalidInput(format!(
        "unknown category {:?}: did you mean {}? (`sitetrail categories` lists them all)",
        input.trim().chars().take(100).collect::<String>(),
        list.join(" or ")
    )))
}

/// The categories `typed` (squashed) most likely meant, best first, at most three: those whose id
/// or name holds it (or that it holds), else those within a typo or two of it.
fn nearest_categories(typed: &str) -> Vec<Category> {
    if typed.is_empty() {
        return Vec::new();
    }
    let forms = |c: &Category| [squash(c.id()), squash(c.name())];
    if typed.chars().count() >= 3 {
        let holding: Vec<Category> = Category::ALL
            .iter()
            .filter(|c| {
                forms(c)
                    .iter()
                    .any(|f| f.contains(typed) || (f.chars().count() >= 4 && typed.contains(f.as_str())))
            })
            .copied()
            .take(3)
            .collect();
        if !holding.is_empty() {
            return holding;
        }
    }
    let mut scored: Vec<(f64, Category)> = Category::ALL
        .iter()
        .map(|c| {
            let best = forms(c)
                .iter()
                .map(|f| strsim::jaro_winkler(typed, f))
                .fold(0.0, f64::max);
            (best, *c)
        })
        .filter(|(score, _)| *score >= 0.85)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::FixedOffset;

    /// The table the app, the CLI and the extension are all tested against.
    const DURATIONS: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/durations.json"
    ));

    #[test]
    fn durations_read_as_the_shared_table_says() {
        let table: serde_json::Value = serde_json::from_str(DURATIONS).unwrap();
        let examples = table["examples"].as_array().unwrap();
        assert!(examples.len() >= 10);
        for e in examples {
            let ms = e["ms"].as_i64().unwrap();
            assert_eq!(duration(ms), e["text"].as_str().unwrap(), "{ms} ms");
            assert_eq!(estimate(ms), e["estimated"].as_str().unwrap(), "{ms} ms");
        }
        assert_eq!(
            duration(i64::MAX),
            format!(
                "{} h {:02} min",
                (i64::MAX / 60_000) / 60,
                (i64::MAX / 60_000) % 60
            )
        );
    }

    fn at(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(s).unwrap()
    }

    #[test]
    fn recent_times_are_said_the_short_way_in_the_local_zone() {
        let tz = FixedOffset::east_opt(3600).unwrap(); // UTC+1
        let now = at("2026-11-30T18:00:00Z");
        assert_eq!(time_in(at("2026-11-30T13:05:00Z"), &tz, now), "14:05");
        assert_eq!(time_in(at("2026-11-29T08:12:00Z"), &tz, now), "yesterday 09:12");
        // 23:30 UTC on the 28th is already the 29th at UTC+1: yesterday there.
        assert_eq!(time_in(at("2026-11-28T23:30:00Z"), &tz, now), "yesterday 00:30");
        assert_eq!(time_in(at("2026-11-28T10:00:00Z"), &tz, now), "Sat 28 Nov 11:00");
        assert_eq!(
            time_in(at("2025-11-29T10:00:00Z"), &tz, now),
            "Sat 29 Nov 2025 11:00"
        );
        let today = NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
        assert_eq!(day(today, today), "today");
        assert_eq!(
            day(NaiveDate::from_ymd_opt(2026, 11, 29).unwrap(), today),
            "yesterday"
        );
        assert_eq!(
            day(NaiveDate::from_ymd_opt(2026, 11, 1).unwrap(), today),
            "Sun 1 Nov"
        );
    }

    #[test]
    fn categories_are_taken_by_id_or_name() {
        assert_eq!(parse_category("dev_tech").unwrap(), Category::DevTech);
        assert_eq!(
            parse_category("Development & technology").unwrap(),
            Category::DevTech
        );
        assert_eq!(
            parse_category("development and TECHNOLOGY").unwrap(),
            Category::DevTech
        );
        assert_eq!(parse_category(" email & chat ").unwrap(), Category::Communication);
        assert_eq!(
            parse_category("video-streaming").unwrap(),
            Category::VideoStreaming
        );
    }

    #[test]
    fn near_misses_get_a_did_you_mean() {
        let e = parse_category("tech").unwrap_err().to_string();
        assert!(
            e.contains("did you mean dev_tech (Development & technology)"),
            "{e}"
        );
        let e = parse_category("shoping").unwrap_err().to_string();
        assert!(e.contains("did you mean shopping"), "{e}");
        let e = parse_category("social media").unwrap_err().to_string();
        assert!(e.contains("did you mean social"), "{e}");
        let e = parse_category("zzzz").unwrap_err();
        assert!(matches!(e, Error::UnknownCategory(_)), "nothing near: {e}");
        assert_eq!(
            e.kind(),
            parse_category("tech").unwrap_err().kind(),
            "the same exit code"
        );
    }
}
