//! Limits in the browser (issue 30), printed for docs/BENCHMARKS.md, with Debian's Chromium
//! (headless, the extension loaded, the native host linked on a real database, pages on 127.0.0.1
//! under `*.test` names):
//!
//! (a) from a navigation to a page over its limit (`Page.navigate` through the DevTools protocol)
//!     to the extension's page shown with its sentence (its title set, polled every millisecond),
//!     median and worst of 20; the same for a page with no limit, to its title; and how many
//!     requests the held pages' server got (goal: none, and under 100 ms).
//! (b) the cost of keeping the rules in step while browsing a scripted list (a page a second over
//!     20 sites, every fifth one a site with a limit not used up), with three limits (one used up,
//!     so one redirect rule) and without any: questions to
//!     the host and rule updates per minute (the extension's `limits-stats`), and the CPU of the
//!     extension's process (its service worker) and of the host.
//! (c) idle CPU of the whole browser (every process of its group) and of the host, one page
//!     open, without limits and with them, in alternating rounds.
//!
//! `cargo bench --bench limits` (about 8 minutes; `-- --quick` for shorter rounds, about 3).

// A benchmark is a tool run by hand: it may panic on a broken setup and prints its figures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss
)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "../tests/support/chromium_harness.rs"]
mod chromium_harness;
#[path = "../tests/support/devtools.rs"]
mod devtools;

use chromium_harness::poll::poll;
use chromium_harness::{cpu_seconds, group_processes, host_processes, Chromium, PageServer};
use devtools::Tab;

const SITETRAIL: &str = env!("CARGO_BIN_EXE_sitetrail");

fn sitetrail(db: &Path, args: &[&str]) {
    let ok = Command::new(SITETRAIL)
        .arg("--db")
        .arg(db)
        .args(args)
        .stdout(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "sitetrail {args:?}");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The CPU seconds the processes `pids` used over `f`.
fn cpu_over(pids: &[i32], f: impl FnOnce()) -> f64 {
    let total = || pids.iter().filter_map(|p| cpu_seconds(*p)).sum::<f64>();
    let before = total();
    f();
    total() - before
}

struct Bench {
    _dir: tempfile::TempDir,
    db: std::path::PathBuf,
    pages: PageServer,
    browser: Chromium,
    /// A tab driven through the DevTools protocol: where the pages are opened.
    tab: Tab,
    /// The extension's options page, open in a tab: it asks the worker for `limits-stats`.
    options: Tab,
    probes: usize,
}

impl Bench {
    fn start() -> Bench {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sitetrail.db");
        let profile = dir.path().join("profile");
        let p = profile.display().to_string();
        sitetrail(
            &db,
            &[
                "browser-link",
                "install",
                "--browser",
                "chromium",
                "--user-data-dir",
                &p,
            ],
        );
        let pages = PageServer::start();
        let browser = Chromium::start(&profile, &[], &dir.path().join("chromium.log"));
        poll(Duration::from_secs(60), Duration::from_millis(20), || {
            (!host_processes(&db).is_empty()).then_some(())
        })
        .expect("the extension did not start the host");
        let origin = poll(Duration::from_secs(30), Duration::from_millis(50), || {
            browser.extension_origin()
        })
        .expect("no service worker of the extension");
        let options = Tab::attach(
            browser.devtools_port(),
            &browser.open(&format!("{origin}/options.html")),
        )
        .unwrap();
        let first = pages.url("start.test", "/page?title=Start");
        let tab = Tab::attach(browser.devtools_port(), &browser.open(&first)).unwrap();
        let b = Bench {
            _dir: dir,
            db,
            pages,
            browser,
            tab,
            options,
            probes: 0,
        };
        // The extension is connected and storing.
        poll(Duration::from_secs(60), Duration::from_millis(50), || {
            b.stored(&first).then_some(())
        })
        .expect("the first page was not stored");
        b
    }

    fn stored(&self, url: &str) -> bool {
        let Ok(store) = sitetrail::Store::open(&self.db) else {
            return false;
        };
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
    }

    /// The extension's counters: (questions to the host, rule updates).
    fn stats(&mut self) -> (f64, f64) {
        let v: Value = self
            .options
            .eval("chrome.runtime.sendMessage({ type: 'limits-stats' })")
            .unwrap();
        (v["asked"].as_f64().unwrap(), v["updated"].as_f64().unwrap())
    }

    /// The title of the tab's page once it is `want(title, url)`, and how long after `start`.
    fn navigate(&mut self, url: &str, want: impl Fn(&str, &str) -> bool) -> Duration {
        let start = Instant::now();
        // Its answer is not waited on for what it says: the page shown is.
        let _ = self.tab.rpc.call("Page.navigate", json!({"url": url}));
        loop {
            if let Ok(v) = self.tab.eval("[document.title, location.href]") {
                let (title, at) = (v[0].as_str().unwrap_or(""), v[1].as_str().unwrap_or(""));
                if want(title, at) {
                    return start.elapsed();
                }
            }
            assert!(start.elapsed() < Duration::from_secs(30), "{url} never showed");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Opens `url`: true if the extension's page stood in for it.
    fn held(&mut self, url: &str) -> bool {
        self.navigate(url, |title, at| {
            shows_pause(title, at, url) || (at == url && title.starts_with("Page "))
        });
        let at = self.tab.eval("location.href").unwrap();
        at.as_str().unwrap_or("").starts_with("chrome-extension://")
    }

    /// Waits until over.test is held back (`true`) or opens (`false`): the extension asks again
    /// after each batch stored, so a page of another site is opened between probes.
    fn wait_for_rules(&mut self, held: bool) {
        let ok = poll(Duration::from_secs(90), Duration::from_millis(500), || {
            self.probes += 1;
            let n = self.probes;
            self.navigate(
                &self.pages.url("start.test", &format!("/page?title=Page%20s{n}")),
                |t, _| t.starts_with("Page "),
            );
            (self.held(&self.pages.url("over.test", &format!("/probe?title=Page%20p{n}"))) == held)
                .then_some(())
        });
        assert!(
            ok.is_some(),
            "over.test never {}",
            if held { "held back" } else { "opened" }
        );
    }

    fn add_limits(&mut self) {
        sitetrail(&self.db, &["limits", "add", "over.test", "--max", "0m"]);
        sitetrail(&self.db, &["limits", "add", "video.test", "--max", "2h"]);
        sitetrail(&self.db, &["limits", "add", "social", "--max", "30m"]);
        self.wait_for_rules(true);
    }

    fn remove_limits(&mut self) {
        for target in ["over.test", "video.test", "social"] {
            sitetrail(&self.db, &["limits", "remove", target]);
        }
        self.wait_for_rules(false);
    }

    /// Every process of the browser and the host's, on their own: (browser group, host).
    fn processes(&self) -> (Vec<i32>, Vec<i32>) {
        let host = host_processes(&self.db);
        let browser = group_processes(self.browser.pid())
            .into_iter()
            .filter(|p| !host.contains(p))
            .collect();
        (browser, host)
    }
}

/// Whether a tab at `at` titled `title` shows the extension's page in place of `url`.
fn shows_pause(title: &str, at: &str, url: &str) -> bool {
    at.starts_with("chrome-extension://") && at.ends_with(url) && title.starts_with("Paused:")
}

/// The page's own timings, in ms from its navigation's start: [first contentful paint, `mark`
/// (or, without one, the end of DOMContentLoaded)].
fn page_timings(b: &mut Bench, mark: &str) -> (f64, f64) {
    // (A page with no limit has no `mark`; its paint may not have happened when its title is set.)
    let v = b
        .tab
        .eval(&format!(
            "(() => {{ const f = performance.getEntriesByName('first-contentful-paint')[0]; \
             const m = performance.getEntriesByName({mark:?})[0]; \
             const n = performance.getEntriesByType('navigation')[0]; \
             return [f ? f.startTime : -1, m ? m.startTime : n.domContentLoadedEventEnd]; }})()"
        ))
        .unwrap();
    (v[0].as_f64().unwrap_or(-1.0), v[1].as_f64().unwrap_or(-1.0))
}

fn spread(v: &[f64]) -> String {
    format!(
        "median {:.0} ms, worst {:.0} ms",
        median(v.to_vec()),
        v.iter().copied().fold(0.0, f64::max)
    )
}

/// (a): navigation to the extension's page, and to a page with no limit.
fn bench_latency(b: &mut Bench) {
    let (mut paused, mut paused_paint, mut paused_said) = (Vec::new(), Vec::new(), Vec::new());
    let (mut plain, mut plain_ready) = (Vec::new(), Vec::new());
    for i in 0..20 {
        let url = b.pages.url("over.test", &format!("/held{i}?title=Page%20h{i}"));
        let took = b.navigate(&url, |title, at| shows_pause(title, at, &url));
        paused.push(took.as_secs_f64() * 1000.0);
        let (paint, said) = page_timings(b, "sitetrail:pause-shown");
        paused_paint.push(paint);
        paused_said.push(said);
        let url = b
            .pages
            .url(&format!("free{i}.test"), &format!("/page?title=Page%20f{i}"));
        let want = format!("Page f{i}");
        let took = b.navigate(&url, |title, _| title == want);
        plain.push(took.as_secs_f64() * 1000.0);
        plain_ready.push(page_timings(b, "none").1);
    }
    let asked = (0..20)
        .filter(|i| b.pages.was_asked("over.test", &format!("/held{i}")))
        .count();
    println!("(a) 20 pages over their limit; requests to their server: {asked}");
    println!(
        "(a)   the extension's page, from the navigation's start (its own clock): first paint {}; its sentence written {}",
        spread(&paused_paint),
        spread(&paused_said)
    );
    println!(
        "(a)   the same seen from outside (DevTools navigate -> title set, polled every ms): {}",
        spread(&paused)
    );
    println!(
        "(a) 20 pages with no limit, for comparison: DOMContentLoaded {}; from outside {}",
        spread(&plain_ready),
        spread(&plain)
    );
}

/// (b): a page a second for `seconds`, over 20 sites, every fifth page on video.test (a site with a
/// limit not used up: its pages open, and their time counts toward it). No page is held back, so
/// the extension's process renders no page of its own: what differs is the rules and the asking.
fn bench_browsing(b: &mut Bench, label: &str, tag: &str, seconds: u64) {
    let extension = b.browser.extension_process().expect("the extension's process");
    let (_, host) = b.processes();
    let (asked0, updated0) = b.stats();
    let ext0 = cpu_seconds(extension).unwrap();
    let start = Instant::now();
    let host_cpu = cpu_over(&host, || {
        let mut i = 0u64;
        while start.elapsed() < Duration::from_secs(seconds) {
            let due = start + Duration::from_secs(i);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let url = if i % 5 == 4 {
                b.pages
                    .url("video.test", &format!("/browse-{tag}{i}?title=Page%20b{i}"))
            } else {
                b.pages.url(
                    &format!("site{}.test", i % 20),
                    &format!("/page?title=Page%20b{i}"),
                )
            };
            b.held(&url);
            i += 1;
        }
    });
    let minutes = start.elapsed().as_secs_f64() / 60.0;
    let ext_cpu = cpu_seconds(extension).unwrap() - ext0;
    let (asked1, updated1) = b.stats();
    println!(
        "(b) browsing, {label}: {:.1} questions to the host/min, {:.1} rule updates/min; CPU: extension process {:.2} s/min, host {:.2} s/min",
        (asked1 - asked0) / minutes,
        (updated1 - updated0) / minutes,
        ext_cpu / minutes,
        host_cpu / minutes
    );
}

/// (c): one idle round of `seconds`: (browser CPU s/min, host CPU s/min).
fn idle_round(b: &Bench, seconds: u64) -> (f64, f64) {
    let (browser, host) = b.processes();
    let mut host_cpu = 0.0;
    let browser_cpu = cpu_over(&browser, || {
        host_cpu = cpu_over(&host, || std::thread::sleep(Duration::from_secs(seconds)));
    });
    let minutes = seconds as f64 / 60.0;
    (browser_cpu / minutes, host_cpu / minutes)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (idle, browse) = if quick { (15, 20) } else { (60, 60) };
    let mut b = Bench::start();

    // (c) alternating rounds, without and with limits (the rules set and the host asked every
    // half minute), beginning without.
    let mut without = Vec::new();
    let mut with = Vec::new();
    for round in 0..2 {
        if round > 0 {
            b.remove_limits();
        }
        without.push(idle_round(&b, idle));
        b.add_limits();
        with.push(idle_round(&b, idle));
    }
    let show = |v: &[(f64, f64)]| {
        v.iter()
            .map(|(br, h)| format!("browser {br:.2}, host {h:.3}"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    println!(
        "(c) idle CPU s/min, one page open, without limits: {}",
        show(&without)
    );
    println!(
        "(c) idle CPU s/min, one page open, with 3 limits (1 used up): {}",
        show(&with)
    );

    // (a) with the limits set.
    bench_latency(&mut b);

    // (b) with the limits, then without.
    bench_browsing(&mut b, "with 3 limits (1 used up)", "with", browse);
    b.remove_limits();
    bench_browsing(&mut b, "without limits", "without", browse);
}
