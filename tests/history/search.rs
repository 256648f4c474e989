//! Full-text search of the history: words, prefixes, case, accents, domain parts, several words,
//! filters, paging, best-first order, the query plan, and the index kept in step with the visits.

use std::time::Duration;

use sitetrail::history::{CategoryFilter, HistoryQuery, SortOrder};
use sitetrail::ids::VisitId;
use sitetrail::{Category, NewVisit, Store, Timestamp};

use crate::support::TempDb;

fn t0() -> Timestamp {
    Timestamp::parse_rfc3339("2026-03-01T12:00:00Z").unwrap()
}

fn record(store: &Store, url: &str, title: &str, minutes: u64) -> VisitId {
    store
        .record_visit(&NewVisit {
            url,
            title: Some(title),
            visited_at: t0().plus(Duration::from_secs(60 * minutes)),
            source: "test",
            source_visit_id: None,
        })
        .unwrap()
        .visit_id
        .unwrap()
}

fn seeded() -> (TempDb, Store) {
    let db = TempDb::new();
    let store = db.open();
    record(
        &store,
        "https://www.sqlite.org/lockingv3.html",
        "SQLite: File Locking And Concurrency",
        1,
    );
    record(
        &store,
        "https://www.sqlite.org/wal.html",
        "Write-Ahead Logging",
        2,
    );
    record(
        &store,
        "https://github.com/rusqlite/rusqlite",
        "rusqlite: Ergonomic bindings to SQLite for Rust",
        3,
    );
    record(
        &store,
        "https://gist.github.com/someone/abc123",
        "A gist about locks",
        4,
    );
    record(
        &store,
        "https://xn--mnchen-3ya.example/rathaus",
        "Stadt München – Rathaus",
        5,
    );
    record(
        &store,
        "https://news.example.org/world/2026/crème-brûlée",
        "Crème brûlée recipe",
        6,
    );
    record(&store, "https://docs.rs/tokio/latest/tokio/", "tokio - Rust", 7);
    (db, store)
}

fn search(store: &Store, text: &str) -> Vec<String> {
    store
        .history(&HistoryQuery {
            search: Some(text.into()),
            limit: 100,
            ..HistoryQuery::default()
        })
        .unwrap()
        .rows
        .into_iter()
        .map(|r| r.url)
        .collect()
}

#[test]
fn words_and_prefixes_match_case_and_accent_insensitively() {
    let (_db, store) = seeded();
    // The issue's example: two words, the second a prefix of "Locking".
    assert_eq!(
        search(&store, "sqlite lock"),
        ["https://www.sqlite.org/lockingv3.html"]
    );
    assert_eq!(
        search(&store, "LOCKING"),
        ["https://www.sqlite.org/lockingv3.html"]
    );
    // A prefix of a word: "concur" finds "Concurrency"; "ergo" finds "Ergonomic".
    assert_eq!(
        search(&store, "concur"),
        ["https://www.sqlite.org/lockingv3.html"]
    );
    assert_eq!(search(&store, "ergo"), ["https://github.com/rusqlite/rusqlite"]);
    // Accents either way.
    assert_eq!(
        search(&store, "munchen"),
        ["https://xn--mnchen-3ya.example/rathaus"]
    );
    assert_eq!(
        search(&store, "MÜNCHEN"),
        ["https://xn--mnchen-3ya.example/rathaus"]
    );
    assert_eq!(
        search(&store, "creme brulee"),
        // Stored as browsers store it: the path percent-encoded.
        ["https://news.example.org/world/2026/cr%C3%A8me-br%C3%BBl%C3%A9e"]
    );
    // Several words mean all of them.
    assert!(search(&store, "sqlite concurrency tokio").is_empty());
    assert_eq!(
        search(&store, "rust tokio"),
        ["https://docs.rs/tokio/latest/tokio/"]
    );
    // A word of the URL's path.
    assert_eq!(
        search(&store, "lockingv3"),
        ["https://www.sqlite.org/lockingv3.html"]
    );
    assert_eq!(
        search(&store, "abc123"),
        ["https://gist.github.com/someone/abc123"]
    );
    // Newest first.
    assert_eq!(
        search(&store, "sqlite"),
        [
            "https://github.com/rusqlite/rusqlite",
            "https://www.sqlite.org/wal.html",
            "https://www.sqlite.org/lockingv3.html",
        ]
    );
    // Nothing to search for: no rows, not every row.
    assert!(search(&store, "?!").is_empty());
    // FTS5 syntax is just text.
    assert!(search(&store, r#"sqlite" OR "x"#).is_empty());
    assert_eq!(search(&store, "NOT").len(), 0);
}

#[test]
fn a_domain_or_part_of_one_finds_its_pages() {
    let (_db, store) = seeded();
    let github = [
        "https://gist.github.com/someone/abc123",
        "https://github.com/rusqlite/rusqlite",
    ];
    assert_eq!(search(&store, "github"), github);
    assert_eq!(search(&store, "git"), github, "a prefix of a label");
    assert_eq!(search(&store, "github.com"), github, "a whole domain");
    assert_eq!(search(&store, "gist.github.com"), [github[0]]);
    assert_eq!(
        search(&store, "https://gist.github.com/someone"),
        [github[0]],
        "a pasted URL"
    );
    assert_eq!(search(&store, "docs.rs"), ["https://docs.rs/tokio/latest/tokio/"]);
    // The punycode a browser shows for an internationalised domain finds it too.
    assert_eq!(
        search(&store, "xn--mnchen-3ya"),
        ["https://xn--mnchen-3ya.example/rathaus"]
    );
    // `www.` and the scheme are not words of a page.
    assert_eq!(search(&store, "www").len(), 0);
}

#[test]
fn search_combines_with_the_category_filter_and_the_date_range() {
    let (_db, store) = seeded();
    store.set_user_category("github.com", Category::DevTech).unwrap();
    let q = |category, from: Option<u64>, to: Option<u64>| HistoryQuery {
        search: Some("sqlite".into()),
        category,
        from: from.map(|m| t0().plus(Duration::from_secs(60 * m))),
        to: to.map(|m| t0().plus(Duration::from_secs(60 * m))),
        limit: 100,
        ..HistoryQuery::default()
    };
    let urls = |q: HistoryQuery| -> Vec<String> {
        store
            .history(&q)
            .unwrap()
            .rows
            .into_iter()
            .map(|r| r.url)
            .collect()
    };
    assert_eq!(
        urls(q(Some(CategoryFilter::Is(Category::DevTech)), None, None)),
        ["https://github.com/rusqlite/rusqlite"]
    );
    assert_eq!(
        urls(q(Some(CategoryFilter::Uncategorized), None, None)),
        [
            "https://www.sqlite.org/wal.html",
            "https://www.sqlite.org/lockingv3.html"
        ]
    );
    assert_eq!(
        urls(q(None, Some(2), Some(2))),
        ["https://www.sqlite.org/wal.html"]
    );
    assert_eq!(
        urls(q(None, Some(2), None)),
        [
            "https://github.com/rusqlite/rusqlite",
            "https://www.sqlite.org/wal.html"
        ]
    );
    assert_eq!(
        urls(q(None, None, Some(1))),
        ["https://www.sqlite.org/lockingv3.html"]
    );
    assert!(urls(q(Some(CategoryFilter::Is(Category::DevTech)), None, Some(2))).is_empty());
}

#[test]
fn search_pages_walk_every_match_newest_first_without_gaps_or_repeats() {
    let db = TempDb::new();
    let store = db.open();
    // 130 matches among 260 visits, several in the same microsecond (their keys are made unique).
    let at = t0();
    let mut expected = Vec::new();
    for i in 0..260u64 {
        let title = if i % 2 == 0 {
            format!("Rust release notes {i}")
        } else {
            format!("Cooking {i}")
        };
        let visited_at = if i < 10 {
            at
        } else {
            at.plus(Duration::from_secs(i))
        };
        let rec = store
            .record_visit(&NewVisit {
                url: &format!("https://site{}.example/p/{i}", i % 7),
                title: Some(&title),
                visited_at,
                source: "test",
                source_visit_id: None,
            })
            .unwrap();
        if i % 2 == 0 {
            expected.push(rec.visit_id.unwrap());
        }
    }
    let mut q = HistoryQuery {
        search: Some("release".into()),
        limit: 7,
        ..HistoryQuery::default()
    };
    let mut seen: Vec<VisitId> = Vec::new();
    loop {
        let page = store.history(&q).unwrap();
        assert!(page.rows.len() <= 7);
        seen.extend(page.rows.iter().map(|r| r.visit_id));
        match page.next_cursor {
            Some(c) => q.before = Some(c),
            None => break,
        }
    }
    assert_eq!(seen.len(), 130, "every match once");
    let mut sorted = seen.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(seen, sorted, "newest first");
    expected.sort_by(|a, b| b.cmp(a));
    assert_eq!(seen, expected);
}

#[test]
fn best_first_puts_the_strongest_match_first_and_pages_by_offset() {
    let (_db, store) = seeded();
    let page = store
        .history(&HistoryQuery {
            search: Some("github".into()),
            sort: SortOrder::Rank,
            limit: 1,
            ..HistoryQuery::default()
        })
        .unwrap();
    assert_eq!(page.rows.len(), 1);
    assert_eq!(page.next_offset, Some(1));
    let second = store
        .history(&HistoryQuery {
            search: Some("github".into()),
            sort: SortOrder::Rank,
            limit: 1,
            offset: 1,
            ..HistoryQuery::default()
        })
        .unwrap();
    assert_eq!(second.rows.len(), 1);
    assert_eq!(second.next_offset, None);
    assert_ne!(page.rows[0].visit_id, second.rows[0].visit_id);
    // "sqlite" is in the domain and the title of the first visit, only in the title of the rusqlite
    // page: the page about SQLite on sqlite.org ranks above the newer page that mentions it.
    let ranked = store
        .history(&HistoryQuery {
            search: Some("sqlite locking".into()),
            sort: SortOrder::Rank,
            limit: 10,
            ..HistoryQuery::default()
        })
        .unwrap();
    assert_eq!(ranked.rows[0].url, "https://www.sqlite.org/lockingv3.html");
    // Best first needs words.
    assert!(store
        .history(&HistoryQuery {
            sort: SortOrder::Rank,
            limit: 10,
            ..HistoryQuery::default()
        })
        .is_err());
}

#[test]
fn the_search_page_is_driven_by_the_index_in_rowid_order_without_sorting() {
    let (_db, store) = seeded();
    let plan: Vec<String> = store
        .with_conn(|c| {
            let mut s = c.prepare(&format!(
                "EXPLAIN QUERY PLAN {}",
                sitetrail::search::query::SEARCH_SQL
            ))?;
            let rows = s.query_map(
                rusqlite::named_params! {
                    ":match": "\"sqlite\"*", ":low": 0, ":below": i64::MAX,
                    ":category": rusqlite::types::Null, ":uncategorized": false,
                },
                |r| r.get::<_, String>("detail"),
            )?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .unwrap();
    let plan = plan.join(" | ");
    assert!(plan.starts_with("SCAN visit_fts VIRTUAL TABLE INDEX"), "{plan}");
    assert!(plan.contains("SEARCH v USING PRIMARY KEY"), "{plan}");
    assert!(plan.contains("SEARCH w USING PRIMARY KEY"), "{plan}");
    assert!(!plan.contains("TEMP B-TREE"), "{plan}");
}

/// Every visit is in the index exactly once, under its key, and nothing else is.
pub fn assert_index_in_step(store: &Store) {
    let (visits, indexed, orphans): (i64, i64, i64) = store
        .with_conn(|c| {
            Ok(c.query_row(
                r#"SELECT (SELECT count(*) FROM visit),
                          (SELECT count(*) FROM visit_fts_docsize),
                          (SELECT count(*) FROM visit_fts_docsize d WHERE NOT EXISTS (
                              SELECT 1 FROM visit v
                              WHERE v.id >= unhex(printf('%016X0000000000000000', d.id))
                                AND v.id <= unhex(printf('%016XFFFFFFFFFFFFFFFF', d.id))))"#,
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?)
        })
        .unwrap();
    assert_eq!(orphans, 0, "index rows without their visit");
    assert_eq!(indexed, visits, "visits missing from the index");
    store
        .with_conn(|c| Ok(c.execute("INSERT INTO visit_fts (visit_fts) VALUES ('integrity-check')", [])?))
        .expect("FTS5 integrity check");
}

#[test]
fn visits_in_the_same_microsecond_get_distinct_keys_and_are_all_found() {
    let db = TempDb::new();
    let store = db.open();
    let at = t0();
    for i in 0..20 {
        store
            .record_visit(&NewVisit {
                url: &format!("https://same.example/{i}"),
                title: Some("Same instant"),
                visited_at: at,
                source: "test",
                source_visit_id: None,
            })
            .unwrap();
    }
    assert_eq!(search(&store, "instant").len(), 20);
    assert_index_in_step(&store);
    // Every visit kept its time and stays in the date range of that instant.
    let page = store
        .history(&HistoryQuery {
            from: Some(at),
            to: Some(at),
            limit: 100,
            ..HistoryQuery::default()
        })
        .unwrap();
    assert_eq!(page.rows.len(), 20);
    assert!(page.rows.iter().all(|r| r.visited_at == at));
}

#[test]
fn record_visit_keeps_the_index_in_step() {
    let (_db, store) = seeded();
    assert_index_in_step(&store);
}

#[test]
fn a_title_set_later_is_what_the_index_finds() {
    let (_db, store) = seeded();
    let id = record(&store, "https://late.example/article", "Loading…", 30);
    store
        .write(None, |tx| {
            sitetrail::visits::update_title_in(tx, id, Some("Quarterly Zebra Report"))
        })
        .unwrap();
    assert_eq!(search(&store, "zebra report"), ["https://late.example/article"]);
    assert!(
        search(&store, "loading").is_empty(),
        "the old title is gone from the index"
    );
    assert_index_in_step(&store);
}

/// Scripts whose vowel signs and marks are combining characters, which the index's tokenizer
/// splits on (Rust's `is_alphanumeric` does not): each title is found by itself and by each of
/// its words, and no search is an SQL error.
#[test]
fn words_in_every_script_are_split_as_the_index_splits_them() {
    let db = TempDb::new();
    let store = db.open();
    let titles = [
        ("bn", "বাংলা ভাষা শিখুন"),
        ("ta", "தமிழ் செய்திகள்"),
        ("hi", "हिन्दी समाचार"),
        ("ar", "اللُّغَةُ العَرَبِيَّةُ"),
        ("th", "ภาษาไทย"),
        ("he", "עִבְרִית"),
        ("ko", "한국어 ᄒᆞᆫ글"),
        ("vi", "Tiếng Việt"),
        ("de", "Cafe\u{301}s in Mu\u{308}nchen"),
    ];
    for (i, (lang, title)) in titles.iter().enumerate() {
        record(&store, &format!("https://{lang}.example/"), title, i as u64);
    }
    for (lang, title) in titles {
        let url = format!("https://{lang}.example/");
        assert!(search(&store, title).contains(&url), "{lang}: {title}");
        for word in title.split(' ') {
            assert!(search(&store, word).contains(&url), "{lang}: {word}");
        }
    }
}

/// Every code point, glued between letters and on its own, searched: never an SQL error.
#[test]
fn no_search_is_an_sql_error_whatever_the_characters() {
    let (_db, store) = seeded();
    let points: Vec<char> = (0u32..=0x10ffff).filter_map(char::from_u32).collect();
    for chunk in points.chunks(16) {
        let glued: String = chunk.iter().map(|c| format!("a{c}")).collect();
        let spaced: String = chunk.iter().map(|c| format!("{c} ")).collect();
        for text in [glued, spaced] {
            let found = store.history(&HistoryQuery {
                search: Some(text.clone()),
                limit: 10,
                ..HistoryQuery::default()
            });
            assert!(found.is_ok(), "{text:?}: {found:?}");
        }
    }
}
