//! Hostile and damaged input: files refused as a whole with nothing imported, bad rows skipped
//! and counted, and a failing batch that leaves the cursor and the database as they were.

use std::path::Path;

use rusqlite::Connection;
use sitetrail::import::{default_source, Browser};
use sitetrail::{Error, Store};

use crate::support::import::*;
use crate::support::{count, TempDb};

/// Asserts that importing `path` as `browser` is refused with an import error naming the file
/// and containing `problem`, and that nothing at all was stored.
fn assert_refused(store: &Store, browser: Browser, path: &Path, problem: &str) {
    let err = import(store, browser, path).expect_err("the file must be refused");
    let message = err.to_string();
    assert!(
        matches!(err, Error::Import { .. }),
        "not an import error: {message}"
    );
    assert!(
        message.contains(&path.display().to_string()),
        "{message:?} should name the file"
    );
    assert!(message.contains(problem), "{message:?} should say {problem:?}");
    for table in [
        "visit",
        "website",
        "website_category_classification_outbox",
        "import_cursor",
    ] {
        assert_eq!(count(store, table), 0, "{table} must stay empty after {message}");
    }
}

#[test]
fn a_missing_file_is_refused() {
    let db = TempDb::new();
    let dir = tempfile::tempdir().unwrap();
    assert_refused(
        &db.open(),
        Browser::Chrome,
        &dir.path().join("History"),
        "no such file",
    );
}

#[test]
fn a_directory_is_refused() {
    let db = TempDb::new();
    let dir = tempfile::tempdir().unwrap();
    assert_refused(&db.open(), Browser::Firefox, dir.path(), "is a directory");
}

#[test]
fn a_pipe_or_device_is_refused_without_blocking() {
    let db = TempDb::new();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("History");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    assert_refused(&db.open(), Browser::Chrome, &fifo, "not a regular file");
    assert_refused(
        &db.open(),
        Browser::Chrome,
        Path::new("/dev/zero"),
        "not a regular file",
    );
}

#[test]
fn an_empty_file_is_refused() {
    let db = TempDb::new();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("History");
    std::fs::write(&path, b"").unwrap();
    assert_refused(&db.open(), Browser::Chrome, &path, "empty");
}

#[test]
fn a_file_that_is_not_sqlite_is_refused() {
    let db = TempDb::new();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("places.sqlite");
    std::fs::write(
        &path,
        "<html>this is a web page saved under the wrong name</html>\n".repeat(200),
    )
    .unwrap();
    assert_refused(&db.open(), Browser::Firefox, &path, "not a SQLite database");
}

#[test]
fn a_truncated_file_is_refused() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    let bytes = std::fs::read(&history).unwrap();
    // Cut at a page boundary (the header's page count no longer fits), and mid-page.
    std::fs::write(&history, &bytes[..bytes.len() / 2]).unwrap();
    assert_refused(&store, Browser::Chrome, &history, "truncated");
    std::fs::write(&history, &bytes[..bytes.len() / 2 + 1000]).unwrap();
    assert_refused(&store, Browser::Chrome, &history, "truncated");
    std::fs::write(&history, &bytes[..60]).unwrap();
    assert_refused(&store, Browser::Chrome, &history, "truncated");
}

#[test]
fn a_file_corrupted_in_any_page_is_refused() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let pristine = std::fs::read(fixture("chromium-History")).unwrap();
    let page_size = 4096;
    assert_eq!(pristine.len() % page_size, 0);
    let history = dir.path().join("History");
    // Every page in turn (the fixture has no free pages): overwrite it with garbage.
    for page in 0..pristine.len() / page_size {
        let mut bytes = pristine.clone();
        for (i, b) in bytes[page * page_size..(page + 1) * page_size]
            .iter_mut()
            .enumerate()
        {
            *b = (i as u8).wrapping_mul(31).wrapping_add(7);
        }
        std::fs::write(&history, &bytes).unwrap();
        let err =
            import(&store, Browser::Chrome, &history).expect_err(&format!("page {} corrupted", page + 1));
        assert!(matches!(err, Error::Import { .. }), "page {}: {err}", page + 1);
        assert_eq!(count(&store, "visit"), 0, "page {}", page + 1);
        assert_eq!(count(&store, "import_cursor"), 0, "page {}", page + 1);
    }
}

#[test]
fn a_sqlite_file_with_the_wrong_schema_is_refused() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    // Firefox's file given as Chrome's, and the other way round.
    let places = copy_fixture("firefox-places.sqlite", dir.path(), "places.sqlite");
    assert_refused(&store, Browser::Chrome, &places, "no `urls` table");
    let history = copy_fixture("chromium-History", dir.path(), "History");
    assert_refused(&store, Browser::Firefox, &history, "no `moz_places` table");
    assert_refused(&store, Browser::Safari, &history, "no `history_items` table");
    // The right tables, a needed column missing.
    let odd = dir.path().join("odd-History");
    let conn = Connection::open(&odd).unwrap();
    conn.execute_batch(
        r#"CREATE TABLE urls (id INTEGER PRIMARY KEY, url TEXT, title TEXT);
           CREATE TABLE visits (id INTEGER PRIMARY KEY, url INTEGER, visit_time INTEGER);
           INSERT INTO urls VALUES (1, 'https://example.com/', 'x');
           INSERT INTO visits VALUES (1, 1, 13440415006157902);"#,
    )
    .unwrap();
    drop(conn);
    assert_refused(&store, Browser::Chrome, &odd, "lacks column(s) transition");
}

#[test]
fn bad_rows_are_skipped_and_counted_never_failing_the_import() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    let conn = Connection::open(&history).unwrap();
    let t = 13_440_415_200_000_000; // 2026-11-29 in Chromium time.
    let link = CHROMIUM_LINK;
    // Not web pages: 6.
    for url in [
        "chrome://settings/",
        "about:blank",
        "file:///etc/passwd",
        "data:text/html,<h1>hi</h1>",
        "javascript:alert(1)",
        "chrome-extension://abcdefghijklmnop/popup.html",
    ] {
        add_chromium_visit(&conn, url, "not a page", t, link);
    }
    // URLs that do not parse, are gigantic, or are not UTF-8: 4.
    add_chromium_visit(&conn, "http://exa mple.com/", "space in host", t, link);
    add_chromium_visit(&conn, "http://[::1/", "broken IPv6 host", t, link);
    let giant = format!("https://giant.example.com/{}", "a".repeat(100_000));
    add_chromium_visit(&conn, &giant, "gigantic", t, link);
    let id = add_chromium_visit(&conn, "https://placeholder.example/", "bad utf-8 url", t, link);
    conn.execute(
        "UPDATE urls SET url = CAST(x'68747470733a2f2f6261642dff2e6578616d706c652f' AS TEXT) WHERE id = (SELECT url FROM visits WHERE id = ?1)",
        [id],
    )
    .unwrap();
    // A visit whose URL row is missing: 1 more bad URL.
    conn.execute(
        "INSERT INTO visits (url, visit_time, from_visit, transition, segment_id, visit_duration) VALUES (999999, ?1, 0, ?2, 0, 0)",
        rusqlite::params![t, link],
    )
    .unwrap();
    // Times out of range (1601, before 1990, after 2200, not a number): 4.
    add_chromium_visit(&conn, "https://time0.example/", "zero", 0, link);
    add_chromium_visit(
        &conn,
        "https://time1.example/",
        "1980",
        CHROMIUM_EPOCH_OFFSET + 315_532_800_000_000,
        link,
    );
    add_chromium_visit(&conn, "https://time2.example/", "2300", i64::MAX, link);
    let id = add_chromium_visit(&conn, "https://time3.example/", "text", t, link);
    conn.execute("UPDATE visits SET visit_time = 'yesterday' WHERE id = ?1", [id])
        .unwrap();
    // Subframes (3, 4) and a keyword-generated visit (10): 2 + 1.
    add_chromium_visit(&conn, "https://frame.example/ad", "subframe", t, link | 3);
    add_chromium_visit(&conn, "https://frame.example/widget", "subframe", t, link | 4);
    add_chromium_visit(&conn, "https://search.example.com/?q=kw", "keyword", t, link | 10);
    // Good visits with bad titles: kept, titles repaired. 3 (invalid UTF-8, control characters, a
    // BLOB title).
    let bad_title = add_chromium_visit(&conn, "https://titles.example/1", "x", t, link);
    conn.execute(
        "UPDATE urls SET title = CAST(x'4d756e6368656e20ff20436974799f' AS TEXT) WHERE id = (SELECT url FROM visits WHERE id = ?1)",
        [bad_title],
    )
    .unwrap();
    let ctrl_title = add_chromium_visit(
        &conn,
        "https://titles.example/2",
        "Tab\tand\u{7}bell\nnewline",
        t,
        link,
    );
    let blob_title = add_chromium_visit(&conn, "https://titles.example/3", "x", t, link);
    conn.execute(
        "UPDATE urls SET title = x'426c6f62' WHERE id = (SELECT url FROM visits WHERE id = ?1)",
        [blob_title],
    )
    .unwrap();
    drop(conn);

    let report = import(&store, Browser::Chrome, &history).unwrap();
    let s = report.skipped;
    assert_eq!(
        (
            s.non_web,
            s.bad_url,
            s.bad_timestamp,
            s.subframe,
            s.not_page,
            s.redirect
        ),
        (6, 5, 4, 2, 1, 24)
    );
    assert_eq!(s.total, 6 + 5 + 4 + 2 + 1 + 24);
    assert_eq!(
        report.imported,
        18 + 3,
        "the fixture's 18 and the 3 visits with bad titles"
    );
    assert_eq!(report.repaired_titles, 3);
    // 21 rows added to the fixture's 42: 6 + 5 + 4 + 3 skipped, 3 kept.
    assert_eq!(report.read, 42 + 21);
    assert_eq!(report.last_visit_id, 42 + 21);
    assert_eq!(count(&store, "visit"), 21);

    let source = default_source(Browser::Chrome, &history);
    let title = |id: i64| stored_visit(&store, &source, id).and_then(|v| v.1);
    assert_eq!(title(bad_title).as_deref(), Some("Munchen \u{fffd} City\u{fffd}"));
    assert_eq!(title(ctrl_title).as_deref(), Some("Tab and bell newline"));
    assert_eq!(title(blob_title).as_deref(), Some("Blob"));
}

#[test]
fn a_failing_batch_rolls_back_whole_and_leaves_the_cursor_behind() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    let source = default_source(Browser::Chrome, &history);
    // Batches of 4 browser visits: rows 1-4, 5-8, ... Row 35 (127.0.0.1) is in the batch of rows
    // 33-36, whose rows 33 (search.example.com, a new website) and 34 are inserted before 35 fails.
    store
        .write(None, |tx| {
            tx.execute_batch(
                r#"CREATE TRIGGER fail_visit_35 BEFORE INSERT ON visit WHEN NEW.source_visit_id LIKE '35@%'
                   BEGIN SELECT RAISE(ABORT, 'injected failure'); END"#,
            )?;
            Ok(())
        })
        .unwrap();

    let err = import_batched(&store, Browser::Chrome, &history, 4).expect_err("batch 9 fails");
    assert!(err.to_string().contains("injected failure"), "{err}");
    // Committed: rows 1-32, of which 12 are chain ends (3, 4, 7, 10, 13, 14, 17, 20, 23, 26, 27, 30).
    assert_eq!(cursor_of(&store, &source), Some(32));
    assert_eq!(count(&store, "visit"), 12);
    assert_eq!(
        stored_visit(&store, &source, 33),
        None,
        "nothing of the failed batch"
    );
    assert_eq!(
        stored_visit(&store, &source, 34),
        None,
        "nothing of the failed batch"
    );
    // 9 websites from rows 1-32 (news, mail, shop, video, bank, example.com, forum, münchen,
    // blog); search.example.com, created in the failed batch, was rolled back with its job.
    assert_eq!(count(&store, "website"), 9);
    assert_eq!(count(&store, "website_category_classification_outbox"), 9);

    store
        .write(None, |tx| {
            tx.execute_batch("DROP TRIGGER fail_visit_35")?;
            Ok(())
        })
        .unwrap();
    let resumed = import_batched(&store, Browser::Chrome, &history, 4).unwrap();
    assert_eq!(
        resumed.read, 10,
        "the next import starts after the cursor, at row 33"
    );
    assert_eq!(resumed.imported, 6);
    assert_eq!(count(&store, "visit"), 18);
    assert_eq!(count(&store, "website"), 14);
    assert_eq!(cursor_of(&store, &source), Some(42));
}

#[test]
fn a_huge_sparse_file_is_refused_by_its_header_before_any_of_it_is_copied() {
    let db = TempDb::new();
    let dir = tempfile::tempdir().unwrap();
    let history = dir.path().join("History");
    // 30 GiB of zeros that take no disk space.
    std::fs::File::create(&history)
        .unwrap()
        .set_len(30 << 30)
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // No file the import writes may grow past 100 MiB (`ulimit -f`, in 512-byte blocks): a copy
    // of the file would be stopped (SIGXFSZ), the header check is not.
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -f 204800 && exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_sitetrail"))
        .arg("--db")
        .arg(&db.path)
        .args(["import", "chrome"])
        .arg(&history)
        .env("TMPDIR", tmp.path())
        .env_remove("SITETRAIL_DB")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{:?}: {err}", out.status);
    assert!(
        err.contains("not a SQLite database") && err.contains("History"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "nothing copied"
    );
    assert_eq!(count(&db.open(), "visit"), 0);
}
