//! Live capture figures (issue 9), printed for docs/BENCHMARKS.md:
//!
//! (a) events per second the native host stores, through the real `sitetrail native-host`
//!     process on pipes, the way the extension drives it (one batch in flight, the next sent when
//!     the ack arrives): one event per message (so one per transaction) and 100 per message;
//!     against `record_visit` called in-process (one transaction per visit, the write path's
//!     floor), in alternating rounds, medians of the per-round figures.
//! (b) the delay from a page being served to its visit being in the database, with Chromium
//!     (headless) and the extension: median and worst of several pages.
//! (c) the memory of the extension's process (where its service worker runs) and of the host.
//!
//! `cargo bench --bench capture` (about a minute); `-- --no-browser` for (a) only.

// A benchmark is a tool run by hand: it may panic on a broken setup and prints its figures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_possible_truncation
)]

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sitetrail::{NewVisit, Store, Timestamp};

#[path = "../tests/support/chromium_harness.rs"]
mod chromium_harness;

const SITETRAIL: &str = env!("CARGO_BIN_EXE_sitetrail");

struct Host {
    child: Child,
    stdin: std::process::ChildStdin,
    stdout: std::process::ChildStdout,
}

impl Host {
    fn start(db: &Path) -> Host {
        let mut child = Command::new(SITETRAIL)
            .arg("--db")
            .arg(db)
            .args(["native-host", "--browser", "chromium"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the host");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        Host { child, stdin, stdout }
    }

    fn request(&mut self, msg: &Value) -> Value {
        let body = serde_json::to_vec(msg).unwrap();
        self.stdin.write_all(&(body.len() as u32).to_ne_bytes()).unwrap();
        self.stdin.write_all(&body).unwrap();
        self.stdin.flush().unwrap();
        let mut len = [0u8; 4];
        self.stdout.read_exact(&mut len).unwrap();
        let mut reply = vec![0u8; u32::from_ne_bytes(len) as usize];
        self.stdout.read_exact(&mut reply).unwrap();
        serde_json::from_slice(&reply).unwrap()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn now_ms() -> i64 {
    Timestamp::now().as_micros() / 1000
}

/// Visit `i` of a run: one in ten to a new website, as in the engine bench.
fn url(run: usize, i: usize) -> String {
    format!("https://site{}-{run}.test/page/{i}", i / 10)
}

/// Events per second through the host, `per_message` events per message.
fn host_rate(db: &Path, run: usize, events: usize, per_message: usize) -> f64 {
    let mut host = Host::start(db);
    host.request(&json!({"type": "hello"}));
    let t = now_ms();
    let start = Instant::now();
    let mut batch = 0u64;
    for chunk in (0..events).collect::<Vec<_>>().chunks(per_message) {
        batch += 1;
        let evs: Vec<Value> = chunk
            .iter()
            .map(|&i| {
                let id = format!("r{run}-e{i}");
                json!({"id": id, "kind": "visit", "visit": id, "url": url(run, i), "title": "A page", "at": t + i as i64})
            })
            .collect();
        let ack = host.request(&json!({"type": "events", "batch": batch, "events": evs}));
        assert_eq!(ack["stored"].as_array().map(Vec::len), Some(chunk.len()), "{ack}");
    }
    events as f64 / start.elapsed().as_secs_f64()
}

/// Visits per second through `record_visit` in-process (one transaction each).
fn record_visit_rate(store: &Store, run: usize, events: usize) -> f64 {
    let start = Instant::now();
    for i in 0..events {
        let u = url(run + 1_000_000, i);
        store
            .record_visit(&NewVisit {
                url: &u,
                title: Some("A page"),
                visited_at: Timestamp::now(),
                source: "bench",
                source_visit_id: None,
            })
            .unwrap();
    }
    events as f64 / start.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn bench_host() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bench.db");
    let store = Store::open(&db).unwrap();
    let (mut floor, mut single, mut batched) = (Vec::new(), Vec::new(), Vec::new());
    let (mut r_single, mut r_batched) = (Vec::new(), Vec::new());
    for round in 0..7 {
        let f = record_visit_rate(&store, round * 3, 2_000);
        let s = host_rate(&db, round * 3 + 1, 2_000, 1);
        let b = host_rate(&db, round * 3 + 2, 10_000, 100);
        floor.push(f);
        single.push(s);
        batched.push(b);
        r_single.push(s / f);
        r_batched.push(b / f);
        eprintln!("round {round}: record_visit {f:.0}/s, host 1/message {s:.0}/s, host 100/message {b:.0}/s");
    }
    println!(
        "(a) record_visit in-process, one transaction per visit: {:.0} visits/s (median)",
        median(floor)
    );
    println!(
        "(a) host, one event per message (= per transaction): {:.0} events/s = {:.0}% of record_visit (median of per-round ratios)",
        median(single),
        100.0 * median(r_single)
    );
    println!(
        "(a) host, 100 events per message (one transaction): {:.0} events/s = {:.1}x record_visit",
        median(batched),
        median(r_batched)
    );
}

fn bench_browser() {
    use chromium_harness::{host_processes, memory_kib, Chromium, PageServer};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sitetrail.db");
    let profile = dir.path().join("profile");
    let ok = Command::new(SITETRAIL)
        .arg("--db")
        .arg(&db)
        .args([
            "browser-link",
            "install",
            "--browser",
            "chromium",
            "--user-data-dir",
        ])
        .arg(&profile)
        .stdout(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "browser-link install");
    let pages = PageServer::start();
    let browser = Chromium::start(&profile, &[], &dir.path().join("chromium.log"));
    chromium_harness::poll::poll(Duration::from_secs(60), Duration::from_millis(20), || {
        (!host_processes(&db).is_empty()).then_some(())
    })
    .expect("the extension did not start the host");
    let store = Store::open(&db).unwrap();
    let stored = |url: &str| -> bool {
        store
            .with_conn(|c| {
                Ok(
                    c.query_row("SELECT count(*) FROM visit WHERE url = ?1", [url], |r| {
                        r.get::<_, i64>(0)
                    })?,
                )
            })
            .unwrap_or(0)
            > 0
    };
    let mut delays = Vec::new();
    for i in 0..15 {
        let host = format!("page{i}.test");
        let url = pages.url(&host, "/page?title=Bench");
        browser.open(&url);
        // Polled every 2 ms: the delay measured is at most 2 ms late.
        chromium_harness::poll::poll(Duration::from_secs(30), Duration::from_millis(2), || {
            stored(&url).then_some(())
        })
        .unwrap_or_else(|| panic!("page {i} not stored"));
        let stored_at = Instant::now();
        let served = pages.served_at(&host, "/page?title=Bench").expect("served");
        delays.push(stored_at.duration_since(served).as_secs_f64() * 1000.0);
        // A pause between pages, like a person clicking on.
        std::thread::sleep(Duration::from_millis(300));
    }
    let worst = delays.iter().cloned().fold(0.0, f64::max);
    println!(
        "(b) page served -> its visit in the database: median {:.0} ms, worst {:.0} ms ({} pages)",
        median(delays.clone()),
        worst,
        delays.len()
    );
    std::thread::sleep(Duration::from_secs(2));
    if let Some(pid) = browser.extension_process() {
        if let Some((rss, private)) = memory_kib(pid) {
            println!(
                "(c) extension process (its service worker): RSS {:.1} MiB, private {:.1} MiB",
                rss as f64 / 1024.0,
                private as f64 / 1024.0
            );
        }
    }
    for pid in host_processes(&db) {
        if let Some((rss, private)) = memory_kib(pid) {
            println!(
                "(c) native host (sitetrail native-host): RSS {:.1} MiB, private {:.1} MiB",
                rss as f64 / 1024.0,
                private as f64 / 1024.0
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    bench_host();
    if !args.iter().any(|a| a == "--no-browser") {
        bench_browser();
    }
}
