//! Helpers for the importer tests: fixtures, browser databases built by hand, and queries on what
//! an import stored.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection};
use sitetrail::import::{self, Browser, ImportOptions, ImportReport};
use sitetrail::{Result, Store};

/// A fixture file in `tests/fixtures`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A writable copy of fixture `name` in `dir` (named `file_name`, as the browser names it).
pub fn copy_fixture(name: &str, dir: &Path, file_name: &str) -> PathBuf {
    let to = dir.join(file_name);
    std::fs::copy(fixture(name), &to).expect("copy fixture");
    let mut perms = std::fs::metadata(&to).expect("stat").permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&to, perms).expect("chmod");
    to
}

/// Imports `path` with default options and no progress callback.
pub fn import(store: &Store, browser: Browser, path: &Path) -> Result<ImportReport> {
    import::import_file(store, browser, path, &ImportOptions::default(), &mut |_| {})
}

/// Imports `path` in batches of `batch_size` browser visits.
pub fn import_batched(
    store: &Store,
    browser: Browser,
    path: &Path,
    batch_size: usize,
) -> Result<ImportReport> {
    let opts = ImportOptions {
        batch_size,
        ..ImportOptions::default()
    };
    import::import_file(store, browser, path, &opts, &mut |_| {})
}

/// (domain, number of visits) of every website, by domain.
pub fn visits_per_website(store: &Store) -> Vec<(String, i64)> {
    store
        .with_conn(|c| {
            let mut stmt = c.prepare(
                r#"SELECT w.domain AS domain, count(v.id) AS visits
                   FROM website AS w LEFT JOIN visit AS v ON v.website_id = w.id
                   GROUP BY w.id ORDER BY w.domain"#,
            )?;
            let rows = stmt.query_map([], |r| Ok((r.get("domain")?, r.get("visits")?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .expect("visits per website")
}

/// The stored visit `(url, title, visited_at)` of browser visit `browser_id` under `source`
/// (importers key visits `<browser id>@<visit time>`).
pub fn stored_visit(store: &Store, source: &str, browser_id: i64) -> Option<(String, Option<String>, i64)> {
    store
        .with_conn(|c| {
            let mut stmt = c.prepare(
                r#"SELECT url, title, visited_at FROM visit
                   WHERE source = ?1 AND source_visit_id LIKE ?2 || '@%'"#,
            )?;
            let mut rows = stmt.query(params![source, browser_id.to_string()])?;
            let found = match rows.next()? {
                Some(r) => Some((r.get("url")?, r.get("title")?, r.get("visited_at")?)),
                None => None,
            };
            assert!(
                rows.next()?.is_none(),
                "two visits stored for browser visit {browser_id}"
            );
            Ok(found)
        })
        .expect("stored visit")
}

/// Number of websites that have no classification outbox row (must always be 0).
pub fn websites_without_outbox_row(store: &Store) -> i64 {
    store
        .with_conn(|c| {
            Ok(c.query_row(
                r#"SELECT count(*) FROM website AS w
                   WHERE NOT EXISTS (SELECT 1 FROM website_category_classification_outbox AS o
                                     WHERE o.website_id = w.id AND o.status = 'PENDING')"#,
                [],
                |r| r.get(0),
            )?)
        })
        .expect("count websites without outbox")
}

/// The import cursor of `source`, if any.
pub fn cursor_of(store: &Store, source: &str) -> Option<i64> {
    store
        .import_cursors()
        .expect("cursors")
        .into_iter()
        .find(|c| c.source == source)
        .map(|c| c.last_visit_id)
}

/// Every file in `dir` with its bytes, by name.
pub fn snapshot_dir(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| {
            let e = e.expect("entry");
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap_or_default(),
            )
        })
        .collect();
    files.sort();
    files
}

/// Safari's `History.db` schema (macOS 14), as Safari creates it.
pub const SAFARI_SCHEMA: &str = r#"
CREATE TABLE history_items (id INTEGER PRIMARY KEY AUTOINCREMENT,url TEXT NOT NULL UNIQUE,domain_expansion TEXT NULL,visit_count INTEGER NOT NULL,daily_visit_counts BLOB NOT NULL,weekly_visit_counts BLOB NULL,autocomplete_triggers BLOB NULL,should_recompute_derived_visit_counts INTEGER NOT NULL,visit_count_score INTEGER NOT NULL,status_code INTEGER NOT NULL DEFAULT 0);
CREATE TABLE history_visits (id INTEGER PRIMARY KEY AUTOINCREMENT,history_item INTEGER NOT NULL REFERENCES history_items(id) ON DELETE CASCADE,visit_time REAL NOT NULL,title TEXT NULL,load_successful BOOLEAN NOT NULL DEFAULT 1,http_non_get BOOLEAN NOT NULL DEFAULT 0,synthesized BOOLEAN NOT NULL DEFAULT 0,redirect_source INTEGER NULL UNIQUE REFERENCES history_visits(id) ON DELETE CASCADE,redirect_destination INTEGER NULL UNIQUE REFERENCES history_visits(id) ON DELETE CASCADE,origin INTEGER NOT NULL DEFAULT 0,generation INTEGER NOT NULL DEFAULT 0,attributes INTEGER NOT NULL DEFAULT 0,score INTEGER NOT NULL DEFAULT 0);
CREATE INDEX history_visits__last_visit ON history_visits (history_item, visit_time DESC, synthesized ASC);
CREATE INDEX history_visits__origin ON history_visits (origin, generation);
CREATE TABLE metadata (key TEXT NOT NULL UNIQUE, value);
"#;

/// Seconds from 1970-01-01 to 2001-01-01 (Safari's epoch).
pub const SAFARI_EPOCH: f64 = 978_307_200.0;

/// A Safari history database at `path` with `SAFARI_SCHEMA`.
pub fn new_safari_db(path: &Path) -> Connection {
    let conn = Connection::open(path).expect("create safari db");
    conn.execute_batch(SAFARI_SCHEMA).expect("safari schema");
    conn
}

/// Adds a history item for `url` (if new) and a visit to it; returns the visit id.
pub fn add_safari_visit(
    conn: &Connection,
    url: &str,
    unix_secs: f64,
    title: Option<&str>,
    redirect_destination: Option<i64>,
) -> i64 {
    conn.execute(
        r#"INSERT INTO history_items (url, visit_count, daily_visit_counts, should_recompute_derived_visit_counts, visit_count_score)
           VALUES (?1, 1, x'', 0, 100) ON CONFLICT (url) DO NOTHING"#,
        params![url],
    )
    .expect("history item");
    conn.execute(
        r#"INSERT INTO history_visits (history_item, visit_time, title, redirect_destination)
           VALUES ((SELECT id FROM history_items WHERE url = ?1), ?2, ?3, ?4)"#,
        params![url, unix_secs - SAFARI_EPOCH, title, redirect_destination],
    )
    .expect("history visit");
    conn.last_insert_rowid()
}

/// Adds a Chromium URL row and one visit of it; returns the visit id.
pub fn add_chromium_visit(
    conn: &Connection,
    url: &str,
    title: &str,
    visit_time: i64,
    transition: i64,
) -> i64 {
    conn.execute(
        r#"INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time, hidden)
           VALUES (?1, ?2, 1, 0, ?3, 0)"#,
        params![url, title, visit_time],
    )
    .expect("url row");
    let url_id = conn.last_insert_rowid();
    conn.execute(
        r#"INSERT INTO visits (url, visit_time, from_visit, transition, segment_id, visit_duration)
           VALUES (?1, ?2, 0, ?3, 0, 0)"#,
        params![url_id, visit_time, transition],
    )
    .expect("visit row");
    conn.last_insert_rowid()
}

/// A Chromium history (the fixture's schema, its rows replaced) of `visits` visits over `sites`
/// websites (`https://{host}{i % sites}.example/page/{i}`, titled `Page {i} of {host}{i % sites}`),
/// `step` apart from 2026 on, each open for `open` as Chromium records it (`visit_duration`:
/// the visit's estimated time once imported).
pub fn chromium_history(
    dir: &Path,
    host: &str,
    (visits, sites): (usize, usize),
    (step, open): (std::time::Duration, std::time::Duration),
) -> PathBuf {
    let path = copy_fixture("chromium-History", dir, "History");
    let conn = Connection::open(&path).expect("open the history");
    conn.execute_batch("DELETE FROM visits; DELETE FROM urls;")
        .expect("empty the history");
    let start = CHROMIUM_EPOCH_OFFSET + 1_780_000_000_000_000; // 2026, in Chromium's time.
    let tx = conn.unchecked_transaction().expect("begin");
    for i in 0..visits {
        let site = format!("{host}{}", i % sites);
        let url = format!("https://{site}.example/page/{i}");
        let at = start + i as i64 * step.as_micros() as i64;
        add_chromium_visit(&tx, &url, &format!("Page {i} of {site}"), at, CHROMIUM_LINK);
    }
    tx.commit().expect("commit");
    conn.execute("UPDATE visits SET visit_duration = ?1", [open.as_micros() as i64])
        .expect("durations");
    path
}

/// A plain, complete navigation in Chromium: LINK with CHAIN_START | CHAIN_END.
pub const CHROMIUM_LINK: i64 = 0x3000_0000;

/// Microseconds from 1601-01-01 to 1970-01-01.
pub const CHROMIUM_EPOCH_OFFSET: i64 = 11_644_473_600_000_000;
