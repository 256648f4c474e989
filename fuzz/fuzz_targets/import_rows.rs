//! One visit row of each browser, as column values of any type: the row-level code every import
//! runs (`import::read_row`). Nothing panics; a visit that is stored has a time in the accepted
//! range, the domain of its URL, and a title within bounds.
//!
//! Input (text, so seeds are easy to write): a first line `chrome`, `firefox` or `safari`, then one
//! line per column, `id`, `url`, `title`, the time, the kind (Chromium's `transition`, Firefox's
//! `visit_type`) and the redirect column (Firefox's `redirect_source`, Safari's
//! `redirect_destination`), each a type letter and the value: `n` NULL, `i-12` an integer, `r1.5`
//! a real, `t...` text, `b...` a blob (the rest of the line, as bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rusqlite::types::ValueRef;
use sitetrail::domain::Domain;
use sitetrail::import::{read_row, Browser, RowValues, MAX_VISIT_MICROS, MIN_VISIT_MICROS};
use sitetrail::visits::MAX_TITLE_CHARS;

fn value(line: &[u8]) -> ValueRef<'_> {
    let text = || std::str::from_utf8(&line[1..]).ok();
    match line.first() {
        Some(b'i') => text()
            .and_then(|t| t.parse().ok())
            .map_or(ValueRef::Null, ValueRef::Integer),
        Some(b'r') => text()
            .and_then(|t| t.parse().ok())
            .map_or(ValueRef::Null, ValueRef::Real),
        Some(b't') => ValueRef::Text(&line[1..]),
        Some(b'b') => ValueRef::Blob(&line[1..]),
        _ => ValueRef::Null,
    }
}

fuzz_target!(|data: &[u8]| {
    let mut lines = data.split(|b| *b == b'\n');
    let (browser, time, kind, redirect) = match lines.next() {
        Some(b"firefox") => (Browser::Firefox, "visit_date", "visit_type", "redirect_source"),
        Some(b"safari") => (Browser::Safari, "visit_time", "unused", "redirect_destination"),
        _ => (Browser::Chrome, "visit_time", "transition", "unused"),
    };
    let mut next = || lines.next().map_or(ValueRef::Null, value);
    let values = [
        ("id", next()),
        ("url", next()),
        ("title", next()),
        (time, next()),
        (kind, next()),
        (redirect, next()),
    ];
    let Ok(Ok(visit)) = read_row(browser, RowValues(&values)) else {
        return;
    };
    let at = visit.visited_at.as_micros();
    assert!((MIN_VISIT_MICROS..MAX_VISIT_MICROS).contains(&at), "{at}");
    assert_eq!(Domain::from_url(&visit.url).ok().as_ref(), Some(&visit.domain));
    if let Some(t) = &visit.title {
        assert!(
            t.chars().count() <= MAX_TITLE_CHARS && !t.chars().any(char::is_control),
            "{t:?}"
        );
    }
});
