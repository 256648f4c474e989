//! Writes a database as an earlier Sitetrail left it: the schema of migrations 0001..=LAST only
//! (default 9, the schema of the first packaged version), no `application_id` mark (added
//! later), and one website with a visit an hour ago and its PENDING classification job. What an
//! upgrade finds on disk: `scripts/test-packages` installs the new package over it and checks
//! that the first start migrates it and keeps the visit.
//!
//! Run: `cargo run --example old_database -- DB_PATH [LAST]` (the file must not exist).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{params, Connection};
use sitetrail::store::MIGRATIONS;

/// A UUIDv7 of millisecond `ms` (visit ids are made from their visit time).
fn uuid7(ms: u64) -> Vec<u8> {
    let mut b = *uuid::Uuid::new_v4().as_bytes();
    b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    b[6] = 0x70 | (b[6] & 0x0f);
    b[8] = 0x80 | (b[8] & 0x3f);
    b.to_vec()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: old_database DB_PATH [LAST]");
    let last: i64 = args
        .next()
        .map_or(9, |s| s.parse().expect("LAST is a migration number"));
    assert!(!std::path::Path::new(&path).exists(), "{path} exists");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL,
                                         applied_at INTEGER NOT NULL)",
    )
    .unwrap();
    let now_ms = u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap();
    let now_us = i64::try_from(now_ms * 1000).unwrap();
    // The first version's schema, its data, then the later migrations over it, as each upgrade
    // ran them (a visit stored before the search index existed is indexed by its backfill).
    for &(version, name, sql) in MIGRATIONS.iter().filter(|m| m.0 <= last) {
        conn.execute_batch(sql).unwrap();
        conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)",
            params![version, name, now_us],
        )
        .unwrap();
        if version == 1 {
            write_rows(&conn, now_ms);
        }
    }
    println!("{path}: schema of migrations 1..={last}, one visit of before-upgrade.example");
}

/// One website, its visit an hour before `now_ms` and its PENDING job, in the first schema.
fn write_rows(conn: &Connection, now_ms: u64) {
    let at_ms = now_ms - 3_600_000;
    let at_us = i64::try_from(at_ms * 1000).unwrap();
    let website = uuid7(at_ms);
    conn.execute(
        "INSERT INTO website (id, domain, created_at, version) VALUES (?1, 'before-upgrade.example', ?2, 0)",
        params![website, at_us],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO visit (id, website_id, url, title, visited_at, source)
         VALUES (?1, ?2, 'https://before-upgrade.example/old', 'Before the upgrade', ?3, 'cli')",
        params![uuid7(at_ms), website, at_us],
    )
    .unwrap();
    conn.execute(
        "INSERT INTO website_category_classification_outbox
             (id, website_id, status, attempt_count, created_at, version)
         VALUES (?1, ?2, 'PENDING', 0, ?3, 0)",
        params![uuid7(at_ms), website, at_us],
    )
    .unwrap();
}
