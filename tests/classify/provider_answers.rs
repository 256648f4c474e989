//! Hostile provider answers through the real `sitetrail` worker on real HTTP (issue 8, items 1,
//! 2, 3, 7): absurd waits, epoch resets, huge bodies, no answer at all. The worker never dies, a
//! wait is bounded and the one the server meant, and only a job's own fault costs an attempt.

use serde_json::Value;
use std::sync::atomic::Ordering;

use sitetrail::worker::state::PauseKind;

use crate::cli::worker::*;
use crate::support::fake_ai::*;
use crate::support::raw_http::{Behaviour, RawServer};
use crate::support::{run_ok, visit, TempDb};

/// The pause the worker recorded, in whole milliseconds (`paused_until - updated_at`).
fn pause_ms(store: &sitetrail::Store) -> Option<i64> {
    let w = store.worker_state().unwrap();
    Some((w.paused_until?.as_micros() - w.updated_at?.as_micros()) / 1000)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absurd_rate_limit_waits_pause_for_the_cap_and_cost_no_attempt() {
    for (name, value) in [
        ("retry-after", "inf"),
        ("retry-after", "1e20"),
        ("x-ratelimit-reset-requests", "1e30"),
        ("retry-after-ms", "-Infinity"),
    ] {
        let db = TempDb::new();
        let store = db.open();
        visit(&store, "https://one.example/");
        let server = rate_limited_once(&[(name, value.to_owned())], Default::default()).await;
        let base = format!("{}/v1", server.uri());
        let mut w = Running::start(openai_worker(&db.path, &base, &[]), db.dir.path().join("log"));
        w.wait_alive(&format!("{name}: {value}"), || {
            store.worker_state().unwrap().paused_kind == Some(PauseKind::RateLimited)
        });
        let before = jobs(&store);
        assert!(
            before.iter().all(|(_, s, a)| s == "PENDING" && *a == 0),
            "{name}: {value}: {before:?}"
        );
        if value == "-Infinity" {
            // Not a wait at all: the worker backs off as when offline (1 s first).
            assert_eq!(pause_ms(&store), Some(1000), "{name}: {value}");
        } else {
            assert_eq!(
                pause_ms(&store),
                Some(3_600_000),
                "{name}: {value}: at most an hour"
            );
        }
        assert!(w.alive(), "{name}: {value}: the worker lives on");
        // The user lifts the pause; the job completes on its first counted attempt.
        run_ok(isolated(&db.path).arg("resume"));
        w.wait_alive(&format!("{name}: {value}: completes"), || {
            count_status(&store, "COMPLETED") == 1
        });
        assert_eq!(jobs(&store)[0].2, 1, "{name}: {value}: the 429 cost no attempt");
        w.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_beats_an_epoch_reset_and_status_shows_the_pause_the_server_meant() {
    let now = chrono::Utc::now().timestamp();
    // Retry-After: 2 next to a reset time a day away: the worker waits 2 s, not a day.
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://one.example/");
    let server = rate_limited_once(
        &[
            ("retry-after", "2".into()),
            ("x-ratelimit-reset", (now + 86_400).to_string()),
        ],
        Default::default(),
    )
    .await;
    let base = format!("{}/v1", server.uri());
    let mut w = Running::start(openai_worker(&db.path, &base, &[]), db.dir.path().join("log"));
    w.wait_alive("paused", || pause_ms(&store).is_some());
    assert_eq!(pause_ms(&store), Some(2000));
    let status: Value = serde_json::from_str(&run_ok(isolated(&db.path).args(["status", "--json"]))).unwrap();
    assert_eq!(status["paused_kind"], "rate_limited", "{status}");
    let text = run_ok(isolated(&db.path).env("TZ", "UTC").arg("status"));
    let until = store.worker_state().unwrap().paused_until.unwrap();
    // Said as people read it: the local time of day and how long that is from now.
    let clock = chrono::DateTime::<chrono::Utc>::from_timestamp_micros(until.as_micros())
        .unwrap()
        .format("%H:%M")
        .to_string();
    assert!(text.contains(&format!("{clock} (")), "{text}");
    assert!(text.contains(" s from now)"), "a pause of seconds: {text}");
    assert!(
        until.as_micros() - sitetrail::Timestamp::now().as_micros() <= 2_000_000,
        "status shows the 2 s pause"
    );
    w.wait_alive("completes after the pause", || {
        count_status(&store, "COMPLETED") == 1
    });
    assert_eq!(jobs(&store)[0].2, 1);
    w.stop();

    // Only an epoch reset, in milliseconds: a point in time 30 s away.
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://one.example/");
    // Read the clock again: the first half took seconds (workers decode the built-in model).
    let now = chrono::Utc::now().timestamp();
    let server = rate_limited_once(
        &[("x-ratelimit-reset", ((now + 30) * 1000).to_string())],
        Default::default(),
    )
    .await;
    let base = format!("{}/v1", server.uri());
    let mut w = Running::start(openai_worker(&db.path, &base, &[]), db.dir.path().join("log"));
    w.wait_alive("paused", || pause_ms(&store).is_some());
    let ms = pause_ms(&store).unwrap();
    assert!(
        (25_000..=31_000).contains(&ms),
        "paused {ms} ms for a reset 30 s away"
    );
    w.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_answer_is_given_up_at_the_cap_with_a_clear_message() {
    const MIB: u64 = 256;
    let db = TempDb::new();
    let store = db.open();
    for d in ["a.example", "b.example", "c.example"] {
        visit(&store, &format!("https://{d}/"));
    }
    let plans = [
        Behaviour::HugeChunked(MIB),
        Behaviour::HugeSized(MIB),
        Behaviour::HugeError(500, MIB),
    ];
    let server = RawServer::start(move |i| plans[i % 3]).await;
    let out = openai_worker(
        &db.path,
        &server.base_url(),
        &["--until-idle", "--batch-size", "1", "--max-attempts", "1"],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(server.requests.load(Ordering::SeqCst), 3);
    let mut messages: Vec<String> = store
        .failed_jobs()
        .unwrap()
        .into_iter()
        .map(|j| j.last_error_message.unwrap())
        .collect();
    messages.sort();
    assert_eq!(messages.len(), 3, "each huge answer cost its job one attempt");
    assert!(messages[0].contains("failed (HTTP 500)"), "{messages:?}");
    for m in &messages[1..] {
        assert!(m.contains("larger than 4 MiB"), "{messages:?}");
    }
    // The client hung up after the cap: of the 768 MiB offered, only the cap and what the
    // kernel's socket buffers hold got out.
    let written = server.written.load(Ordering::SeqCst);
    assert!(
        written < 48 * 1024 * 1024,
        "{} MiB were sent",
        written / (1024 * 1024)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_answer_at_all_is_offline_and_costs_no_attempt() {
    let mut runs = Vec::new();
    for hostile in [
        Behaviour::CloseAtOnce,
        Behaviour::CloseAfterRequest,
        Behaviour::ResetAfterRequest,
        Behaviour::ResetMidStatusLine,
    ] {
        let db = TempDb::new();
        visit(&db.open(), "https://one.example/");
        let server = RawServer::start(move |i| if i == 0 { hostile } else { Behaviour::Answer }).await;
        // With one attempt allowed, a hostile answer that cost an attempt would fail the job.
        let child = openai_worker(
            &db.path,
            &server.base_url(),
            &["--until-idle", "--max-attempts", "1"],
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
        runs.push((hostile, db, server, child));
    }
    for (hostile, db, server, child) in runs {
        let out = child.wait_with_output().unwrap();
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{hostile:?}: {log}");
        let store = db.open();
        assert_eq!(
            jobs(&store),
            vec![("one.example".to_owned(), "COMPLETED".to_owned(), 1)],
            "{hostile:?}: {log}"
        );
        assert!(
            log.contains("worker paused (no attempt counted)"),
            "{hostile:?}: {log}"
        );
        assert!(server.connections.load(Ordering::SeqCst) >= 2, "{hostile:?}");
    }
}
