//! Importing real browser files: exact websites and visits, the outbox, the browser's file left
//! untouched, incremental and idempotent imports, Safari.

use rusqlite::Connection;
use sitetrail::import::{default_source, Browser};

use crate::support::import::*;
use crate::support::{count, TempDb};

/// Expected from `tests/fixtures/chromium-History`, derived with sqlite3:
/// - `SELECT count(*) FROM visits` = 42.
/// - Redirect sources, without the CHAIN_END qualifier:
///   `SELECT count(*) FROM visits WHERE transition & 0x20000000 = 0` = 24 (for 12 pages, the
///   http → https → http chain of Chromium's HTTPS-first attempt; the last visit is kept).
/// - No subframes: `SELECT count(*) FROM visits WHERE transition & 255 IN (3, 4, 10)` = 0.
/// - Imported: the other 18, per website by hand from
///   `SELECT v.id, u.url FROM visits v JOIN urls u ON u.id = v.url WHERE v.transition & 0x20000000`
///   (www.news.example.com is news.example.com; WWW.Example.COM:80 is example.com).
const CHROMIUM_WEBSITES: &[(&str, i64)] = &[
    ("127.0.0.1", 1),
    ("bank.example.co.uk", 1),
    ("blog.example.net", 1),
    ("example.com", 1),
    ("forum.example.io", 1),
    ("jobs.example.com", 1),
    ("localhost", 1),
    ("mail.example.org", 1),
    ("maps.example.com", 1),
    ("news.example.com", 4),
    ("search.example.com", 1),
    ("shop.example.org", 2),
    ("video.example.tv", 1),
    ("xn--mnchen-3ya.example", 1),
];

/// Expected from `tests/fixtures/firefox-places.sqlite`, derived with sqlite3:
/// - `SELECT count(*) FROM moz_historyvisits` = 17.
/// - One redirect source: `SELECT from_visit FROM moz_historyvisits WHERE visit_type IN (5, 6)`
///   = 11 (short.example.com/redirect); its target, visit 12 (landing.example.net), is kept.
/// - No embeds, framed links or downloads: `... WHERE visit_type IN (4, 7, 8)` = 0.
/// - Imported: the other 16, per website from
///   `SELECT v.id, p.url FROM moz_historyvisits v JOIN moz_places p ON p.id = v.place_id`
///   (news.example.com: /world twice, /sports, /frame).
const FIREFOX_WEBSITES: &[(&str, i64)] = &[
    ("bank.example.co.uk", 1),
    ("docs.example.dev", 1),
    ("example.com", 1),
    ("forum.example.io", 1),
    ("jobs.example.com", 1),
    ("landing.example.net", 1),
    ("localhost", 1),
    ("mail.example.org", 1),
    ("news.example.com", 4),
    ("search.example.com", 1),
    ("shop.example.org", 1),
    ("video.example.tv", 1),
    ("xn--mnchen-3ya.example", 1),
];

fn owned(expected: &[(&str, i64)]) -> Vec<(String, i64)> {
    expected.iter().map(|(d, n)| (d.to_string(), *n)).collect()
}

#[test]
fn chromium_fixture_imports_exact_websites_and_visits() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");

    let report = import(&store, Browser::Chrome, &history).unwrap();
    assert_eq!(report.read, 42);
    assert_eq!(report.imported, 18);
    assert_eq!(report.skipped.total, 24);
    assert_eq!(report.skipped.redirect, 24);
    assert_eq!(report.new_websites, 14);
    assert_eq!(report.last_visit_id, 42);
    assert!(report.complete);
    assert_eq!(visits_per_website(&store), owned(CHROMIUM_WEBSITES));
    assert_eq!(count(&store, "visit"), 18);

    // Visit 27: `SELECT u.url, u.title, v.visit_time FROM visits v JOIN urls u ON u.id = v.url
    // WHERE v.id = 27` = http://xn--mnchen-3ya.example/ | Stadt München | 13440415034673403, which is
    // 13440415034673403 - 11644473600000000 µs after the Unix epoch.
    let source = default_source(Browser::Chrome, &history);
    assert_eq!(
        stored_visit(&store, &source, 27),
        Some((
            "http://xn--mnchen-3ya.example/".to_owned(),
            Some("Stadt München".to_owned()),
            1_795_941_434_673_403
        ))
    );
    // Stored under the browser's id and the visit's time (Unix µs).
    let key: String = store
        .with_conn(|c| {
            Ok(c.query_row(
                "SELECT source_visit_id FROM visit WHERE url = 'http://xn--mnchen-3ya.example/'",
                [],
                |r| r.get(0),
            )?)
        })
        .unwrap();
    assert_eq!(key, "27@1795941434673403");
    // Visit 1 is the first (redirecting) visit of a chain: skipped. Visit 3 ends it: kept.
    assert_eq!(stored_visit(&store, &source, 1), None);
    assert!(stored_visit(&store, &source, 3).is_some());
}

#[test]
fn firefox_fixture_imports_exact_websites_and_visits() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let places = copy_fixture("firefox-places.sqlite", dir.path(), "places.sqlite");

    let report = import(&store, Browser::Firefox, &places).unwrap();
    assert_eq!(report.read, 17);
    assert_eq!(report.imported, 16);
    assert_eq!(report.skipped.total, 1);
    assert_eq!(report.skipped.redirect, 1);
    assert_eq!(report.new_websites, 13);
    assert_eq!(visits_per_website(&store), owned(FIREFOX_WEBSITES));

    let source = default_source(Browser::Firefox, &places);
    // The redirect's landing page (visit 12, visit_date 1795941583253333 µs) is kept; the
    // shortener (visit 11) is not.
    assert_eq!(
        stored_visit(&store, &source, 12),
        Some((
            "http://landing.example.net/after".to_owned(),
            Some("landing.example.net — page /after".to_owned()),
            1_795_941_583_253_333
        ))
    );
    assert_eq!(stored_visit(&store, &source, 11), None);
    // docs.example.dev has no title in moz_places.
    assert_eq!(stored_visit(&store, &source, 6).map(|v| v.1), Some(None));
}

#[test]
fn every_new_website_gets_one_pending_outbox_row() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    let places = copy_fixture("firefox-places.sqlite", dir.path(), "places.sqlite");

    let chrome = import(&store, Browser::Chrome, &history).unwrap();
    let firefox = import(&store, Browser::Firefox, &places).unwrap();
    // Firefox adds only docs.example.dev and landing.example.net to Chromium's 14.
    assert_eq!((chrome.new_websites, firefox.new_websites), (14, 2));
    assert_eq!(count(&store, "website"), 16);
    assert_eq!(count(&store, "website_category_classification_outbox"), 16);
    assert_eq!(websites_without_outbox_row(&store), 0);
}

#[test]
fn the_browser_files_are_byte_for_byte_unchanged() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    // A live browser: it holds the file open in WAL mode with recent visits only in the WAL.
    let browser = Connection::open(&history).unwrap();
    browser.pragma_update(None, "journal_mode", "WAL").unwrap();
    browser.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    let t = 13_440_415_200_000_000;
    add_chromium_visit(
        &browser,
        "https://wal-only.example.org/",
        "In the WAL",
        t,
        CHROMIUM_LINK,
    );
    let before = snapshot_dir(dir.path());
    assert!(before.iter().any(|(n, _)| n == "History-wal"));

    let report = import(&store, Browser::Chrome, &history).unwrap();
    assert_eq!(report.imported, 19, "the visit still in the WAL is read too");
    assert_eq!(
        snapshot_dir(dir.path()),
        before,
        "no browser file changed, none was added"
    );
    drop(browser);
}

#[test]
fn a_transaction_in_flight_in_the_browser_is_rolled_back_in_the_copy_only() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    // A browser in rollback-journal mode, mid-transaction: its uncommitted pages are already in the
    // file (a tiny cache makes SQLite spill them), and the originals are in `History-journal`.
    let mut browser = Connection::open(&history).unwrap();
    browser.pragma_update(None, "journal_mode", "DELETE").unwrap();
    browser.pragma_update(None, "cache_size", 1).unwrap();
    let tx = browser.transaction().unwrap();
    for i in 0..300 {
        let url = format!("https://uncommitted.example.org/{i}/{}", "x".repeat(500));
        add_chromium_visit(
            &tx,
            &url,
            "never committed",
            13_440_415_200_000_000 + i,
            CHROMIUM_LINK,
        );
    }
    assert!(dir.path().join("History-journal").exists());
    let before = snapshot_dir(dir.path());

    let report = import(&store, Browser::Chrome, &history).unwrap();
    assert_eq!(
        (report.read, report.imported),
        (42, 18),
        "only committed visits: the copy's hot journal was rolled back"
    );
    assert_eq!(
        snapshot_dir(dir.path()),
        before,
        "the browser's files are untouched"
    );
    tx.rollback().unwrap();
}

#[test]
fn importing_twice_adds_nothing() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    import(&store, Browser::Chrome, &history).unwrap();

    let again = import(&store, Browser::Chrome, &history).unwrap();
    assert_eq!((again.read, again.imported, again.new_websites), (0, 0, 0));

    // Even without the cursor (a lost cursor, or the same source named again), nothing doubles:
    // visits are unique by source and browser visit id.
    store
        .write(None, |tx| {
            tx.execute("DELETE FROM import_cursor", [])?;
            Ok(())
        })
        .unwrap();
    let reread = import(&store, Browser::Chrome, &history).unwrap();
    assert_eq!(reread.read, 42);
    assert_eq!((reread.imported, reread.already_present), (0, 18));
    assert_eq!(count(&store, "visit"), 18);
    assert_eq!(count(&store, "website"), 14);
    assert_eq!(count(&store, "website_category_classification_outbox"), 14);
}

#[test]
fn a_second_import_reads_only_new_visits() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    let first = import(&store, Browser::Chrome, &history).unwrap();
    assert_eq!(first.last_visit_id, 42);

    let browser = Connection::open(&history).unwrap();
    let t = 13_440_415_200_000_000;
    let a = add_chromium_visit(&browser, "https://new.example.org/a", "A", t, CHROMIUM_LINK);
    let b = add_chromium_visit(
        &browser,
        "https://news.example.com/later",
        "B",
        t + 1,
        CHROMIUM_LINK,
    );
    drop(browser);
    assert_eq!((a, b), (43, 44));

    let second = import(&store, Browser::Chrome, &history).unwrap();
    assert_eq!(second.read, 2, "only the visits after the cursor are read");
    assert_eq!((second.imported, second.new_websites), (2, 1));
    assert_eq!(second.last_visit_id, 44);
    let source = default_source(Browser::Chrome, &history);
    assert_eq!(cursor_of(&store, &source), Some(44));
    assert_eq!(count(&store, "visit"), 20);
}

#[test]
fn a_cleared_firefox_history_that_reuses_visit_ids_is_read_again() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let places = copy_fixture("firefox-places.sqlite", dir.path(), "places.sqlite");
    assert_eq!(
        import(&store, Browser::Firefox, &places).unwrap().last_visit_id,
        17
    );

    // "Clear all history", then two new visits: Firefox's ids are not AUTOINCREMENT, so they start
    // again at 1, below the cursor.
    let browser = Connection::open(&places).unwrap();
    browser.execute("DELETE FROM moz_historyvisits", []).unwrap();
    browser
        .execute(
            "INSERT INTO moz_places (url, title, rev_host, guid) VALUES ('https://fresh.example.org/', 'Fresh', 'gro.elpmaxe.hserf.', 'freshguid001')",
            [],
        )
        .unwrap();
    browser
        .execute_batch(
            r#"INSERT INTO moz_historyvisits (from_visit, place_id, visit_date, visit_type, session, source)
               VALUES (0, (SELECT id FROM moz_places WHERE url = 'https://fresh.example.org/'), 1795990000000000, 1, 0, 0),
                      (0, (SELECT id FROM moz_places WHERE url = 'http://news.example.com/world'), 1795990001000000, 1, 0, 0);"#,
        )
        .unwrap();
    let ids: Vec<i64> = browser
        .prepare("SELECT id FROM moz_historyvisits ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(ids, vec![1, 2], "the ids were reused");
    drop(browser);

    let after = import(&store, Browser::Firefox, &places).unwrap();
    assert!(after.rescanned, "the visit at the cursor (17) is gone");
    assert_eq!((after.read, after.imported, after.new_websites), (2, 2, 1));
    assert_eq!(after.last_visit_id, 2);
    assert_eq!(
        count(&store, "visit"),
        18,
        "old visits 1 and 2 and the new ones are all kept"
    );

    let again = import(&store, Browser::Firefox, &places).unwrap();
    assert!(!again.rescanned);
    assert_eq!((again.read, again.imported), (0, 0));
}

#[test]
fn visits_deleted_at_the_cursor_cause_a_rescan_that_stores_nothing_twice() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    import(&store, Browser::Chrome, &history).unwrap();

    // "Clear the last hour": the newest visit (the cursor's) is deleted.
    let browser = Connection::open(&history).unwrap();
    browser.execute("DELETE FROM visits WHERE id = 42", []).unwrap();
    drop(browser);

    let after = import(&store, Browser::Chrome, &history).unwrap();
    assert!(after.rescanned);
    assert_eq!(after.read, 41);
    assert_eq!((after.imported, after.already_present), (0, 17));
    assert_eq!(after.last_visit_id, 41);
    assert_eq!(count(&store, "visit"), 18);
}

#[test]
fn source_names_can_be_chosen() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    let opts = sitetrail::import::ImportOptions {
        source: Some("chrome:work-laptop".into()),
        ..Default::default()
    };
    let report =
        sitetrail::import::import_file(&store, Browser::Chrome, &history, &opts, &mut |_| {}).unwrap();
    assert_eq!(report.source, "chrome:work-laptop");
    assert!(stored_visit(&store, "chrome:work-laptop", 3).is_some());
    assert_eq!(cursor_of(&store, "chrome:work-laptop"), Some(42));
}

#[test]
fn safari_history_imports_with_redirects_skipped() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("History.db");
    let conn = new_safari_db(&path);
    let t = 1_795_941_000.25; // 2026-11-29, a quarter second past.
    add_safari_visit(&conn, "https://www.apple.example/mac", t, Some("Mac"), None);
    // A redirect: the first visit names its destination; only the destination is a page view.
    let landing = add_safari_visit(
        &conn,
        "https://landing.example.net/after",
        t + 2.0,
        Some("Landing"),
        None,
    );
    add_safari_visit(&conn, "http://short.example.com/x", t + 1.0, None, Some(landing));
    add_safari_visit(
        &conn,
        "https://www.apple.example/mac",
        t + 3.0,
        Some("Mac again"),
        None,
    );
    add_safari_visit(&conn, "file:///Users/me/notes.html", t + 4.0, Some("Notes"), None);
    drop(conn);

    let report = import(&store, Browser::Safari, &path).unwrap();
    assert_eq!(report.read, 5);
    assert_eq!(report.imported, 3);
    assert_eq!((report.skipped.redirect, report.skipped.non_web), (1, 1));
    assert_eq!(
        visits_per_website(&store),
        vec![
            ("apple.example".to_owned(), 2),
            ("landing.example.net".to_owned(), 1)
        ]
    );
    let source = default_source(Browser::Safari, &path);
    assert_eq!(
        stored_visit(&store, &source, 1),
        Some((
            "https://www.apple.example/mac".to_owned(),
            Some("Mac".to_owned()),
            1_795_941_000_250_000
        ))
    );
}
