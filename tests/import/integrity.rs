//! An import writes with its connection's foreign key checks off (each row's parent comes from the
//! import's own transaction: `src/import/mod.rs`). What holds that nothing dangles anyway:
//! `PRAGMA foreign_key_check` after imports that cache websites across batches, that meet a
//! website forgotten by another connection between two of their batches (the cache must not keep
//! its id), and that store estimated times; and the connection the import wrote on checks foreign
//! keys again afterwards, for whoever uses it next.

use rusqlite::Connection;
use sitetrail::forget::ForgetOptions;
use sitetrail::import::{Browser, ImportOptions};
use sitetrail::Store;

use crate::support::import::chromium_history;
use crate::support::TempDb;

const VISITS: usize = 600;
const SITES: usize = 30;
const BATCH: usize = 100;

/// Every row whose parent is missing, as `PRAGMA foreign_key_check` lists them (table, parent).
fn dangling(path: &std::path::Path) -> Vec<(String, String)> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn.prepare("PRAGMA foreign_key_check").unwrap();
    stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

fn count(store: &Store, sql: &str) -> i64 {
    store
        .with_conn(|c| Ok(c.query_row(sql, [], |r| r.get(0))?))
        .unwrap()
}

#[test]
fn imports_leave_no_row_without_its_parent_and_the_connection_checking_again() {
    let dir = tempfile::tempdir().unwrap();
    let second = std::time::Duration::from_secs(1);
    let file = chromium_history(dir.path(), "site", (VISITS, SITES), (second, second));
    let db = TempDb::new();
    // One pooled connection: the one the import writes on is the one read after it.
    let store = db.open_one_connection();
    // Another process's connection, which forgets a website the import has stored visits of
    // between two of its batches: its later visits need the website again, under a new id.
    let other = Store::open(&db.path).unwrap();
    let mut forgot = false;
    let opts = ImportOptions {
        batch_size: BATCH,
        ..ImportOptions::default()
    };
    let report = sitetrail::import::import_file(&store, Browser::Chrome, &file, &opts, &mut |p| {
        // After the second batch committed.
        if p.read == 2 * BATCH as u64 && !forgot {
            forgot = true;
            let forgotten = other
                .forget_website("site3.example", false, &ForgetOptions::default(), &mut |_| {})
                .unwrap();
            assert!(forgotten.visits > 0, "{forgotten:?}");
        }
    })
    .unwrap();
    assert!(forgot);
    assert_eq!(report.imported, VISITS as u64, "{report:?}");
    assert_eq!(dangling(&db.path), Vec::<(String, String)>::new());
    // The forgotten website's visits of the first two batches are gone, the later ones stored
    // under the website made again.
    let site3_after: i64 = (2 * BATCH..VISITS).filter(|i| i % SITES == 3).count() as i64;
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM visit v JOIN website w ON w.id = v.website_id WHERE w.domain = 'site3.example'"
        ),
        site3_after
    );
    assert_eq!(
        count(&store, "SELECT count(*) FROM visit_time"),
        count(&store, "SELECT count(*) FROM visit"),
        "each visit has its estimated time"
    );
    assert_eq!(
        count(
            &store,
            "SELECT count(*) FROM website w LEFT JOIN website_category_classification_outbox o ON o.website_id = w.id WHERE o.id IS NULL"
        ),
        0,
        "each website has its outbox row"
    );
    // The connection the import wrote on (the pool's only one) checks foreign keys again.
    assert!(store
        .with_conn(|c| Ok(c.pragma_query_value(None, "foreign_keys", |r| r.get::<_, bool>(0))?))
        .unwrap());
    let refused = store.with_conn(|c| {
        Ok(c.execute(
            "INSERT INTO visit_time (visit_id, estimated_ms, updated_at) VALUES (zeroblob(16), 1, 0)",
            [],
        )?)
    });
    assert!(
        refused.is_err(),
        "a row without its visit is refused: {refused:?}"
    );
}
