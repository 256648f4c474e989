//! A Chromium `History` file for the benchmarks that import one: the tables and indexes the
//! importer reads (as Chromium writes them, `meta` version 70), and the time and transition
//! constants of its rows.

#![allow(dead_code)]

use std::path::Path;

use rusqlite::Connection;

/// Microseconds from 1601-01-01 (Chromium's epoch) to the Unix epoch.
pub const CHROMIUM_EPOCH_OFFSET: i64 = 11_644_473_600_000_000;
/// A visit that starts and ends its redirect chain (a plain link: what a person opened).
pub const CHAIN_START_END: i64 = 0x3000_0000;

/// A new, empty `History` at `path` (journal and syncing off: it is written once, in bulk).
pub fn create(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.execute_batch(
        r#"PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;
           CREATE TABLE meta(key LONGVARCHAR NOT NULL UNIQUE PRIMARY KEY, value LONGVARCHAR);
           INSERT INTO meta VALUES ('version', '70'), ('last_compatible_version', '16');
           CREATE TABLE urls(id INTEGER PRIMARY KEY AUTOINCREMENT,url LONGVARCHAR,title LONGVARCHAR,visit_count INTEGER DEFAULT 0 NOT NULL,typed_count INTEGER DEFAULT 0 NOT NULL,last_visit_time INTEGER NOT NULL,hidden INTEGER DEFAULT 0 NOT NULL);
           CREATE INDEX urls_url_index ON urls (url);
           CREATE TABLE visits(id INTEGER PRIMARY KEY AUTOINCREMENT,url INTEGER NOT NULL,visit_time INTEGER NOT NULL,from_visit INTEGER,external_referrer_url TEXT,transition INTEGER DEFAULT 0 NOT NULL,segment_id INTEGER,visit_duration INTEGER DEFAULT 0 NOT NULL,incremented_omnibox_typed_score BOOLEAN DEFAULT FALSE NOT NULL,opener_visit INTEGER,originator_cache_guid TEXT,originator_visit_id INTEGER,originator_from_visit INTEGER,originator_opener_visit INTEGER,is_known_to_sync BOOLEAN DEFAULT FALSE NOT NULL,consider_for_ntp_most_visited BOOLEAN DEFAULT FALSE NOT NULL,visited_link_id INTEGER DEFAULT 0 NOT NULL,app_id TEXT);
           CREATE INDEX visits_url_index ON visits (url);
           CREATE INDEX visits_from_index ON visits (from_visit);
           CREATE INDEX visits_time_index ON visits (visit_time);"#,
    )?;
    Ok(conn)
}
