//! The worker against a fake provider on 127.0.0.1 that goes away, rate-limits, refuses the key,
//! fails, and answers badly: no job is lost, and only the jobs' own failures cost attempts.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use sitetrail::classify::builtin::Builtin;
use sitetrail::classify::privacy::{Exclusions, PrivacyRouter};
use sitetrail::worker::state::PauseKind;
use sitetrail::worker::{RetryPolicy, Worker};
use sitetrail::{Change, NewVisit, Timestamp};

use crate::support::fake_ai::*;
use crate::support::{cli, run_ok, visit, TempDb};

const LONG: Duration = Duration::from_secs(20);

fn seed(store: &sitetrail::Store, n: usize) {
    for i in 0..n {
        visit(store, &format!("https://site{i:03}.example.com/page"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_for_a_long_time_loses_no_attempt_and_resumes_by_itself() {
    let db = TempDb::new();
    let store = db.open();
    seed(&store, 12);
    // A port that refuses connections, and later the fake server on that same port. 127.0.0.2
    // (still loopback) so that no other test's server, all on 127.0.0.1, can take the port.
    let listener = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let worker = Worker::new(
        store.clone(),
        openai(&format!("http://{addr}/v1")),
        fast_config(5),
    )
    .unwrap();
    let handle = worker.spawn();

    // The real worker waits 1 s doubling to 5 min, so an hour offline is about 20 tries. Here
    // the wait is 10 ms doubling to 40 ms, and 1.5 s offline is over 30 tries: more than an
    // hour's worth. Every try gives the claimed jobs back untouched.
    let mut waits = std::collections::BTreeSet::new();
    let end = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < end {
        for (domain, status, attempts) in jobs(&store) {
            assert!(
                status == "PENDING" || status == "PROCESSING",
                "{domain} is {status}"
            );
            assert!(attempts <= 1, "{domain} has {attempts} attempts");
            if status == "PENDING" {
                assert_eq!(attempts, 0, "{domain}: a released job keeps its attempt count");
            }
        }
        let w = store.worker_state().unwrap();
        if let (Some(until), Some(at)) = (w.paused_until, w.updated_at) {
            assert_eq!(w.paused_kind, Some(PauseKind::Offline));
            waits.insert((until.as_micros() - at.as_micros()) / 10_000); // in 10 ms steps
        }
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    assert_eq!(count_status(&store, "FAILED"), 0);
    assert!(
        waits.contains(&1) && waits.contains(&4),
        "backoff 10 ms doubling to 40 ms: {waits:?}"
    );
    assert!(waits.iter().all(|w| *w <= 4), "capped at 40 ms: {waits:?}");

    let listener = std::net::TcpListener::bind(addr).expect("the port is free again");
    let server = MockServer::builder().listener(listener).start().await;
    mount_openai_ok(&server).await;
    assert!(
        eventually(LONG, || count_status(&store, "COMPLETED") == 12).await,
        "{:?}",
        jobs(&store)
    );
    assert!(
        jobs(&store).iter().all(|(_, _, a)| *a == 1),
        "offline tries cost nothing: {:?}",
        jobs(&store)
    );
    assert!(eventually(LONG, || !store.worker_state().unwrap().is_paused()).await);
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_the_whole_worker_waits_as_long_as_asked() {
    let db = TempDb::new();
    let store = db.open();
    seed(&store, 3);
    let times = Arc::new(Mutex::new(Vec::new()));
    let server = rate_limited_once(&[("retry-after-ms", "400".into())], times.clone()).await;
    let handle = Worker::new(
        store.clone(),
        openai(&format!("{}/v1", server.uri())),
        fast_config(1),
    )
    .unwrap()
    .spawn();
    assert!(
        eventually(LONG, || store.worker_state().unwrap().paused_kind
            == Some(PauseKind::RateLimited))
        .await
    );
    let w = store.worker_state().unwrap();
    let asked = w.paused_until.unwrap().as_micros() - w.updated_at.unwrap().as_micros();
    assert_eq!(asked, 400_000, "paused_until is now + Retry-After");
    assert!(eventually(LONG, || count_status(&store, "COMPLETED") == 3).await);
    let t = times.lock().unwrap().clone();
    assert_eq!(t.len(), 4, "one 429, then one request per job");
    assert!(
        t[1] - t[0] >= Duration::from_millis(390),
        "waited only {:?}",
        t[1] - t[0]
    );
    assert!(
        jobs(&store).iter().all(|(_, _, a)| *a == 1),
        "the 429 cost no attempt"
    );
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_credentials_pause_until_the_user_resumes_from_another_process() {
    let db = TempDb::new();
    let store = db.open();
    seed(&store, 2);
    let mut changes = store.subscribe();
    let server = MockServer::start().await;
    mount_key_echo(&server, "Invalid key").await;
    let handle = Worker::new(
        store.clone(),
        openai(&format!("{}/v1", server.uri())),
        fast_config(2),
    )
    .unwrap()
    .spawn();
    assert!(
        eventually(LONG, || store.worker_state().unwrap().paused_kind
            == Some(PauseKind::NeedsUser))
        .await
    );
    // Paused: no more calls however long we wait, every job PENDING with no attempt counted.
    // That nothing happens is what is tested: a window of many of its fast retries (10 ms).
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
    assert!(
        jobs(&store).iter().all(|(_, s, a)| s == "PENDING" && *a == 0),
        "{:?}",
        jobs(&store)
    );

    // Another process sees why, without the key.
    let status = run_ok(cli(&db.path).args(["status", "--json"]));
    let v: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(v["paused_kind"], "needs_user");
    assert!(
        v["paused_reason"]
            .as_str()
            .unwrap()
            .contains("refused the API key"),
        "{v}"
    );
    assert!(v["paused_until"].is_null());
    assert_eq!(v["pending"], 2, "existing keys are still there");
    assert!(
        !all_text(&store).contains(KEY) && !status.contains(KEY),
        "the key leaked"
    );
    let text = run_ok(cli(&db.path).arg("status"));
    assert!(text.contains("sitetrail resume"), "{text}");

    // The user fixes the problem and resumes from another process.
    server.reset().await;
    mount_openai_ok(&server).await;
    let out = run_ok(cli(&db.path).arg("resume"));
    assert!(out.contains("resumed"), "{out}");
    assert!(eventually(LONG, || count_status(&store, "COMPLETED") == 2).await);
    assert!(!store.worker_state().unwrap().is_paused());
    handle.shutdown().await.unwrap();

    let mut worker_changes = 0;
    while let Ok(c) = changes.try_recv() {
        worker_changes += usize::from(c == Change::Worker);
    }
    assert!(worker_changes >= 1, "the pause was announced after commit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_failures_cost_attempts_with_backoff_then_fail_with_the_last_error() {
    let db = TempDb::new();
    let store = db.open();
    seed(&store, 2);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_json(json!({"error": {"message": "overloaded"}})))
        .mount(&server)
        .await;
    let config = sitetrail::worker::WorkerConfig {
        max_attempts: 3,
        retry: RetryPolicy::exponential(Duration::from_millis(20), 2.0, Duration::from_millis(80)),
        ..fast_config(1)
    };
    let handle = Worker::new(store.clone(), openai(&format!("{}/v1", server.uri())), config)
        .unwrap()
        .spawn();
    assert!(
        eventually(LONG, || count_status(&store, "FAILED") == 2).await,
        "{:?}",
        jobs(&store)
    );
    handle.shutdown().await.unwrap();
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        6,
        "3 attempts per job"
    );
    for j in store.failed_jobs().unwrap() {
        assert_eq!(j.attempt_count, 3);
        let msg = j.last_error_message.unwrap();
        assert!(msg.contains("HTTP 503") && msg.contains("overloaded"), "{msg}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_outside_the_taxonomy_and_refusals_fail_only_their_jobs() {
    let db = TempDb::new();
    let store = db.open();
    for d in ["good.example", "weird.example", "missing.example"] {
        visit(&store, &format!("https://{d}/"));
    }
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            r#"{"results":[{"domain":"good.example","category":"news","confidence":1},
                           {"domain":"weird.example","category":"weather","confidence":1}]}"#,
        )))
        .mount(&server)
        .await;
    let config = sitetrail::worker::WorkerConfig {
        max_attempts: 1,
        ..fast_config(3)
    };
    let worker = Worker::new(store.clone(), openai(&format!("{}/v1", server.uri())), config).unwrap();
    let (_tx, mut rx) = tokio::sync::watch::channel(false);
    worker.tick(&mut rx).await.unwrap();
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        1,
        "one call for the batch"
    );
    let site = store.website("good.example").unwrap();
    assert_eq!(
        (
            site.category.map(sitetrail::Category::id),
            site.category_source.map(sitetrail::CategorySource::as_str)
        ),
        (Some("news"), Some("ai"))
    );
    let failed = store.failed_jobs().unwrap();
    let mut errors: Vec<(String, String)> = failed
        .into_iter()
        .map(|j| (j.domain, j.last_error_message.unwrap()))
        .collect();
    errors.sort();
    assert_eq!(errors.len(), 2);
    assert!(
        errors[0].0 == "missing.example" && errors[0].1.contains("no answer"),
        "{errors:?}"
    );
    assert!(
        errors[1].0 == "weird.example" && errors[1].1.contains("\"weather\""),
        "{errors:?}"
    );
    let weird = store.website("weird.example").unwrap();
    assert_eq!(
        (
            weird.category.map(sitetrail::Category::id),
            weird.category_source.map(sitetrail::CategorySource::as_str)
        ),
        (
            Some(crate::support::builtin_answer("weird.example").0.as_str()),
            Some("builtin")
        ),
        "the answer outside the taxonomy is never stored; the provisional category stays"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_hosts_leave_the_machine_and_batches_cut_the_number_of_calls() {
    let db = TempDb::new();
    let store = db.open();
    for i in 0..45 {
        store
            .record_visit(&NewVisit {
                url: &format!("https://shop{i}.example.com/secret-path/{i}?q=private-query#frag"),
                title: Some("My Secret Title"),
                visited_at: Timestamp::now(),
                source: "test",
                source_visit_id: None,
            })
            .unwrap();
    }
    visit(&store, "http://nas.local/admin");
    visit(&store, "https://intranet.corp.example/hr");
    let server = MockServer::start().await;
    mount_openai_ok(&server).await;
    let router = PrivacyRouter::new(
        openai(&format!("{}/v1", server.uri())),
        Arc::new(Builtin),
        Exclusions::parse(&["*.corp.example"]).unwrap(),
    );
    let worker = Worker::new(store.clone(), Arc::new(router), fast_config(20)).unwrap();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    worker.run(rx, true).await.unwrap();
    assert_eq!(count_status(&store, "COMPLETED"), 47);
    let reqs = server.received_requests().await.unwrap();
    assert_eq!(reqs.len(), 3, "47 websites, 2 private, batches of 20: 3 calls");
    let mut sent = Vec::new();
    for r in &reqs {
        let raw = String::from_utf8(r.body.clone()).unwrap();
        for secret in [
            "secret-path",
            "private-query",
            "frag",
            "My Secret Title",
            "nas.local",
            "corp.example",
            "https",
        ] {
            assert!(!raw.contains(secret), "{secret:?} was sent: {raw}");
        }
        sent.extend(hosts_of(r));
    }
    sent.sort();
    let mut expected: Vec<String> = (0..45).map(|i| format!("shop{i}.example.com")).collect();
    expected.sort();
    assert_eq!(sent, expected, "each public host sent once, and nothing else");
    assert_eq!(
        store
            .website("nas.local")
            .unwrap()
            .category_source
            .map(sitetrail::CategorySource::as_str),
        Some("builtin")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_rate_limit_spaces_calls() {
    let db = TempDb::new();
    let store = db.open();
    seed(&store, 5);
    let server = MockServer::start().await;
    let times = Arc::new(Mutex::new(Vec::new()));
    Mock::given(method("POST"))
        .respond_with(timed(times.clone(), openai_ok()))
        .mount(&server)
        .await;
    let config = sitetrail::worker::WorkerConfig {
        max_requests_per_minute: Some(600),
        fixed_delay: Duration::ZERO,
        ..fast_config(1)
    };
    let worker = Worker::new(store.clone(), openai(&format!("{}/v1", server.uri())), config).unwrap();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let start = Instant::now();
    worker.run(rx, true).await.unwrap();
    let t = times.lock().unwrap().clone();
    assert_eq!(t.len(), 5);
    // 600 a minute: call k goes no earlier than k × 100 ms after the worker started.
    for (k, at) in t.iter().enumerate() {
        let since = *at - start;
        assert!(
            since >= Duration::from_millis(100) * k as u32,
            "call {k} after {since:?}"
        );
    }
}
