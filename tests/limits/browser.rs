//! Limits in a real browser: Debian's Chromium with the extension and the native host on a real
//! database. A website or category whose limit is used up is replaced by the extension's page
//! before it loads (the page's server is never asked), and when the host cannot be reached every
//! page opens again (a broken link must never lock a person out of the web).

use std::time::{Duration, Instant};

use crate::capture::browser::{serial, unlink, Session};
use crate::support::chromium_harness::{host_processes, kill9};
use crate::support::{run_ok, wait_for};

/// Opens `url` and waits until its tab shows either the page itself (served: false) or the
/// extension's page in its place (true), with that tab's title; returns how long it took.
pub(crate) fn open_and_see(s: &Session, url: &str) -> (bool, String, Duration) {
    let start = Instant::now();
    let tab = s.browser.open(url);
    let mut seen = None;
    let found = wait_for(Duration::from_secs(30), || {
        seen = s.browser.tabs().into_iter().find(|(u, title)| {
            (u.starts_with("chrome-extension://")
                && u.contains("/paused.html#")
                && u.ends_with(url)
                && (title.starts_with("Paused:") || title == "Focusing · Sitetrail"))
                || (u == url && !title.is_empty() && title != url)
        });
        seen.is_some()
    });
    let took = start.elapsed();
    assert!(
        found,
        "the tab of {url} showed neither the page nor the pause: {:?}",
        s.browser.tabs()
    );
    s.browser.close(&tab);
    let (u, title) = seen.unwrap_or_default();
    (u.starts_with("chrome-extension://"), title, took)
}

#[test]
fn a_site_over_its_limit_is_replaced_before_it_loads_and_every_page_opens_when_the_host_is_gone() {
    let _one = serial();
    let s = Session::start(&[]);

    // The extension is connected and storing; social.test is a social network (set by hand, as
    // Review does); its category's limit and over.test's are none at all.
    let social = s.url("social.test", "/page?title=Social");
    s.browser.open(&social);
    s.expect(Duration::from_secs(60), "the first page to be stored", || {
        !s.visits_of(&social).is_empty()
    });
    sitetrail::Store::open(&s.db)
        .unwrap()
        .set_user_category("social.test", sitetrail::Category::Social)
        .unwrap();
    run_ok(crate::support::cli(&s.db).args(["limits", "add", "social", "--max", "0m"]));
    run_ok(crate::support::cli(&s.db).args(["limits", "add", "over.test", "--max", "0m"]));

    // The extension asks again after each batch stored (and every half minute): a page on another
    // site makes one; then probes of over.test until one is held back.
    let other = s.url("ok.test", "/page?title=Other");
    s.browser.open(&other);
    s.expect(Duration::from_secs(30), "the other page to be stored", || {
        !s.visits_of(&other).is_empty()
    });
    let mut n = 0;
    let held = wait_for(Duration::from_secs(60), || {
        n += 1;
        open_and_see(&s, &s.url("over.test", &format!("/probe?title=Probe{n}"))).0
    });
    assert!(held, "over.test was never held back");

    // Now a page of each: the extension's page in its place, at once, its server never asked.
    let over = s.url("over.test", "/held?title=Held");
    let (paused, title, took) = open_and_see(&s, &over);
    assert!(paused, "over.test/held loaded: {title}");
    assert_eq!(title, "Paused: over.test · Sitetrail");
    assert!(
        !s.pages.was_asked("over.test", "/held"),
        "the held page's server was asked"
    );
    let sub = s.url("www.social.test", "/feed?title=Feed");
    let (paused, title, _) = open_and_see(&s, &sub);
    assert!(paused, "a page of the category over its limit loaded: {title}");
    assert_eq!(title, "Paused: Social networks · Sitetrail");
    assert!(!s.pages.was_asked("www.social.test", "/feed"));
    // A site without a limit opens.
    let free = s.url("free.test", "/page?title=Free");
    assert!(!open_and_see(&s, &free).0, "a site with no limit was held back");
    assert!(s.visits_of(&over).is_empty(), "the pause is not a visit");
    eprintln!(
        "limits: navigation to the extension's page in {} ms (tab list polled)",
        took.as_millis()
    );

    // The host unlinked and gone: the extension cannot ask, so it holds nothing back.
    unlink(&s.db, &s.profile);
    for pid in host_processes(&s.db) {
        kill9(pid);
    }
    let mut n = 0;
    let opened = wait_for(Duration::from_secs(60), || {
        n += 1;
        let url = s.url("over.test", &format!("/after?title=After{n}"));
        !open_and_see(&s, &url).0 && s.pages.was_asked("over.test", &format!("/after?title=After{n}"))
    });
    assert!(opened, "over.test stayed held back with the host gone");
}

#[test]
fn a_focus_session_holds_its_sites_back_with_no_continue_until_it_is_stopped() {
    let _one = serial();
    let s = Session::start(&[]);
    let first = s.url("ok.test", "/page?title=First");
    s.browser.open(&first);
    s.expect(Duration::from_secs(60), "the first page to be stored", || {
        !s.visits_of(&first).is_empty()
    });
    run_ok(crate::support::cli(&s.db).args(["focus", "start", "25m", "--block", "focus.test,social"]));
    // Asked again after the next batch stored: probes until one is held back.
    let other = s.url("ok.test", "/page?title=Second");
    s.browser.open(&other);
    let mut n = 0;
    let held = wait_for(Duration::from_secs(60), || {
        n += 1;
        open_and_see(&s, &s.url("focus.test", &format!("/probe?title=P{n}"))).0
    });
    assert!(held, "focus.test was never held back");
    let (paused, title, _) = open_and_see(&s, &s.url("www.focus.test", "/work?title=Work"));
    assert!(paused, "a page of the session loaded: {title}");
    assert_eq!(title, "Focusing · Sitetrail");
    assert!(!s.pages.was_asked("www.focus.test", "/work"));
    // Stopped: asked again after the next batch, and the site opens.
    run_ok(crate::support::cli(&s.db).args(["focus", "stop"]));
    let third = s.url("ok.test", "/page?title=Third");
    s.browser.open(&third);
    let mut n = 0;
    let opened = wait_for(Duration::from_secs(60), || {
        n += 1;
        let path = format!("/after?title=A{n}");
        !open_and_see(&s, &s.url("focus.test", &path)).0 && s.pages.was_asked("focus.test", &path)
    });
    assert!(
        opened,
        "focus.test stayed held back after the session was stopped"
    );
}
