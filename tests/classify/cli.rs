//! The CLI's classifier options: provider flags and env vars, the settings file, `classify`.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use wiremock::MockServer;

use crate::support::fake_ai::*;
use crate::support::{cli, run_ok, TempDb};

/// `sitetrail` with no classifier settings from the outside world: only what the test passes.
fn isolated(db: &Path, settings: &Path) -> Command {
    let mut c = cli(db);
    for var in [
        "SITETRAIL_BASE_URL",
        "SITETRAIL_MODEL",
        "SITETRAIL_API_KEY",
        "SITETRAIL_SETTINGS",
    ] {
        c.env_remove(var);
    }
    c.arg("--settings").arg(settings);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_flags_and_env_drive_a_remote_provider() {
    let db = TempDb::new();
    let settings = db.dir.path().join("settings.json");
    let server = MockServer::start().await;
    mount_openai_ok(&server).await;
    for i in 0..25 {
        run_ok(isolated(&db.path, &settings).args(["visit", &format!("https://s{i}.example.net/p?q=1")]));
    }
    run_ok(isolated(&db.path, &settings).args(["visit", "http://printer.lan/"]));
    let out = isolated(&db.path, &settings)
        .env("SITETRAIL_API_KEY", KEY)
        .env("SITETRAIL_MODEL", "env-model")
        .args([
            "worker",
            "--until-idle",
            "--provider",
            "openai",
            "--fixed-delay-ms",
            "0",
        ])
        .args([
            "--base-url",
            &format!("{}/v1", server.uri()),
            "--batch-size",
            "10",
        ])
        .args(["--max-requests-per-minute", "6000", "--exclude", "*.example.net"])
        .args(["--exclude", "s1.example.org"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let logs = String::from_utf8_lossy(&out.stderr);
    assert!(!logs.contains(KEY), "the key is in the logs");
    // Everything was excluded or private: classified locally, nothing sent.
    assert_eq!(server.received_requests().await.unwrap().len(), 0);
    let sites: Value = serde_json::from_str(&run_ok(
        isolated(&db.path, &settings).args(["websites", "--json"]),
    ))
    .unwrap();
    assert!(
        sites
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["category_source"] == "builtin"),
        "{sites}"
    );

    // Without the exclusion, the 25 public hosts go out in batches of 10, with the env model.
    run_ok(isolated(&db.path, &settings).args(["visit", "https://fresh.example.com/"]));
    for i in 0..25 {
        run_ok(isolated(&db.path, &settings).args(["reclassify", &format!("s{i}.example.net")]));
    }
    let out = isolated(&db.path, &settings)
        .env("SITETRAIL_API_KEY", KEY)
        .env("SITETRAIL_MODEL", "env-model")
        .env("SITETRAIL_PROVIDER", "openai")
        .env("SITETRAIL_BASE_URL", format!("{}/v1", server.uri()))
        .args([
            "worker",
            "--until-idle",
            "--fixed-delay-ms",
            "0",
            "--batch-size",
            "10",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 3, "26 hosts in batches of 10");
    assert!(bodies.iter().all(|b| b["model"] == "env-model"));
    let status: Value =
        serde_json::from_str(&run_ok(isolated(&db.path, &settings).args(["status", "--json"]))).unwrap();
    assert_eq!(status["completed"], 27);
    assert!(
        status["paused_reason"].is_null() && status["paused_until"].is_null(),
        "{status}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settings_file_is_overridden_by_env_and_flags() {
    let db = TempDb::new();
    let settings = db.dir.path().join("conf/settings.json");
    let file_server = MockServer::start().await;
    let env_server = MockServer::start().await;
    mount_openai_ok(&file_server).await;
    mount_openai_ok(&env_server).await;
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(
        &settings,
        format!(
            r#"{{"provider": "openai", "base_url": "{}/v1", "model": "file-model"}}"#,
            file_server.uri()
        ),
    )
    .unwrap();
    let classify = |extra: &[&str], env_url: Option<String>| {
        let mut c = isolated(&db.path, &settings);
        c.env("SITETRAIL_API_KEY", KEY)
            .args(["classify", "--json", "github.com"])
            .args(extra);
        if let Some(u) = env_url {
            c.env("SITETRAIL_BASE_URL", u);
        }
        let v: Value = serde_json::from_str(&run_ok(&mut c)).unwrap();
        v
    };
    let v = classify(&[], None);
    assert_eq!(v[0]["category"], "dev_tech");
    assert_eq!(v[0]["source"], "ai");
    assert_eq!(
        file_server.received_requests().await.unwrap().len(),
        1,
        "the file's base URL"
    );
    classify(&[], Some(format!("{}/v1", env_server.uri())));
    assert_eq!(
        env_server.received_requests().await.unwrap().len(),
        1,
        "env beats the file"
    );
    let v = classify(
        &["--provider", "builtin"],
        Some(format!("{}/v1", env_server.uri())),
    );
    assert_eq!(v[0]["source"], "builtin", "the flag beats env and file");
    assert_eq!(bodies(&env_server).await[0]["model"], "file-model");
    assert!(!db.path.exists(), "classify never touches the database");

    std::fs::write(&settings, "{ broken").unwrap();
    let out = isolated(&db.path, &settings)
        .args(["classify", "github.com"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("settings.json") && err.contains("not valid"),
        "{err}"
    );
}

#[test]
fn classify_with_builtin_and_bad_input() {
    let db = TempDb::new();
    let settings = db.dir.path().join("none.json");
    let out = run_ok(isolated(&db.path, &settings).args([
        "classify",
        "www.GitHub.com",
        "mail.example.org",
        "https://bet365.example/x",
    ]));
    assert_eq!(
        crate::support::table_rows(&out),
        [
            ["DOMAIN", "CATEGORY", "BY"],
            ["github.com", "Development & technology", "built-in"],
            ["mail.example.org", "Email & chat", "built-in"],
            ["bet365.example", "Gambling", "built-in"],
        ],
        "{out}"
    );
    let out = isolated(&db.path, &settings)
        .args(["classify", "not a domain"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a domain"));
    let out = isolated(&db.path, &settings)
        .args(["classify", "--provider", "openai", "x.com"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("SITETRAIL_API_KEY"),
        "no key, clear message"
    );
    let out = isolated(&db.path, &settings)
        .args(["worker", "--batch-size", "0", "--until-idle"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--batch-size") && stderr.contains("from 1 to 500"),
        "{stderr}"
    );
}
