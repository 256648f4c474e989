//! Exclusions are normalised like domains (issue 8, item 13), through the real `sitetrail`
//! binary: international names given on the command line or in the settings file match the
//! punycode domains stored, and a pattern that is not a host pattern is refused.

use serde_json::Value;
use wiremock::MockServer;

use crate::cli::worker::*;
use crate::support::fake_ai::*;
use crate::support::{run_ok, TempDb};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn international_exclusions_match_from_flags_and_the_settings_file() {
    let db = TempDb::new();
    for url in [
        "https://bücher.example/kaufen",
        "https://www.BÜCHER.example./",
        "https://online.münchen-bank.example/konto",
        "https://münchen-bank.example/",
        "https://praxis.köln.example/termin",
        "https://public.example/",
    ] {
        run_ok(isolated(&db.path).args(["visit", url]));
    }
    std::fs::write(settings_path(&db.path), r#"{"exclusions": ["*.KÖLN.example."]}"#).unwrap();
    let server = MockServer::start().await;
    mount_openai_ok(&server).await;
    let base = format!("{}/v1", server.uri());
    let out = openai_worker(&db.path, &base, &["--until-idle"])
        .args([
            "--exclude",
            "bücher.example",
            "--exclude",
            "*.münchen-bank.example",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sent = hosts_asked(&server).await;
    assert_eq!(sent, ["public.example"], "only the public host went out");
    let sites: Value =
        serde_json::from_str(&run_ok(isolated(&db.path).args(["websites", "--json"]))).unwrap();
    for w in sites.as_array().unwrap() {
        let expected = if w["domain"] == "public.example" {
            "ai"
        } else {
            "builtin"
        };
        assert_eq!(w["category_source"], expected, "{w}");
    }
    assert_eq!(sites.as_array().unwrap().len(), 5);
}

#[test]
fn exclusions_that_are_not_host_patterns_are_refused() {
    let db = TempDb::new();
    for bad in ["<bank>.example", "bank%.example", "*.", "a*.example"] {
        let out = isolated(&db.path)
            .args(["worker", "--until-idle", "--exclude", bad])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(
            err.contains("not a host pattern") && err.contains(&format!("{bad:?}")),
            "{bad}: {err}"
        );
        let out = isolated(&db.path)
            .args(["classify", "--exclude", bad, "x.example"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "classify --exclude {bad}");
    }
    std::fs::write(
        settings_path(&db.path),
        r#"{"exclusions": ["ok.example", "<bank>.example"]}"#,
    )
    .unwrap();
    let out = isolated(&db.path)
        .args(["worker", "--until-idle"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("settings.json") && err.contains("not a host pattern") && err.contains("<bank>.example"),
        "the error names the file and the pattern: {err}"
    );
}

/// `sitetrail exclusions`: the list kept in the database (and synced to the user's other
/// devices) is edited, listed beside the settings file's own, and obeyed by the worker; a bad
/// pattern is refused and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_exclusions_command_keeps_a_list_the_worker_obeys() {
    let db = TempDb::new();
    for url in [
        "https://online.bank.example/konto",
        "https://clinic.example/",
        "https://gone.example/",
        "https://public.example/",
    ] {
        run_ok(isolated(&db.path).args(["visit", url]));
    }
    std::fs::write(settings_path(&db.path), r#"{"exclusions": ["local.example"]}"#).unwrap();
    let said = run_ok(isolated(&db.path).args(["exclusions", "add", "*.Bank.example."]));
    assert!(said.contains("*.bank.example is never sent"), "{said}");
    run_ok(isolated(&db.path).args(["exclusions", "add", "clinic.example"]));
    run_ok(isolated(&db.path).args(["exclusions", "add", "gone.example"]));
    let again = run_ok(isolated(&db.path).args(["exclusions", "add", "www.clinic.example"]));
    assert!(again.contains("already excluded"), "{again}");
    run_ok(isolated(&db.path).args(["exclusions", "remove", "gone.example"]));
    let out = isolated(&db.path)
        .args(["exclusions", "remove", "gone.example"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "removing what is not there is not found"
    );
    let out = isolated(&db.path)
        .args(["exclusions", "add", "<bank>.example"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a host pattern"));
    let list: Value =
        serde_json::from_str(&run_ok(isolated(&db.path).args(["exclusions", "--json"]))).unwrap();
    let rows: Vec<(String, String)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["pattern"].as_str().unwrap().to_owned(),
                e["source"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("*.bank.example".to_owned(), "shared".to_owned()),
            ("clinic.example".to_owned(), "shared".to_owned()),
            ("local.example".to_owned(), "settings".to_owned()),
        ]
    );
    assert!(list[0]["excluded_at"].is_string(), "{list}");
    let server = MockServer::start().await;
    mount_openai_ok(&server).await;
    let base = format!("{}/v1", server.uri());
    let out = openai_worker(&db.path, &base, &["--until-idle"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sent = hosts_asked(&server).await;
    assert_eq!(
        sent,
        ["gone.example", "public.example"],
        "the excluded hosts stayed here; the one taken off the list went out"
    );
    // `classify` keeps them from the provider too (it reads the list, and changes nothing).
    let out = isolated(&db.path)
        .env("SITETRAIL_API_KEY", KEY)
        .args(["classify", "--json", "--provider", "openai", "--base-url", &base])
        .args(["online.bank.example", "clinic.example", "fresh.example"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sent = hosts_asked(&server).await;
    assert_eq!(
        sent,
        ["fresh.example", "gone.example", "public.example"],
        "classify sent only the host that is not excluded"
    );
    // Without a database, classify creates none.
    let elsewhere = db.path.with_file_name("never-made.db");
    let out = isolated(&elsewhere)
        .args(["classify", "public.example"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!elsewhere.exists(), "classify made a database");
}
