//! "Continue" on the extension's page, in a real Chromium with the native host on a real database,
//! pressed with the mouse through the DevTools protocol: a press during the pause does nothing;
//! after it the button says "Continue for 1 minute" (the options' shortest), and pressed, the
//! site loads and stays open for that minute, then is held back again; with "strict" the page
//! offers no "Continue" and the service worker refuses one. And the extension asking the host
//! again with nothing changed updates no rule.

use std::time::Duration;

use serde_json::Value;

use crate::capture::browser::{serial, Session};
use crate::limits::browser::open_and_see;
use crate::support::chromium_harness::poll::poll;
use crate::support::devtools::Tab;
use crate::support::{cli, run_ok};

/// Opens `url` in a new tab and waits until the extension's page stands in its place with its
/// sentence and buttons set; returns the tab's DevTools id and a DevTools connection to it.
fn paused_tab(s: &Session, url: &str) -> (String, Tab) {
    let id = s.browser.open(url);
    s.expect(
        Duration::from_secs(30),
        "the extension's page in place of the site",
        || {
            s.browser.tab(&id).is_some_and(|(u, title)| {
                u.starts_with("chrome-extension://") && u.ends_with(url) && title.starts_with("Paused:")
            })
        },
    );
    let tab = Tab::attach(s.browser.devtools_port(), &id).expect("DevTools on the paused tab");
    (id, tab)
}

/// The paused page's "Continue" button and strict note: (button hidden, disabled, its words,
/// note hidden).
fn buttons(tab: &mut Tab) -> (bool, bool, String, bool) {
    let v: Value = tab
        .eval(
            "(() => { const b = document.getElementById('continue'); \
             return [b.hidden, b.disabled, b.textContent, document.getElementById('strict').hidden]; })()",
        )
        .unwrap();
    (
        v[0].as_bool().unwrap(),
        v[1].as_bool().unwrap(),
        v[2].as_str().unwrap_or_default().to_owned(),
        v[3].as_bool().unwrap(),
    )
}

/// Changes the extension's settings as its options page does (chrome.storage.local `settings`).
fn set_settings(tab: &mut Tab, patch: &str) {
    let done = tab
        .eval(&format!(
            "chrome.storage.local.get('settings').then((g) => \
             chrome.storage.local.set({{ settings: {{ ...(g.settings || {{}}), ...{patch} }} }})).then(() => true)"
        ))
        .unwrap();
    assert_eq!(done, Value::Bool(true));
}

#[test]
fn continue_opens_the_site_only_after_the_pause_for_the_continue_window_and_strict_offers_none() {
    let _one = serial();
    let s = Session::start(&[]);
    let first = s.url("ok.test", "/page?title=First");
    s.browser.open(&first);
    s.expect(Duration::from_secs(60), "the first page to be stored", || {
        !s.visits_of(&first).is_empty()
    });
    run_ok(cli(&s.db).args(["limits", "add", "over.test", "--max", "0m"]));
    // Asked again after the next batch stored: probes until one is held back.
    let other = s.url("ok.test", "/page?title=Other");
    s.browser.open(&other);
    s.expect(Duration::from_secs(30), "the other page to be stored", || {
        !s.visits_of(&other).is_empty()
    });
    let mut n = 0;
    s.expect(Duration::from_secs(60), "over.test to be held back", || {
        n += 1;
        open_and_see(&s, &s.url("over.test", &format!("/probe?title=P{n}"))).0
    });

    // Keeping the rules in step costs no rule update while the answer stays the same: pages of
    // other sites make the extension ask again, and the rules are left alone.
    let (id, mut tab) = paused_tab(&s, &s.url("over.test", "/settings?title=S"));
    let stats = |tab: &mut Tab| {
        let v = tab
            .eval("chrome.runtime.sendMessage({ type: 'limits-stats' })")
            .unwrap();
        (v["asked"].as_u64().unwrap(), v["updated"].as_u64().unwrap())
    };
    let (asked, updated) = stats(&mut tab);
    for i in 0..3 {
        let url = s.url("ok.test", &format!("/page?title=Again{i}"));
        s.browser.open(&url);
        s.expect(Duration::from_secs(30), "the page to be stored", || {
            !s.visits_of(&url).is_empty()
        });
    }
    s.expect(Duration::from_secs(30), "the extension to ask again", || {
        stats(&mut tab).0 >= asked + 3
    });
    assert_eq!(
        stats(&mut tab).1,
        updated,
        "the rules were updated with nothing changed: {}",
        tab.eval("chrome.declarativeNetRequest.getSessionRules()")
            .unwrap()
    );

    // A pause of 3 s, and "Continue" for the shortest time the options allow: one minute.
    set_settings(&mut tab, "{ limitPauseSeconds: 3, limitContinueMinutes: 1 }");
    drop(tab);
    s.browser.close(&id);

    let held = s.url("over.test", "/held?title=Held");
    let (id, mut tab) = paused_tab(&s, &held);
    let offered = poll(Duration::from_secs(10), Duration::from_millis(20), || {
        let b = buttons(&mut tab);
        (!b.0).then_some(b)
    })
    .expect("no Continue offered");
    let (_, disabled, words, _) = offered;
    assert!(
        disabled && words.starts_with("Continue in "),
        "Continue during the pause: disabled {disabled}, {words:?}"
    );
    // Pressed during the pause: nothing happens (the page is still there when the pause ends,
    // and the site was never asked).
    tab.click("#continue").unwrap();
    let ready = poll(Duration::from_secs(10), Duration::from_millis(50), || {
        let b = buttons(&mut tab);
        (!b.1).then_some(b.2)
    })
    .expect("Continue never became ready");
    assert_eq!(ready, "Continue for 1 minute");
    assert!(
        s.browser
            .tab(&id)
            .is_some_and(|(u, _)| u.starts_with("chrome-extension://")),
        "a press during the pause went on to the site"
    );
    assert!(
        !s.pages.was_asked("over.test", "/held"),
        "the held page's server was asked"
    );

    // Pressed after it: the site loads in that tab.
    tab.click("#continue").unwrap();
    s.expect(Duration::from_secs(30), "the site to load after Continue", || {
        s.browser
            .tab(&id)
            .is_some_and(|(u, title)| u == held && title == "Held")
    });
    assert!(s.pages.was_asked("over.test", "/held"));
    drop(tab);
    // Other pages of the site open too while the minute lasts.
    let again = s.url("www.over.test", "/again?title=Again");
    assert!(
        !open_and_see(&s, &again).0,
        "a page of the site was held back during Continue"
    );
    assert!(s.pages.was_asked("www.over.test", "/again"));

    // When it runs out, the site is held back again (probes every 2 s, not to load the machine).
    let mut n = 0;
    let back = poll(Duration::from_secs(150), Duration::from_secs(2), || {
        n += 1;
        let path = format!("/after?title=A{n}");
        let paused = open_and_see(&s, &s.url("over.test", &path)).0;
        (paused && !s.pages.was_asked("over.test", &path)).then_some(())
    });
    assert!(
        back.is_some(),
        "over.test was not held back again after the Continue minute"
    );

    // Strict: no Continue on the page, and the service worker refuses one asked for anyway.
    let (id, mut tab) = paused_tab(&s, &s.url("over.test", "/strict-setting?title=S2"));
    set_settings(&mut tab, "{ strictLimits: true }");
    drop(tab);
    s.browser.close(&id);
    let strict = s.url("over.test", "/strict?title=Strict");
    let (_, mut tab) = paused_tab(&s, &strict);
    let note = poll(Duration::from_secs(10), Duration::from_millis(20), || {
        let b = buttons(&mut tab);
        (!b.3).then_some(b)
    })
    .expect("the strict note was never shown");
    assert!(note.0, "Continue offered while strict: {note:?}");
    let answer = tab
        .eval(&format!(
            "chrome.runtime.sendMessage({{ type: 'continue', url: {strict:?} }})"
        ))
        .unwrap();
    assert_eq!(
        answer["ok"],
        Value::Bool(false),
        "the worker let a strict limit through"
    );
    assert!(!s.pages.was_asked("over.test", "/strict"));
}
