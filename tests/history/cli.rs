//! The `history`, `forget` and `blocked` commands through the real binary; and a large forgetting
//! beside a process that keeps recording.

use std::time::{Duration, Instant};

use serde_json::Value;
use sitetrail::forget::ForgetOptions;
use sitetrail::{NewVisit, Store, Timestamp};

use crate::support::{cli, count, run_ok, TempDb};

fn seed(db: &TempDb) {
    let mut c = cli(&db.path);
    for (url, title, at) in [
        (
            "https://www.sqlite.org/lockingv3.html",
            "SQLite: File Locking And Concurrency",
            "2026-03-01T10:00:00Z",
        ),
        (
            "https://github.com/rusqlite/rusqlite",
            "rusqlite on GitHub",
            "2026-03-02T10:00:00Z",
        ),
        (
            "https://news.example.com/a",
            "Morning news",
            "2026-03-03T10:00:00Z",
        ),
        (
            "https://news.example.com/b",
            "Evening news",
            "2026-03-04T10:00:00Z",
        ),
    ] {
        run_ok(cli(&db.path).args(["visit", url, "--title", title, "--at", at]));
    }
    run_ok(c.args(["categorize", "news.example.com", "news"]));
}

fn json(out: &str) -> Vec<Value> {
    serde_json::from_str::<Value>(out)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn history_lists_searches_filters_and_pages() {
    let db = TempDb::new();
    seed(&db);
    let all = json(&run_ok(cli(&db.path).args(["history", "--json"])));
    assert_eq!(all.len(), 4);
    let first = all[0].as_object().unwrap();
    let mut keys: Vec<&str> = first.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "category",
            "category_source",
            "device",
            "domain",
            "id",
            "source",
            "title",
            "url",
            "visited_at"
        ]
    );
    assert_eq!(first["url"], "https://news.example.com/b", "newest first");
    assert_eq!(first["category"], "news");
    assert_eq!(first["category_source"], "user");
    assert_eq!(first["source"], "cli");
    assert_eq!(first["visited_at"], "2026-03-04T10:00:00.000000Z");

    let hits = json(&run_ok(cli(&db.path).args([
        "history",
        "--search",
        "sqlite lock",
        "--json",
    ])));
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0]["title"], "SQLite: File Locking And Concurrency");
    let news = json(&run_ok(cli(&db.path).args([
        "history",
        "--category",
        "news",
        "--json",
    ])));
    assert_eq!(news.len(), 2);
    let rest = json(&run_ok(cli(&db.path).args([
        "history",
        "--uncategorized",
        "--json",
    ])));
    assert_eq!(rest.len(), 2);
    let range = json(&run_ok(cli(&db.path).args([
        "history",
        "--since",
        "2026-03-02T00:00:00Z",
        "--until",
        "2026-03-03T23:00:00Z",
        "--json",
    ])));
    assert_eq!(range.len(), 2);
    let both = json(&run_ok(cli(&db.path).args([
        "history",
        "--search",
        "news",
        "--since",
        "2026-03-04T00:00:00Z",
        "--json",
    ])));
    assert_eq!(both.len(), 1);

    // Pages: the cursor of the next one is printed to stderr.
    let out = cli(&db.path)
        .args(["history", "--limit", "3", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(json(&String::from_utf8_lossy(&out.stdout)).len(), 3);
    let hint = String::from_utf8_lossy(&out.stderr).to_string();
    let cursor = hint
        .split("--before ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap();
    let next = json(&run_ok(
        cli(&db.path).args(["history", "--limit", "3", "--json", "--before", cursor]),
    ));
    assert_eq!(next.len(), 1);
    assert_eq!(next[0]["url"], "https://www.sqlite.org/lockingv3.html");
    // Best first pages by offset.
    let out = cli(&db.path)
        .args([
            "history", "--search", "news", "--sort", "rank", "--limit", "1", "--json",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--offset 1"));
    // Text output: a header, then one line per visit.
    let text = run_ok(cli(&db.path).args(["history", "--search", "github"]));
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.contains("github.com") && text.contains("rusqlite on GitHub"));

    for bad in [
        &["history", "--limit", "0"][..],
        &["history", "--since", "tomorrow"],
        &["history", "--category", "nonsense"],
        &["history", "--before", "not-an-id"],
        &["history", "--sort", "rank"],
    ] {
        let out = cli(&db.path).args(bad).output().unwrap();
        assert!(!out.status.success(), "{bad:?} should fail");
        assert!(!out.stderr.is_empty());
    }
}

#[test]
fn forget_commands_forget_and_report() {
    let db = TempDb::new();
    seed(&db);
    let all = json(&run_ok(cli(&db.path).args(["history", "--json"])));
    let id = all[3]["id"].as_str().unwrap().to_owned();
    let out = run_ok(cli(&db.path).args(["forget", "visit", &id]));
    assert!(out.contains("forgot 1 visit(s) and 1 website(s)"), "{out}");
    let out = run_ok(cli(&db.path).args(["forget", "website", "news.example.com", "--block", "--json"]));
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["visits"], 2);
    assert_eq!(report["blocked"], "news.example.com");
    let out = run_ok(cli(&db.path).args([
        "forget",
        "range",
        "--since",
        "2026-03-02T00:00:00Z",
        "--until",
        "2026-03-02T23:59:59Z",
    ]));
    assert!(out.contains("forgot 1 visit(s)"), "{out}");
    assert_eq!(json(&run_ok(cli(&db.path).args(["history", "--json"]))).len(), 0);
    assert!(run_ok(cli(&db.path).args(["blocked"])).contains("news.example.com"));
    let refused = cli(&db.path)
        .args(["visit", "https://news.example.com/c"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let refused = cli(&db.path)
        .args(["visit", "https://other.example/", "--at", "2026-03-02T12:00:00Z"])
        .output()
        .unwrap();
    assert!(!refused.status.success(), "a forgotten range");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("forget"));
    for bad in [
        &["forget", "visit", "nope"][..],
        &["forget", "website", "unknown.example"],
        &[
            "forget",
            "range",
            "--since",
            "2026-03-05T00:00:00Z",
            "--until",
            "2026-03-01T00:00:00Z",
        ],
        &["blocked", "remove", "never-blocked.example"],
    ] {
        let out = cli(&db.path).args(bad).output().unwrap();
        assert!(!out.status.success(), "{bad:?} should fail");
    }
}

/// A large forgetting commits in batches: another process recording visits meanwhile never waits
/// long for the write lock. The bound is generous for a loaded machine; the benchmark
/// (`benches/forget.rs`) measures it at 1,000,000 visits.
#[test]
fn a_recorder_never_waits_long_while_a_large_forgetting_runs() {
    let db = TempDb::new();
    let store = db.open();
    let t0 = Timestamp::parse_rfc3339("2025-06-01T00:00:00Z").unwrap();
    store
        .write(None, |tx| {
            for i in 0..10_000i64 {
                sitetrail::visits::record_visit_in(
                    tx,
                    &NewVisit {
                        url: &format!("https://site{}.example/{i}", i % 300),
                        title: Some("An old page with a title"),
                        visited_at: Timestamp(t0.as_micros() + i * 1_000_000),
                        source: "test",
                        source_visit_id: None,
                    },
                    t0,
                )?;
            }
            Ok(())
        })
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // The recorder opens its own store: its own connections, as another process has.
    let recorder = {
        let (path, stop) = (db.path.clone(), stop.clone());
        std::thread::spawn(move || {
            let store = Store::open(&path).unwrap();
            let mut waits = Vec::new();
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let t = Instant::now();
                store
                    .record_visit(&NewVisit {
                        url: &format!("https://live.example/{i}"),
                        title: Some("Live"),
                        visited_at: Timestamp::now(),
                        source: "test",
                        source_visit_id: None,
                    })
                    .unwrap();
                waits.push(t.elapsed());
                i += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            waits
        })
    };
    let until = Timestamp(t0.as_micros() + 10_000 * 1_000_000);
    let report = store
        .forget_range(t0, until, &ForgetOptions::default(), &mut |_| {})
        .unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let waits = recorder.join().unwrap();
    assert_eq!(report.visits, 10_000);
    assert_eq!(
        count(&store, "visit"),
        waits.len() as i64,
        "only the live visits are left"
    );
    let max = waits.iter().max().copied().unwrap_or_default();
    assert!(waits.len() >= 5, "the recorder ran during the forgetting");
    assert!(
        max < Duration::from_secs(1),
        "a visit waited {max:?} for the write lock"
    );
}

/// Search in scripts with combining vowel signs (Bengali, Tamil, Hindi, vowel-marked Arabic) finds
/// the page instead of failing with `fts5: phrase queries are not supported`.
#[test]
fn history_search_works_in_scripts_with_combining_marks() {
    let db = TempDb::new();
    let pages = [
        ("https://bn.example/", "বাংলা সংবাদ"),
        ("https://ta.example/", "தமிழ் செய்திகள்"),
        ("https://hi.example/", "हिन्दी समाचार"),
        ("https://ar.example/", "العَرَبِيَّةُ"),
    ];
    for (url, title) in pages {
        run_ok(cli(&db.path).args(["visit", url, "--title", title]));
    }
    for (url, title) in pages {
        let out = cli(&db.path)
            .args(["history", "--search", title, "--json"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{title}: {stderr}");
        let hits = json(&String::from_utf8_lossy(&out.stdout));
        assert_eq!(hits.len(), 1, "{title}");
        assert_eq!(hits[0]["url"], url);
        assert!(run_ok(cli(&db.path).args(["history", "--search", title])).contains(title));
    }
}

/// Dates far in the future: `--until 9999-12-31` means everything, searched or not, and a range
/// that starts after the year 6429 (where a date no longer fits an index key) finds nothing.
#[test]
fn far_future_dates_bound_searches_like_listings() {
    let db = TempDb::new();
    seed(&db);
    let count = |args: &[&str]| {
        let mut all = vec!["history", "--json"];
        all.extend_from_slice(args);
        json(&run_ok(cli(&db.path).args(&all))).len()
    };
    for until in ["9999-12-31", "9999-12-31T23:59:59Z", "6429-01-01", "6430-01-01"] {
        assert_eq!(count(&["--until", until]), 4, "{until}");
        assert_eq!(count(&["--search", "news", "--until", until]), 2, "{until}");
        assert_eq!(
            count(&["--search", "news", "--sort", "rank", "--until", until]),
            2,
            "{until}"
        );
        assert_eq!(
            count(&["--search", "sqlite", "--since", "2000-01-01", "--until", until]),
            1
        );
    }
    for since in ["6430-01-01", "9999-12-30"] {
        assert_eq!(count(&["--since", since]), 0, "{since}");
        assert_eq!(count(&["--search", "news", "--since", since]), 0, "{since}");
    }
}
