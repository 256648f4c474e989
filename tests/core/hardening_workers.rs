//! The worker against hostile timing and several workers: one refused host in a batch, slow
//! calls with a short processing timeout, workers dying, pauses shared between workers, panics,
//! and a clock that jumps. Real HTTP to fake providers on 127.0.0.1, the real CLI binary where the
//! item is about processes.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use sitetrail::classify::builtin::Builtin;
use sitetrail::store::StoreOptions;
use sitetrail::time::ManualClock;
use sitetrail::worker::state::PauseKind;
use sitetrail::worker::{PanicsOn, RetryPolicy, Worker, WorkerConfig};
use sitetrail::{Store, Timestamp};

use crate::support::fake_ai::*;
use crate::support::{cli, run_ok, visit, wait_for, TempDb};

const LONG: Duration = Duration::from_secs(30);

/// The host the fake providers refuse.
const BAD: &str = "bad.example";

/// How the fake provider fails a batch holding a bad host.
#[derive(Clone, Copy, Debug)]
enum Refusal {
    Http400,
    ModelSaysNo,
    ContentFilter,
    Length,
    Garbage,
}

fn refuse(kind: Refusal) -> ResponseTemplate {
    let choice = |finish: &str, content: serde_json::Value, refusal: serde_json::Value| {
        json!({"choices": [{"index": 0, "finish_reason": finish,
            "message": {"role": "assistant", "content": content, "refusal": refusal}}]})
    };
    match kind {
        Refusal::Http400 => ResponseTemplate::new(400)
            .set_body_json(json!({"error": {"message": "this request was flagged"}})),
        Refusal::ModelSaysNo => ResponseTemplate::new(200).set_body_json(choice(
            "stop",
            serde_json::Value::Null,
            json!("I can't help with that"),
        )),
        Refusal::ContentFilter => ResponseTemplate::new(200).set_body_json(choice(
            "content_filter",
            json!(""),
            serde_json::Value::Null,
        )),
        Refusal::Length => ResponseTemplate::new(200).set_body_json(choice(
            "length",
            json!("{\"results\": ["),
            serde_json::Value::Null,
        )),
        Refusal::Garbage => {
            ResponseTemplate::new(200).set_body_json(completion("I think these are news sites"))
        }
    }
}

/// A provider that answers every batch correctly unless it holds a host in `bad`.
async fn refusing_server(kind: Refusal, bad: &'static [&'static str]) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(move |req: &Request| {
            let hosts = hosts_of(req);
            if hosts.iter().any(|h| bad.contains(&h.as_str())) {
                refuse(kind)
            } else {
                ResponseTemplate::new(200).set_body_json(completion(&answer_for(&hosts)))
            }
        })
        .mount(&server)
        .await;
    server
}

fn seed_with_bad(store: &Store, good: usize, bad: &[&str]) {
    for i in 0..good {
        visit(store, &format!("https://good{i}.example.com/"));
    }
    for b in bad {
        visit(store, &format!("https://{b}/"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_refused_host_fails_alone_whatever_the_refusal() {
    for kind in [
        Refusal::Http400,
        Refusal::ModelSaysNo,
        Refusal::ContentFilter,
        Refusal::Length,
        Refusal::Garbage,
    ] {
        let db = TempDb::new();
        let store = db.open();
        seed_with_bad(&store, 7, &[BAD]);
        let server = refusing_server(kind, &[BAD]).await;
        let config = WorkerConfig {
            max_attempts: 1,
            ..fast_config(8)
        };
        let worker = Worker::new(store.clone(), openai(&format!("{}/v1", server.uri())), config).unwrap();
        let (_tx, rx) = tokio::sync::watch::channel(false);
        worker.run(rx, true).await.unwrap();
        let failed: Vec<String> = store
            .failed_jobs()
            .unwrap()
            .into_iter()
            .map(|j| j.domain)
            .collect();
        assert_eq!(
            failed,
            [BAD],
            "{kind:?}: only the refused host fails: {:?}",
            jobs(&store)
        );
        assert_eq!(count_status(&store, "COMPLETED"), 7, "{kind:?}");
        let calls = server.received_requests().await.unwrap().len();
        // One call for the batch of 8, then 2 per halving down to the bad host: 2·log2(8).
        assert!(calls <= 1 + 2 * 3, "{kind:?}: {calls} calls");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_refused_hosts_in_one_batch_are_both_found_and_the_rest_complete() {
    let db = TempDb::new();
    let store = db.open();
    // good0..good5 then the two bad ones: they land in different halves of the batch.
    visit(&store, "https://bad-one.example/");
    seed_with_bad(&store, 6, &["bad-two.example"]);
    let server = refusing_server(Refusal::Http400, &["bad-one.example", "bad-two.example"]).await;
    let config = WorkerConfig {
        max_attempts: 1,
        ..fast_config(8)
    };
    let worker = Worker::new(store.clone(), openai(&format!("{}/v1", server.uri())), config).unwrap();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    worker.run(rx, true).await.unwrap();
    let mut failed: Vec<String> = store
        .failed_jobs()
        .unwrap()
        .into_iter()
        .map(|j| j.domain)
        .collect();
    failed.sort();
    assert_eq!(
        failed,
        ["bad-one.example", "bad-two.example"],
        "{:?}",
        jobs(&store)
    );
    assert_eq!(count_status(&store, "COMPLETED"), 6);
    let calls = server.received_requests().await.unwrap().len();
    assert!(
        calls <= 1 + 8 + 2 * 3,
        "within the narrowing budget: {calls} calls"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_failing_every_call_is_not_narrowed_beyond_one_split() {
    let db = TempDb::new();
    let store = db.open();
    seed_with_bad(&store, 8, &[]);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_json(json!({"error": {"message": "overloaded"}})))
        .mount(&server)
        .await;
    let config = WorkerConfig {
        max_attempts: 1,
        ..fast_config(8)
    };
    let worker = Worker::new(store.clone(), openai(&format!("{}/v1", server.uri())), config).unwrap();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    worker.run(rx, true).await.unwrap();
    assert_eq!(count_status(&store, "FAILED"), 8);
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        3,
        "the batch, then its two halves, then no more"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn narrowing_calls_respect_the_request_pacer() {
    let db = TempDb::new();
    let store = db.open();
    seed_with_bad(&store, 3, &[BAD]);
    let server = MockServer::start().await;
    let times = Arc::new(Mutex::new(Vec::new()));
    Mock::given(method("POST"))
        .respond_with(timed(times.clone(), |req: &Request| {
            let hosts = hosts_of(req);
            if hosts.iter().any(|h| h == BAD) {
                refuse(Refusal::Http400)
            } else {
                ResponseTemplate::new(200).set_body_json(completion(&answer_for(&hosts)))
            }
        }))
        .mount(&server)
        .await;
    let config = WorkerConfig {
        max_attempts: 1,
        max_requests_per_minute: Some(600),
        ..fast_config(4)
    };
    let worker = Worker::new(store.clone(), openai(&format!("{}/v1", server.uri())), config).unwrap();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let start = Instant::now();
    worker.run(rx, true).await.unwrap();
    assert_eq!(count_status(&store, "COMPLETED"), 3);
    let t = times.lock().unwrap().clone();
    assert!(t.len() >= 3, "the batch was narrowed: {} calls", t.len());
    // 600 a minute: call k goes no earlier than k × 100 ms after the worker started, the
    // narrowing calls like the first.
    for (k, at) in t.iter().enumerate() {
        let since = *at - start;
        assert!(
            since >= Duration::from_millis(100) * k as u32,
            "call {k} after {since:?}"
        );
    }
}

/// The CLI arguments of a worker using the fake provider at `uri`.
fn remote_worker_args(uri: &str, settings: &std::path::Path) -> Vec<String> {
    [
        "--settings",
        &settings.display().to_string(),
        "worker",
        "--until-idle",
        "--provider",
        "openai",
        "--base-url",
        &format!("{uri}/v1"),
        "--model",
        "test-model",
        "--fixed-delay-ms",
        "5",
    ]
    .iter()
    .map(std::string::ToString::to_string)
    .collect()
}

/// Waits for `child` to exit within `timeout`; kills it and fails the test if it does not.
fn wait_exit(child: &mut Child, timeout: Duration, what: &str) -> std::process::ExitStatus {
    let mut status = None;
    if !wait_for(timeout, || {
        status = child.try_wait().unwrap();
        status.is_some()
    }) {
        let _ = child.kill();
        let _ = child.wait();
        panic!("{what} did not finish within {timeout:?}");
    }
    status.expect("exited")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_worker_narrows_a_refused_batch_down_to_the_refused_host() {
    let db = TempDb::new();
    let store = db.open();
    seed_with_bad(&store, 5, &[BAD]);
    let server = refusing_server(Refusal::Http400, &[BAD]).await;
    let settings = db.dir.path().join("settings.json");
    let mut args = remote_worker_args(&server.uri(), &settings);
    args.extend(["--batch-size", "6", "--max-attempts", "1"].map(String::from));
    let out = tokio::task::spawn_blocking(move || cli(&db.path).args(&args).output().unwrap())
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let failed: Vec<String> = store
        .failed_jobs()
        .unwrap()
        .into_iter()
        .map(|j| j.domain)
        .collect();
    assert_eq!(failed, [BAD], "{:?}", jobs(&store));
    assert_eq!(count_status(&store, "COMPLETED"), 5);
    let msg = store.failed_jobs().unwrap()[0]
        .last_error_message
        .clone()
        .unwrap();
    assert!(msg.contains("HTTP 400"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_worker_processes_never_take_a_slow_call_from_each_other() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://slow.example/");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(|req: &Request| {
            ResponseTemplate::new(200)
                .set_body_json(completion(&answer_for(&hosts_of(req))))
                .set_delay(Duration::from_millis(3000))
        })
        .mount(&server)
        .await;
    let settings = db.dir.path().join("settings.json");
    let mut args = remote_worker_args(&server.uri(), &settings);
    // A processing timeout three times shorter than the call: before leases, each worker took
    // the job from the other, paying for a call each time and storing nothing. (A lease of a
    // second leaves the heartbeat, every third of it, room on a loaded machine.)
    args.extend(
        [
            "--processing-timeout-ms",
            "1000",
            "--max-attempts",
            "2",
            "--batch-size",
            "1",
        ]
        .map(String::from),
    );
    let path = db.path.clone();
    let logs: Vec<std::path::PathBuf> = (0..2)
        .map(|i| db.dir.path().join(format!("worker{i}.log")))
        .collect();
    let log_files = logs.clone();
    let statuses = tokio::task::spawn_blocking(move || {
        let mut workers: Vec<Child> = log_files
            .iter()
            .map(|log| {
                cli(&path)
                    .args(&args)
                    .stdout(Stdio::null())
                    .stderr(std::fs::File::create(log).unwrap())
                    .spawn()
                    .unwrap()
            })
            .collect();
        workers
            .iter_mut()
            .map(|w| wait_exit(w, Duration::from_secs(30), "a worker"))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    assert!(
        statuses.iter().all(std::process::ExitStatus::success),
        "{statuses:?}"
    );
    let logs: Vec<String> = logs
        .iter()
        .map(|l| std::fs::read_to_string(l).unwrap_or_default())
        .collect();
    assert_eq!(
        server.received_requests().await.unwrap().len(),
        1,
        "one paid call; the workers said:\n{}",
        logs.join("\n----\n")
    );
    assert_eq!(
        jobs(&store),
        [("slow.example".to_owned(), "COMPLETED".to_owned(), 1)]
    );
    assert_eq!(
        store
            .website("slow.example")
            .unwrap()
            .category_source
            .map(sitetrail::CategorySource::as_str),
        Some("ai")
    );
}

#[test]
fn a_job_whose_workers_keep_dying_ends_failed_with_a_message_saying_so() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://doomed.example/");
    let doomed_worker = || {
        cli(&db.path)
            .args([
                "worker",
                "--simulate-latency-ms",
                "60000",
                "--processing-timeout-ms",
                "300",
                "--max-attempts",
                "2",
                "--fixed-delay-ms",
                "10",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let attempts = |store: &Store| {
        crate::support::fake_ai::jobs(store)
            .into_iter()
            .map(|(_, s, a)| (s, a))
            .next()
            .unwrap()
    };
    for attempt in 1..=2 {
        let mut w = doomed_worker();
        // The first worker claims at once; the second once the dead one's lease ran out.
        assert!(
            wait_for(LONG, || attempts(&store) == ("PROCESSING".into(), attempt)),
            "attempt {attempt}: {:?}",
            attempts(&store)
        );
        w.kill().unwrap();
        w.wait().unwrap();
    }
    // A third worker finds the lease expired at max attempts: it ends the job instead of paying
    // for a third call.
    run_ok(cli(&db.path).args([
        "worker",
        "--until-idle",
        "--processing-timeout-ms",
        "300",
        "--max-attempts",
        "2",
        "--fixed-delay-ms",
        "10",
    ]));
    assert_eq!(attempts(&store), ("FAILED".into(), 2));
    let failed = store.failed_jobs().unwrap();
    let msg = failed[0].last_error_message.as_deref().unwrap();
    assert!(msg.contains("kept dying"), "{msg}");
}

/// Collects a child's stderr lines as they come.
fn collect_stderr(child: &mut Child) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let stderr = child.stderr.take().expect("stderr piped");
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    lines
}

#[test]
fn a_starting_worker_respects_a_pause_another_process_recorded_until_the_user_resumes() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://a.example/");
    // The app was told to wait ten minutes.
    store
        .pause_worker(
            PauseKind::RateLimited,
            "the app was asked to slow down",
            Some(Duration::from_secs(600)),
        )
        .unwrap();
    // The simulated latency makes the built-in rules stand in for a remote provider (local
    // first answers them at once otherwise, with no call to hold).
    let mut worker = cli(&db.path)
        .args([
            "worker",
            "--until-idle",
            "--fixed-delay-ms",
            "5",
            "--simulate-latency-ms",
            "1",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = collect_stderr(&mut worker);
    let said_paused = wait_for(LONG, || {
        lines.lock().unwrap().iter().any(|l| l.contains("paused"))
    });
    let state = store.worker_state().unwrap();
    assert_eq!(
        state.paused_kind,
        Some(PauseKind::RateLimited),
        "the starting worker lifted the app's pause: {:?}",
        lines.lock().unwrap()
    );
    assert!(said_paused, "{:?}", lines.lock().unwrap());
    assert_eq!(jobs(&store), [("a.example".to_owned(), "PENDING".to_owned(), 0)]);
    // The user lifts it; the worker goes on at once.
    run_ok(cli(&db.path).arg("resume"));
    let status = wait_exit(&mut worker, LONG, "the resumed worker");
    assert!(status.success());
    assert_eq!(count_status(&store, "COMPLETED"), 1);
}

#[test]
fn a_pause_of_another_provider_neither_holds_a_worker_nor_is_lifted_by_it() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://a.example/");
    store
        .pause_provider(
            Some("openai http://127.0.0.1:9/v1 gpt-4o-mini"),
            PauseKind::NeedsUser,
            "openai refused the API key",
            None,
        )
        .unwrap();
    // With a simulated latency the built-in rules go through the worker's call (and its pause
    // check), as a remote provider's would.
    run_ok(cli(&db.path).args([
        "worker",
        "--until-idle",
        "--fixed-delay-ms",
        "5",
        "--simulate-latency-ms",
        "1",
    ]));
    assert_eq!(
        count_status(&store, "COMPLETED"),
        1,
        "the built-in worker was not held"
    );
    let state = store.worker_state().unwrap();
    assert_eq!(
        state.paused_kind,
        Some(PauseKind::NeedsUser),
        "and did not lift the openai pause"
    );
    let status: serde_json::Value =
        serde_json::from_str(&run_ok(cli(&db.path).args(["status", "--json"]))).unwrap();
    assert_eq!(
        status["paused_provider"],
        "openai http://127.0.0.1:9/v1 gpt-4o-mini"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_on_one_file_respect_each_others_rate_limit() {
    let db = TempDb::new();
    let store = db.open();
    for i in 0..30 {
        visit(&store, &format!("https://site{i}.example/"));
    }
    let times = Arc::new(Mutex::new(Vec::new()));
    let server = rate_limited_once(&[("retry-after", "2".into())], times.clone()).await;
    let base = format!("{}/v1", server.uri());
    let config = WorkerConfig {
        fixed_delay: Duration::from_millis(20),
        ..fast_config(1)
    };
    let a = Worker::new(store.clone(), openai(&base), config.clone())
        .unwrap()
        .spawn();
    let b = Worker::new(store.clone(), openai(&base), config).unwrap().spawn();
    assert!(
        eventually(LONG, || count_status(&store, "COMPLETED") == 30).await,
        "{:?}",
        jobs(&store)
    );
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
    let t = times.lock().unwrap().clone();
    let first = t[0];
    let during: Vec<Duration> = t[1..]
        .iter()
        .map(|x| *x - first)
        .filter(|d| *d > Duration::from_millis(300) && *d < Duration::from_millis(1900))
        .collect();
    assert!(
        during.is_empty(),
        "calls during the other worker's 2 s pause: {during:?}"
    );
    assert!(
        !store.worker_state().unwrap().is_paused(),
        "a successful call lifted it"
    );
}

#[test]
fn a_panicking_classifier_is_survived_logged_shown_and_isolated() {
    let db = TempDb::new();
    let store = db.open();
    for d in ["a.example", "crash.example", "b.example", "c.example"] {
        visit(&store, &format!("https://{d}/"));
    }
    let out = cli(&db.path)
        .args([
            "worker",
            "--until-idle",
            "--simulate-panic-on",
            "crash.example",
            "--max-attempts",
            "2",
            "--retry-delay-ms",
            "10",
            "--fixed-delay-ms",
            "1",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the worker died: {stderr}");
    assert!(stderr.contains("the worker crashed"), "{stderr}");
    let mut got = jobs(&store);
    got.sort();
    assert_eq!(
        got,
        [
            ("a.example".to_owned(), "COMPLETED".to_owned(), 1),
            ("b.example".to_owned(), "COMPLETED".to_owned(), 1),
            ("c.example".to_owned(), "COMPLETED".to_owned(), 1),
            ("crash.example".to_owned(), "FAILED".to_owned(), 2),
        ]
    );
    let msg = store.failed_jobs().unwrap()[0]
        .last_error_message
        .clone()
        .unwrap();
    assert!(
        msg.contains("crashed") && msg.contains("simulated crash"),
        "{msg}"
    );
    let status: serde_json::Value =
        serde_json::from_str(&run_ok(cli(&db.path).args(["status", "--json"]))).unwrap();
    assert_eq!(status["worker_crashes"], 2, "{status}");
    assert!(
        status["last_crash"]["message"]
            .as_str()
            .unwrap()
            .contains("simulated crash"),
        "{status}"
    );
    assert!(status["last_crash"]["at"].is_string(), "{status}");
    let text = run_ok(cli(&db.path).arg("status"));
    assert!(text.contains("worker crashed 2 time(s)"), "{text}");
}

// On paused time (the crash backoff passes in no real time).
#[tokio::test(start_paused = true)]
async fn a_crash_in_a_batch_gives_the_jobs_back_and_finds_the_culprit_alone() {
    let db = TempDb::new();
    let store = db.open_on_tokio_clock();
    for d in ["a.example", "b.example", "crash.example", "c.example"] {
        visit(&store, &format!("https://{d}/"));
    }
    let config = WorkerConfig {
        max_attempts: 2,
        crash_backoff_first: Duration::from_millis(5),
        crash_backoff_max: Duration::from_millis(20),
        ..fast_config(4)
    };
    let classifier = Arc::new(PanicsOn::new(Arc::new(Builtin), "crash.example"));
    let handle = Worker::new(store.clone(), classifier, config).unwrap().spawn();
    assert!(
        eventually(LONG, || count_status(&store, "COMPLETED") == 3
            && count_status(&store, "FAILED") == 1)
        .await,
        "{:?}",
        jobs(&store)
    );
    handle.shutdown().await.unwrap();
    for (domain, status, attempts) in jobs(&store) {
        match domain.as_str() {
            "crash.example" => assert_eq!((status.as_str(), attempts), ("FAILED", 2)),
            _ => assert_eq!(
                (status.as_str(), attempts),
                ("COMPLETED", 1),
                "{domain}: the crash cost nothing"
            ),
        }
    }
    // One crash with the whole batch, then two alone.
    assert_eq!(store.worker_state().unwrap().worker_crashes, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_that_jumps_back_does_not_hold_a_retry_until_it_catches_up() {
    let db = TempDb::new();
    // The clock is a day ahead when the job fails, then corrected.
    let clock = ManualClock::new(Timestamp::now().plus(Duration::from_secs(86_400)));
    let store = Store::open_with(
        &db.path,
        StoreOptions {
            clock: Arc::new(clock.clone()),
            ..StoreOptions::default()
        },
    )
    .unwrap();
    visit(&store, "https://a.example/");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    mount_openai_ok(&server).await;
    let config = WorkerConfig {
        retry: RetryPolicy::fixed(Duration::from_secs(30)),
        ..fast_config(1)
    };
    let worker = Worker::new(store.clone(), openai(&format!("{}/v1", server.uri())), config).unwrap();
    let (_tx, mut rx) = tokio::sync::watch::channel(false);
    worker.tick(&mut rx).await.unwrap();
    assert_eq!(jobs(&store), [("a.example".to_owned(), "PENDING".to_owned(), 1)]);
    clock.set(Timestamp::now());
    // Its retry is a day and 30 s away by the corrected clock: longer than any retry delay, so
    // it is due now.
    worker.tick(&mut rx).await.unwrap();
    assert_eq!(
        jobs(&store),
        [("a.example".to_owned(), "COMPLETED".to_owned(), 2)]
    );
}

/// A classifier that asks for the longest wait there is.
struct WaitForever;

#[async_trait::async_trait]
impl sitetrail::classify::Classifier for WaitForever {
    fn name(&self) -> &str {
        "forever"
    }

    async fn classify(
        &self,
        _domains: &[String],
    ) -> Result<Vec<sitetrail::classify::DomainOutcome>, sitetrail::classify::ClassifyError> {
        Err(sitetrail::classify::ClassifyError::RateLimited {
            retry_after: Some(Duration::MAX),
            message: "wait for ever".into(),
        })
    }
}

#[test]
fn a_classifier_asking_for_an_endless_wait_pauses_a_day_at_most_and_never_panics() {
    let db = TempDb::new();
    let store = db.open();
    // Not certain for the built-in rules, so the remote classifier is asked.
    visit(&store, "https://zq-unknown-shop.example/");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let worker = Worker::new(store.clone(), Arc::new(WaitForever), WorkerConfig::default()).unwrap();
    let handle = rt.block_on(async { worker.spawn() });
    assert!(
        wait_for(LONG, || store.worker_state().unwrap().paused_kind
            == Some(PauseKind::RateLimited)),
        "the worker never paused"
    );
    let until = store
        .worker_state()
        .unwrap()
        .paused_until
        .expect("a pause with an end");
    let day = Duration::from_secs(86_400);
    assert!(until <= Timestamp::now().plus(day), "paused until {until:?}");
    rt.block_on(handle.shutdown())
        .expect("the worker stopped cleanly, without a panic");
    assert_eq!(store.worker_state().unwrap().worker_crashes, 0);
}
