//! The write paths carry tracing spans (ids, counts and sizes as fields, their time when they
//! close), and nothing a person browsed reaches the log through them: the CLI at
//! `SITETRAIL_LOG=trace` records, imports, classifies and forgets, and its log names the spans but
//! holds none of the URLs or titles it handled.

use std::path::Path;
use std::process::Output;

use rusqlite::Connection;

use crate::support::import::{add_chromium_visit, copy_fixture, CHROMIUM_EPOCH_OFFSET, CHROMIUM_LINK};
use crate::support::{cli, TempDb};

const SECRET_PATH: &str = "/private-path-7f3a/diagnosis";
const SECRET_TITLE: &str = "Title-Marker-91c2 about my diagnosis";

fn traced(db: &Path, args: &[&str]) -> String {
    let out: Output = cli(db)
        .args(args)
        .env("SITETRAIL_LOG", "trace")
        .env("SITETRAIL_PROVIDER", "builtin")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "sitetrail {args:?} failed: {stderr}");
    stderr
}

#[test]
fn the_write_paths_log_spans_and_never_what_was_browsed() {
    let db = TempDb::new();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    {
        let conn = Connection::open(&history).unwrap();
        conn.execute_batch("DELETE FROM visits; DELETE FROM urls;")
            .unwrap();
        let t = CHROMIUM_EPOCH_OFFSET + 1_780_000_000_000_000;
        for i in 0..5 {
            let url = format!("https://imported-{i}.example{SECRET_PATH}?n={i}");
            add_chromium_visit(&conn, &url, &format!("{SECRET_TITLE} {i}"), t + i, CHROMIUM_LINK);
        }
    }
    let live = format!("https://live.example{SECRET_PATH}?live=1");
    let mut log = String::new();
    log += &traced(&db.path, &["import", "chrome", history.to_str().unwrap()]);
    log += &traced(&db.path, &["visit", &live, "--title", SECRET_TITLE]);
    log += &traced(&db.path, &["worker", "--until-idle", "--fixed-delay-ms", "1"]);
    log += &traced(&db.path, &["forget", "--yes", "website", "imported-1.example"]);
    for span in [
        "import_file",
        "record_visit",
        "tick",
        "claim_jobs",
        "local_pass",
        "forget_website",
        "write",
    ] {
        assert!(
            log.contains(&format!("{span}{{")) || log.contains(&format!("{span}:")),
            "no span {span} in the log:\n{log}"
        );
    }
    assert!(
        log.contains("imported=5"),
        "the import's span carries its count:\n{log}"
    );
    for secret in [SECRET_PATH, "Title-Marker-91c2", "diagnosis"] {
        assert!(!log.contains(secret), "the log holds {secret:?}:\n{log}");
    }
}

#[test]
fn a_sync_logs_its_spans_and_never_what_was_browsed() {
    use crate::support::sync::{Device, TestHub};
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "alpha");
    b.join(&hub, "beta", &key);
    let url = format!("https://synced.example{SECRET_PATH}?s=1");
    a.visit_at(&url, SECRET_TITLE, 100);
    let sync = |d: &Device| {
        let out = cli(&d.db)
            .arg("--settings")
            .arg(d.settings())
            .args(["sync", "now"])
            .env("SITETRAIL_LOG", "trace")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "sync now failed: {stderr}");
        stderr
    };
    let log = sync(&a) + &sync(&b);
    assert_eq!(b.visits().len(), 1, "the visit arrived");
    for span in ["sync_now", "push", "pull"] {
        assert!(
            log.contains(&format!("{span}{{")) || log.contains(&format!("{span}:")),
            "no span {span}:\n{log}"
        );
    }
    for secret in [SECRET_PATH, "Title-Marker-91c2", "diagnosis", "synced.example"] {
        assert!(!log.contains(secret), "the log holds {secret:?}:\n{log}");
    }
}
