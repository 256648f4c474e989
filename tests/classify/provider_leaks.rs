//! What a hostile provider can make Sitetrail store, log, print or send (issue 8, items 4 and 5),
//! through the real `sitetrail` binary on real HTTP: an echoed key at any offset, credentials in
//! the base URL, redirects to another server.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use base64::Engine as _;
use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use sitetrail::worker::state::PauseKind;

use crate::cli::worker::*;
use crate::support::fake_ai::*;
use crate::support::{run_ok, visit, TempDb};

/// Where the echoed `Authorization` header (`Bearer ` and the key: 28 characters) starts in the
/// server's text: at the start, and at every offset where it straddles one of the cuts made to
/// server text (60 characters of a category, 200 of an answer, 300 of an error message).
fn offsets() -> Vec<usize> {
    let mut o: Vec<usize> = (0..4).collect();
    for cut in [60, 200, 300] {
        o.extend(cut - 34..cut);
    }
    o
}

/// The `i`-th answer: one of four shapes that put server text into an error, with the request's
/// `Authorization` header echoed after `offset` characters.
fn echo(i: usize, req: &Request) -> ResponseTemplate {
    let auth = req
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let offsets = offsets();
    let pad = "x".repeat(offsets[(i / 4) % offsets.len()]);
    let text = format!("{pad}{auth} is not valid");
    match i % 4 {
        0 => ResponseTemplate::new(400).set_body_json(json!({"error": {"message": text}})),
        1 => ResponseTemplate::new(500).set_body_string(text),
        2 => ResponseTemplate::new(200).set_body_json(completion(&text)),
        _ => {
            let hosts = hosts_of(req);
            let answer = json!({"results": [{"domain": hosts[0], "category": text, "confidence": 1}]});
            ResponseTemplate::new(200).set_body_json(completion(&answer.to_string()))
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echoed_key_survives_nowhere_whatever_its_offset() {
    let db = TempDb::new();
    let store = db.open();
    let jobs_n = offsets().len() * 4;
    for i in 0..jobs_n {
        visit(&store, &format!("https://site{i:03}.example/"));
    }
    let server = MockServer::start().await;
    let n = Arc::new(AtomicUsize::new(0));
    let counter = n.clone();
    Mock::given(method("POST"))
        .respond_with(move |req: &Request| echo(counter.fetch_add(1, Ordering::SeqCst), req))
        .mount(&server)
        .await;
    let base = format!("{}/v1", server.uri());
    let out = openai_worker(
        &db.path,
        &base,
        &["--until-idle", "--batch-size", "1", "--max-attempts", "1"],
    )
    .output()
    .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{log}");
    assert_eq!(n.load(Ordering::SeqCst), jobs_n, "one call per job");
    assert_eq!(count_status(&store, "FAILED"), jobs_n, "{:?}", jobs(&store));
    let failed = run_ok(isolated(&db.path).args(["failed", "--json"]));
    let status = run_ok(isolated(&db.path).args(["status", "--json"]));
    let stored = all_text(&store);
    for (what, text) in [
        ("database", &stored),
        ("log", &log),
        ("failed", &failed),
        ("status", &status),
    ] {
        assert!(!leaks(text, KEY), "the key leaked into the {what}:\n{text}");
    }
    assert!(stored.contains("Bearer ***"), "the echo is shown redacted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_echoed_key_is_not_in_a_pause_reason_or_a_cli_error() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://one.example/");
    let server = MockServer::start().await;
    // 275 characters, a space and `Bearer `, then the key: it straddles the 300-character cut of
    // server text (a cut before redaction would keep 16 of its characters).
    mount_key_echo(&server, Box::leak("y".repeat(275).into_boxed_str())).await;
    let base = format!("{}/v1", server.uri());
    let mut w = Running::start(openai_worker(&db.path, &base, &[]), db.dir.path().join("log"));
    w.wait_alive("paused", || {
        store.worker_state().unwrap().paused_kind == Some(PauseKind::NeedsUser)
    });
    let status = run_ok(isolated(&db.path).args(["status", "--json"]));
    let text = run_ok(isolated(&db.path).arg("status"));
    let log = w.stop();
    let classify = isolated(&db.path)
        .env("SITETRAIL_API_KEY", KEY)
        .args([
            "classify",
            "--provider",
            "openai",
            "--base-url",
            &base,
            "x.example",
        ])
        .output()
        .unwrap();
    assert!(!classify.status.success());
    let cli_error = String::from_utf8_lossy(&classify.stderr).into_owned();
    assert!(cli_error.contains("refused the API key"), "{cli_error}");
    let stored = all_text(&store);
    for (what, t) in [
        ("database", &stored),
        ("status --json", &status),
        ("status", &text),
        ("log", &log),
        ("classify", &cli_error),
    ] {
        assert!(!leaks(t, KEY), "the key leaked into {what}:\n{t}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base_url_credentials_are_sent_but_never_logged_or_shown() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://one.example/");
    let server = MockServer::start().await;
    mount_key_echo(&server, "bad credentials:").await;
    let password = "pw-SECRET-77-zz";
    let base = server
        .uri()
        .replace("http://", &format!("http://alice.user:{password}@"))
        + "/v1";
    let token = base64::engine::general_purpose::STANDARD.encode(format!("alice.user:{password}"));
    let mut c = isolated(&db.path);
    c.args(["worker", "--provider", "openai", "--base-url", &base]);
    let mut w = Running::start(c, db.dir.path().join("log"));
    w.wait_alive("paused", || {
        store.worker_state().unwrap().paused_kind == Some(PauseKind::NeedsUser)
    });
    let status = run_ok(isolated(&db.path).args(["status", "--json"]));
    let log = w.stop();
    let req = &server.received_requests().await.unwrap()[0];
    assert_eq!(
        req.headers.get("authorization").unwrap().to_str().unwrap(),
        format!("Basic {token}"),
        "the credentials are still used"
    );
    assert!(
        log.contains("base_url=\"http://***@127.0.0.1"),
        "the start log names the server: {log}"
    );
    let bad = isolated(&db.path)
        .args([
            "classify",
            "--provider",
            "openai",
            "--base-url",
            &base.replace("/v1", " /v1"),
        ])
        .arg("x.example")
        .output()
        .unwrap();
    let bad_url_error = String::from_utf8_lossy(&bad.stderr).into_owned();
    let stored = all_text(&store);
    for (what, t) in [
        ("database", &stored),
        ("status", &status),
        ("log", &log),
        ("bad URL error", &bad_url_error),
    ] {
        for secret in [password, token.as_str(), "alice.user"] {
            assert!(!leaks(t, secret), "{secret} leaked into {what}:\n{t}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_never_followed_and_name_their_target() {
    let elsewhere = MockServer::start().await;
    mount_openai_ok(&elsewhere).await;
    let target = format!(
        "{}/v1/chat/completions",
        elsewhere.uri().replace("http://", "http://bob:pw-redirect-1@")
    );
    let shown = format!(
        "{}/v1/chat/completions",
        elsewhere.uri().replace("http://", "http://***@")
    );
    let db = TempDb::new();
    for code in [301, 302, 303, 307, 308] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(code).insert_header("location", target.as_str()))
            .mount(&server)
            .await;
        let out = isolated(&db.path)
            .env("SITETRAIL_API_KEY", KEY)
            .args(["classify", "--provider", "openai", "--base-url"])
            .arg(format!("{}/v1", server.uri()))
            .arg("x.example")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{code}: {err}");
        assert!(
            err.contains(&format!("redirect (HTTP {code}) to {shown}")),
            "{code}: {err}"
        );
        assert!(!err.contains("pw-redirect-1"), "{code}: {err}");
    }
    assert_eq!(
        elsewhere.received_requests().await.unwrap().len(),
        0,
        "nothing went to the redirect's target"
    );

    // The worker pauses for the user, and `status` says why.
    let store = db.open();
    visit(&store, "https://one.example/");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(307).insert_header("location", target.as_str()))
        .mount(&server)
        .await;
    let base = format!("{}/v1", server.uri());
    let mut w = Running::start(openai_worker(&db.path, &base, &[]), db.dir.path().join("log"));
    w.wait_alive("paused", || {
        store.worker_state().unwrap().paused_kind == Some(PauseKind::NeedsUser)
    });
    let status: Value = serde_json::from_str(&run_ok(isolated(&db.path).args(["status", "--json"]))).unwrap();
    w.stop();
    let reason = status["paused_reason"].as_str().unwrap();
    assert!(
        reason.contains("redirect (HTTP 307)") && reason.contains(&shown),
        "{reason}"
    );
    assert_eq!(jobs(&store)[0].2, 0, "a redirect costs no attempt");
    assert_eq!(elsewhere.received_requests().await.unwrap().len(), 0);
}
