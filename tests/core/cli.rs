//! The CLI's contract for scripts: commands, flags, JSON keys, errors and exit codes.

use serde_json::Value;

use crate::support::{cli, exec, run_ok, TempDb};

fn json(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

#[test]
fn visit_then_worker_then_websites_and_status() {
    let db = TempDb::new();
    let out = run_ok(cli(&db.path).args([
        "visit",
        "https://WWW.GitHub.com/rust-lang",
        "--title",
        "Rust",
        "--at",
        "2026-11-29T10:00:00+01:00",
        "--source",
        "script",
        "--json",
    ]));
    let rec = json(&out);
    assert_eq!(rec["domain"], "github.com");
    assert_eq!(rec["new_website"], true);
    run_ok(cli(&db.path).args(["visit", "http://mail.example.org/inbox"]));

    let no_settings = db.dir.path().join("no-settings.json");
    let status = json(&run_ok(
        cli(&db.path)
            .args(["status", "--json", "--settings"])
            .arg(&no_settings),
    ));
    // Two jobs at the default pace (one website a second).
    assert_eq!(status["eta_seconds"], 2.0, "{status}");
    for key in [
        "pending",
        "processing",
        "completed",
        "failed",
        "oldest_pending_age_ms",
    ] {
        assert!(status.get(key).is_some(), "status --json lacks {key}: {status}");
    }
    assert_eq!(status["pending"], 2);
    assert!(status["oldest_pending_age_ms"].is_i64());

    run_ok(cli(&db.path).args([
        "worker",
        "--until-idle",
        "--provider",
        "builtin",
        "--fixed-delay-ms",
        "0",
    ]));
    let status = json(&run_ok(cli(&db.path).args(["status", "--json"])));
    assert_eq!(
        (status["pending"].as_i64(), status["completed"].as_i64()),
        (Some(0), Some(2))
    );
    assert!(status["oldest_pending_age_ms"].is_null());
    assert!(status["eta_seconds"].is_null(), "nothing left: {status}");

    let sites = json(&run_ok(cli(&db.path).args([
        "websites",
        "--json",
        "--category",
        "dev_tech",
    ])));
    let sites = sites.as_array().unwrap();
    assert_eq!(sites.len(), 1);
    assert_eq!(sites[0]["domain"], "github.com");
    assert_eq!(sites[0]["category_source"], "builtin");
    assert!(
        sites[0]["created_at"].as_str().unwrap().ends_with('Z'),
        "timestamps are RFC 3339"
    );
    assert_eq!(
        sites[0]["id"].as_str().unwrap().len(),
        36,
        "ids are hyphenated UUIDs"
    );

    let visit_time: String = db
        .open()
        .with_conn(|c| {
            Ok(
                c.query_row("SELECT visited_at FROM visit WHERE source = 'script'", [], |r| {
                    r.get::<_, i64>(0)
                })?,
            )
        })
        .map(|t| sitetrail::Timestamp(t).to_rfc3339())
        .unwrap();
    assert_eq!(visit_time, "2026-11-29T09:00:00.000000Z");
}

#[test]
fn categorize_is_the_users_and_uncategorized_lists_the_rest() {
    let db = TempDb::new();
    run_ok(cli(&db.path).args(["visit", "https://a.example/"]));
    run_ok(cli(&db.path).args(["visit", "https://b.example/"]));
    run_ok(cli(&db.path).args(["categorize", "WWW.A.example", "shopping"]));
    let sites = json(&run_ok(cli(&db.path).args([
        "websites",
        "--json",
        "--uncategorized",
    ])));
    let domains: Vec<&str> = sites
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["domain"].as_str().unwrap())
        .collect();
    assert_eq!(domains, ["b.example"]);
    let mine = json(&run_ok(cli(&db.path).args([
        "websites",
        "--json",
        "--category",
        "shopping",
    ])));
    assert_eq!(mine[0]["category_source"], "user");
}

#[test]
fn failed_and_retry_by_id_and_all() {
    let db = TempDb::new();
    let store = db.open();
    run_ok(cli(&db.path).args(["visit", "https://a.example/"]));
    run_ok(cli(&db.path).args(["visit", "https://b.example/"]));
    exec(
        &store,
        "UPDATE website_category_classification_outbox
                 SET status = 'FAILED', attempt_count = 5, attempted_at = 1, last_error_message = 'HTTP 500'",
    );
    let failed = json(&run_ok(cli(&db.path).args(["failed", "--json"])));
    let failed = failed.as_array().unwrap();
    assert_eq!(failed.len(), 2);
    for key in [
        "id",
        "website_id",
        "domain",
        "attempt_count",
        "attempted_at",
        "last_error_message",
    ] {
        assert!(failed[0].get(key).is_some(), "failed --json lacks {key}");
    }
    assert_eq!(failed[0]["last_error_message"], "HTTP 500");
    let first = failed[0]["id"].as_str().unwrap().to_owned();
    run_ok(cli(&db.path).args(["retry", &first]));
    assert_eq!(
        json(&run_ok(cli(&db.path).args(["failed", "--json"])))
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let out = run_ok(cli(&db.path).args(["retry", "--all-failed"]));
    assert!(out.contains('1'), "{out}");
    let status = json(&run_ok(cli(&db.path).args(["status", "--json"])));
    assert_eq!(
        (status["pending"].as_i64(), status["failed"].as_i64()),
        (Some(2), Some(0))
    );
}

#[test]
fn errors_go_to_stderr_with_the_exit_code_of_their_kind_and_name_the_input() {
    let db = TempDb::new();
    // (arguments, text the message must hold, exit code of the error's kind: 2 invalid_input,
    // 3 not_found; see sitetrail::ErrorKind)
    let cases: &[(&[&str], &str, i32)] = &[
        (&["visit", "ftp://files.example/"], "ftp://files.example/", 2),
        (
            &["visit", "https://ok.example/", "--at", "yesterday"],
            "yesterday",
            2,
        ),
        (&["retry", "01890000-0000-7000-8000-000000000000"], "not found", 3),
        (&["retry", "nope"], "nope", 2),
        (&["categorize", "unknown.example", "news"], "unknown.example", 3),
        (&["categorize", "unknown.example", "weather"], "weather", 2),
        (&["websites", "--category", "weather"], "weather", 2),
        (&["reclassify", "unknown.example"], "not found", 3),
    ];
    for (args, expect, code) in cases {
        let out = cli(&db.path).args(*args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(*code), "{args:?}: {stderr}");
        assert!(
            stderr.contains(expect),
            "{args:?}: stderr {stderr:?} should mention {expect:?}"
        );
        assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
    }
}

#[test]
fn the_database_path_comes_from_sitetrail_db() {
    let db = TempDb::new();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sitetrail"))
        .args(["visit", "https://env.example/"])
        .env("SITETRAIL_DB", &db.path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(db.open().website("env.example").unwrap().domain, "env.example");
}

#[test]
fn export_writes_csv_and_json_and_refuses_a_missing_folder() {
    let db = TempDb::new();
    run_ok(cli(&db.path).args([
        "visit",
        "https://a.example/x",
        "--title",
        "Quote \"this\", please",
    ]));
    run_ok(cli(&db.path).args(["visit", "https://b.example/"]));
    run_ok(cli(&db.path).args(["categorize", "a.example", "news"]));
    let csv_path = db.dir.path().join("history.csv");
    run_ok(
        cli(&db.path)
            .args(["export", "history", "--format", "csv", "--output"])
            .arg(&csv_path),
    );
    let mut reader = csv::Reader::from_path(&csv_path).unwrap();
    let headers = reader.headers().unwrap().clone();
    assert!(headers.iter().any(|h| h == "category"), "{headers:?}");
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 2);
    let title_col = headers.iter().position(|h| h == "title").unwrap();
    assert_eq!(&rows[0][title_col], "Quote \"this\", please");

    let json_path = db.dir.path().join("categories.json");
    run_ok(
        cli(&db.path)
            .args(["export", "categories", "--format", "json", "-o"])
            .arg(&json_path),
    );
    let sites = json(&std::fs::read_to_string(&json_path).unwrap());
    assert_eq!(sites.as_array().unwrap().len(), 2);
    assert_eq!(sites[0]["domain"], "a.example");
    assert_eq!(sites[0]["category_source"], "user");

    let out = cli(&db.path)
        .args(["export", "history", "-o", "/nonexistent/dir/h.csv"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/dir/h.csv"));
}

#[test]
fn a_bad_synchronous_setting_is_refused_by_name() {
    let db = TempDb::new();
    let out = cli(&db.path)
        .args(["status"])
        .env("SITETRAIL_SYNCHRONOUS", "sometimes")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("sometimes"));
    run_ok(
        cli(&db.path)
            .args(["status"])
            .env("SITETRAIL_SYNCHRONOUS", "full"),
    );
}

#[test]
fn every_setting_has_an_environment_variable_below_its_flag() {
    let db = TempDb::new();
    run_ok(cli(&db.path).args(["visit", "https://a.example/"]));
    // A bad value names the variable, exits as invalid input, and changes nothing.
    let out = cli(&db.path)
        .args(["worker", "--until-idle"])
        .env("SITETRAIL_MAX_ATTEMPTS", "lots")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("SITETRAIL_MAX_ATTEMPTS") && stderr.contains("lots"),
        "{stderr}"
    );
    assert_eq!(
        db.open().queue_status().unwrap().pending,
        1,
        "nothing was classified"
    );
    // A good value is used, and a flag beats it.
    let out = cli(&db.path)
        .args(["worker", "--until-idle", "--fixed-delay-ms", "0"])
        .env("SITETRAIL_BATCH_SIZE", "3")
        .env("SITETRAIL_FIXED_DELAY_MS", "60000")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("batch_size=3"), "{stderr}");
    assert_eq!(db.open().queue_status().unwrap().completed, 1);
}

#[test]
fn an_empty_environment_variable_is_as_good_as_unset() {
    // `SITETRAIL_DB= sitetrail ...` is how a shell unsets it for one command.
    let db = TempDb::new();
    let out = run_ok(
        cli(&db.path)
            .env("SITETRAIL_DB", "")
            .env("SITETRAIL_SETTINGS", "")
            .args(["visit", "https://empty-env.test/"]),
    );
    assert!(out.contains("empty-env.test"), "{out}");
    assert_eq!(
        db.open().website("empty-env.test").unwrap().domain,
        "empty-env.test"
    );
}

/// `status --json` gives the worker's pause and crashes as flat keys, a contract for scripts
/// (the app shows the same library status nested): these names, these values, times in RFC 3339
/// UTC with microseconds, exactly as before the two shapes were built from one type.
#[test]
fn status_json_keeps_its_flat_pause_and_crash_keys() {
    let db = TempDb::new();
    let no_settings = db.dir.path().join("no-settings.json");
    let status = || {
        run_ok(
            cli(&db.path)
                .args(["status", "--json", "--settings"])
                .arg(&no_settings),
        )
    };
    let idle = json(&status());
    for key in [
        "paused_kind",
        "paused_reason",
        "paused_until",
        "paused_provider",
        "last_crash",
    ] {
        assert_eq!(idle.get(key), Some(&Value::Null), "{key}: {idle}");
    }
    assert_eq!(idle["worker_crashes"], 0, "{idle}");

    // A pause and two crashes at known times, written as a worker writes them.
    let conn = rusqlite::Connection::open(&db.path).unwrap();
    conn.execute(
        r#"UPDATE worker_state
           SET paused_kind = 'rate_limited', paused_reason = 'slow "down"',
               paused_until = 1796000000123456, paused_provider = 'openai http://127.0.0.1:9/v1 m',
               crash_count = 2, last_crash_at = 1795000000654321, last_crash_message = 'boom'
           WHERE id = 1"#,
        [],
    )
    .unwrap();
    drop(conn);
    let text = status();
    for line in [
        r#"  "last_crash": {
    "at": "2026-11-18T11:06:40.654321Z",
    "message": "boom"
  },"#,
        r#"  "paused_kind": "rate_limited","#,
        r#"  "paused_provider": "openai http://127.0.0.1:9/v1 m","#,
        r#"  "paused_reason": "slow \"down\"","#,
        r#"  "paused_until": "2026-11-30T00:53:20.123456Z","#,
        r#"  "worker_crashes": 2"#,
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    let v = json(&text);
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    let queue = json(&serde_json::to_string(&db.open().queue_status().unwrap()).unwrap());
    let mut want: Vec<&str> = queue.as_object().unwrap().keys().map(String::as_str).collect();
    want.extend([
        "eta_seconds",
        "last_crash",
        "paused_kind",
        "paused_provider",
        "paused_reason",
        "paused_until",
        "worker_crashes",
    ]);
    let (mut keys, mut want) = (keys, want);
    keys.sort_unstable();
    want.sort_unstable();
    assert_eq!(keys, want, "no key added or lost: {v}");
    assert_eq!(
        v["last_crash"].as_object().unwrap().len(),
        2,
        "last_crash is {{at, message}}: {v}"
    );
}

/// `synchronous` is a setting: `worker` and `daemon`, which load the settings anyway, take the
/// file's value (under `SITETRAIL_SYNCHRONOUS`, which wins and is refused as before); the other
/// commands never read the file to open the database, so a malformed one cannot stop them.
#[test]
fn synchronous_comes_from_the_settings_file_for_the_worker_and_never_breaks_other_commands() {
    let db = TempDb::new();
    run_ok(cli(&db.path).args(["visit", "https://a.example/"]));
    let settings = db.dir.path().join("settings.json");
    std::fs::write(&settings, r#"{"synchronous": "full"}"#).unwrap();
    let worker = |env: Option<&str>| {
        let mut c = cli(&db.path);
        c.env_remove("SITETRAIL_SYNCHRONOUS")
            .args(["worker", "--until-idle", "--fixed-delay-ms", "1", "--settings"])
            .arg(&settings);
        if let Some(v) = env {
            c.env("SITETRAIL_SYNCHRONOUS", v);
        }
        c.output().unwrap()
    };
    let out = worker(None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(r#"synchronous="full""#),
        "the file's value: {stderr}"
    );
    let out = worker(Some("normal"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#"synchronous="normal""#),
        "the variable wins: {stderr}"
    );
    let out = worker(Some("sometimes"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(r#"SITETRAIL_SYNCHRONOUS must be `normal` or `full`, not "sometimes""#),
        "the message it always had: {stderr}"
    );

    // A malformed settings file: the worker refuses it by name, as before; `history`, `visit`
    // and `status` never read it to open the database, as before.
    std::fs::write(&settings, r#"{"synchronous": "sometimes"}"#).unwrap();
    let out = worker(None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("settings.json") && stderr.contains("synchronous"),
        "{stderr}"
    );
    for args in [
        vec!["history", "--json"],
        vec!["visit", "https://b.example/"],
        vec!["status", "--json"],
    ] {
        run_ok(
            cli(&db.path)
                .env_remove("SITETRAIL_SYNCHRONOUS")
                .args(&args)
                .arg("--settings")
                .arg(&settings),
        );
    }
}
