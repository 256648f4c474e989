//! Settings survive a restart, and the API key is in no file.

use std::path::Path;
use std::time::Duration;

use super::fake_ai::FakeAi;
use super::harness::Harness;
use super::{serial, AppDirs};

const WAIT: Duration = Duration::from_secs(30);
const KEY: &str = "sk-e2e-SECRET-7f3a9c21";

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                if bytes.windows(needle.len()).any(|w| w == needle) {
                    found.push(p.display().to_string());
                }
            }
        }
    }
    found
}

fn value(h: &Harness, css: &str) -> String {
    h.exec(
        "const e = document.querySelector(arguments[0]); return e ? e.value : null;",
        serde_json::json!([css]),
    )
    .as_str()
    .unwrap_or_default()
    .to_string()
}

#[test]
fn settings_survive_a_restart_and_the_key_is_in_no_file() {
    let _lock = serial();
    let dirs = AppDirs::create();
    let fake = FakeAi::start(&[("wikipedia.org", "search_reference")]);
    let mut h = Harness::start(&dirs.env(), &dirs.log());
    h.launch();
    h.click("#tab-settings");
    h.wait_for(WAIT, || (h.count("#s-provider") == 1).then_some(()));
    // With the built-in rules there is no key to keep: no key field, no keyring notice.
    let shown = |css: &str| {
        h.exec(
            "const e = document.querySelector(arguments[0]); return !!e && !e.closest('[hidden]')",
            serde_json::json!([css]),
        ) == true
    };
    assert!(!shown("#s-key-note") && !shown("#s-api-key"));

    h.click("#s-provider option[value='openai']");
    h.exec(
        "document.querySelector('#s-provider').dispatchEvent(new Event('change'))",
        serde_json::json!([]),
    );
    assert!(shown("#s-key-note") && shown("#s-api-key"));
    assert!(
        h.text("#s-key-note").contains("SITETRAIL_API_KEY"),
        "without a keyring the UI says how to keep a key: {}",
        h.text("#s-key-note")
    );
    h.type_into("#s-base-url", &fake.base_url);
    h.type_into("#s-model", "e2e-model");
    // Delays are entered in seconds (the file keeps milliseconds).
    h.type_into("#s-fixed-delay-ms", "1.5");
    h.type_into("#s-max-requests-per-minute", "30");
    h.type_into("#s-batch-size", "5");
    h.type_into("#s-max-attempts", "7");
    h.type_into("#s-exclusions", "*.corp.example");
    // The advanced settings are drawn from the same schema, behind a disclosure.
    h.click("#s-advanced summary");
    h.type_into("#s-retry-base-ms", "45");
    h.type_into("#s-api-key", KEY);
    h.click("#s-key-save");
    h.wait_for(WAIT, || (value(&h, "#s-api-key").is_empty()).then_some(()));

    h.click("#s-test");
    let answer = h.wait_for(WAIT, || {
        let t = h.text("#s-test-result");
        (t.starts_with("It works") || t.starts_with("It did not")).then_some(t)
    });
    assert!(answer.contains("Search & reference"), "{answer}");
    assert!(
        fake.auth
            .lock()
            .unwrap()
            .iter()
            .any(|a| a == &format!("Bearer {KEY}")),
        "the stored key was used"
    );
    h.click("#s-save");
    h.wait_for(WAIT, || {
        h.text("#s-save-status").starts_with("Saved").then_some(())
    });
    h.screenshot("settings.png");
    h.assert_no_csp_violations();

    // Restart: quit the app and launch it again on the same files.
    h.quit();
    h.launch();
    h.click("#tab-settings");
    h.wait_for(WAIT, || (value(&h, "#s-base-url") == fake.base_url).then_some(()));
    assert_eq!(value(&h, "#s-provider"), "openai");
    assert_eq!(value(&h, "#s-model"), "e2e-model");
    assert_eq!(value(&h, "#s-fixed-delay-ms"), "1.5");
    assert_eq!(value(&h, "#s-max-requests-per-minute"), "30");
    assert_eq!(value(&h, "#s-batch-size"), "5");
    assert_eq!(value(&h, "#s-max-attempts"), "7");
    assert_eq!(value(&h, "#s-exclusions"), "*.corp.example");
    assert_eq!(value(&h, "#s-retry-base-ms"), "45");
    h.screenshot("settings-after-restart.png");
    h.quit();

    let saved = std::fs::read_to_string(dirs.config.join("sitetrail/settings.json")).expect("settings file");
    assert!(saved.contains("e2e-model"), "{saved}");
    // The file keeps its keys and units: milliseconds.
    let file: serde_json::Value = serde_json::from_str(&saved).expect("settings JSON");
    assert_eq!(file["fixed_delay_ms"], 1500, "{saved}");
    assert_eq!(file["retry_base_ms"], 45_000, "{saved}");
    // The data dir, the config dir, the database with its WAL, and the app's log: no key anywhere.
    let leaks = files_containing(dirs.dir.path(), KEY.as_bytes());
    assert!(leaks.is_empty(), "API key found in {leaks:?}");
}
