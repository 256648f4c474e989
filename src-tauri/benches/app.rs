//! Desktop app benchmark: launch to first painted view, resident memory after start and after
//! scrolling 10,000 history rows, and CPU use with an empty queue. The real app in a real WebKitGTK
//! window under Xvfb, driven over WebDriver like the e2e tests (same harness).
//!
//! Memory and CPU are summed over the app's process tree (the app and the WebKit web and network
//! processes it starts). "First painted view" is measured inside the page: the time of the
//! `sitetrail-first-view` performance mark (set two animation frames after the first view was
//! filled in) minus the app process's start time from /proc.
//!
//! Change latency: the bench process (not the app) records a visit and times how long until the
//! overview shows the new count.
//!
//! Run: `cargo bench -p sitetrail-app --bench app --features custom-protocol` (needs Xvfb,
//! WebKitWebDriver, tauri-driver). `APP_BENCH_BASELINE=path/to/older/sitetrail-app` measures an
//! older build too, alternating with this one, `APP_BENCH_ROUNDS=N` rounds of each.

// A benchmark is a tool run by hand: it may panic on a broken setup and prints its figures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_possible_truncation
)]

#[path = "../tests/e2e/harness.rs"]
mod harness;

use std::path::Path;
use std::time::{Duration, Instant};

use harness::Harness;
use serde_json::json;
use sitetrail::worker::{Worker, WorkerConfig};
use sitetrail::{NewVisit, Store};

const VISITS: usize = 12_000;
const SCROLL_ROWS: usize = 10_000;
const CPU_WINDOW: Duration = Duration::from_secs(30);
/// Visits recorded from outside the app to time how soon it shows them.
const CHANGES: usize = 5;

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

/// One build's figures from one round.
#[derive(Debug, Default, Clone, Copy)]
struct Figures {
    launch_ms: f64,
    rss_start_mib: f64,
    idle_cpu_pct: f64,
    change_ms: f64,
}

/// The text of `#eta` (it names the number of visits when the queue is empty).
fn eta_text(h: &Harness) -> String {
    h.try_text("#eta").unwrap_or_default()
}

/// Launch, memory, idle CPU and change latency of the app binary `app` on a copy of `template`.
/// With `scroll`, also scrolls through the history and reports the memory after it.
fn measure(app: &str, template: &Path, scroll: bool) -> Figures {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("data/sitetrail/sitetrail.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    std::fs::copy(template, &db).expect("copy the seeded database");
    let env = vec![
        ("SITETRAIL_DB", db.display().to_string()),
        ("XDG_CONFIG_HOME", dir.path().join("config").display().to_string()),
        ("XDG_DATA_HOME", dir.path().join("data").display().to_string()),
    ];
    let mut h = Harness::start(&env, &dir.path().join("app.log"));
    h.launch_app(app);
    let pid = h.app_pid().expect("app pid");
    let first_view_ms = h
        .exec(
            "return performance.timeOrigin + performance.getEntriesByName('sitetrail-first-view')[0].startTime",
            json!([]),
        )
        .as_f64()
        .expect("first-view mark");
    let mut f = Figures {
        launch_ms: first_view_ms - start_epoch_ms(pid),
        ..Figures::default()
    };
    // Where the launch goes: the native side (process start → the page's time origin: Tauri,
    // the store, WebKit's processes, loading the page), the page's own scripts
    // (→ DOMContentLoaded), the first view's data and paint (→ the mark).
    let page = h.exec(
        "const n = performance.getEntriesByType('navigation')[0]; \
         const m = (name) => (performance.getEntriesByName(name)[0] || {}).startTime || 0; \
         return [performance.timeOrigin, n ? n.domContentLoadedEventEnd : 0, \
                 m('sitetrail-first-answers'), m('sitetrail-first-view')]",
        json!([]),
    );
    let at = |i: usize| page.get(i).and_then(serde_json::Value::as_f64).unwrap_or(0.0);
    println!(
        "  launch: native side {:.0} ms; in page time: DOMContentLoaded {:.0} ms, first backend answers {:.0} ms, first view drawn {:.0} ms",
        at(0) - start_epoch_ms(pid),
        at(1),
        at(2),
        at(3)
    );
    std::thread::sleep(Duration::from_secs(3));
    f.rss_start_mib = report_tree("RSS after start (3 s idle)", pid) as f64 / 1024.0;

    // Idle: the overview shown, the queue empty, nobody writing.
    std::thread::sleep(Duration::from_secs(3));
    let pids = tree(pid);
    let t0: u64 = pids.iter().map(|&p| cpu_ticks(p)).sum();
    let w0 = Instant::now();
    std::thread::sleep(CPU_WINDOW);
    let t1: u64 = pids.iter().map(|&p| cpu_ticks(p)).sum();
    let secs = w0.elapsed().as_secs_f64();
    f.idle_cpu_pct = (t1 - t0) as f64 / ticks_per_sec() / secs * 100.0;

    // Change latency: this process (not the app) records visits to a known website; how long
    // until the overview shows the new count.
    let store = Store::open(&db).expect("open the app's database");
    let mut waits = Vec::new();
    for i in 0..CHANGES {
        let before = eta_text(&h);
        let started = Instant::now();
        store
            .record_visit(&NewVisit {
                url: &format!("https://site1.example/changed/{i}"),
                title: Some("changed"),
                visited_at: store.now(),
                source: "bench",
                source_visit_id: None,
            })
            .expect("record a visit");
        h.wait_for(Duration::from_secs(30), || (eta_text(&h) != before).then_some(()));
        waits.push(started.elapsed().as_secs_f64() * 1000.0);
        // Apart, so the app's 300 ms coalescing window does not merge them.
        std::thread::sleep(Duration::from_millis(700));
    }
    waits.sort_by(f64::total_cmp);
    f.change_ms = waits[waits.len() / 2];

    if scroll {
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
    }
    h.quit();
    f
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let seeded = tempfile::tempdir().expect("temp dir");
    let template = seeded.path().join("sitetrail.db");
    {
        let store = Store::open(&template).expect("open");
        seed(&store).expect("seed");
        store
            .with_conn(|c| Ok(c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?))
            .expect("checkpoint");
    }
    // APP_BENCH_BASELINE=path/to/an/older/sitetrail-app measures it too, alternating rounds, so
    // the two builds are compared under the same load.
    let baseline = std::env::var("APP_BENCH_BASELINE").ok().filter(|p| !p.is_empty());
    let rounds: usize = std::env::var("APP_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    let mut builds: Vec<(&str, String)> = vec![("this build", harness::APP.to_owned())];
    if let Some(b) = baseline {
        builds.push(("baseline", b));
    }
    println!("app bench: {VISITS} visits in the database, queue empty, {rounds} round(s)");
    let mut results: Vec<Vec<Figures>> = vec![Vec::new(); builds.len()];
    for round in 0..rounds {
        for (i, (label, app)) in builds.iter().enumerate() {
            println!(" round {} — {label}", round + 1);
            let f = measure(app, &template, round == 0 && i == 0);
            println!(
                "  launch {:.0} ms, idle CPU {:.2} % of a core, change seen after {:.0} ms",
                f.launch_ms, f.idle_cpu_pct, f.change_ms
            );
            results[i].push(f);
        }
    }
    println!("medians over {rounds} round(s):");
    for ((label, _), figures) in builds.iter().zip(&results) {
        let m = |get: fn(&Figures) -> f64| median(figures.iter().map(get).collect());
        println!(
            "  {label:<11} launch to first painted view {:>6.0} ms | RSS after start {:>6.1} MiB | idle CPU {:>5.2} % of one core (app + WebKit, {:.0} s) | another process's visit shown after {:>5.0} ms",
            m(|f| f.launch_ms),
            m(|f| f.rss_start_mib),
            m(|f| f.idle_cpu_pct),
            CPU_WINDOW.as_secs_f64(),
            m(|f| f.change_ms),
        );
    }
}
