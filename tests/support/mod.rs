//! Helpers shared by the integration tests: temp databases, the CLI binary, polling.

#![allow(dead_code)]

pub mod builtin_answer;
pub mod chromium_harness;
pub mod dbus;
pub mod devtools;
pub mod fake_ai;
pub mod import;
pub mod raw_http;
pub mod sync;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use sitetrail::{NewVisit, Store, Timestamp};

/// A database file in its own temp dir (removed on drop).
pub struct TempDb {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl TempDb {
    pub fn new() -> TempDb {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("sitetrail.db");
        TempDb { dir, path }
    }

    pub fn open(&self) -> Store {
        Store::open(&self.path).expect("open store")
    }

    /// The store with one pooled connection: the connection a test sets up (a trace, a pragma) is
    /// the one every call of the store uses.
    pub fn open_one_connection(&self) -> Store {
        let options = sitetrail::StoreOptions {
            pool_size: 1,
            ..sitetrail::StoreOptions::default()
        };
        Store::open_with(&self.path, options).expect("open store")
    }

    /// The store on a clock that moves with tokio's ([`sitetrail::time::TokioClock`]): in a test
    /// whose time is paused, the database's "now" and the worker's sleeps move together.
    pub fn open_on_tokio_clock(&self) -> Store {
        let options = sitetrail::StoreOptions {
            clock: std::sync::Arc::new(sitetrail::time::TokioClock::new()),
            ..sitetrail::StoreOptions::default()
        };
        Store::open_with(&self.path, options).expect("open store")
    }
}

/// The `sitetrail` binary built for this test run, pointed at `db`.
pub fn cli(db: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sitetrail"));
    c.arg("--db").arg(db);
    c.env_remove("SITETRAIL_DB")
        .env_remove("SITETRAIL_PROVIDER")
        .env_remove("SITETRAIL_LOG")
        // Sync keys in files: a test never touches the keyring of the person running it (the
        // keyring's own test sets its own).
        .env("SITETRAIL_SYNC_KEYRING", "off");
    c
}

/// Runs `cmd`, asserts it succeeded, returns stdout.
pub fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run sitetrail");
    assert!(
        out.status.success(),
        "command failed: {:?}\nstdout: {}\nstderr: {}",
        cmd,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

mod poll;
pub use poll::poll_async;

/// Polls `cond` every 10 ms until it holds or `timeout` passes; returns whether it held.
pub fn wait_for(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    poll::poll(timeout, Duration::from_millis(10), || cond().then_some(())).is_some()
}

/// Records a live visit to `url` now.
pub fn visit(store: &Store, url: &str) -> sitetrail::visits::Recorded {
    try_visit(store, url).expect("record visit")
}

/// Tries to record a live visit to `url` now.
pub fn try_visit(store: &Store, url: &str) -> sitetrail::Result<sitetrail::visits::Recorded> {
    store.record_visit(&NewVisit {
        url,
        title: None,
        visited_at: Timestamp::now(),
        source: "test",
        source_visit_id: None,
    })
}

/// Runs `sql` (one or more statements) on a pooled connection.
pub fn exec(store: &Store, sql: &str) {
    store
        .with_conn(|c| Ok(c.execute_batch(sql)?))
        .expect("execute SQL");
}

/// Counts rows of `table`.
pub fn count(store: &Store, table: &str) -> i64 {
    store
        .with_conn(|c| Ok(c.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))?))
        .expect("count")
}

/// The CLI's human table `text` as rows of cells (columns are two or more spaces apart), the
/// header first.
pub fn table_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

/// The row of `rows` whose first cell is `first`.
pub fn row_of<'a>(rows: &'a [Vec<String>], first: &str) -> &'a [String] {
    rows.iter()
        .find(|r| r.first().is_some_and(|c| c == first))
        .unwrap_or_else(|| panic!("no row {first:?} in {rows:?}"))
}

/// The built-in classifier's answer for `domain` (no user categories): `(category id, rule)`. For
/// tests of names no list knows, whose answer is the learned model's guess.
pub fn builtin_answer(domain: &str) -> (String, String) {
    let j = sitetrail::classify::builtin::judge_domain(domain);
    (j.category.id().to_owned(), j.rule.as_str().to_owned())
}

/// A visit to `url` made `ago` before now, with `active_ms` measured (as the extension records it).
pub fn measured_visit(store: &Store, url: &str, active_ms: i64, ago: Duration) {
    let ago = i64::try_from(ago.as_micros()).unwrap();
    let rec = store
        .record_visit(&NewVisit {
            url,
            title: None,
            visited_at: Timestamp(Timestamp::now().0 - ago),
            source: "extension",
            source_visit_id: None,
        })
        .unwrap();
    let id = rec.visit_id.unwrap();
    store
        .write(None, |tx| {
            sitetrail::time_spent::set_active_ms_in(tx, id, active_ms, store.now())
        })
        .unwrap();
}
