//! Search queries in every script: whatever the text (combining marks, scripts the index splits
//! differently from Rust's `is_alphanumeric`, FTS5 syntax, lone marks, private-use and unassigned
//! code points), a search never fails: no SQL error (`fts5: phrase queries are not supported`,
//! `fts5: syntax error`), in either order. Every word of the FTS5 expression is one token of the
//! index's tokenizer, so FTS5 never reads it as a phrase.
#![no_main]

use std::sync::LazyLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use sitetrail::history::{HistoryQuery, SortOrder};
use sitetrail::search::query::match_expression;
use sitetrail::search::unicode61::words;
use sitetrail::{NewVisit, Store, Timestamp};

/// One database for every input, with visits titled in several scripts (kept with its folder).
static STORE: LazyLock<(tempfile::TempDir, Store)> = LazyLock::new(|| {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let store = Store::open(dir.path().join("fuzz.db")).expect("open the database");
    let t0 = Timestamp::parse_rfc3339("2026-03-01T12:00:00Z").expect("a time");
    let pages = [
        ("https://bn.example/সংবাদ", "বাংলা সংবাদ"),
        ("https://ta.example/", "தமிழ் செய்திகள்"),
        ("https://hi.example/", "हिन्दी समाचार"),
        ("https://ar.example/", "اللُّغَةُ العَرَبِيَّةُ"),
        ("https://xn--mnchen-3ya.example/", "Cafe\u{301}s in München"),
        ("https://ja.example/", "日本語のページ"),
    ];
    for (i, (url, title)) in pages.iter().enumerate() {
        store
            .record_visit(&NewVisit {
                url,
                title: Some(title),
                visited_at: t0.plus(Duration::from_secs(60 * i as u64)),
                source: "fuzz",
                source_visit_id: None,
            })
            .expect("record a visit");
    }
    (dir, store)
});

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(expression) = match_expression(text) {
        for term in expression.split(' ') {
            let word = term.trim_end_matches('*').trim_matches('"');
            assert_eq!(words(word).count(), 1, "{word:?} of {expression:?} from {text:?}");
        }
    }
    let store = &STORE.1;
    // Best first needs words: a blank search is refused for it, by design.
    let sorts: &[SortOrder] = if text.trim().is_empty() {
        &[SortOrder::Newest]
    } else {
        &[SortOrder::Newest, SortOrder::Rank]
    };
    for &sort in sorts {
        let found = store.history(&HistoryQuery {
            search: Some(text.to_owned()),
            limit: 20,
            sort,
            ..HistoryQuery::default()
        });
        assert!(found.is_ok(), "{text:?} ({sort:?}): {found:?}");
    }
});
