//! The keys an import gives its visits (a visit's search index key is its time, made unique):
//! the import asks the database about a key once per gap between stored visits rather than once
//! per visit (`search::FreeKeys`, issue 31), so this checks what that must still hold. Visits of
//! the same microsecond as each other and as visits already stored, out of time order, across
//! batches: every one is stored under a key of its own, the index is whole and finds them all.

use rusqlite::Connection;
use sitetrail::import::Browser;
use sitetrail::visits::NewVisit;
use sitetrail::Timestamp;

use crate::support::import::{
    add_chromium_visit, copy_fixture, import_batched, CHROMIUM_EPOCH_OFFSET, CHROMIUM_LINK,
};
use crate::support::{count, TempDb};

/// 2026-05-28T20:26:40Z, in microseconds since 1970.
const START: i64 = 1_780_000_000_000_000;

/// The browser's visits, by id: microseconds after `START`. Several share a microsecond, with
/// each other and with the visits stored live before (`LIVE`); ids 9 and 10 go back in time.
const IMPORTED: &[i64] = &[0, 0, 0, 5, 5, 9, 10, 10, 10, 3, 0, 11, 11, 2_000, 2_000, 1];
/// Visits recorded live before the import, at these microseconds after `START`.
const LIVE: &[i64] = &[0, 5, 10, 11, 1_000, 2_000];

#[test]
fn imported_visits_of_one_microsecond_get_keys_of_their_own() {
    let db = TempDb::new();
    let store = db.open();
    for (i, &us) in LIVE.iter().enumerate() {
        store
            .record_visit(&NewVisit {
                url: &format!("https://live.example/{i}"),
                title: Some("Live zebra"),
                visited_at: Timestamp(START + us),
                source: "extension",
                source_visit_id: None,
            })
            .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let path = copy_fixture("chromium-History", dir.path(), "History");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("DELETE FROM visits; DELETE FROM urls;")
        .unwrap();
    for (i, &us) in IMPORTED.iter().enumerate() {
        let url = format!("https://imported.example/{i}");
        add_chromium_visit(
            &conn,
            &url,
            "Imported yak",
            CHROMIUM_EPOCH_OFFSET + START + us,
            CHROMIUM_LINK,
        );
    }
    drop(conn);

    // Batches of 3: the keys known free start again in each.
    let report = import_batched(&store, Browser::Chrome, &path, 3).unwrap();
    assert_eq!(report.imported, IMPORTED.len() as u64, "{report:?}");
    let visits = count(&store, "visit");
    assert_eq!(visits, (IMPORTED.len() + LIVE.len()) as i64);
    let distinct_keys: i64 = store
        .with_conn(|c| {
            Ok(
                c.query_row(r#"SELECT count(DISTINCT substr(id, 1, 8)) FROM visit"#, [], |r| {
                    r.get(0)
                })?,
            )
        })
        .unwrap();
    assert_eq!(distinct_keys, visits, "every visit has a key of its own");
    // Each kept its time (a key moved by less than a microsecond within its millisecond).
    let times: Vec<i64> = store
        .with_conn(|c| {
            let mut s = c.prepare(
                r#"SELECT visited_at FROM visit WHERE url LIKE 'https://imported.example/%'
                   ORDER BY CAST(substr(url, 26) AS INTEGER)"#,
            )?;
            let rows = s.query_map([], |r| r.get::<_, i64>(0))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .unwrap();
    let expected: Vec<i64> = IMPORTED.iter().map(|us| START + us).collect();
    assert_eq!(times, expected);
    store
        .with_conn(|c| Ok(c.execute("INSERT INTO visit_fts (visit_fts) VALUES ('integrity-check')", [])?))
        .expect("FTS5 integrity check");
    let found = |word: &str| -> i64 {
        store
            .with_conn(|c| {
                Ok(c.query_row(
                    "SELECT count(*) FROM visit_fts WHERE visit_fts MATCH ?1",
                    [word],
                    |r| r.get(0),
                )?)
            })
            .unwrap()
    };
    assert_eq!(found("yak"), IMPORTED.len() as i64);
    assert_eq!(found("zebra"), LIVE.len() as i64);
}
