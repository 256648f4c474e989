//! Import benchmark: builds synthetic Chromium `History` files (the real Chromium schema, written
//! with rusqlite) and imports each into a fresh database in a child process, printing visits per
//! second and the child's peak resident memory (VmHWM).
//!
//! Three files are measured in one run: the full one (1,000,000 visits over 20,000 hosts by
//! default), one a quarter of its size and one twice its size, over the same hosts. If memory were
//! proportional to the file, the largest import would peak at about eight times the smallest; the
//! importer's caches are bounded, so it levels off instead.
//!
//! What the search index costs: the full-size file is imported again in alternating rounds with
//! and without the index (`support/no_index.rs`: the index table replaced by a view that swallows
//! inserts), each in its own child process, comparing rates and file sizes.
//!
//! Run: `cargo bench --bench import` (or `cargo bench --bench import -- 200000` for a quicker,
//! smaller run). `-- --build PATH N` only writes a file of N visits (for profiling); `-- --child PATH
//! [--no-index]` imports one and prints its figures as JSON.

// A benchmark is a tool run by hand: it may panic on a broken setup and prints its figures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_possible_truncation
)]

#[path = "support/chromium.rs"]
mod chromium;
use chromium::{CHAIN_START_END, CHROMIUM_EPOCH_OFFSET};
#[path = "support/no_index.rs"]
mod no_index;
#[path = "support/rng.rs"]
mod rng;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rusqlite::params;
use sitetrail::import::{self, Browser, ImportOptions};
use sitetrail::Store;

use rng::Rng;

type R<T> = Result<T, Box<dyn std::error::Error>>;

const HOSTS: u64 = 20_000;
/// Distinct page URLs per host.
const PAGES_PER_HOST: u64 = 5;
const SERVER_REDIRECT_END: i64 = 0xA000_0000_u32 as i32 as i64;
const AUTO_SUBFRAME: i64 = 3 | 0x3000_0000;

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

fn main() -> R<()> {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    if args.first().map(String::as_str) == Some("--child") {
        return child(Path::new(&args[1]), args.iter().any(|a| a == "--no-index"));
    }
    if args.first().map(String::as_str) == Some("--build") {
        return build_history(&PathBuf::from(&args[1]), args[2].parse()?);
    }
    let visits: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let dir = tempfile::tempdir()?;
    println!("import benchmark: synthetic Chromium History, {HOSTS} hosts, {PAGES_PER_HOST} pages each");
    let mut rows = Vec::new();
    let mut index_cost = None;
    for n in [visits / 4, visits, visits * 2] {
        let path = dir.path().join(format!("History-{n}"));
        let t = Instant::now();
        build_history(&path, n)?;
        let mib = std::fs::metadata(&path)?.len() as f64 / (1024.0 * 1024.0);
        println!(
            "built {n} visits ({mib:.0} MiB) in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        let out = Command::new(std::env::current_exe()?)
            .arg("--child")
            .arg(&path)
            .output()?;
        if !out.status.success() {
            return Err(format!("child failed: {}", String::from_utf8_lossy(&out.stderr)).into());
        }
        let line = String::from_utf8(out.stdout)?;
        let v: serde_json::Value = serde_json::from_str(line.trim())?;
        rows.push((n, mib, v));
        if n == visits {
            index_cost = Some(with_and_without(&path)?);
        }
        std::fs::remove_file(&path)?;
    }
    println!();
    println!(
        "{:>10} {:>6} {:>9} {:>9} {:>7} {:>9} {:>11} {:>8} {:>12} {:>13}",
        "visits",
        "MiB",
        "imported",
        "websites",
        "secs",
        "read/s",
        "imported/s",
        "cpu s",
        "read/cpu-s",
        "peak RSS MiB"
    );
    for (n, mib, v) in &rows {
        println!(
            "{:>10} {:>6.0} {:>9} {:>9} {:>7.2} {:>9.0} {:>11.0} {:>8.2} {:>12.0} {:>13.1}",
            n,
            mib,
            v["imported"],
            v["new_websites"],
            f(&v["secs"]),
            f(&v["read_per_s"]),
            f(&v["imported_per_s"]),
            f(&v["cpu_secs"]),
            f(&v["read_per_cpu_s"]),
            f(&v["peak_rss_kib"]) / 1024.0,
        );
    }
    if let [small, .., big] = rows.as_slice() {
        let rss = |v: &serde_json::Value| f(&v["peak_rss_kib"]);
        println!();
        println!(
            "largest vs smallest: {:.0}x the visits, {:.2}x the file, {:.2}x the peak RSS (flat memory: close to 1x)",
            big.0 as f64 / small.0 as f64,
            big.1 / small.1,
            rss(&big.2) / rss(&small.2)
        );
    }
    if let Some((with, without)) = index_cost {
        print_index_cost(&with, &without);
    }
    Ok(())
}

/// Rounds of the with/without comparison (each imports the file twice).
const INDEX_ROUNDS: usize = 3;

/// Imports `path` in alternating child processes with and without the search index; returns
/// (with, without) figures, one JSON object per round each.
fn with_and_without(path: &Path) -> R<(Vec<serde_json::Value>, Vec<serde_json::Value>)> {
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for _ in 0..INDEX_ROUNDS {
        for no_index in [false, true] {
            let mut cmd = Command::new(std::env::current_exe()?);
            cmd.arg("--child").arg(path);
            if no_index {
                cmd.arg("--no-index");
            }
            let out = cmd.output()?;
            if !out.status.success() {
                return Err(format!("child failed: {}", String::from_utf8_lossy(&out.stderr)).into());
            }
            let v: serde_json::Value = serde_json::from_str(String::from_utf8(out.stdout)?.trim())?;
            if no_index {
                without.push(v);
            } else {
                with.push(v);
            }
        }
    }
    Ok((with, without))
}

fn median_of(values: &[serde_json::Value], key: &str) -> f64 {
    let mut v: Vec<f64> = values.iter().map(|x| f(&x[key])).collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn print_index_cost(with: &[serde_json::Value], without: &[serde_json::Value]) {
    println!();
    println!(
        "what the search index costs ({INDEX_ROUNDS} alternating rounds of the {}-visit file, medians):",
        with[0]["read"]
    );
    let row = |name: &str, key: &str, unit: &str, scale: f64| {
        let (w, wo) = (median_of(with, key) * scale, median_of(without, key) * scale);
        println!(
            "  {name:<28} with {w:>10.1} {unit:<8} without {wo:>10.1} {unit:<8} ratio {:.2}",
            w / wo
        );
    };
    row("read/s (wall)", "read_per_s", "/s", 1.0);
    row("read/s (CPU)", "read_per_cpu_s", "/cpu-s", 1.0);
    row("database file", "db_bytes", "MiB", 1.0 / (1024.0 * 1024.0));
    row("peak RSS", "peak_rss_kib", "MiB", 1.0 / 1024.0);
}

/// Imports `path` into a fresh database (without the search index if `no_index`) and prints one
/// JSON line of figures.
fn child(path: &Path, no_index: bool) -> R<()> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("sitetrail.db");
    let store = Store::open(&db)?;
    if no_index {
        no_index::drop_search_index(&store)?;
    }
    let cpu_before = cpu_secs()?;
    let t = Instant::now();
    let report = import::import_file(
        &store,
        Browser::Chrome,
        path,
        &ImportOptions::default(),
        &mut |_| {},
    )?;
    let secs = t.elapsed().as_secs_f64();
    let cpu_secs = cpu_secs()? - cpu_before;
    store.with_conn(|c| Ok(c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?))?;
    let db_bytes = std::fs::metadata(&db)?.len();
    let line = serde_json::json!({
        "read": report.read,
        "imported": report.imported,
        "new_websites": report.new_websites,
        "skipped": report.skipped.total,
        "secs": secs,
        "read_per_s": report.read as f64 / secs,
        "imported_per_s": report.imported as f64 / secs,
        "cpu_secs": cpu_secs,
        "read_per_cpu_s": report.read as f64 / cpu_secs,
        "peak_rss_kib": peak_rss_kib()?,
        "db_bytes": db_bytes,
    });
    println!("{line}");
    Ok(())
}

/// The process's peak resident set size (VmHWM), KiB.
fn peak_rss_kib() -> R<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .ok_or("no VmHWM in /proc/self/status")?;
    Ok(line.split_whitespace().nth(1).ok_or("bad VmHWM line")?.parse()?)
}

/// CPU time (user + system) this process has used, from /proc/self/stat (in clock ticks of
/// 1/100 s, the Linux USER_HZ).
fn cpu_secs() -> R<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Fields after the command name (which is in parentheses and may contain spaces).
    let after = stat.rsplit_once(')').ok_or("bad /proc/self/stat")?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>()? + fields[12].parse::<u64>()?;
    Ok(ticks as f64 / 100.0)
}

/// Writes a Chromium `History` with `visits` visits: the first 20,000 visit each host once, the
/// rest pick hosts with a skewed (roughly Zipf-like) distribution, as real histories do. About 5%
/// are subframes and 5% redirect sources (each followed by its chain end).
fn build_history(path: &PathBuf, visits: u64) -> R<()> {
    let _ = std::fs::remove_file(path);
    let mut conn = chromium::create(path)?;
    let tx = conn.transaction()?;
    let start = 1_700_000_000_000_000 + CHROMIUM_EPOCH_OFFSET;
    {
        let mut url = tx.prepare(
            r#"INSERT INTO urls (id, url, title, visit_count, last_visit_time) VALUES (?1, ?2, ?3, 1, ?4)"#,
        )?;
        for host in 0..HOSTS {
            for page in 0..PAGES_PER_HOST {
                let id = host * PAGES_PER_HOST + page + 1;
                let u = format!(
                    "https://www{}.site{host}.example.com/articles/{page}?ref=feed",
                    host % 3
                );
                let title = format!("Site {host}: article {page} — a page title of ordinary length");
                url.execute(params![id as i64, u, title, start])?;
            }
        }
        let mut visit = tx.prepare(
            r#"INSERT INTO visits (id, url, visit_time, from_visit, transition, segment_id, visit_duration)
               VALUES (?1, ?2, ?3, ?4, ?5, 0, 1000000)"#,
        )?;
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for id in 1..=visits {
            let host = if id <= HOSTS {
                id - 1
            } else {
                ((rng.unit().powi(3)) * HOSTS as f64) as u64 % HOSTS
            };
            let url_id = host * PAGES_PER_HOST + rng.next() % PAGES_PER_HOST + 1;
            let roll = rng.next() % 100;
            let transition = match roll {
                0..=4 => AUTO_SUBFRAME,
                5..=9 => 0x1000_0000, // CHAIN_START only: a redirect source.
                10..=14 => SERVER_REDIRECT_END,
                _ => CHAIN_START_END,
            };
            visit.execute(params![
                id as i64,
                url_id as i64,
                start + id as i64 * 1_000_000,
                0,
                transition
            ])?;
        }
    }
    tx.commit()?;
    Ok(())
}
