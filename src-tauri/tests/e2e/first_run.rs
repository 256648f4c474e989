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
