//! Website icons imported with the history from the browsers' own icon files (real files written
//! by Chromium 156 and Firefox ESR 153: `tests/fixtures/*-icons/`), never from the network; bad or
//! oversized icons left out without costing the history; forgotten with their website.

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use sitetrail::forget::ForgetOptions;
use sitetrail::import::Browser;
use sitetrail::Store;

use crate::support::import::{fixture, import};
use crate::support::{count, TempDb};

/// A copy of the profile fixture `dir` (history and icon file side by side, as in a profile).
fn profile(dir: &str, tmp: &Path) -> PathBuf {
    for entry in std::fs::read_dir(fixture(dir)).unwrap() {
        let entry = entry.unwrap();
        let to = tmp.join(entry.file_name());
        std::fs::copy(entry.path(), &to).unwrap();
        let mut perms = std::fs::metadata(&to).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        perms.set_readonly(false);
        std::fs::set_permissions(&to, perms).unwrap();
    }
    tmp.to_path_buf()
}

fn icon(store: &Store, domain: &str) -> Option<(String, Vec<u8>)> {
    store
        .favicons(&[domain.to_owned()])
        .unwrap()
        .into_iter()
        .next()
        .map(|f| (f.mime.to_owned(), f.data))
}

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";

/// From `tests/fixtures/chromium-icons/Favicons` (sqlite3): icons-a.test, icons-b.test and
/// huge.test each have a 16 and a 32 pixel PNG bitmap (111/118, 111/118 and 108/115 bytes);
/// noicon.test's icon failed to load (404), so it has none.
#[test]
fn chromium_icons_are_imported_with_the_history() {
    let db = TempDb::new();
    let store = db.open();
    let tmp = tempfile::tempdir().unwrap();
    let dir = profile("chromium-icons", tmp.path());
    let report = import(&store, Browser::Chrome, &dir.join("History")).unwrap();
    assert_eq!(report.imported, 4);
    assert_eq!(report.favicons, 3, "{report:?}");
    assert_eq!(report.favicons_problem, None);
    let (mime, data) = icon(&store, "icons-a.test").expect("icons-a.test has an icon");
    assert_eq!(mime, "image/png");
    assert!(data.starts_with(PNG));
    assert_eq!(data.len(), 118, "the 32-pixel bitmap is chosen");
    assert!(icon(&store, "icons-b.test").is_some());
    assert!(icon(&store, "noicon.test").is_none());
    assert_eq!(
        store.website("icons-a.test").unwrap().favicon_url.as_deref(),
        Some("http://icons-a.test:8771/icon-a.png"),
        "where the browser had it from (never fetched)"
    );
    // A second import reads nothing new and does not read the icons again.
    assert_eq!(
        import(&store, Browser::Chrome, &dir.join("History"))
            .unwrap()
            .favicons,
        0
    );
    // Forgetting a website forgets its icon.
    store
        .forget_website("icons-a.test", false, &ForgetOptions::default(), &mut |_| {})
        .unwrap();
    assert_eq!(count(&store, "website_favicon"), 2);
}

/// From `tests/fixtures/firefox-icons/favicons.sqlite` (sqlite3): icons-a.test has a 16-pixel PNG
/// mapped to its page; icons-b.test only a root icon (`/favicon.ico`, root = 1, not mapped to a
/// page); huge.test a 192-pixel PNG; the default bookmarks' SVG icons are not images we keep.
#[test]
fn firefox_icons_are_imported_including_root_icons() {
    let db = TempDb::new();
    let store = db.open();
    let tmp = tempfile::tempdir().unwrap();
    let dir = profile("firefox-icons", tmp.path());
    let report = import(&store, Browser::Firefox, &dir.join("places.sqlite")).unwrap();
    assert_eq!(report.favicons, 3, "{report:?}");
    for domain in ["icons-a.test", "icons-b.test", "huge.test"] {
        let (mime, data) = icon(&store, domain).unwrap_or_else(|| panic!("{domain} has no icon"));
        assert_eq!(mime, "image/png");
        assert!(data.starts_with(PNG));
    }
    assert!(icon(&store, "noicon.test").is_none());
}

#[test]
fn a_bad_icon_file_costs_the_history_nothing_and_bad_images_are_left_out() {
    let db = TempDb::new();
    let store = db.open();
    let tmp = tempfile::tempdir().unwrap();
    let dir = profile("chromium-icons", tmp.path());
    // Hostile images: too large, not a raster image, garbage.
    let conn = Connection::open(dir.join("Favicons")).unwrap();
    let mut huge = PNG.to_vec();
    huge.resize(20_000, 0);
    conn.execute("UPDATE favicon_bitmaps SET image_data = ?1 WHERE icon_id = (SELECT icon_id FROM icon_mapping WHERE page_url LIKE '%icons-a%')", [&huge])
        .unwrap();
    conn.execute("UPDATE favicon_bitmaps SET image_data = CAST('<svg onload=\"alert(1)\"/>' AS BLOB) WHERE icon_id = (SELECT icon_id FROM icon_mapping WHERE page_url LIKE '%icons-b%')", [])
        .unwrap();
    conn.execute("UPDATE favicon_bitmaps SET image_data = NULL WHERE icon_id = (SELECT icon_id FROM icon_mapping WHERE page_url LIKE '%huge%')", [])
        .unwrap();
    drop(conn);
    let report = import(&store, Browser::Chrome, &dir.join("History")).unwrap();
    assert_eq!((report.imported, report.favicons), (4, 0), "{report:?}");
    assert_eq!(count(&store, "website_favicon"), 0);

    // An icon file that is not a database: the history is imported, the problem reported.
    let db = TempDb::new();
    let store = db.open();
    std::fs::write(dir.join("Favicons"), b"this is not a database").unwrap();
    let report = import(&store, Browser::Chrome, &dir.join("History")).unwrap();
    assert_eq!(report.imported, 4);
    let problem = report.favicons_problem.expect("the problem is reported");
    assert!(
        problem.contains("Favicons") && problem.contains("not a SQLite database"),
        "{problem}"
    );
}
