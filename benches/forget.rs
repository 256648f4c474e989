//! Forgetting benchmark at 1,000,000 visits: how fast a large forgetting deletes, the longest any
//! of its transactions holds the write lock, and how long a process recording a visit every 10 ms
//! meanwhile waits at worst (the issue's bound: a fraction of a second of lock, never a second of
//! waiting), plus the space given back.
//!
//! The history is `support/history_db.rs` (the same as `benches/history.rs`). Measured: forgetting
//! the oldest tenth of the history (a time range of 100,000 visits), then the most visited
//! website, then everything (more than half: the index is emptied and what is left rebuilt), each
//! with a recorder thread on its own store (its own connections, as another process).
//!
//! Run: `cargo bench --bench forget` (`-- --visits N` for another size).

// A benchmark is a tool run by hand: it may panic on a broken setup and prints its figures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_possible_truncation
)]

#[path = "support/args.rs"]
mod args;
#[path = "support/history_db.rs"]
mod history_db;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sitetrail::forget::{ForgetOptions, ForgetReport};
use sitetrail::{NewVisit, Store, Timestamp};

/// Records a live visit every 10 ms until stopped; returns each record_visit's duration.
fn recorder(path: std::path::PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<Duration>> {
    std::thread::spawn(move || {
        let store = Store::open(&path).expect("recorder store");
        let mut waits = Vec::new();
        let mut i = 0u64;
        while !stop.load(Ordering::Relaxed) {
            let t = Instant::now();
            store
                .record_visit(&NewVisit {
                    url: &format!("https://live{}.example/{i}", i % 50),
                    title: Some("A live visit"),
                    visited_at: Timestamp::now(),
                    source: "bench",
                    source_visit_id: None,
                })
                .expect("record");
            waits.push(t.elapsed());
            i += 1;
            std::thread::sleep(Duration::from_millis(10));
        }
        waits
    })
}

fn measure(
    store: &Store,
    path: &std::path::Path,
    name: &str,
    f: impl FnOnce(&Store) -> sitetrail::Result<ForgetReport>,
) -> sitetrail::Result<()> {
    let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0) as f64 / 1048576.0;
    store.with_conn(|c| Ok(c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?))?;
    let before = size(path);
    let stop = Arc::new(AtomicBool::new(false));
    let rec = recorder(path.to_path_buf(), stop.clone());
    // Let the recorder start before the forgetting does.
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    let report = f(store)?;
    let took = t.elapsed();
    stop.store(true, Ordering::Relaxed);
    let mut waits = rec.join().expect("recorder thread");
    waits.sort();
    let pct = |p: f64| waits[((waits.len() as f64 - 1.0) * p) as usize].as_secs_f64() * 1e3;
    println!("{name}:");
    println!(
        "  {} visits and {} websites forgotten in {:.1} s ({:.0} visits/s); longest transaction {} ms",
        report.visits,
        report.websites,
        took.as_secs_f64(),
        report.visits as f64 / took.as_secs_f64(),
        report.longest_batch_ms
    );
    println!(
        "  recorder: {} visits recorded meanwhile; wait median {:.1} ms, p99 {:.1} ms, worst {:.1} ms",
        waits.len(),
        pct(0.5),
        pct(0.99),
        pct(1.0)
    );
    println!(
        "  file {before:.0} MiB before, {:.0} MiB after ({:.0} MiB given back)",
        size(path),
        report.reclaimed_bytes as f64 / 1048576.0
    );
    Ok(())
}

fn main() -> sitetrail::Result<()> {
    let visits = args::visits();
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("bench.db");
    let store = Store::open(&path)?;
    let built = history_db::build(&store, visits)?;
    println!(
        "forget bench: {visits} visits built in {:.1} s, indexed in {:.1} s",
        built.build.as_secs_f64(),
        built.index.as_secs_f64()
    );
    let (first, tenth): (Timestamp, Timestamp) = store.with_conn(|c| {
        Ok(c.query_row(
            r#"SELECT (SELECT visited_at FROM visit ORDER BY id LIMIT 1),
                      (SELECT visited_at FROM visit ORDER BY id LIMIT 1 OFFSET :n)"#,
            rusqlite::named_params! { ":n": (visits / 10) as i64 },
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?)
    })?;
    let opts = ForgetOptions::default();
    measure(
        &store,
        &path,
        "forget range: the oldest tenth of the history",
        |s| {
            s.forget_range(first, tenth, &opts, &mut |p| {
                if std::env::var_os("FORGET_BENCH_VERBOSE").is_some() {
                    eprintln!("  {p:?}");
                }
            })
        },
    )?;
    let top = built.domains[0].clone();
    measure(
        &store,
        &path,
        &format!(
            "forget website: the most visited one ({top}, about {} visits)",
            built.top_site_visits
        ),
        |s| s.forget_website(&top, false, &opts, &mut |_| {}),
    )?;
    let rest = store.visit_count()?;
    measure(
        &store,
        &path,
        &format!("forget everything up to now ({rest} visits: the index is emptied and the rest rebuilt)"),
        |s| s.forget_range(Timestamp(i64::MIN), s.now(), &opts, &mut |_| {}),
    )?;
    Ok(())
}
