//! First paint: from the app's process start to its overview painted with today's figures, on a
//! database of a year of history (100,000 visits, four in five with a time spent), cold (the page
//! cache dropped: the binary, WebKit's libraries and the database read from disk) and warm.
//!
//! The real app binary is started as a person starts it (no WebDriver session attached), under
//! its own Xvfb. The page tells the app when it has drawn today's figures and painted two frames
//! (`first_view_painted`); the app then logs one line with where the time went
//! (src-tauri/src/startup.rs): its own milestones (main, the window created, the page's load,
//! the first IPC call, the first overview query) and the page's (navigation, scripts run, first
//! answers, figures drawn, painted). This bench times the painted moment from just before it
//! spawned the process, and when the window was mapped (xwininfo, polled every 25 ms).
//!
//! Run: `cargo bench -p sitetrail-app --bench first_paint` (debug app: `cargo build -p
//! sitetrail-app` first; add `--features custom-protocol` for the release-style app) as root for
//! the cold starts (`/proc/sys/vm/drop_caches`; without it only warm starts are measured).
//! `FIRST_PAINT_RUNS=N` rounds (default 5), `FIRST_PAINT_VISITS=N` (default 100,000),
//! `FIRST_PAINT_APP=path` another binary instead of this build's, `FIRST_PAINT_BASELINE=path` an
//! older build (or several, comma-separated) measured too, alternating with this one in every round; `FIRST_PAINT_APP_ENV="K=V
//! ..."` more environment for the app (e.g. `SITETRAIL_LOG=debug`, a WebKit setting to try);
//! `FIRST_PAINT_KEEP=1` keeps the work folder (each build's `app.log`).

// A benchmark is a tool run by hand: it may panic on a broken setup and prints its figures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::cast_possible_truncation,
    unsafe_code
)]

#[path = "../../benches/support/history_db.rs"]
mod history_db;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sitetrail::worker::LocalFirst;
use sitetrail::Store;

const APP: &str = env!("CARGO_BIN_EXE_sitetrail-app");
const PAINTED: &str = "first view painted ";

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

/// Starts Xvfb on a free display; returns it and ":N".
fn start_xvfb() -> (Child, String) {
    let mut child = Command::new("Xvfb")
        // -noreset: the server resets when its last client leaves, and a start in that moment
        // fails ("Failed to initialize GTK").
        .args([
            "-displayfd",
            "1",
            "-screen",
            "0",
            "1920x1080x24",
            "-nolisten",
            "tcp",
            "-noreset",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start Xvfb (apt-get install xvfb)");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("display number from Xvfb");
    (child, format!(":{}", line.trim()))
}

/// Drops the page cache (root only); false if it cannot.
fn drop_caches() -> bool {
    // SAFETY: sync() has no preconditions.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").is_ok()
}

/// One start's figures, in ms after the spawn (the window mapped, painted) and the app's own
/// milestones in ms after its process start.
#[derive(Debug, Clone, Default)]
struct Run {
    painted: f64,
    mapped: Option<f64>,
    steps: Vec<(String, f64)>,
}

/// Parses the app's "first view painted" line: the milestones and the painted Unix time.
fn parse(line: &str) -> Option<(Vec<(String, f64)>, f64)> {
    let rest = &line[line.find("ms after start: ")? + "ms after start: ".len()..];
    let (list, tail) = rest.split_once(" (painted at unix ms ")?;
    let painted: f64 = tail.trim_end_matches(')').trim().parse().ok()?;
    let steps = list
        .split(", ")
        .filter_map(|s| {
            let (name, ms) = s.rsplit_once(' ')?;
            Some((name.to_owned(), ms.parse().ok()?))
        })
        .collect();
    Some((steps, painted))
}

/// Waits until a window named Sitetrail is viewable on `display`; its time after `t0`.
fn watch_mapped(display: String, t0: f64, stop: Arc<AtomicBool>) -> Option<f64> {
    while !stop.load(Ordering::Relaxed) {
        let out = Command::new("xwininfo")
            .args(["-display", &display, "-name", "Sitetrail"])
            .stderr(Stdio::null())
            .output()
            .ok()?;
        if String::from_utf8_lossy(&out.stdout).contains("IsViewable") {
            return Some(now_ms() - t0);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    None
}

/// Starts `app` once on a fresh copy of `template` in `home` (kept across starts, as a person's
/// is), until its first view is painted; then stops it.
fn start_once(app: &str, template: &Path, home: &Path, display: &str, cold: bool) -> Run {
    let data = home.join("data");
    let db = data.join("sitetrail/sitetrail.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    std::fs::copy(template, &db).expect("copy the database");
    if cold {
        assert!(drop_caches(), "cold starts need root");
    }
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.join("app.log"))
        .unwrap();
    let t0 = now_ms();
    let mut cmd = Command::new(app);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("DISPLAY", display)
        .env("XDG_DATA_HOME", &data)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("XDG_RUNTIME_DIR", home.join("run"))
        .env("SITETRAIL_DB", &db)
        .env("SITETRAIL_SYNC_KEYRING", "off")
        .env("NO_AT_BRIDGE", "1")
        .env(
            "LANG",
            std::env::var_os("LANG").unwrap_or_else(|| "C.UTF-8".into()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0);
    // FIRST_PAINT_APP_ENV="K=V K2=V2": more environment for the app (an experiment: a WebKit
    // setting, SITETRAIL_LOG=debug).
    for kv in std::env::var("FIRST_PAINT_APP_ENV")
        .unwrap_or_default()
        .split_whitespace()
    {
        if let Some((k, v)) = kv.split_once('=') {
            cmd.env(k, v);
        }
    }
    let mut child = cmd.spawn().expect("start the app");
    let stop = Arc::new(AtomicBool::new(false));
    let mapped = {
        let (display, stop) = (display.to_owned(), stop.clone());
        std::thread::spawn(move || watch_mapped(display, t0, stop))
    };
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = writeln!(log, "{line}");
            // With SITETRAIL_LOG=debug in FIRST_PAINT_APP_ENV: each query's time, shown.
            if line.contains("DEBUG") && line.contains("period overview") {
                eprintln!(
                    "    app: {}",
                    line.split_once("DEBUG ").map_or(line.as_str(), |x| x.1)
                );
            }
            if line.contains(PAINTED) {
                let _ = tx.send(line);
            }
        }
    });
    let waited = Instant::now();
    let line = loop {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => break Some(line),
            Err(_) if waited.elapsed() > Duration::from_secs(120) => break None,
            Err(_) if child.try_wait().ok().flatten().is_some() => break None,
            Err(_) => {}
        }
    };
    let Some(line) = line else {
        let log = std::fs::read_to_string(home.join("app.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(30).collect();
        panic!(
            "no first view (the app exited, or 120 s passed); the app's log ends:\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    };
    let (steps, painted_unix) = parse(&line).unwrap_or_else(|| panic!("unreadable line: {line}"));
    // The window is mapped by now if it ever is before the paint; a last look.
    std::thread::sleep(Duration::from_millis(100));
    stop.store(true, Ordering::Relaxed);
    let mapped = mapped.join().unwrap();
    // SAFETY: kill() on the group this bench started.
    let pgid = child.id() as libc::pid_t;
    unsafe { libc::kill(-pgid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(15);
    while Instant::now() < deadline && child.try_wait().ok().flatten().is_none() {
        std::thread::sleep(Duration::from_millis(50));
    }
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = child.wait();
    let _ = reader.join();
    Run {
        painted: painted_unix - t0,
        mapped,
        steps,
    }
}

fn stats(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn report(label: &str, runs: &[Run]) {
    if runs.is_empty() {
        return;
    }
    let (med, min, max) = stats(runs.iter().map(|r| r.painted).collect());
    let mapped: Vec<f64> = runs.iter().filter_map(|r| r.mapped).collect();
    let mapped = if mapped.is_empty() {
        "window not seen mapped".to_owned()
    } else {
        let (m, lo, hi) = stats(mapped);
        format!("window mapped median {m:.0} ms (min {lo:.0}, max {hi:.0})")
    };
    println!(
        "  {label:<22} painted with today's figures: median {med:>5.0} ms (min {min:.0}, max {max:.0}, {} starts); {mapped}",
        runs.len()
    );
    // The median of every milestone, in the order of their medians.
    let mut by: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in runs {
        for (name, ms) in &r.steps {
            by.entry(name).or_default().push(*ms);
        }
    }
    let mut steps: Vec<(&str, f64)> = by.into_iter().map(|(n, v)| (n, stats(v).0)).collect();
    steps.sort_by(|a, b| a.1.total_cmp(&b.1));
    let line: Vec<String> = steps.iter().map(|(n, ms)| format!("{n} {ms:.0}")).collect();
    println!(
        "  {:<22} medians, ms after the process start: {}",
        "",
        line.join(", ")
    );
}

fn main() {
    let visits: usize = std::env::var("FIRST_PAINT_VISITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let rounds: usize = std::env::var("FIRST_PAINT_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let this = std::env::var("FIRST_PAINT_APP")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| APP.to_owned());
    let mut builds: Vec<(String, String)> = vec![("this build".to_owned(), this)];
    // Several older builds: comma-separated, measured in this order.
    let baselines = std::env::var("FIRST_PAINT_BASELINE").unwrap_or_default();
    let baselines: Vec<&str> = baselines.split(',').filter(|p| !p.is_empty()).collect();
    for (i, b) in baselines.iter().enumerate() {
        let label = if baselines.len() == 1 {
            "baseline".to_owned()
        } else {
            format!("baseline {}", i + 1)
        };
        builds.push((label, (*b).to_owned()));
    }

    let work = tempfile::tempdir().expect("temp dir");
    let template = work.path().join("template.db");
    {
        let t = Instant::now();
        let store = Store::open(&template).expect("open");
        history_db::build_over(&store, visits, Duration::from_secs(365 * 86_400), true)
            .expect("build the history");
        // The worker's passes done once, as on any start after the first: the built-in
        // categories judged, the queue empty. Otherwise every start (on a fresh copy) judges
        // 20,000 websites again beside the first paint.
        let local = LocalFirst::new(std::sync::Arc::new(sitetrail::classify::builtin::Builtin));
        for _ in 0..10_000 {
            let judged = local.pass(&store).expect("local pass").judged;
            if judged == 0 && local.title_pass(&store).expect("title pass") == 0 {
                break;
            }
        }
        store
            .with_conn(|c| Ok(c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?))
            .expect("checkpoint");
        println!(
            "first paint: {visits} visits over a year ending now ({} websites, 4 in 5 with a time spent, all classified), built in {:.1} s",
            history_db::WEBSITES,
            t.elapsed().as_secs_f64()
        );
    }
    let can_drop = drop_caches();
    if !can_drop {
        println!("  (not root: /proc/sys/vm/drop_caches is not writable, warm starts only)");
    }
    let (mut xvfb, display) = start_xvfb();
    let homes: Vec<PathBuf> = (0..builds.len())
        .map(|i| work.path().join(format!("home{i}")))
        .collect();
    // One start each, untimed: the profile, the font cache and WebKit's folders made once, as
    // on any start after a person's first.
    for ((label, app), home) in builds.iter().zip(&homes) {
        let r = start_once(app, &template, home, &display, false);
        println!(
            "  {label}: a first start, not counted: {:.0} ms ({app})",
            r.painted
        );
    }
    let mut cold: Vec<Vec<Run>> = vec![Vec::new(); builds.len()];
    let mut warm: Vec<Vec<Run>> = vec![Vec::new(); builds.len()];
    for round in 0..rounds {
        for (i, (label, app)) in builds.iter().enumerate() {
            let mut line = format!("  round {} {label:<10}", round + 1);
            if can_drop {
                let r = start_once(app, &template, &homes[i], &display, true);
                line += &format!(
                    " cold {:>5.0} ms (mapped {:>4.0})",
                    r.painted,
                    r.mapped.unwrap_or(f64::NAN)
                );
                cold[i].push(r);
            }
            let r = start_once(app, &template, &homes[i], &display, false);
            line += &format!(
                " warm {:>5.0} ms (mapped {:>4.0})",
                r.painted,
                r.mapped.unwrap_or(f64::NAN)
            );
            warm[i].push(r);
            println!("{line}");
        }
    }
    println!("process start → the overview painted with today's figures:");
    for (i, (label, _)) in builds.iter().enumerate() {
        report(&format!("{label}, cold"), &cold[i]);
        report(&format!("{label}, warm"), &warm[i]);
    }
    let _ = xvfb.kill();
    let _ = xvfb.wait();
    // FIRST_PAINT_KEEP=1: the apps' logs (and databases) stay for a look.
    if std::env::var_os("FIRST_PAINT_KEEP").is_some() {
        println!("  kept: {}", work.keep().display());
    }
}
