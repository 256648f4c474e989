//! The search index and forgetting meet the importers: imported visits are indexed in their batch,
//! forgotten ones never come back (not even when the whole browser file is read again), and a
//! database from before the index gets it built in resumable batches.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rusqlite::{named_params, Connection};
use sitetrail::forget::ForgetOptions;
use sitetrail::history::HistoryQuery;
use sitetrail::ids::{OutboxId, VisitId, WebsiteId};
use sitetrail::import::Browser;
use sitetrail::search::{self, BackfillOptions};
use sitetrail::{NewVisit, Store, Timestamp};

use crate::history::search::assert_index_in_step;
use crate::support::import::{copy_fixture, import, visits_per_website};
use crate::support::{cli, count, exec, run_ok, TempDb};

fn found(store: &Store, text: &str) -> usize {
    store
        .history(&HistoryQuery {
            search: Some(text.into()),
            limit: 500,
            ..HistoryQuery::default()
        })
        .unwrap()
        .rows
        .len()
}

fn visit_of(store: &Store, domain: &str) -> (VisitId, Timestamp) {
    store
        .with_conn(|c| {
            Ok(c.query_row(
                r#"SELECT v.id, v.visited_at FROM visit v JOIN website w ON w.id = v.website_id
                   WHERE w.domain = ?1 ORDER BY v.id LIMIT 1"#,
                [domain],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?)
        })
        .unwrap()
}

#[test]
fn imported_visits_are_indexed_in_their_batch() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    let places = copy_fixture("firefox-places.sqlite", dir.path(), "places.sqlite");
    import(&store, Browser::Chrome, &history).unwrap();
    import(&store, Browser::Firefox, &places).unwrap();
    assert_index_in_step(&store);
    assert_eq!(found(&store, "münchen"), 2, "one visit from each browser");
    assert_eq!(found(&store, "landing"), 1);
}

#[test]
fn forgotten_visits_never_come_back_from_an_import_even_when_the_whole_file_is_read_again() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    assert_eq!(import(&store, Browser::Chrome, &history).unwrap().imported, 18);

    // One visit by id, one website (2 visits), one time range (the video.example.tv visit).
    let (news, _) = visit_of(&store, "news.example.com");
    store.forget_visits(&[news]).unwrap();
    let opts = ForgetOptions::default();
    store
        .forget_website("shop.example.org", false, &opts, &mut |_| {})
        .unwrap();
    let (_, video_at) = visit_of(&store, "video.example.tv");
    store
        .forget_range(video_at, video_at, &opts, &mut |_| {})
        .unwrap();
    let after_forgetting = visits_per_website(&store);
    assert_eq!(count(&store, "visit"), 18 - 4);

    // The next import reads nothing new.
    assert_eq!(import(&store, Browser::Chrome, &history).unwrap().imported, 0);
    // The browser's history changes under the cursor: the whole file is read again.
    let conn = Connection::open(&history).unwrap();
    conn.execute(
        "UPDATE visits SET visit_time = visit_time + 1 WHERE id = (SELECT max(id) FROM visits)",
        [],
    )
    .unwrap();
    drop(conn);
    let report = import(&store, Browser::Chrome, &history).unwrap();
    assert!(report.rescanned);
    assert_eq!(report.skipped.forgotten, 4, "{report:?}");
    // The visit whose time changed is a new visit (new key); every other one was stored or forgotten.
    assert_eq!(report.imported, 1);
    assert_eq!(report.already_present, 18 - 4 - 1);
    let now: Vec<(String, i64)> = visits_per_website(&store);
    assert!(!now.iter().any(|(d, _)| d == "shop.example.org"), "{now:?}");
    assert_eq!(
        now.iter().map(|(_, n)| n).sum::<i64>(),
        after_forgetting.iter().map(|(_, n)| n).sum::<i64>() + 1
    );
    // Without the cursor at all (a new install reading the same profile): still nothing back.
    exec(&store, "DELETE FROM import_cursor");
    let report = import(&store, Browser::Chrome, &history).unwrap();
    assert_eq!((report.imported, report.skipped.forgotten), (0, 4));
    assert_index_in_step(&store);
}

/// A database as migrations 1–3 left it, with `visits` visits stored without any index, two pairs
/// of them in the same microsecond (they share a key).
fn old_database(path: &std::path::Path, visits: u64) {
    let mut conn = Connection::open(path).unwrap();
    conn.execute_batch(
        r#"PRAGMA journal_mode = WAL;
           CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);"#,
    )
    .unwrap();
    let tx = conn.transaction().unwrap();
    for &(version, name, sql) in sitetrail::store::MIGRATIONS.iter().filter(|m| m.0 <= 3) {
        tx.execute_batch(sql).unwrap();
        tx.execute(
            "INSERT INTO schema_migrations VALUES (?1, ?2, 0)",
            rusqlite::params![version, name],
        )
        .unwrap();
    }
    let site = WebsiteId::new();
    tx.execute(
        "INSERT INTO website (id, domain, created_at, version) VALUES (?1, 'old.example', 0, 0)",
        [site],
    )
    .unwrap();
    tx.execute(
        r#"INSERT INTO website_category_classification_outbox (id, website_id, status, attempt_count, created_at, version)
           VALUES (?1, ?2, 'PENDING', 0, 0, 0)"#,
        rusqlite::params![OutboxId::new(), site],
    )
    .unwrap();
    let t0 = Timestamp::parse_rfc3339("2025-01-01T00:00:00Z").unwrap();
    for i in 0..visits {
        let at = if i == 1 {
            t0
        } else {
            Timestamp(t0.as_micros() + i as i64 * 1_000_000)
        };
        tx.execute(
            r#"INSERT INTO visit (id, website_id, url, title, visited_at, source)
               VALUES (:id, :w, :url, :title, :at, 'old')"#,
            named_params! {
                ":id": VisitId::at(at), ":w": site, ":url": format!("https://old.example/{i}"),
                ":title": format!("Archived page number{i}x"), ":at": at,
            },
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

#[test]
fn an_older_database_gets_its_index_built_in_resumable_batches() {
    let db = TempDb::new();
    old_database(&db.path, 40);
    let store = db.open();
    let status = store.search_index_status().unwrap();
    assert_eq!((status.total, status.done, status.complete), (40, 0, false));
    assert_eq!(found(&store, "archived"), 0, "not indexed yet");
    // A visit recorded now is indexed at once.
    store
        .record_visit(&NewVisit {
            url: "https://old.example/new",
            title: Some("Archived today"),
            visited_at: Timestamp::parse_rfc3339("2025-01-01T00:00:05.5Z").unwrap(),
            source: "test",
            source_visit_id: None,
        })
        .unwrap();
    assert_eq!(found(&store, "archived"), 1);

    // Two batches, then the process stops.
    let cancel = Arc::new(AtomicBool::new(false));
    let mut batches = 0;
    let opts = BackfillOptions {
        batch_size: 7,
        cancel: Some(cancel.clone()),
        ..BackfillOptions::default()
    };
    let st = search::backfill(&store, &opts, &mut |s| {
        if s.done > 0 {
            batches += 1;
        }
        if batches == 2 {
            cancel.store(true, Ordering::Relaxed);
        }
    })
    .unwrap();
    assert_eq!((st.done, st.complete), (14, false));
    // Newest first: the newest 14 old visits (and the new one) can be found already.
    assert_eq!(found(&store, "archived"), 15);
    assert_eq!(found(&store, "number39x"), 1);
    assert_eq!(found(&store, "number0x"), 0);

    // The CLI finishes it (a progress bar on a terminal) and searches.
    let out = run_ok(cli(&db.path).args(["history", "--search", "archived", "--limit", "100", "--json"]));
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 41);
    let st = store.search_index_status().unwrap();
    assert!(st.complete);
    assert_index_in_step(&store);
    // The visits of the same microsecond are all found, under keys of their own.
    for n in [0, 1, 32, 33] {
        assert_eq!(found(&store, &format!("number{n}x")), 1, "visit {n}");
    }
    assert_eq!(count(&store, "visit"), 41);
}

/// The stored URL and time of the visit `id`.
fn url_and_time(store: &Store, id: VisitId) -> (String, Timestamp) {
    store
        .with_conn(|c| {
            Ok(
                c.query_row(r#"SELECT url, visited_at FROM visit WHERE id = ?1"#, [id], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?,
            )
        })
        .unwrap()
}

#[test]
fn what_was_forgotten_stays_forgotten_from_any_source_a_copy_of_the_file_capture_or_the_cli() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    assert_eq!(import(&store, Browser::Chrome, &history).unwrap().imported, 18);
    let (news, _) = visit_of(&store, "news.example.com");
    let (news_url, news_at) = url_and_time(&store, news);
    store.forget_visits(&[news]).unwrap();
    let opts = ForgetOptions::default();
    store
        .forget_website("shop.example.org", false, &opts, &mut |_| {})
        .unwrap();
    let forgotten_back = |store: &Store| {
        let sites = visits_per_website(store);
        let news_back = store
            .with_conn(|c| {
                Ok(c.query_row(
                    r#"SELECT count(*) FROM visit WHERE url = ?1 AND visited_at = ?2"#,
                    rusqlite::params![news_url, news_at],
                    |r| r.get::<_, i64>(0),
                )?)
            })
            .unwrap();
        news_back + i64::from(sites.iter().any(|(d, _)| d == "shop.example.org"))
    };

    // A copy of the same file (another path, so another default source), and the same file
    // under another --source: every visit but the 3 forgotten ones comes in again.
    let copy_dir = tempfile::tempdir().unwrap();
    let copy = copy_fixture("chromium-History", copy_dir.path(), "History");
    let report = import(&store, Browser::Chrome, &copy).unwrap();
    assert_eq!((report.imported, report.skipped.forgotten), (15, 3), "{report:?}");
    let other = sitetrail::import::ImportOptions {
        source: Some("other".into()),
        ..sitetrail::import::ImportOptions::default()
    };
    let report =
        sitetrail::import::import_file(&store, Browser::Chrome, &history, &other, &mut |_| {}).unwrap();
    assert_eq!((report.imported, report.skipped.forgotten), (15, 3), "{report:?}");
    assert_eq!(forgotten_back(&store), 0);

    // The CLI's `visit` of the same page at the same time.
    let out = cli(&db.path)
        .args(["visit", &news_url, "--at", &news_at.to_rfc3339()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("forget this visit"),
        "{err}"
    );
    assert_eq!(forgotten_back(&store), 0);

    // The extension: a visit it sent, forgotten, sent again under another event id (a reinstalled
    // extension's queue) is refused.
    let mut host = crate::capture::host::HostProc::start(&db.path, &[]);
    let t = crate::capture::host::now_ms();
    let page = "https://captured.example/private";
    let ack = host.request(&crate::capture::host::batch(
        1,
        vec![crate::capture::host::visit_event("e1", page, None, t)],
    ));
    assert_eq!(ack["stored"], serde_json::json!(["e1"]), "{ack}");
    let (captured, _) = visit_of(&store, "captured.example");
    store.forget_visits(&[captured]).unwrap();
    let ack = host.request(&crate::capture::host::batch(
        2,
        vec![crate::capture::host::visit_event("e2", page, None, t)],
    ));
    assert_eq!(ack["rejected"][0]["id"], "e2", "{ack}");
    assert!(host.finish().success());
    assert_eq!(count(&store, "visit"), 18 - 3 + 15 + 15);
    assert_index_in_step(&store);
}
