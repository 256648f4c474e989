//! First run: an empty database offers to import the browsers found on this machine, with
//! progress; the imported history shows up.

use std::time::Duration;

use super::harness::Harness;
use super::{serial, AppDirs};

const WAIT: Duration = Duration::from_secs(60);

#[test]
fn first_run_imports_the_detected_browser() {
    let _lock = serial();
    let dirs = AppDirs::create();
    // A Chromium profile where detection looks on Linux: $XDG_CONFIG_HOME/chromium/Default/History,
    // with a real History file written by Chromium (tests/fixtures).
    let profile = dirs.config.join("chromium/Default");
    std::fs::create_dir_all(&profile).unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/chromium-History");
    std::fs::copy(fixture, profile.join("History")).expect("copy the Chromium fixture");
    let mut env = dirs.env();
    // Nothing else from the real home directory is detected.
    env.push(("HOME", dirs.dir.path().display().to_string()));

    let mut h = Harness::start(&env, &dirs.log());
    h.launch();
    h.wait_for(WAIT, || (h.count("#first-run-import") == 1).then_some(()));
    assert!(
        h.text("#first-run-body").contains("Chromium"),
        "{}",
        h.text("#first-run-body")
    );
    // It also offers to link the extension, for what comes next.
    h.wait_for(WAIT, || {
        (h.count("#first-run-extension li[data-browser]") == 6).then_some(())
    });
    h.screenshot("first-run.png");
    h.click("#first-run-import");
    let status = h.wait_for(WAIT, || {
        let t = h.text("#first-run-body p[role=status]");
        t.starts_with("Imported").then_some(t)
    });
    assert!(!status.starts_with("Imported 0 "), "{status}");
    // Today has nothing (the imported history is older): the overview says so and offers the
    // day of the latest visit, which shows the imported websites.
    h.wait_for(WAIT, || (h.count("#hl-latest") == 1).then_some(()));
    assert_eq!(h.text("#hl-time"), "Nothing recorded");
    h.click("#hl-latest");
    h.wait_for(WAIT, || (h.count("#top-sites li .d") > 0).then_some(()));
    h.screenshot("first-run-imported.png");
    // The history now holds the imported visits.
    h.click("#tab-history");
    h.wait_for(WAIT, || {
        (h.count("#h-rows tr[data-domain='news.example.com']") > 0).then_some(())
    });
    h.assert_no_csp_violations();
    h.quit();
    assert!(dirs.store().visit_count().unwrap() > 0);
}

/// The browser-link status is true: "linked" is not "recording" until the extension has talked
/// to this database, and the first run says which step is left.
#[test]
fn the_link_status_says_which_step_is_left_until_the_extension_connects() {
    let _lock = serial();
    let dirs = AppDirs::create();
    // A stand-in `sitetrail` command: linking only needs it to exist.
    let cli = dirs.dir.path().join("bin/sitetrail");
    std::fs::create_dir_all(cli.parent().unwrap()).unwrap();
    std::fs::write(&cli, b"#!/bin/sh\n").unwrap();
    let mut env = dirs.env();
    env.push(("HOME", dirs.dir.path().display().to_string()));
    env.push(("SITETRAIL_CLI", cli.display().to_string()));
    let mut h = Harness::start(&env, &dirs.log());
    h.launch();
    let step = |h: &Harness| h.try_text("#first-run-extension .next-step").unwrap_or_default();
    h.wait_for(WAIT, || step(&h).contains("link your browser").then_some(()));
    h.click("#first-run-extension button[data-browser='chromium']");
    h.wait_for(WAIT, || {
        step(&h).contains("load the extension in Chromium").then_some(())
    });
    let state = h.text("#first-run-extension li[data-browser='chromium'] .state");
    assert!(state.contains("has not connected yet"), "{state}");
    // The extension connects (its host records the hello), then sends its first page.
    let store = dirs.store();
    store.record_extension_contact("chromium", Some("0.1.0")).unwrap();
    h.click("#tab-settings");
    h.wait_for(WAIT, || {
        h.try_text("#s-ext-body li[data-browser='chromium'] .state")
            .filter(|t| t.contains("recording live"))
    });
    super::visit(&store, "first.example", "", "The first page", 0);
    h.screenshot("settings-linked.png");
    h.assert_no_csp_violations();
    h.quit();
}
