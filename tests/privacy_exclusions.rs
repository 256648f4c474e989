//! Exclusions are normalised like domains (issue 8, item 13), through the real `sitetrail`
//! binary: international names given on the command line or in the settings file match the
//! punycode domains stored, and a pattern that is not a host pattern is refused.

use serde_json::Value;
use wiremock::MockServer;

use crate::cli_worker::*;
use crate::common::{run_ok, TempDb};
use crate::fake_ai::*;

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
    let sent: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .flat_map(hosts_of)
        .collect();
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
