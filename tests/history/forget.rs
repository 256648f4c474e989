//! Forgetting visits, websites and time ranges: gone from the history, the search index, exports
//! and the file itself; tombstones without content; websites left without visits deleted; large
//! forgettings in short, resumable batches; the space given back.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sitetrail::export::{ExportFormat, ExportKind};
use sitetrail::forget::{ForgetOptions, ForgetReport};
use sitetrail::history::HistoryQuery;
use sitetrail::{Error, NewVisit, Store, Timestamp};

use crate::history::search::assert_index_in_step;
use crate::support::{count, TempDb};

fn t0() -> Timestamp {
    Timestamp::parse_rfc3339("2026-05-01T08:00:00Z").unwrap()
}

fn at(minutes: u64) -> Timestamp {
    t0().plus(Duration::from_secs(60 * minutes))
}

fn record(
    store: &Store,
    url: &str,
    title: &str,
    when: Timestamp,
) -> sitetrail::Result<sitetrail::visits::Recorded> {
    store.record_visit(&NewVisit {
        url,
        title: Some(title),
        visited_at: when,
        source: "test",
        source_visit_id: None,
    })
}

fn urls(store: &Store, search: Option<&str>) -> Vec<String> {
    store
        .history(&HistoryQuery {
            search: search.map(str::to_owned),
            limit: 500,
            ..HistoryQuery::default()
        })
        .unwrap()
        .rows
        .into_iter()
        .map(|r| r.url)
        .collect()
}

/// True if `needle` occurs in the database file or its WAL.
fn in_file(db: &TempDb, needle: &[u8]) -> bool {
    ["", "-wal"].iter().any(|suffix| {
        let mut p = db.path.clone().into_os_string();
        p.push(suffix);
        std::fs::read(&p)
            .map(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
            .unwrap_or(false)
    })
}

fn no_progress() -> impl FnMut(sitetrail::forget::ForgetProgress) {
    |_| {}
}

#[test]
fn a_forgotten_visit_is_gone_from_history_search_exports_and_the_file() {
    let db = TempDb::new();
    let store = db.open();
    // Enough other visits that the forgotten one shares its pages with many.
    for i in 0..2_000u64 {
        record(
            &store,
            &format!("https://site{}.example/page/{i}", i % 40),
            &format!("Ordinary page {i}"),
            at(i),
        )
        .unwrap();
    }
    let secret = record(
        &store,
        "https://site3.example/zqxsecretpath",
        "Qwertyzz Unusual Diagnosis",
        at(1_000).plus(Duration::from_secs(1)),
    )
    .unwrap();
    let alone = record(&store, "https://alone.example/only", "Only visit", at(5)).unwrap();
    assert!(in_file(&db, b"zqxsecretpath"), "the marker is stored before");
    assert_eq!(urls(&store, Some("qwertyzz")).len(), 1);

    let report = store
        .forget_visits(&[
            secret.visit_id.unwrap(),
            alone.visit_id.unwrap(),
            sitetrail::ids::VisitId::new(),
        ])
        .unwrap();
    assert_eq!(
        (report.visits, report.websites, report.not_found, report.complete),
        (2, 1, 1, true),
        "two visits; alone.example had no other visit; one id unknown"
    );
    assert!(urls(&store, Some("qwertyzz")).is_empty(), "not found by search");
    assert!(urls(&store, Some("unusual diagnosis")).is_empty());
    assert_eq!(count(&store, "visit"), 2_000, "only the two visits are gone");
    let mut q = HistoryQuery {
        limit: 500,
        ..HistoryQuery::default()
    };
    loop {
        let page = store.history(&q).unwrap();
        assert!(
            !page.rows.iter().any(|r| r.url.contains("zqxsecretpath")),
            "not in the history"
        );
        match page.next_cursor {
            Some(c) => q.before = Some(c),
            None => break,
        }
    }
    assert!(
        store.website("alone.example").is_err(),
        "a website left without visits is deleted"
    );
    assert!(
        store.website("site3.example").is_ok(),
        "a website with other visits stays"
    );
    let export = db.dir.path().join("history.json");
    store
        .export(ExportKind::History, ExportFormat::Json, &export)
        .unwrap();
    let exported = std::fs::read_to_string(&export).unwrap();
    assert!(!exported.contains("zqxsecretpath") && !exported.contains("Qwertyzz"));
    assert!(!exported.contains("alone.example"));
    std::fs::remove_file(&export).unwrap();
    // Not in the file: neither the row nor the index's words (lower-cased), nor a WAL copy.
    for needle in [
        &b"zqxsecretpath"[..],
        b"Qwertyzz",
        b"qwertyzz",
        b"alone.example",
        b"diagnosis",
    ] {
        assert!(
            !in_file(&db, needle),
            "{} is still in the file",
            String::from_utf8_lossy(needle)
        );
    }
    // Tombstones say what and when, not what it was.
    let tombs = store.tombstones().unwrap();
    assert_eq!(tombs.len(), 2);
    assert!(tombs
        .iter()
        .all(|t| t.kind == "visit" && t.visit_id.is_some() && t.completed_at.is_some()));
    assert!(tombs.iter().any(|t| t.visit_id == secret.visit_id));
    assert_index_in_step(&store);
}

#[test]
fn forgetting_a_website_deletes_every_visit_its_job_and_the_website() {
    let db = TempDb::new();
    let store = db.open();
    for i in 0..250u64 {
        record(&store, &format!("https://forget.example/{i}"), "Forget me", at(i)).unwrap();
        if i % 10 == 0 {
            record(&store, &format!("https://keep.example/{i}"), "Keep me", at(i)).unwrap();
            record(
                &store,
                &format!("https://sub.forget.example/{i}"),
                "A subdomain",
                at(i),
            )
            .unwrap();
        }
    }
    let opts = ForgetOptions {
        batch_size: 40,
        ..ForgetOptions::default()
    };
    let mut batches = 0;
    let report = store
        .forget_website("WWW.Forget.Example", false, &opts, &mut |_| batches += 1)
        .unwrap();
    assert_eq!((report.visits, report.websites, report.complete), (250, 1, true));
    assert!(
        batches >= 250 / 40,
        "committed in batches ({batches} progress reports)"
    );
    assert!(store.website("forget.example").is_err());
    assert!(urls(&store, Some("forget me")).is_empty());
    assert_eq!(urls(&store, Some("keep")).len(), 25);
    assert_eq!(
        urls(&store, Some("subdomain")).len(),
        25,
        "a subdomain is another website"
    );
    assert_eq!(count(&store, "website"), 2);
    assert_eq!(count(&store, "website_category_classification_outbox"), 2);
    let t = store.tombstones().unwrap();
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].kind, "website");
    assert_eq!(t[0].visits, 250);
    let hash: String = sitetrail::forget::domain_sha256("forget.example")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(t[0].domain_sha256.as_deref(), Some(hash.as_str()));
    assert_index_in_step(&store);
    // Not blocked: a later visit is recorded, as a new website with a new job.
    let again = record(&store, "https://forget.example/new", "Back", at(999)).unwrap();
    assert!(again.new_website);
    assert!(matches!(
        store.forget_website(
            "never.example",
            false,
            &ForgetOptions::default(),
            &mut no_progress()
        ),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn forgetting_a_range_deletes_its_visits_and_no_visit_in_it_is_recorded_again() {
    let db = TempDb::new();
    let store = db.open();
    for i in 0..300u64 {
        record(
            &store,
            &format!("https://site{}.example/{i}", i % 3),
            &format!("Page {i}"),
            at(i),
        )
        .unwrap();
    }
    for i in 120..130u64 {
        record(
            &store,
            &format!("https://only-in-range.example/{i}"),
            "In range",
            at(i),
        )
        .unwrap();
    }
    let opts = ForgetOptions {
        batch_size: 25,
        ..ForgetOptions::default()
    };
    let report = store
        .forget_range(at(100), at(199), &opts, &mut no_progress())
        .unwrap();
    assert_eq!((report.visits, report.websites, report.complete), (110, 1, true));
    let left = store
        .history(&HistoryQuery {
            limit: 500,
            ..HistoryQuery::default()
        })
        .unwrap()
        .rows;
    assert_eq!(left.len(), 200);
    assert!(left
        .iter()
        .all(|r| r.visited_at < at(100) || r.visited_at > at(199)));
    assert!(store.website("only-in-range.example").is_err());
    assert!(matches!(
        record(&store, "https://site1.example/late", "Queued visit", at(150)),
        Err(Error::Forgotten { .. })
    ));
    assert!(matches!(
        record(&store, "https://site1.example/edge", "Edge", at(199)),
        Err(Error::Forgotten { .. })
    ));
    record(
        &store,
        "https://site1.example/after",
        "After",
        at(200).plus(Duration::from_micros(1)),
    )
    .unwrap();
    let t = &store.tombstones().unwrap()[0];
    assert_eq!(
        (t.kind.as_str(), t.since, t.until, t.visits),
        ("range", Some(at(100)), Some(at(199)), 110)
    );
    assert_index_in_step(&store);
    assert!(store
        .forget_range(at(5), at(4), &opts, &mut no_progress())
        .is_err());
}

#[test]
fn forgetting_everything_leaves_an_empty_history_that_records_again() {
    let db = TempDb::new();
    let store = db.open();
    for i in 0..50u64 {
        record(
            &store,
            &format!("https://site{}.example/{i}", i % 5),
            "Page",
            at(i),
        )
        .unwrap();
    }
    let report = store
        .forget_range(
            Timestamp(i64::MIN),
            store.now(),
            &ForgetOptions::default(),
            &mut no_progress(),
        )
        .unwrap();
    assert_eq!((report.visits, report.websites), (50, 5));
    assert_eq!(count(&store, "visit"), 0);
    assert_eq!(count(&store, "website"), 0);
    assert_eq!(count(&store, "website_category_classification_outbox"), 0);
    assert_eq!(count(&store, "visit_fts_docsize"), 0);
    record(
        &store,
        "https://new.example/",
        "New",
        store.now().plus(Duration::from_secs(1)),
    )
    .unwrap();
    assert_eq!(urls(&store, Some("new")).len(), 1);
}

#[test]
fn an_interrupted_forgetting_is_resumed_where_it_stopped() {
    let db = TempDb::new();
    let store = db.open();
    for i in 0..200u64 {
        record(&store, &format!("https://big.example/{i}"), "Big", at(i)).unwrap();
    }
    let cancel = Arc::new(AtomicBool::new(false));
    let opts = ForgetOptions {
        batch_size: 30,
        cancel: Some(cancel.clone()),
        ..ForgetOptions::default()
    };
    // Stop after the first batch, as a process killed between two batches would.
    let report = store
        .forget_website("big.example", true, &opts, &mut |_| {
            cancel.store(true, Ordering::Relaxed);
        })
        .unwrap();
    assert!(!report.complete);
    assert_eq!(report.visits, 30, "the first batch committed");
    assert!(store.forgetting_pending().unwrap());
    assert_eq!(count(&store, "visit"), 170);
    // Its effect on new visits is already there: blocked, and the job cannot be claimed.
    assert!(matches!(
        record(&store, "https://big.example/new", "New", at(500)),
        Err(Error::Blocked { .. })
    ));
    assert_eq!(count(&store, "website_category_classification_outbox"), 0);

    // Another process resumes it.
    let other = Store::open(&db.path).unwrap();
    let reports = other
        .resume_forgetting(&ForgetOptions::default(), &mut no_progress())
        .unwrap();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].visits, 170);
    assert!(reports[0].complete);
    assert!(!store.forgetting_pending().unwrap());
    assert_eq!(count(&store, "visit"), 0);
    assert_eq!(count(&store, "website"), 0);
    assert_eq!(store.tombstones().unwrap()[0].visits, 200);
    assert!(other
        .resume_forgetting(&ForgetOptions::default(), &mut no_progress())
        .unwrap()
        .is_empty());
}

#[test]
fn a_large_forgetting_gives_the_space_back() {
    let db = TempDb::new();
    let store = db.open();
    let auto_vacuum: i64 = store
        .with_conn(|c| Ok(c.pragma_query_value(None, "auto_vacuum", |r| r.get(0))?))
        .unwrap();
    assert_eq!(auto_vacuum, 2, "a new database is incremental-vacuum");
    let title = "A long title that takes room in the file ".repeat(20);
    store
        .write(None, |tx| {
            for i in 0..4_000u64 {
                sitetrail::visits::record_visit_in(
                    tx,
                    &NewVisit {
                        url: &format!("https://site{}.example/{i}", i % 20),
                        title: Some(&title),
                        visited_at: at(i),
                        source: "test",
                        source_visit_id: None,
                    },
                    at(0),
                )?;
            }
            Ok(())
        })
        .unwrap();
    store
        .with_conn(|c| Ok(c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?))
        .unwrap();
    let before = std::fs::metadata(&db.path).unwrap().len();
    let report: ForgetReport = store
        .forget_range(at(0), at(3_999), &ForgetOptions::default(), &mut no_progress())
        .unwrap();
    assert_eq!(report.visits, 4_000);
    let after = std::fs::metadata(&db.path).unwrap().len();
    assert!(report.reclaimed_bytes > 0);
    assert!(
        after < before / 4,
        "the file shrank from {before} to {after} bytes"
    );
}

/// The `scrub_pending` rows.
fn scrubs_pending(db: &TempDb) -> i64 {
    let c = rusqlite::Connection::open(&db.path).unwrap();
    c.query_row("SELECT count(*) FROM scrub_pending", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_reader_in_another_connection_leaves_the_scrub_pending_and_the_next_process_finishes_it() {
    let db = TempDb::new();
    let store = db.open();
    let secret = record(
        &store,
        "https://scrub.example/needle-7f3a",
        "Needle title 7f3a",
        at(1),
    )
    .unwrap();
    record(&store, "https://kept.example/", "Kept", at(2)).unwrap();
    drop(store);
    // Another process's read transaction (the native host's, the app's), on its own connection.
    let reader = rusqlite::Connection::open(&db.path).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let seen: i64 = reader
        .query_row("SELECT count(*) FROM visit", [], |r| r.get(0))
        .unwrap();
    assert_eq!(seen, 2);

    let out = crate::support::cli(&db.path)
        .args(["forget", "--json", "visit"])
        .arg(secret.visit_id.unwrap().to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&report["visits"], &report["complete"], &report["scrub_pending"]),
        (
            &serde_json::json!(1),
            &serde_json::json!(false),
            &serde_json::json!(true)
        ),
        "{report}"
    );
    assert_eq!(scrubs_pending(&db), 1, "recorded in the database");
    // Without --json, a person is told why it is not complete.
    let out = crate::support::cli(&db.path)
        .args([
            "forget",
            "range",
            "--since",
            "2026-05-01T08:02:00Z",
            "--until",
            "2026-05-01T08:02:00Z",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("not complete yet") && text.contains("write-ahead log"),
        "{text}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("is reading the database"));

    // The reader finishes its transaction but stays connected (so its closing cannot do the
    // checkpoint): the next Sitetrail process to open the file finishes the scrub.
    reader.execute_batch("COMMIT").unwrap();
    crate::support::run_ok(crate::support::cli(&db.path).arg("status"));
    assert_eq!(scrubs_pending(&db), 0);
    assert!(
        !in_file(&db, b"needle-7f3a"),
        "the URL is gone from the file and its WAL"
    );
    assert!(!in_file(&db, b"Needle title 7f3a"));
    let wal = std::fs::metadata(format!("{}-wal", db.path.display())).map_or(0, |m| m.len());
    assert_eq!(wal, 0, "the WAL was truncated");
    drop(reader);
}

#[test]
fn forgetting_a_website_ends_while_a_writer_keeps_adding_visits_to_it_faster_than_it_deletes() {
    let db = TempDb::new();
    let store = db.open();
    for i in 0..30 {
        record(&store, &format!("https://busy.example/{i}"), "Busy", at(i)).unwrap();
    }
    record(&store, "https://other.example/", "Other", at(100)).unwrap();
    let writer = db.open();
    let opts = ForgetOptions {
        batch_size: 10,
        pause: Duration::ZERO,
        ..ForgetOptions::default()
    };
    // After every batch of at most 10 deletions, another writer tries to add 20 visits to the site.
    let (mut batches, mut refused, mut next) = (0, 0, 1_000);
    let mut accepted: Vec<(usize, String)> = Vec::new();
    let report = store
        .forget_website("busy.example", false, &opts, &mut |_| {
            batches += 1;
            assert!(batches < 500, "the forgetting never ends");
            for _ in 0..20 {
                next += 1;
                let url = format!("https://busy.example/new/{next}");
                match record(&writer, &url, "New", at(next)) {
                    Err(Error::Forgetting { domain }) => {
                        assert_eq!(domain, "busy.example");
                        refused += 1;
                    }
                    other => {
                        other.unwrap();
                        accepted.push((batches, url));
                    }
                }
            }
        })
        .unwrap();
    assert!(report.complete, "{report:?}");
    assert_eq!((report.visits, report.websites), (30, 1));
    assert!(refused > 0);
    // Only the last report (the forgetting is done) let the writer's visits in.
    assert!(accepted.iter().all(|(b, _)| *b == batches), "{accepted:?}");
    let mut expected: Vec<String> = accepted.into_iter().map(|(_, u)| u).rev().collect();
    expected.push("https://other.example/".into());
    assert_eq!(urls(&store, None), expected);
    // Once it is done, the site is recorded again.
    record(&writer, "https://busy.example/after", "After", at(5_000)).unwrap();
}
