//! Desktop app benchmark: launch to first painted view, resident memory after start and after
//! scrolling 10,000 history rows, and CPU use with an empty queue. The real app in a real WebKitGTK
//! window under Xvfb, driven over WebDriver like the e2e tests (same harness).
//!
//! Memory and CPU are summed over the app's process tree (the app and the WebKit web and network
//! processes it starts). "First painted view" is measured inside the page: the time of the
//! `sitetrail-first-view` performance mark (set two animation frames after the first view was
//! filled in) minus the app process's start time from /proc.
//!
//! Run: `cargo bench -p sitetrail-app --bench app` (needs Xvfb, WebKitWebDriver, tauri-driver).

#[path = "../tests/e2e/harness.rs"]
mod harness;

use std::time::{Duration, Instant};

use harness::Harness;
use serde_json::json;
use sitetrail::worker::{Worker, WorkerConfig};
use sitetrail::{NewVisit, Store};

const VISITS: usize = 12_000;
const SCROLL_ROWS: usize = 10_000;
const CPU_WINDOW: Duration = Duration::from_secs(30);

fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces: split after it.
    let rest = &s[s.rfind(')')? + 2..];
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// The pid and all its descendants.
fn tree(root: u32) -> Vec<u32> {
    let mut all = vec![root];
    let mut i = 0;
    while i < all.len() {
        let parent = all[i];
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            if let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) {
                // Field 4 (ppid) is index 1 after the name.
                if stat_fields(pid).and_then(|f| f.get(1)?.parse::<u32>().ok()) == Some(parent) {
                    all.push(pid);
                }
            }
        }
        i += 1;
    }
    all
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// utime + stime in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    stat_fields(pid)
        .map(|f| f[11].parse::<u64>().unwrap_or(0) + f[12].parse::<u64>().unwrap_or(0))
        .unwrap_or(0)
}

fn ticks_per_sec() -> f64 {
    // Linux reports times in USER_HZ, which is 100 on every mainstream configuration.
    100.0
}

/// Process start time as Unix epoch milliseconds.
fn start_epoch_ms(pid: u32) -> f64 {
    let btime: f64 = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("btime"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .expect("btime");
    let start: f64 = stat_fields(pid).expect("stat")[19].parse().expect("starttime");
    (btime + start / ticks_per_sec()) * 1000.0
}

fn report_tree(label: &str, root: u32) -> u64 {
    let pids = tree(root);
    let total: u64 = pids.iter().map(|&p| rss_kib(p)).sum();
    println!(
        "  {label:<44} app {:>6.1} MiB, app + WebKit processes ({}) {:>6.1} MiB",
        rss_kib(root) as f64 / 1024.0,
        pids.len(),
        total as f64 / 1024.0
    );
    total
}

fn seed(store: &Store) -> sitetrail::Result<()> {
    let now = store.now();
    store.write(None, |tx| {
        for i in 0..VISITS {
            let at = now.minus(Duration::from_secs(60 * i as u64));
            sitetrail::visits::record_visit_in(
                tx,
                &NewVisit {
                    url: &format!("https://site{}.example/page/{i}", i % 400),
                    title: Some(&format!("Page {i}")),
                    visited_at: at,
                    source: "bench",
                    source_visit_id: None,
                },
                now,
            )?;
        }
        Ok(())
    })?;
    // Classify everything first, so the app starts with an empty queue.
    let config = WorkerConfig {
        fixed_delay: Duration::ZERO,
        batch_size: 100,
        ..WorkerConfig::default()
    };
    let worker = Worker::new(
        store.clone(),
        std::sync::Arc::new(sitetrail::classify::builtin::Builtin),
        config,
    )?;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let (_stop, rx) = tokio::sync::watch::channel(false);
        worker.run(rx, true).await
    })
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("data/sitetrail/sitetrail.db");
    seed(&Store::open(&db).expect("open")).expect("seed");
    let env = vec![
        ("SITETRAIL_DB", db.display().to_string()),
        ("XDG_CONFIG_HOME", dir.path().join("config").display().to_string()),
        ("XDG_DATA_HOME", dir.path().join("data").display().to_string()),
    ];
    let mut h = Harness::start(&env, &dir.path().join("app.log"));
    h.launch();
    let pid = h.app_pid().expect("app pid");
    let first_view_ms = h
        .exec(
            "return performance.timeOrigin + performance.getEntriesByName('sitetrail-first-view')[0].startTime",
            json!([]),
        )
        .as_f64()
        .expect("first-view mark");
    println!("app bench: {VISITS} visits in the database, queue empty");
    println!(
        "  launch to first painted view                 {:>6.0} ms (process start to the first view's second frame)",
        first_view_ms - start_epoch_ms(pid)
    );
    std::thread::sleep(Duration::from_secs(3));
    report_tree("RSS after start (3 s idle)", pid);

    h.click("#tab-history");
    let started = Instant::now();
    let mut rows = 0;
    while rows < SCROLL_ROWS {
        h.exec(
            "const s = document.getElementById('h-scroll'); s.scrollTop = s.scrollHeight;",
            json!([]),
        );
        let before = rows;
        rows = h.wait_for(Duration::from_secs(60), || {
            let n = h
                .exec(
                    "return Number(document.getElementById('h-rows').dataset.loaded || 0)",
                    json!([]),
                )
                .as_u64()
                .unwrap_or(0) as usize;
            (n > before).then_some(n)
        });
    }
    println!(
        "  scrolled through {rows} history rows in     {:>6.1} s (100-row pages, scroll-to-end each time; {} rows kept in the page)",
        started.elapsed().as_secs_f64(),
        h.count("#h-rows tr")
    );
    std::thread::sleep(Duration::from_secs(2));
    report_tree(&format!("RSS after scrolling {rows} rows"), pid);

    h.click("#tab-overview");
    std::thread::sleep(Duration::from_secs(3));
    let pids = tree(pid);
    let t0: u64 = pids.iter().map(|&p| cpu_ticks(p)).sum();
    let w0 = Instant::now();
    std::thread::sleep(CPU_WINDOW);
    let t1: u64 = pids.iter().map(|&p| cpu_ticks(p)).sum();
    let secs = w0.elapsed().as_secs_f64();
    println!(
        "  CPU with an empty queue, overview shown      {:>6.2} % of one core ({:.2} s CPU over {:.0} s, app + WebKit)",
        (t1 - t0) as f64 / ticks_per_sec() / secs * 100.0,
        (t1 - t0) as f64 / ticks_per_sec(),
        secs
    );
}
