//! End to end with a real browser: Debian's Chromium (headless) with `extension/` loaded, the host
//! linked by `sitetrail browser-link install --browser chromium --user-data-dir ... --db ...`, and
//! pages on 127.0.0.1 under several host names. What the user does in the browser must end up in
//! the database: each page once, with its final title and the time it was looked at; nothing lost
//! while the host is missing or killed, nothing stored twice.
//!
//! The sleeps here are the time being measured (how long a page stays in front), not waits for
//! something to happen: those are `wait_for` polls.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::support::chromium_harness::{closed_port, host_processes, kill9, Chromium, Display, PageServer};
use crate::support::{cli, run_ok, wait_for};

static SERIAL: Mutex<()> = Mutex::new(());

/// One browser at a time: each is several processes on a 2-core machine.
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A stored visit with its time.
#[derive(Clone, Debug)]
pub(crate) struct Stored {
    url: String,
    title: Option<String>,
    source: String,
    active_ms: Option<i64>,
}

fn stored(db: &Path) -> Vec<Stored> {
    let Ok(store) = sitetrail::Store::open(db) else {
        return Vec::new();
    };
    store
        .with_conn(|c| {
            let mut st = c.prepare(
                "SELECT v.url, v.title, v.source, t.active_ms FROM visit v
                 LEFT JOIN visit_time t ON t.visit_id = v.id ORDER BY v.id",
            )?;
            let rows = st.query_map([], |r| {
                Ok(Stored {
                    url: r.get(0)?,
                    title: r.get(1)?,
                    source: r.get(2)?,
                    active_ms: r.get(3)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .unwrap_or_default()
}

/// A browser with the extension, linked to a database of its own, and a page server.
pub(crate) struct Session {
    _dir: tempfile::TempDir,
    pub(crate) db: PathBuf,
    pub(crate) profile: PathBuf,
    log: PathBuf,
    pub(crate) pages: PageServer,
    pub(crate) browser: Chromium,
}

fn link(db: &Path, profile: &Path) {
    run_ok(
        cli(db)
            .args([
                "browser-link",
                "install",
                "--browser",
                "chromium",
                "--user-data-dir",
            ])
            .arg(profile),
    );
}

pub(crate) fn unlink(db: &Path, profile: &Path) {
    run_ok(
        cli(db)
            .args([
                "browser-link",
                "uninstall",
                "--browser",
                "chromium",
                "--user-data-dir",
            ])
            .arg(profile),
    );
}

impl Session {
    pub(crate) fn start(env: &[(&str, &str)]) -> Session {
        Session::start_with(env, None)
    }

    /// With `display`, Chromium has a window there (not headless).
    fn start_with(env: &[(&str, &str)], display: Option<&Display>) -> Session {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sitetrail.db");
        let profile = dir.path().join("profile");
        let log = dir.path().join("chromium.log");
        link(&db, &profile);
        let pages = PageServer::start();
        let browser = match display {
            Some(d) => Chromium::start_on(d, &profile, env, &log),
            None => Chromium::start(&profile, env, &log),
        };
        let s = Session {
            _dir: dir,
            db,
            profile,
            log,
            pages,
            browser,
        };
        s.expect(Duration::from_secs(60), "the extension to start the host", || {
            !host_processes(&s.db).is_empty()
        });
        s
    }

    pub(crate) fn url(&self, host: &str, path: &str) -> String {
        self.pages.url(host, path)
    }

    /// Waits for `cond`, or fails with the browser's log and what is stored.
    pub(crate) fn expect(&self, timeout: Duration, what: &str, cond: impl FnMut() -> bool) {
        if !wait_for(timeout, cond) {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            let tail: Vec<&str> = log
                .lines()
                .filter(|l| !l.contains("dbus"))
                .rev()
                .take(30)
                .collect();
            panic!(
                "timed out waiting for {what}\nstored: {:#?}\nbrowser log (last lines):\n{}",
                stored(&self.db),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
    }

    /// The stored visits of `url`.
    pub(crate) fn visits_of(&self, url: &str) -> Vec<Stored> {
        stored(&self.db).into_iter().filter(|v| v.url == url).collect()
    }
}

fn ms(d: Duration) -> i64 {
    d.as_millis() as i64
}

/// Within 1.5 s of `expected`.
fn close_to(actual: Option<i64>, expected: i64) -> bool {
    actual.is_some_and(|a| (a - expected).abs() <= 1_500)
}

#[test]
fn pages_seen_in_chromium_are_recorded_with_final_titles_and_the_time_they_were_in_front() {
    let _guard = serial();
    let s = Session::start(&[]);
    // Alpha embeds a page of another site: a subframe, never a visit.
    let inner = s.url("frame.test", "/page?title=Inner");
    let alpha = s.url("alpha.test", &format!("/page?title=Alpha&frame={inner}"));
    let beta = s.url("beta.test", "/retitle?first=Loading&final=Beta%20ready&ms=700");
    let gamma = s.url("gamma.test", "/spa?title=Gamma&to=/spa/next&ms=800");
    let gamma_next = s.url("gamma.test", "/spa/next");
    let delta = s.url("delta.test", "/page?title=Delta");

    let t0 = Instant::now();
    let tab_alpha = s.browser.open(&alpha);
    std::thread::sleep(Duration::from_secs(3));
    let t1 = Instant::now();
    s.browser.open(&beta); // alpha goes to the background
    std::thread::sleep(Duration::from_millis(2500));
    let t2 = Instant::now();
    s.browser.activate(&tab_alpha); // back to alpha; beta stops
    std::thread::sleep(Duration::from_secs(2));
    let t3 = Instant::now();
    s.browser.open(&gamma); // alpha stops again; gamma later moves on with history.pushState
    std::thread::sleep(Duration::from_millis(2500));
    let t4 = Instant::now();
    s.browser.open(&delta);

    let alpha_ms = ms(t1 - t0) + ms(t3 - t2);
    let beta_ms = ms(t2 - t1);
    let gamma_next_ms = ms(t4 - t3) - 800;
    s.expect(
        Duration::from_secs(30),
        "every page with its title and time",
        || {
            let one = |url: &str| {
                let v = s.visits_of(url);
                (v.len() == 1).then(|| v[0].clone())
            };
            let (Some(a), Some(b), Some(g), Some(gn), Some(d)) = (
                one(&alpha),
                one(&beta),
                one(&gamma),
                one(&gamma_next),
                one(&delta),
            ) else {
                return false;
            };
            a.title.as_deref() == Some("Alpha")
                && b.title.as_deref() == Some("Beta ready")
                && g.title.as_deref() == Some("Gamma")
                && gn.title.as_deref() == Some("Gamma")
                && d.title.as_deref() == Some("Delta")
                && close_to(a.active_ms, alpha_ms)
                && close_to(b.active_ms, beta_ms)
                && close_to(g.active_ms, 800)
                && close_to(gn.active_ms, gamma_next_ms)
        },
    );
    let all = stored(&s.db);
    assert!(
        s.pages.served_at("frame.test", "/page?title=Inner").is_some(),
        "the frame was loaded"
    );
    assert_eq!(
        all.len(),
        5,
        "nothing else was recorded (about:blank, subframes): {all:#?}"
    );
    assert!(all.iter().all(|v| v.source == "extension:chromium"));
    let store = sitetrail::Store::open(&s.db).unwrap();
    let sites = store.websites(&Default::default()).unwrap();
    assert_eq!(sites.len(), 4, "each new website was queued for classification");
}

/// The URLs `sitetrail import chrome` finds in the profile's own history (`History`, read from a
/// snapshot while the browser runs, as the auto-import does).
fn imported_from_the_browsers_history(profile: &Path) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("imported.db");
    run_ok(
        cli(&db)
            .args(["import", "chrome"])
            .arg(profile.join("Default").join("History")),
    );
    let mut urls: Vec<String> = stored(&db).into_iter().map(|v| v.url).collect();
    urls.sort();
    urls.dedup();
    urls
}

#[test]
fn navigations_that_end_in_an_error_page_are_never_stored_and_agree_with_the_browsers_history() {
    let _guard = serial();
    let s = Session::start(&[]);
    // A page that stays in front for 3 s, then goes (in its tab) to a host that resets the
    // connection; then new tabs: a port where nothing listens, a name that resolves to nothing;
    // last, a page that loads.
    let reset = s.url("reset.test", "/reset");
    let first = s.url(
        "first.test",
        &format!("/goto?title=First&ms=3000&to={}", reset.replace('&', "%26")),
    );
    let refused = format!("http://refused.test:{}/page?title=Refused", closed_port());
    let unresolvable = s.url("site.nowhere.test", "/page?title=Nowhere");
    let loaded = s.url("loaded.test", "/page?title=Loaded");

    let t0 = Instant::now();
    s.browser.open(&first);
    s.expect(Duration::from_secs(20), "the reset page to be tried", || {
        s.pages.served_at("reset.test", "/reset").is_some()
    });
    let first_ms = ms(s.pages.served_at("reset.test", "/reset").unwrap() - t0);
    std::thread::sleep(Duration::from_secs(3)); // the error page in front
    s.browser.open(&refused);
    std::thread::sleep(Duration::from_millis(1500));
    s.browser.open(&unresolvable);
    std::thread::sleep(Duration::from_millis(1500));
    s.browser.open(&loaded);
    s.expect(Duration::from_secs(30), "the page that loaded", || {
        s.visits_of(&loaded)
            .iter()
            .any(|v| v.title.as_deref() == Some("Loaded"))
    });
    // The browser did show each error page (its tab is at the URL it tried).
    let tabs: Vec<String> = s.browser.tabs().into_iter().map(|(url, _)| url).collect();
    for tried in [&reset, &refused, &unresolvable] {
        assert!(tabs.contains(tried), "{tried} not tried? tabs: {tabs:?}");
    }
    assert!(s
        .pages
        .served_at("site.nowhere.test", "/page?title=Nowhere")
        .is_none());
    // Everything the extension queued before the last page is stored by now (one queue, in
    // order): the first page and the last, nothing else.
    let mut urls: Vec<String> = stored(&s.db).into_iter().map(|v| v.url).collect();
    urls.sort();
    let mut want = vec![first.clone(), loaded.clone()];
    want.sort();
    assert_eq!(urls, want, "error pages stored: {:#?}", stored(&s.db));
    // The first page's time ended when the error page replaced it.
    s.expect(Duration::from_secs(20), "the first page's time", || {
        close_to(s.visits_of(&first)[0].active_ms, first_ms)
    });

    // The browser's own history holds the same pages (Chromium writes it every few seconds).
    s.expect(
        Duration::from_secs(40),
        "the browser's history to hold the same pages",
        || imported_from_the_browsers_history(&s.profile) == want,
    );
}

/// How often the extension asks the browser whether its window has the focus while a page is
/// counted (`PRESENCE_POLL_MS` in extension/lib/tracker.js).
const PRESENCE_POLL_MS: i64 = 2_000;

/// Sleeps `d` while moving the pointer now and then around (x, y): the user is at the computer
/// (not idle), only not in the browser.
fn stay(display: &Display, d: Duration, (x, y): (u32, u32)) {
    let end = Instant::now() + d;
    let mut i = 0;
    while Instant::now() < end {
        display.move_pointer(x + i % 20, y);
        i += 1;
        std::thread::sleep(Duration::from_millis(1000).min(end - Instant::now()));
    }
}

#[test]
fn active_time_stops_within_a_poll_when_another_program_has_the_focus_with_or_without_a_window_manager() {
    let _guard = serial();
    for window_manager in [false, true] {
        let mut display = Display::start(window_manager);
        let s = Session::start_with(&[], Some(&display));
        let chromium = display.window_of("chromium");
        display.focus(&chromium);
        let front = s.url("front.test", "/page?title=Front");
        let t0 = Instant::now();
        s.browser.open(&front);
        stay(&display, Duration::from_secs(5), (200, 200));
        // Another program takes the focus for longer than a tick of the extension's alarm
        // (30 s); the user goes on working there.
        let other = display.other_program();
        display.focus(&other);
        let t1 = Instant::now();
        stay(&display, Duration::from_secs(35), (650, 550));
        let t2 = Instant::now();
        display.focus(&chromium);
        stay(&display, Duration::from_secs(5), (200, 200));
        let t3 = Instant::now();
        let next = s.url("next.test", "/page?title=Next");
        s.browser.open(&next); // front goes to the background: its time is reported
        let focused_ms = ms(t1 - t0) + ms(t3 - t2);
        s.expect(Duration::from_secs(30), "the next page", || {
            s.visits_of(&next).len() == 1
        });
        s.expect(Duration::from_secs(30), "the front page's time", || {
            s.visits_of(&front)[0]
                .active_ms
                .is_some_and(|a| a >= focused_ms - 1_500)
        });
        let active = s.visits_of(&front)[0].active_ms.unwrap();
        eprintln!(
            "window manager {window_manager}: {active} ms counted for {focused_ms} ms in front \
             and {} ms behind another program",
            ms(t2 - t1)
        );
        assert!(
            active <= focused_ms + PRESENCE_POLL_MS + 2_000,
            "window manager {window_manager}: {active} ms counted, {focused_ms} ms in front: \
             the time behind another program counted"
        );
    }
}

#[test]
fn a_page_seen_while_the_host_is_unlinked_is_stored_once_after_linking_and_a_worker_restart_loses_no_time() {
    let _guard = serial();
    let s = Session::start(&[]);
    let one = s.url("one.test", "/page?title=One");
    s.browser.open(&one);
    s.expect(Duration::from_secs(20), "the first page", || {
        s.visits_of(&one).len() == 1
    });

    // Unlink and stop the running host: the extension cannot reach Sitetrail any more.
    unlink(&s.db, &s.profile);
    for pid in host_processes(&s.db) {
        kill9(pid);
    }
    s.expect(Duration::from_secs(10), "the host to be gone", || {
        host_processes(&s.db).is_empty()
    });
    let two = s.url("two.test", "/retitle?first=Two&final=Two%20final&ms=300");
    s.browser.open(&two);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        s.visits_of(&two).is_empty(),
        "stored although the host is not linked?"
    );
    assert!(host_processes(&s.db).is_empty(), "no manifest, no host");

    // Linked again: the queued page arrives by itself (the extension retries), once.
    link(&s.db, &s.profile);
    s.expect(Duration::from_secs(70), "the page queued while unlinked", || {
        s.visits_of(&two)
            .iter()
            .any(|v| v.title.as_deref() == Some("Two final"))
    });
    assert_eq!(s.visits_of(&two).len(), 1);
    assert_eq!(s.visits_of(&one).len(), 1);

    // The service worker's process is killed while a page is in front: the time it was down
    // still counts, because the open segment is in storage.
    let three = s.url("three.test", "/page?title=Three");
    let t0 = Instant::now();
    s.browser.open(&three);
    s.expect(Duration::from_secs(20), "the third page", || {
        s.visits_of(&three).len() == 1
    });
    std::thread::sleep(Duration::from_millis(1500));
    let worker = s.browser.extension_process().expect("the extension's process");
    kill9(worker);
    std::thread::sleep(Duration::from_millis(1500));
    let t1 = Instant::now();
    let four = s.url("four.test", "/page?title=Four");
    s.browser.open(&four);
    let expected = ms(t1 - t0);
    s.expect(Duration::from_secs(30), "three's time across the restart", || {
        s.visits_of(&four).len() == 1 && close_to(s.visits_of(&three)[0].active_ms, expected)
    });
    assert_ne!(
        s.browser.extension_process(),
        Some(worker),
        "the worker really was restarted"
    );
    assert_eq!(stored(&s.db).len(), 4);
}

#[test]
fn killing_the_host_with_events_in_flight_loses_nothing_and_stores_nothing_twice() {
    let _guard = serial();
    // The host commits each batch, then waits 1.5 s before acknowledging it: a kill in that
    // window leaves stored events unacknowledged, which the extension must send again.
    let s = Session::start(&[("SITETRAIL_NATIVE_HOST_ACK_DELAY_MS", "1500")]);
    let urls: Vec<String> = (0..10)
        .map(|i| s.url(&format!("p{i}.test"), &format!("/page?title=Page%20{i}")))
        .collect();
    for (i, url) in urls.iter().enumerate() {
        s.browser.open(url);
        std::thread::sleep(Duration::from_millis(150));
        if i == 2 || i == 7 {
            // Kill once a batch is committed and its ack is still being held back.
            let before = stored(&s.db).len();
            s.expect(Duration::from_secs(20), "a committed batch", || {
                stored(&s.db).len() > before
            });
            let hosts = host_processes(&s.db);
            assert!(!hosts.is_empty());
            for pid in hosts {
                kill9(pid);
            }
        }
    }
    s.expect(Duration::from_secs(60), "every page", || {
        urls.iter().all(|u| !s.visits_of(u).is_empty())
    });
    // Let any last resend arrive before counting.
    s.expect(Duration::from_secs(30), "the queue to drain", || {
        stored(&s.db)
            .iter()
            .filter(|v| v.url.contains("p9.test"))
            .all(|v| v.title.is_some())
    });
    for (i, url) in urls.iter().enumerate() {
        let v = s.visits_of(url);
        assert_eq!(v.len(), 1, "page {i} stored {} times", v.len());
        assert_eq!(v[0].title.as_deref(), Some(format!("Page {i}").as_str()));
    }
    assert_eq!(stored(&s.db).len(), urls.len());
}
