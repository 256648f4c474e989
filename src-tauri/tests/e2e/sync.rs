//! Sync in the real app: set up an account from Settings (the recovery key shown once), a second
//! device joins with the words read off the screen, and its visit shows in the app's History with
//! its device's name after "Sync now".

use std::time::Duration;

use super::harness::Harness;
use super::sync_support::{Device, TestHub};
use super::{serial, AppDirs};

const WAIT: Duration = Duration::from_secs(30);

#[test]
fn sync_is_set_up_in_settings_and_another_devices_visit_arrives() {
    let _lock = serial();
    let hub = TestHub::start();
    let dirs = AppDirs::create();
    let mut h = Harness::start(&dirs.env(), &dirs.log());
    h.launch();
    h.click("#tab-settings");
    h.wait_for(WAIT, || (h.count("#sync-hub") == 1).then_some(()));
    h.type_into("#sync-hub", &hub.url);
    h.type_into("#sync-name", "e2e laptop");
    h.click("#sync-setup");
    let words = h.wait_for(WAIT, || {
        h.try_text("#sync-recovery")
            .filter(|t| t.split_whitespace().count() == 24)
    });
    assert!(h.text("#s-sync-body").contains("shown only this once"));
    assert_eq!(h.count("#sync-copy"), 1, "a Copy button beside the key");
    h.screenshot("sync-recovery-key.png");
    h.click("#sync-key-done");
    h.wait_for(WAIT, || {
        (h.try_text("#sync-device-name").as_deref() == Some("e2e laptop")).then_some(())
    });
    // The key is shown once: it is not on the page any more, nor in the database.
    assert_eq!(h.count("#sync-recovery"), 0);
    let db = std::fs::read(&dirs.db).unwrap();
    assert!(!String::from_utf8_lossy(&db).contains(&words));

    // A second device joins with the words and records a visit.
    super::visit(&dirs.store(), "on-the-laptop.example", "", "On the laptop", 5);
    let desktop = Device::new();
    desktop.join(&hub, "desktop", &words);
    super::visit(
        &desktop.store,
        "from-the-desktop.example",
        "",
        "Visited on the desktop",
        10,
    );
    desktop.sync();

    h.click("#sync-now");
    h.wait_for(WAIT, || {
        h.try_text("#sync-last")
            .filter(|t| t.starts_with("Last sync"))
            .map(|_| ())
    });
    h.wait_for(WAIT, || {
        h.try_text("#sync-devices")
            .filter(|t| t.contains("desktop"))
            .map(|_| ())
    });
    assert!(
        !h.text("#s-sync-body").contains("null"),
        "{}",
        h.text("#s-sync-body")
    );
    assert!(
        h.text("#sync-key-store").contains("in a file only you can read"),
        "the test keeps keys in files (SITETRAIL_SYNC_KEYRING=off): {}",
        h.text("#sync-key-store")
    );
    h.screenshot("sync-linked.png");
    // The overview splits the day's visits by device (no time is known: by visits).
    h.click("#tab-overview");
    let split = h.wait_for(WAIT, || {
        h.try_text("#split-devices")
            .filter(|t| t.contains("desktop") && t.contains("e2e laptop"))
    });
    assert!(split.contains("50"), "{split}");
    h.screenshot("sync-overview-devices.png");
    h.click("#tab-history");
    let device = h.wait_for(WAIT, || {
        h.exec(
            "const r = [...document.querySelectorAll('tr.visit')].find(t => t.dataset.domain === 'from-the-desktop.example'); \
             const d = r && r.querySelector('.dev'); return d ? d.textContent : null;",
            serde_json::json!([]),
        )
        .as_str()
        .map(str::to_owned)
    });
    assert_eq!(device, "desktop");
    // History filters by device: the desktop's visit only, then this device's only.
    h.wait_for(WAIT, || {
        (!h.exec(
            "return document.querySelector('#h-device-label').hidden;",
            serde_json::json!([]),
        )
        .as_bool()
        .unwrap_or(true))
        .then_some(())
    });
    h.exec(
        "const s = document.querySelector('#h-device'); s.value = 'desktop'; s.dispatchEvent(new Event('change'));",
        serde_json::json!([]),
    );
    let domains = || {
        h.exec(
            "return [...document.querySelectorAll('tr.visit')].map(t => t.dataset.domain).join(' ');",
            serde_json::json!([]),
        )
        .as_str()
        .unwrap_or_default()
        .to_owned()
    };
    h.wait_for(WAIT, || (domains() == "from-the-desktop.example").then_some(()));
    h.exec(
        "const s = document.querySelector('#h-device'); s.value = 'e2e laptop'; s.dispatchEvent(new Event('change'));",
        serde_json::json!([]),
    );
    h.wait_for(WAIT, || (domains() == "on-the-laptop.example").then_some(()));
    h.exec(
        "const s = document.querySelector('#h-device'); s.value = ''; s.dispatchEvent(new Event('change'));",
        serde_json::json!([]),
    );
    h.wait_for(WAIT, || {
        domains().contains("from-the-desktop.example").then_some(())
    });
    // The visit's details say which device recorded it.
    h.exec(
        "[...document.querySelectorAll('tr.visit')].find(t => t.dataset.domain === 'from-the-desktop.example').click();",
        serde_json::json!([]),
    );
    h.wait_for(WAIT, || {
        h.try_text("#vd-body")
            .filter(|t| t.contains("Device") && t.contains("desktop"))
            .map(|_| ())
    });
    h.screenshot("sync-history-device.png");
    h.assert_no_csp_violations();
}
