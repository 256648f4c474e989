//! What an import costs, counted in SQL statements rather than seconds, so that the next slowdown
//! of the write paths is caught when it lands, deterministically: SQLite's statement trace
//! (`trace_v2`, statements and the triggers they fire, and the search index's own statements) on
//! the one pooled connection that the import writes on.
//!
//! The bound per visit is what the import runs after the batch work of issue 31; a change that
//! adds a statement per visit fails here with the statements listed by count. Raise the bound
//! only with the import benchmark's figures (docs/BENCHMARKS.md) showing the cost is worth it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use rusqlite::trace::{TraceEvent, TraceEventCodes};
use sitetrail::import::Browser;
use sitetrail::Store;

use crate::support::import::{chromium_history, import};
use crate::support::TempDb;

static COUNTING: AtomicBool = AtomicBool::new(false);
static STATEMENTS: AtomicU64 = AtomicU64::new(0);
static BY_TEXT: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

fn on_statement(event: TraceEvent<'_>) {
    if !COUNTING.load(Ordering::SeqCst) {
        return;
    }
    if let TraceEvent::Stmt(_, sql) = event {
        STATEMENTS.fetch_add(1, Ordering::SeqCst);
        let text: String = sql
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(90)
            .collect();
        *BY_TEXT.lock().unwrap().entry(text).or_default() += 1;
    }
}

/// A Chromium history of `visits` visits over `sites` websites, a second apart, each open for a
/// second (stored as the visit's estimated time).
fn history(dir: &std::path::Path, visits: usize, sites: usize) -> std::path::PathBuf {
    let second = std::time::Duration::from_secs(1);
    chromium_history(dir, "site", (visits, sites), (second, second))
}

#[test]
fn an_import_runs_a_bounded_number_of_statements_per_visit() {
    const VISITS: usize = 1_000;
    const SITES: usize = 20;
    // What the import runs per visit (a fresh database, no forgetting, not linked, every visit
    // with its duration): 3.19 since each search index row is a one-row statement of its own
    // (2.17 before, the batch's rows in one statement read from JSON: the one bound raised, with
    // the import benchmark's figures, docs/BENCHMARKS.md: reading the JSON cost more than the
    // statements); 4.17 before titled visits were counted per batch and website in Rust
    // (migration 0022 dropped the trigger that ran two a visit), 9.16 before the sync link, the
    // free keys and the estimated times were read or written once per batch, 14.49 before the
    // search index rows were added once per batch (a segment written and merged per visit), with
    // a little room for the per-batch and per-website statements, which shrink per visit as an
    // import grows. What is left per visit: the visit's insert, its index row and FTS5's
    // document size row.
    const MAX_PER_VISIT: f64 = 3.3;
    let dir = tempfile::tempdir().unwrap();
    let file = history(dir.path(), VISITS, SITES);
    let db = TempDb::new();
    // One pooled connection, so the traced one is the one the import writes on.
    let store = db.open_one_connection();
    store
        .with_conn(|c| {
            c.trace_v2(TraceEventCodes::SQLITE_TRACE_STMT, Some(on_statement));
            Ok(())
        })
        .unwrap();
    COUNTING.store(true, Ordering::SeqCst);
    let report = import(&store, Browser::Chrome, &file).unwrap();
    COUNTING.store(false, Ordering::SeqCst);
    assert_eq!(report.imported, VISITS as u64, "{report:?}");
    let total = STATEMENTS.load(Ordering::SeqCst);
    let per_visit = total as f64 / VISITS as f64;
    let mut by_count: Vec<(String, u64)> = BY_TEXT.lock().unwrap().clone().into_iter().collect();
    by_count.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let listing: Vec<String> = by_count.iter().map(|(sql, n)| format!("{n:>6}  {sql}")).collect();
    println!(
        "{total} statements for {VISITS} visits ({per_visit:.2} a visit):\n{}",
        listing.join("\n")
    );
    assert!(
        per_visit <= MAX_PER_VISIT,
        "an import of {VISITS} visits ran {total} statements, {per_visit:.2} a visit (at most {MAX_PER_VISIT}); \
         by count:\n{}",
        listing.join("\n")
    );
    // The search finds what was imported, right after the import.
    assert_eq!(found(&store, "site7"), (VISITS / SITES) as i64);
}

/// The visits the search index finds for `term`, read from the index itself.
fn found(store: &Store, term: &str) -> i64 {
    store
        .with_conn(|c| {
            Ok(c.query_row(
                "SELECT count(*) FROM visit_fts WHERE visit_fts MATCH ?1",
                [term],
                |r| r.get(0),
            )?)
        })
        .unwrap()
}

#[test]
fn an_import_merges_the_search_index_less_while_it_writes_and_leaves_the_settings_as_they_were() {
    use sitetrail::search::{index_setting, set_index_setting, IndexSetting};
    let dir = tempfile::tempdir().unwrap();
    let file = history(dir.path(), 300, 7);
    // Each setting and its value while an import writes (src/import/mod.rs).
    for (setting, importing) in [
        (IndexSetting::Automerge, 16),
        (IndexSetting::Hashsize, 16 * 1024 * 1024),
    ] {
        let default = setting.default_value();
        assert_ne!(default, importing, "{setting:?}");
        // (setting before, setting after): FTS5's default, a value of someone else's, and the
        // import's own left by an import that died (the default goes back).
        for (before, usual) in [(default, default), (8, 8), (importing, default)] {
            let db = TempDb::new();
            let store = Store::open(&db.path).unwrap();
            if before != default {
                store
                    .with_conn(|c| set_index_setting(c, setting, before))
                    .unwrap();
            }
            // While it writes: the setting the import asks for, seen from the progress callback
            // (called after each batch commits) on another connection.
            let seen = Mutex::new(Vec::new());
            let opts = sitetrail::import::ImportOptions {
                batch_size: 100,
                ..Default::default()
            };
            let report = sitetrail::import::import_file(&store, Browser::Chrome, &file, &opts, &mut |_| {
                seen.lock()
                    .unwrap()
                    .push(store.with_conn(|c| index_setting(c, setting)).unwrap());
            })
            .unwrap();
            assert_eq!(report.imported, 300, "{report:?}");
            let seen = seen.into_inner().unwrap();
            // The first call comes before anything is written (read: 0), the others after batches.
            assert_eq!(seen.first(), Some(&before), "{setting:?} {seen:?}");
            assert!(
                seen.len() >= 4 && seen[1..].iter().all(|&m| m == importing),
                "{setting:?} {seen:?}"
            );
            assert_eq!(
                store.with_conn(|c| index_setting(c, setting)).unwrap(),
                usual,
                "{setting:?}"
            );
            assert!(
                found(&store, "site3") > 0,
                "a search right after the import finds its visits"
            );
        }
    }
}

#[test]
fn batches_hold_exactly_their_size_when_it_is_no_multiple_of_the_reading_threads_chunks() {
    // The reading thread sends rows in chunks of 1,000 that never straddle two batches: batches of
    // 1,500 are read as 1,000 + 500, and each commits with its own 1,500 rows and cursor.
    let dir = tempfile::tempdir().unwrap();
    let file = history(dir.path(), 4_000, 13);
    let db = TempDb::new();
    let store = Store::open(&db.path).unwrap();
    let opts = sitetrail::import::ImportOptions {
        batch_size: 1_500,
        ..Default::default()
    };
    let mut read_after_each = Vec::new();
    let report = sitetrail::import::import_file(&store, Browser::Chrome, &file, &opts, &mut |p| {
        read_after_each.push(p.read);
    })
    .unwrap();
    assert_eq!(read_after_each, vec![0, 1_500, 3_000, 4_000]);
    assert!(report.complete, "{report:?}");
    assert_eq!(report.imported, 4_000, "{report:?}");
}
