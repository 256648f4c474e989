//! Sync benchmark: the first sync of a large history (default 1,000,000 visits) from one device
//! to a new one, through a real hub (in-process, release build) on a real PostgreSQL; and the time
//! from a visit on one device to its appearance on another with both syncing in the background.
//!
//! Measured: (a) the first device's first sync (queueing its history, sealing, encrypting and
//! pushing it): visits/s and records/s; (b) the second device's first sync (pulling, opening and
//! applying every record through the local write paths, search index included): visits/s; the
//! resident memory of the process sampled every 50 ms during each phase (peak above the start);
//! (b') the import of the same history (the first device's visits written to a Chromium
//! `History` file, imported by `sitetrail::import` into a new database), and the ratio of (b) to
//! it: applying should cost no more than importing; (c) visit → other device, both running
//! `sync::background`, 10 times: at the default pace (the long-poll) and polling every second
//! without it (`--no-latency` skips it).
//!
//! Run: `cargo bench --bench sync` (`-- --visits N` for another size).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_possible_truncation,
    dead_code
)]

#[path = "support/args.rs"]
mod args;
#[path = "support/chromium.rs"]
mod chromium;
#[path = "support/history_db.rs"]
mod history_db;
#[path = "../tests/support/sync.rs"]
mod sync_support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sitetrail::sync::background::Pace;
use sync_support::{Device, TestHub};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// CPU seconds this process used so far (user + system, every thread: the device's, and the
/// hub's, which runs in this process too; PostgreSQL's are not counted).
fn cpu_s() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // The fields after the command name (in parentheses, which may hold spaces).
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
            Some(ticks / 100.0)
        })
        .unwrap_or(0.0)
}

/// Runs `f` while sampling the RSS; returns its result, its time and the peak RSS above the start.
fn measured<T>(f: impl FnOnce() -> T) -> (T, Duration, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(0));
    let start = rss_kib();
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kib(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let (t, cpu) = (Instant::now(), cpu_s());
    let out = f();
    let took = t.elapsed();
    println!("    (CPU of this process: {:.1} s)", cpu_s() - cpu);
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    (out, took, peak.load(Ordering::Relaxed).saturating_sub(start))
}

fn main() {
    let visits = args::visits();
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let t = Instant::now();
    history_db::build(&a.store, visits).unwrap();
    println!(
        "history of {visits} visits built in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let key = a.setup(&hub, "laptop");
    let (r, took, mem) = measured(|| a.sync());
    println!(
        "(a) first push: {visits} visits in {:.1} s = {:.0} visits/s, {} records = {:.1} records/s; RSS peak +{} MiB",
        took.as_secs_f64(),
        visits as f64 / took.as_secs_f64(),
        r.pushed,
        r.pushed as f64 / took.as_secs_f64(),
        mem / 1024
    );
    b.join(&hub, "desktop", &key);
    // Meanwhile the browser records a visit on the pulling device every 20 ms: how long each
    // waits for the write lock the pull's transactions hold.
    let recording = Arc::new(AtomicBool::new(true));
    let recorder = {
        let (store, recording) = (b.store.clone(), recording.clone());
        std::thread::spawn(move || {
            let mut waits = Vec::new();
            let mut i = 0u64;
            while recording.load(Ordering::Relaxed) {
                let url = format!("https://meanwhile.example/{i}");
                let t = Instant::now();
                store
                    .record_visit(&sitetrail::NewVisit {
                        url: &url,
                        title: Some("meanwhile"),
                        visited_at: sitetrail::Timestamp::now(),
                        source: "extension",
                        source_visit_id: None,
                    })
                    .unwrap();
                waits.push(t.elapsed());
                i += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            waits
        })
    };
    let (r, took2, mem2) = measured(|| b.sync());
    recording.store(false, Ordering::Relaxed);
    let mut waits = recorder.join().unwrap();
    waits.sort();
    assert_eq!(r.visits as usize, visits, "every visit applied");
    println!(
        "(b) first pull: {} records, {} visits applied in {:.1} s = {:.0} visits/s; RSS peak +{} MiB",
        r.pulled,
        r.visits,
        took2.as_secs_f64(),
        r.visits as f64 / took2.as_secs_f64(),
        mem2 / 1024
    );
    println!(
        "    a visit recorded on that device meanwhile (every 20 ms, {} visits): median {:.1} ms, p99 {:.1} ms, max {:.1} ms (target: about 100 ms at most)",
        waits.len(),
        waits[waits.len() / 2].as_secs_f64() * 1e3,
        waits[waits.len() * 99 / 100].as_secs_f64() * 1e3,
        waits[waits.len() - 1].as_secs_f64() * 1e3
    );
    println!(
        "    first sync of {visits} visits, push + pull: {:.1} s (target: under 30 s)",
        (took + took2).as_secs_f64()
    );

    // (b') The same history imported.
    let history = a.dir.path().join("History");
    chromium_history(&a, &history);
    let c = Device::new();
    let (imported, took3, mem3) = measured(|| {
        sitetrail::import::import_file(
            &c.store,
            sitetrail::import::Browser::Chrome,
            &history,
            &sitetrail::import::ImportOptions::default(),
            &mut |_| {},
        )
        .unwrap()
    });
    println!(
        "(b') import of the same history: {} visits imported in {:.1} s = {:.0} visits/s; RSS peak +{} MiB; pull+apply / import = {:.2}",
        imported.imported,
        took3.as_secs_f64(),
        imported.imported as f64 / took3.as_secs_f64(),
        mem3 / 1024,
        took2.as_secs_f64() / took3.as_secs_f64()
    );
    if std::env::args().any(|a| a == "--no-latency") {
        return;
    }

    // (c) Latency with both devices syncing in the background: at the daemon's and the app's
    // default pace (a long-poll on the hub, the periodic sync every 120 s), and polling every
    // second without the long-poll (what it replaced).
    let default = latency(&a, &b, Pace::default(), "default");
    let polling = latency(
        &a,
        &b,
        Pace {
            interval: Duration::from_secs(1),
            debounce: Duration::from_millis(200),
            max_backoff: Duration::from_secs(5),
            long_poll: None,
        },
        "poll",
    );
    println!(
        "(c) visit → other device, default pace (long-poll, interval 120 s, debounce 2 s): median {:.2} s, max {:.2} s (target ≤ 5 s)",
        default.0, default.1
    );
    println!(
        "    polling every 1 s without the long-poll (debounce 0.2 s): median {:.2} s, max {:.2} s",
        polling.0, polling.1
    );
}

/// Writes the visits of `d` (URL, title, time) to a Chromium `History` file at `path`.
fn chromium_history(d: &Device, path: &std::path::Path) {
    use chromium::{CHAIN_START_END, CHROMIUM_EPOCH_OFFSET};
    let rows: Vec<(String, Option<String>, i64)> = d
        .store
        .with_conn(|c| {
            let mut s = c.prepare("SELECT url, title, visited_at FROM visit ORDER BY visited_at")?;
            let rows = s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .unwrap();
    let mut conn = chromium::create(path).unwrap();
    let tx = conn.transaction().unwrap();
    {
        let mut url = tx
            .prepare(
                "INSERT INTO urls (id, url, title, visit_count, last_visit_time) VALUES (?1, ?2, ?3, 1, ?4)",
            )
            .unwrap();
        let mut visit = tx
            .prepare("INSERT INTO visits (id, url, visit_time, from_visit, transition, segment_id, visit_duration) VALUES (?1, ?1, ?2, 0, ?3, 0, 0)")
            .unwrap();
        for (i, (u, title, at)) in rows.iter().enumerate() {
            let id = i as i64 + 1;
            let time = at + CHROMIUM_EPOCH_OFFSET;
            url.execute(rusqlite::params![id, u, title, time]).unwrap();
            visit
                .execute(rusqlite::params![id, time, CHAIN_START_END])
                .unwrap();
        }
    }
    tx.commit().unwrap();
}

/// Median and max seconds from a visit on `a` to its arrival on `b`, 10 visits, both devices
/// syncing in the background at `pace`.
fn latency(a: &sync_support::Device, b: &sync_support::Device, pace: Pace, tag: &str) -> (f64, f64) {
    let syncing = sync_support::Syncing::start(&[a, b], pace);
    std::thread::sleep(Duration::from_secs(2));
    let mut latencies = Vec::new();
    for i in 0..10 {
        let url = format!("https://latency-{tag}-{i}.example/");
        latencies.push(sync_support::time_to_arrive(a, b, &url, Duration::from_secs(60)));
        std::thread::sleep(Duration::from_millis(300));
    }
    syncing.stop();
    latencies.sort();
    (
        latencies[latencies.len() / 2].as_secs_f64(),
        latencies[latencies.len() - 1].as_secs_f64(),
    )
}
