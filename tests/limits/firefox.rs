//! Limits in Firefox ESR: the package `scripts/firefox-extension` builds, installed in a real
//! headless Firefox, linked to the host on a real database. A site over its limit, and a site a
//! focus session holds back, open the extension's page instead, and their server is never asked;
//! a site with no limit opens. Firefox is driven through WebDriver BiDi (`--remote-debugging-port`);
//! every host name resolves to 127.0.0.1 (`network.dns.forceResolve`), where the page server
//! counts what it is asked.

use std::time::Duration;

use serde_json::{json, Value};

use crate::capture::browser::serial;
use crate::capture::firefox::{build_package, link_firefox, profile_with_prefs, Firefox};
use crate::support::chromium_harness::{closed_port, PageServer};
use crate::support::devtools::Rpc;
use crate::support::{cli, run_ok, wait_for, TempDb};

/// Every name on 127.0.0.1, plain http kept plain, no DNS over HTTPS, no proxy.
const PREFS: &str = r#"user_pref("network.dns.forceResolve", "127.0.0.1");
user_pref("network.trr.mode", 5);
user_pref("network.proxy.type", 0);
user_pref("dom.security.https_first", false);
user_pref("dom.security.https_first_schemeless", false);
user_pref("dom.security.https_only_mode", false);
user_pref("browser.fixup.alternate.enabled", false);
"#;

/// A BiDi session on the Firefox listening on `port`, and its one tab.
fn session(port: u16) -> (Rpc, String) {
    let mut rpc = None;
    let up = wait_for(Duration::from_secs(60), || {
        rpc = Rpc::connect(&format!("ws://127.0.0.1:{port}/session")).ok();
        rpc.is_some()
    });
    assert!(up, "Firefox did not open WebDriver BiDi on {port}");
    let mut rpc = rpc.unwrap();
    rpc.call("session.new", json!({"capabilities": {}})).unwrap();
    let tree = rpc.call("browsingContext.getTree", json!({})).unwrap();
    let tab = tree["contexts"][0]["context"].as_str().expect("a tab").to_owned();
    (rpc, tab)
}

/// The address `tab` shows.
fn address(rpc: &mut Rpc, tab: &str) -> String {
    let tree = rpc
        .call("browsingContext.getTree", json!({"root": tab, "maxDepth": 0}))
        .unwrap();
    tree["contexts"][0]["url"].as_str().unwrap_or_default().to_owned()
}

/// `expression`'s value in `tab`'s page (a string), or None if it cannot be read.
fn eval(rpc: &mut Rpc, tab: &str, expression: &str) -> Option<String> {
    let r: Value = rpc
        .call(
            "script.evaluate",
            json!({"expression": expression, "target": {"context": tab}, "awaitPromise": false}),
        )
        .ok()?;
    r["result"]["value"].as_str().map(str::to_owned)
}

/// Opens `url` in `tab` and waits until it shows either the page (false) or the extension's page
/// in its place with its sentence written (true); returns that and the page's title.
fn open_and_see(rpc: &mut Rpc, tab: &str, url: &str) -> (bool, String) {
    // The navigation's own answer is not relied on (a redirect to an extension page may end it
    // early): the tab's address and title are.
    let _ = rpc.call(
        "browsingContext.navigate",
        json!({"context": tab, "url": url, "wait": "complete"}),
    );
    let mut seen = None;
    let found = wait_for(Duration::from_secs(30), || {
        let at = address(rpc, tab);
        let title = eval(rpc, tab, "document.title").unwrap_or_default();
        let paused = at.starts_with("moz-extension://")
            && at.contains("/paused.html#")
            && at.ends_with(url)
            && (title.starts_with("Paused:") || title == "Focusing · Sitetrail");
        if paused || (at == url && !title.is_empty()) {
            seen = Some((paused, title));
        }
        seen.is_some()
    });
    assert!(
        found,
        "the tab of {url} showed neither the page nor the pause: {}",
        address(rpc, tab)
    );
    seen.unwrap()
}

#[test]
fn firefox_shows_the_extensions_page_instead_of_a_site_over_its_limit_or_in_a_focus_session() {
    let _one = serial();
    let db = TempDb::new();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    link_firefox(&db.path, &home);
    // Set before Firefox starts: the extension asks the host when it connects.
    run_ok(cli(&db.path).args(["limits", "add", "over.test", "--max", "0m"]));
    run_ok(cli(&db.path).args(["focus", "start", "25m", "--block", "focus.test"]));
    let profile = profile_with_prefs(dir.path(), &build_package(&dir.path().join("build")), PREFS);
    let pages = PageServer::start();
    let port = closed_port();
    let log = dir.path().join("firefox.log");
    let _firefox = Firefox::start_with_bidi(&profile, &home, &log, port);
    let (mut rpc, tab) = session(port);
    let firefox_said = || std::fs::read_to_string(&log).unwrap_or_default();

    // The extension is linked and storing: a first page is recorded.
    let first = pages.url("ok.test", "/page?title=First");
    assert!(!open_and_see(&mut rpc, &tab, &first).0);
    let store = db.open();
    let recorded = wait_for(Duration::from_secs(60), || {
        store
            .with_conn(|c| {
                Ok(c.query_row(
                    "SELECT count(*) FROM visit WHERE url = ?1 AND source = 'extension:firefox'",
                    [&first],
                    |r| r.get::<_, i64>(0),
                )?)
            })
            .unwrap_or(0)
            > 0
    });
    assert!(
        recorded,
        "the first page was not recorded; Firefox said: {}",
        firefox_said()
    );

    // The rules are set once the host has answered: probes until one is held back.
    let mut n = 0;
    let held = wait_for(Duration::from_secs(60), || {
        n += 1;
        open_and_see(
            &mut rpc,
            &tab,
            &pages.url("over.test", &format!("/probe?title=P{n}")),
        )
        .0
    });
    assert!(
        held,
        "over.test was never held back; Firefox said: {}",
        firefox_said()
    );

    // A page over its limit: the extension's page in its place, its server never asked.
    let over = pages.url("www.over.test", "/held?title=Held");
    let (paused, title) = open_and_see(&mut rpc, &tab, &over);
    assert!(paused, "over.test/held loaded: {title}");
    assert_eq!(title, "Paused: over.test · Sitetrail");
    assert!(
        !pages.was_asked("www.over.test", "/held"),
        "the held page's server was asked"
    );
    // The focus session's site: the same, with the focus page's title.
    let work = pages.url("focus.test", "/work?title=Work");
    let (paused, title) = open_and_see(&mut rpc, &tab, &work);
    assert!(paused, "a page of the focus session loaded: {title}");
    assert_eq!(title, "Focusing · Sitetrail");
    assert!(
        !pages.was_asked("focus.test", "/work"),
        "the focus session's page was asked"
    );
    // A site with no limit opens, and was asked.
    let free = pages.url("free.test", "/page?title=Free");
    assert!(
        !open_and_see(&mut rpc, &tab, &free).0,
        "a site with no limit was held back"
    );
    assert!(pages.was_asked("free.test", "/page"));
}
