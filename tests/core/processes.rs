//! Several worker processes on one file, and a worker killed mid-job: the guarantees that only
//! hold across processes, tested with the real `sitetrail` binary.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use crate::support::{cli, run_ok, visit, wait_for, TempDb};

/// Counts "classifier call" log lines per domain in a worker's stderr.
fn count_calls(stderr: &str, calls: &mut HashMap<String, usize>) {
    for line in stderr.lines().filter(|l| l.contains("classifier call")) {
        let domain = line
            .split("domain=")
            .nth(1)
            .expect("domain field")
            .split_whitespace()
            .next()
            .unwrap();
        *calls.entry(domain.to_owned()).or_default() += 1;
    }
}

#[test]
fn several_worker_processes_never_claim_the_same_job_twice() {
    let db = TempDb::new();
    let store = db.open();
    let jobs = 40;
    for i in 0..jobs {
        visit(&store, &format!("https://site{i}.example/"));
    }
    let workers: Vec<_> = (0..3)
        .map(|_| {
            cli(&db.path)
                .args([
                    "worker",
                    "--until-idle",
                    "--fixed-delay-ms",
                    "0",
                    "--simulate-latency-ms",
                    "15",
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut calls = HashMap::new();
    let mut busy_workers = 0;
    for w in workers {
        let out = w.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let before = calls.values().sum::<usize>();
        count_calls(&stderr, &mut calls);
        if calls.values().sum::<usize>() > before {
            busy_workers += 1;
        }
    }
    assert!(busy_workers >= 2, "the workers did not run side by side");
    assert_eq!(calls.len(), jobs);
    assert!(
        calls.values().all(|&n| n == 1),
        "a job was classified twice: {calls:?}"
    );
    let s = store.queue_status().unwrap();
    assert_eq!((s.completed, s.pending, s.processing), (jobs as i64, 0, 0));
    let max_attempts: i64 = store
        .with_conn(|c| {
            Ok(c.query_row(
                "SELECT max(attempt_count) FROM website_category_classification_outbox",
                [],
                |r| r.get(0),
            )?)
        })
        .unwrap();
    assert_eq!(max_attempts, 1, "every job was claimed exactly once");
}

#[test]
fn a_worker_killed_mid_job_loses_nothing_and_another_completes_it_after_the_timeout() {
    let db = TempDb::new();
    let store = db.open();
    // Not a certain built-in answer (a word in the name), so it goes through the slow "remote"
    // call the latency simulates; github.com would be answered at once from the map.
    visit(&store, "https://qzbank.example/");
    let mut doomed = cli(&db.path)
        .args([
            "worker",
            "--simulate-latency-ms",
            "60000",
            "--processing-timeout-ms",
            "500",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(15), || store
            .queue_status()
            .unwrap()
            .processing
            == 1),
        "the worker never claimed the job"
    );
    // SIGKILL: no chance to clean up.
    doomed.kill().unwrap();
    doomed.wait().unwrap();
    assert_eq!(
        store.queue_status().unwrap().processing,
        1,
        "the job stays claimed by the dead worker"
    );
    // The next worker lives a second later (a debug build's `SITETRAIL_NOW`): the dead one's
    // 500 ms of processing time are over for it, with no wait.
    let later = sitetrail::Timestamp::now().plus(Duration::from_secs(1));
    run_ok(cli(&db.path).env("SITETRAIL_NOW", later.to_rfc3339()).args([
        "worker",
        "--until-idle",
        "--fixed-delay-ms",
        "10",
        "--processing-timeout-ms",
        "500",
    ]));
    let w = store.website("qzbank.example").unwrap();
    assert_eq!(
        (
            w.category.map(sitetrail::Category::id),
            w.category_source.map(sitetrail::CategorySource::as_str)
        ),
        (Some("finance"), Some("builtin"))
    );
    let (status, attempts): (String, i64) = store
        .with_conn(|c| {
            Ok(c.query_row(
                "SELECT status, attempt_count FROM website_category_classification_outbox",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?)
        })
        .unwrap();
    assert_eq!((status.as_str(), attempts), ("COMPLETED", 2));
}

#[test]
fn worker_until_idle_exits_once_nothing_is_pending_or_processing() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://a.example/");
    visit(&store, "https://b.example/");
    let out = cli(&db.path)
        .args(["worker", "--until-idle", "--fixed-delay-ms", "1"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let s = store.queue_status().unwrap();
    assert_eq!((s.pending, s.processing, s.completed), (0, 0, 2));
}

#[test]
fn sigterm_stops_the_worker_after_the_job_in_flight() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://qzbank.example/");
    visit(&store, "https://example.org/");
    let worker = cli(&db.path)
        .args(["worker", "--simulate-latency-ms", "700", "--fixed-delay-ms", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(wait_for(Duration::from_secs(15), || store
        .queue_status()
        .unwrap()
        .processing
        == 1));
    let pid = i32::try_from(worker.id()).unwrap();
    // SAFETY: sending a signal to our own child process.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let out = worker.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = store.queue_status().unwrap();
    // The job in flight finished; the worker claimed nothing after the signal.
    assert_eq!((s.completed, s.processing, s.pending), (1, 0, 1), "{s:?}");
}

/// A stop sent the moment the worker or the daemon says it started is a graceful stop (exit 0),
/// not the signal's default: both listen for SIGTERM before they log anything. (The daemon once
/// listened only once a task it had spawned first ran, and a quick `kill` ended it by the signal.)
#[test]
fn sigterm_right_after_start_is_a_graceful_stop() {
    use std::io::{BufRead, BufReader};

    let db = TempDb::new();
    drop(db.open());
    for command in ["worker", "daemon"] {
        for _ in 0..5 {
            let mut child = cli(&db.path)
                .arg("--settings")
                .arg(db.path.with_file_name("settings.json"))
                .arg(command)
                .env("SITETRAIL_LOG", "info")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            // The first line the process writes: kill it at once.
            let mut first = String::new();
            let mut stderr = BufReader::new(child.stderr.take().unwrap());
            stderr.read_line(&mut first).unwrap();
            let pid = i32::try_from(child.id()).unwrap();
            // SAFETY: sending a signal to our own child process.
            #[allow(unsafe_code)]
            let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
            assert_eq!(rc, 0);
            let mut rest = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
            let status = child.wait().unwrap();
            assert!(
                status.success(),
                "{command} ended by the signal ({status}) after: {first}{rest}"
            );
        }
    }
}
