//! The `sitetrail import` and `sitetrail daemon` commands, run as the real binary.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use rusqlite::Connection;
use sitetrail::Store;

use crate::support::import::*;
use crate::support::{cli, count, run_ok, wait_for, TempDb};

/// A fake home with Chromium's and Firefox's fixture profiles in their Linux places.
fn fake_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let chrome_dir = home.path().join(".config/chromium/Default");
    let firefox_dir = home.path().join(".mozilla/firefox/p.default");
    std::fs::create_dir_all(&chrome_dir).unwrap();
    std::fs::create_dir_all(&firefox_dir).unwrap();
    copy_fixture("chromium-History", &chrome_dir, "History");
    copy_fixture("firefox-places.sqlite", &firefox_dir, "places.sqlite");
    home
}

/// `cli(db)` with HOME pointing at `home` (and no XDG overrides), for auto-detection.
fn cli_at_home(db: &Path, home: &Path) -> Command {
    let mut c = cli(db);
    c.env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME");
    c
}

#[test]
fn import_prints_imported_skipped_and_new_websites_then_nothing_twice() {
    let db = TempDb::new();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");

    let out = run_ok(cli(&db.path).args(["import", "chrome"]).arg(&history));
    assert!(
        out.starts_with("imported 18  skipped 24  new websites 14"),
        "{out}"
    );
    assert!(out.contains("24 redirect"), "{out}");

    let json = run_ok(cli(&db.path).args(["import", "chrome", "--json"]).arg(&history));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!((v["read"].as_u64(), v["imported"].as_u64()), (Some(0), Some(0)));
    assert_eq!(v["last_visit_id"], 42);

    let websites = run_ok(cli(&db.path).args(["websites", "--json"]));
    let list: Vec<serde_json::Value> = serde_json::from_str(&websites).unwrap();
    assert_eq!(list.len(), 14);
}

#[test]
fn import_with_source_name_and_json_summary() {
    let db = TempDb::new();
    let dir = tempfile::tempdir().unwrap();
    let places = copy_fixture("firefox-places.sqlite", dir.path(), "places.sqlite");
    let json = run_ok(
        cli(&db.path)
            .args(["import", "firefox", "--source", "firefox:laptop", "--json"])
            .arg(&places),
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["source"], "firefox:laptop");
    assert_eq!(v["imported"], 16);
    assert_eq!(v["new_websites"], 13);
    assert_eq!(v["skipped"]["redirect"], 1);
    assert_eq!(v["skipped"]["total"], 1);
    let store = Store::open(&db.path).unwrap();
    assert_eq!(cursor_of(&store, "firefox:laptop"), Some(17));
}

#[test]
fn a_refused_file_exits_non_zero_with_a_clear_message_and_imports_nothing() {
    let db = TempDb::new();
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("History");
    std::fs::write(&bogus, "not a database at all").unwrap();

    let out = cli(&db.path)
        .args(["import", "chrome"])
        .arg(&bogus)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot import {}", bogus.display()))
            && stderr.contains("not a SQLite database"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "no summary for a refused file");
    assert_eq!(count(&Store::open(&db.path).unwrap(), "visit"), 0);
}

#[test]
fn an_unreadable_file_is_refused() {
    let db_dir = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    let chmod = |path: &Path, mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    chmod(&history, 0o000);
    let db = db_dir.path().join("sitetrail.db");

    let mut command = cli(&db);
    if std::fs::read(&history).is_ok() {
        // Running as root, which reads any file: run the CLI as `nobody` instead, with the
        // database where nobody may write it.
        if Command::new("setpriv").arg("--version").output().is_err() {
            eprintln!("skipped: running as root without setpriv, so no file can be made unreadable");
            return;
        }
        chmod(db_dir.path(), 0o777);
        chmod(dir.path(), 0o755);
        command = Command::new("setpriv");
        command
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                env!("CARGO_BIN_EXE_sitetrail"),
            ])
            .arg("--db")
            .arg(&db)
            .env_remove("SITETRAIL_DB");
    }
    let out = command.args(["import", "chrome"]).arg(&history).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot import {}: cannot read it", history.display()))
            && stderr.contains("ermission denied"),
        "{stderr}"
    );
    assert_eq!(count(&Store::open(&db).unwrap(), "visit"), 0);
}

#[test]
fn import_auto_imports_every_detected_profile() {
    let db = TempDb::new();
    let home = fake_home();
    let json = run_ok(cli_at_home(&db.path, home.path()).args(["import", "--auto", "--json"]));
    let list: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    let summary: Vec<(String, u64)> = list
        .iter()
        .map(|r| {
            (
                r["profile"]["product"].as_str().unwrap().to_owned(),
                r["report"]["imported"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![("Chromium".to_owned(), 18), ("Firefox".to_owned(), 16)]
    );

    // Auto-import and a manual import of the same file share the source: nothing twice.
    let history = home.path().join(".config/chromium/Default/History");
    let out = run_ok(cli(&db.path).args(["import", "chrome"]).arg(&history));
    assert!(out.starts_with("imported 0  skipped 0  new websites 0"), "{out}");
    assert_eq!(count(&Store::open(&db.path).unwrap(), "visit"), 34);
}

#[test]
fn import_auto_fails_when_a_profile_fails_but_imports_the_others() {
    let db = TempDb::new();
    let home = fake_home();
    let broken = home.path().join(".config/google-chrome/Default");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("History"), b"garbage").unwrap();

    let out = cli_at_home(&db.path, home.path())
        .args(["import", "--auto"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        stdout.contains("Google Chrome (Default):\n  error: cannot import"),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 of 3 browser profile(s) could not be imported"));
    assert_eq!(count(&Store::open(&db.path).unwrap(), "visit"), 34);
}

#[test]
fn daemon_imports_at_start_and_periodically_classifies_and_stops_on_sigterm() {
    let db = TempDb::new();
    let home = fake_home();
    let mut daemon = cli_at_home(&db.path, home.path())
        .args([
            "daemon",
            "--fixed-delay-ms",
            "10",
            "--batch-size",
            "8",
            "--import-interval-ms",
            "300",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    let store = Store::open(&db.path).unwrap();
    let completed = |s: &Store| s.queue_status().map(|q| q.completed).unwrap_or(0);
    assert!(
        wait_for(Duration::from_secs(20), || count(&store, "visit") == 34
            && completed(&store) == 16),
        "the first import and the worker: {} visits, {} completed",
        count(&store, "visit"),
        completed(&store)
    );

    // The browser records a visit to a new site: the next periodic import brings it in.
    let history = home.path().join(".config/chromium/Default/History");
    let browser = Connection::open(&history).unwrap();
    add_chromium_visit(
        &browser,
        "https://later.example.org/",
        "Later",
        13_440_415_300_000_000,
        CHROMIUM_LINK,
    );
    drop(browser);
    assert!(
        wait_for(Duration::from_secs(20), || count(&store, "visit") == 35
            && completed(&store) == 17),
        "a periodic import: {} visits, {} completed",
        count(&store, "visit"),
        completed(&store)
    );

    let term = Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let mut exited = None;
    assert!(wait_for(Duration::from_secs(20), || {
        exited = daemon.try_wait().unwrap();
        exited.is_some()
    }));
    let out = daemon.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(exited.unwrap().success(), "{stderr}");
    assert!(stderr.contains("auto-import stopped"), "{stderr}");
}

#[test]
fn daemon_refuses_until_idle_and_a_zero_interval() {
    let db = TempDb::new();
    for args in [
        vec!["daemon", "--until-idle"],
        vec!["daemon", "--import-interval-min", "0"],
        // Over a week, the longest interval the app accepts too.
        vec!["daemon", "--import-interval-min", "10081"],
    ] {
        let out = cli(&db.path).args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("error:"),
            "{args:?}"
        );
    }
}

/// An imported URL is stored as every other path stores it: without a user name or password,
/// control characters percent-encoded (a hostile or hand-edited History file can hold them raw).
#[test]
fn imported_urls_are_stored_without_credentials_and_percent_encoded() {
    let db = TempDb::new();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    {
        let conn = Connection::open(&history).unwrap();
        let t = 13_440_415_200_000_000; // 2026-11-29 in Chromium time.
        add_chromium_visit(
            &conn,
            "https://alice:hunter2@creds.example/inbox",
            "Inbox",
            t,
            CHROMIUM_LINK,
        );
        add_chromium_visit(
            &conn,
            "https://evil.example/\x1b]0;x\x07y",
            "Evil",
            t + 1,
            CHROMIUM_LINK,
        );
    }
    run_ok(cli(&db.path).args(["import", "chrome"]).arg(&history));
    let listed: Vec<serde_json::Value> = serde_json::from_str(&run_ok(
        cli(&db.path).args(["history", "--json", "--limit", "1000"]),
    ))
    .unwrap();
    let url_of = |title: &str| {
        listed
            .iter()
            .find(|v| v["title"] == title)
            .map(|v| v["url"].as_str().unwrap().to_owned())
    };
    assert_eq!(url_of("Inbox").as_deref(), Some("https://creds.example/inbox"));
    assert_eq!(
        url_of("Evil").as_deref(),
        Some("https://evil.example/%1B]0;x%07y")
    );
    assert!(!listed.iter().any(|v| v.to_string().contains("hunter2")));
}

/// The daemon's interval and profiles are the settings the app saves too: a saved 0 turns its
/// import off (its flag still takes at least 1, as before), and the saved profiles are the only
/// ones it imports.
#[test]
fn daemon_takes_the_saved_import_settings() {
    let db = TempDb::new();
    let home = fake_home();
    let settings = db.dir.path().join("settings.json");
    let log = db.dir.path().join("daemon.log");
    let run_until = |extra: &[&str], done: &dyn Fn(&str, &Store) -> bool| -> String {
        let mut daemon = cli_at_home(&db.path, home.path())
            .arg("--settings")
            .arg(&settings)
            .args(["daemon", "--fixed-delay-ms", "10"])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let store = Store::open(&db.path).unwrap();
        let read = || std::fs::read_to_string(&log).unwrap_or_default();
        let reached = wait_for(Duration::from_secs(20), || done(&read(), &store));
        Command::new("kill")
            .args(["-TERM", &daemon.id().to_string()])
            .status()
            .unwrap();
        let status = daemon.wait().unwrap();
        let text = read();
        assert!(reached && status.success(), "{text}");
        text
    };

    std::fs::write(&settings, r#"{"auto_import_minutes": 0}"#).unwrap();
    let text = run_until(&[], &|log, _| log.contains("auto-import off"));
    assert!(!text.contains("auto-import every interval"), "{text}");
    assert_eq!(
        count(&Store::open(&db.path).unwrap(), "visit"),
        0,
        "nothing imported"
    );

    let chromium = home.path().join(".config/chromium/Default/History");
    std::fs::write(
        &settings,
        serde_json::json!({"auto_import_minutes": 0, "import_profiles": [chromium]}).to_string(),
    )
    .unwrap();
    let text = run_until(&["--import-interval-min", "60"], &|log, store| {
        log.contains("imported") && count(store, "visit") == 18
    });
    assert!(text.contains("chosen_profiles=1"), "the saved choice: {text}");
    assert!(
        text.contains("interval_s=3600"),
        "the flag beats the saved 0: {text}"
    );
    assert_eq!(
        count(&Store::open(&db.path).unwrap(), "visit"),
        18,
        "only the chosen Chromium profile"
    );
}
