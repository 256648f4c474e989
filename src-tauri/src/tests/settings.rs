//! Settings commands: happy paths and bad input.

use std::time::Duration;

use serde_json::{json, Value};
use sitetrail::worker::state::PauseKind;

use super::{wait_for, TestApp};

fn form(provider: &str, base_url: Option<&str>) -> Value {
    json!({
        "provider": provider, "base_url": base_url, "model": "m1", "fixed_delay_ms": 250,
        "max_requests_per_minute": 30, "batch_size": 4, "max_attempts": 6,
        "exclusions": ["*.corp.example", " "],
    })
}

#[test]
fn get_and_save_settings_restart_the_worker_with_them() {
    let t = TestApp::start(|_| {});
    let v = t.ok("get_settings", json!({}));
    assert_eq!(v["settings"]["provider"], "builtin");
    assert_eq!(v["settings_file"], t.paths.settings_file.display().to_string());
    // The UI draws the form from the library's schema: every setting with its limits.
    let schema = v["schema"].as_array().unwrap();
    assert_eq!(schema.len(), sitetrail::settings::SCHEMA.len());
    let batch = schema.iter().find(|s| s["name"] == "batch_size").unwrap();
    assert_eq!(
        (batch["kind"]["min"].as_u64(), batch["kind"]["max"].as_u64()),
        (Some(1), Some(500))
    );
    assert_eq!(v["defaults"]["max_attempts"], 5);

    let v = t.ok(
        "save_settings",
        json!({"settings": form("ollama", Some("http://127.0.0.1:9"))}),
    );
    assert_eq!(v["settings"]["provider"], "ollama");
    assert_eq!(v["settings"]["exclusions"], json!(["*.corp.example"]));
    let saved = std::fs::read_to_string(&t.paths.settings_file).unwrap();
    assert!(saved.contains("\"max_attempts\": 6"), "{saved}");
    let q = t.ok("get_queue", json!({}));
    assert_eq!(
        q["provider"], "ollama",
        "the worker restarted with the new provider"
    );

    for bad in [
        form("gemini", None),
        form("openai", Some("ftp://example.com")),
        json!({"provider": "builtin", "fixed_delay_ms": 1, "max_attempts": 0, "exclusions": []}),
        json!({"provider": "builtin", "fixed_delay_ms": 1, "max_attempts": 3, "exclusions": [], "batch_size": 0}),
    ] {
        assert_eq!(
            t.err_kind("save_settings", json!({ "settings": bad })),
            "invalid_input",
            "{bad}"
        );
    }
    assert!(t
        .invoke(
            "save_settings",
            json!({"settings": {"provider": "builtin", "api_key": "x"}})
        )
        .is_err());
    // A refused form changes nothing.
    assert_eq!(t.ok("get_settings", json!({}))["settings"]["provider"], "ollama");
}

#[test]
fn base_url_credentials_are_never_shown_and_survive_a_save_of_the_shown_form() {
    let t = TestApp::start(|_| {});
    let url = "http://alice:pw-secret-9@127.0.0.1:9/v1";
    let v = t.ok("save_settings", json!({"settings": form("openai", Some(url))}));
    let shown = v.to_string();
    assert!(
        !shown.contains("pw-secret-9") && !shown.contains("alice"),
        "{shown}"
    );
    assert_eq!(v["settings"]["base_url"], "http://***@127.0.0.1:9/v1");
    assert_eq!(v["effective"]["base_url"], "http://***@127.0.0.1:9/v1");
    // The form comes back with what it showed: the saved credentials stay.
    t.ok(
        "save_settings",
        json!({"settings": form("openai", v["settings"]["base_url"].as_str())}),
    );
    let saved = std::fs::read_to_string(&t.paths.settings_file).unwrap();
    assert!(saved.contains(url), "{saved}");
    assert!(!t
        .ok("get_settings", json!({}))
        .to_string()
        .contains("pw-secret-9"));
    // A new URL replaces them.
    t.ok(
        "save_settings",
        json!({"settings": form("openai", Some("http://127.0.0.1:9/v1"))}),
    );
    let saved = std::fs::read_to_string(&t.paths.settings_file).unwrap();
    assert!(!saved.contains("pw-secret-9"), "{saved}");
}

#[test]
fn exclusions_are_checked_as_host_patterns() {
    let t = TestApp::start(|_| {});
    let mut ok = form("builtin", None);
    ok["exclusions"] = json!(["bücher.example", "*.MÜNCHEN-bank.example."]);
    let v = t.ok("save_settings", json!({ "settings": ok }));
    assert_eq!(
        v["settings"]["exclusions"],
        json!(["*.münchen-bank.example", "bücher.example"]),
        "kept as they are matched, shown in their own script"
    );
    for bad in ["<bank>.example", "bank%.example", "a*.example", "x.example:443"] {
        let mut f = form("builtin", None);
        f["exclusions"] = json!([bad]);
        let e = t.invoke("save_settings", json!({ "settings": f })).unwrap_err();
        assert_eq!(e["kind"], "invalid_input", "{bad}: {e}");
        assert!(
            e["message"].as_str().unwrap().contains("not a host pattern"),
            "{bad}: {e}"
        );
    }
    assert_eq!(
        t.ok("get_settings", json!({}))["settings"]["exclusions"],
        json!(["*.münchen-bank.example", "bücher.example"]),
        "a refused form changes nothing"
    );
}

/// The form's exclusions are the list kept on all the user's devices (the database's, synced),
/// shown with the settings file's own; one taken off the form is off both.
#[test]
fn exclusions_saved_in_the_app_are_the_synced_list_and_the_files_own_can_be_removed() {
    let t = TestApp::start(|_| {});
    std::fs::create_dir_all(t.paths.settings_file.parent().unwrap()).unwrap();
    std::fs::write(
        &t.paths.settings_file,
        r#"{"exclusions": ["file-only.example", "kept.example"]}"#,
    )
    .unwrap();
    t.store().exclude_host("from-another-device.example").unwrap();
    let shown = t.ok("get_settings", json!({}))["settings"]["exclusions"].clone();
    assert_eq!(
        shown,
        json!(["from-another-device.example", "file-only.example", "kept.example"])
    );
    let mut f = form("builtin", None);
    f["exclusions"] = json!(["kept.example", "new.example", "from-another-device.example"]);
    let v = t.ok("save_settings", json!({ "settings": f }));
    let stored: Vec<String> = t
        .store()
        .excluded_hosts()
        .unwrap()
        .into_iter()
        .map(|e| e.pattern)
        .collect();
    assert_eq!(
        stored,
        ["from-another-device.example", "kept.example", "new.example"],
        "what the form holds is the synced list"
    );
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(&t.paths.settings_file).unwrap()).unwrap();
    assert_eq!(
        file["exclusions"],
        json!(["kept.example"]),
        "the file keeps only its own still wanted"
    );
    assert_eq!(
        v["settings"]["exclusions"],
        json!(["from-another-device.example", "kept.example", "new.example"])
    );
}

#[test]
fn test_connection_answers_or_says_why_not() {
    let t = TestApp::start(|_| {});
    let r = t.ok("test_connection", json!({"settings": form("builtin", None)}));
    assert_eq!(r["domain"], "wikipedia.org");
    assert_eq!(r["category"], "search_reference");
    assert_eq!(r["provider"], "builtin");
    // Nothing listens on port 1: the provider is offline, and the error says so.
    let e = t
        .invoke(
            "test_connection",
            json!({"settings": form("openai", Some("http://127.0.0.1:1/v1"))}),
        )
        .unwrap_err();
    assert_eq!(e["kind"], "offline", "{e}");
    assert!(e["message"].as_str().unwrap().contains("offline"), "{e}");
    assert_eq!(
        t.err_kind("test_connection", json!({"settings": form("nope", None)})),
        "invalid_input"
    );
}

#[test]
fn the_api_key_is_kept_out_of_every_file_and_never_shown() {
    let t = TestApp::start(|_| {});
    if std::env::var_os(crate::secret::ENV_KEY).is_some() {
        return; // the environment's key wins; this test is about stored keys
    }
    let key = "sk-mock-test-4242";
    let status = t.ok("set_api_key", json!({ "key": key }));
    assert_eq!(status["source"], "session");
    assert!(!status.to_string().contains(key));
    t.ok(
        "save_settings",
        json!({"settings": form("openai", Some("http://127.0.0.1:9/v1"))}),
    );
    let view = t.ok("get_settings", json!({}));
    assert!(!view.to_string().contains(key), "{view}");
    let saved = std::fs::read_to_string(&t.paths.settings_file).unwrap();
    assert!(!saved.contains(key));
    assert_eq!(t.ok("delete_api_key", json!({}))["source"], "none");
    assert_eq!(t.err_kind("set_api_key", json!({"key": "  "})), "invalid_input");
    assert_eq!(
        t.err_kind("set_api_key", json!({"key": "two words"})),
        "invalid_input"
    );
}

#[test]
fn resume_clears_a_pause_that_waits_for_the_user() {
    let t = TestApp::start(|_| {});
    // Paused by a worker in another process; the app's worker, starting, leaves it alone.
    t.store()
        .pause_worker(
            PauseKind::NeedsUser,
            "the provider refused the API key (401)",
            None,
        )
        .unwrap();
    let q = t.ok("get_queue", json!({}));
    assert_eq!(q["pause"]["kind"], "needs_user", "{q}");
    assert!(q["pause"]["reason"].as_str().unwrap().contains("401"));
    assert_eq!(t.ok("resume_worker", json!({})), true);
    wait_for(Duration::from_secs(5), || {
        t.ok("get_queue", json!({}))["pause"].is_null().then_some(())
    });
    assert_eq!(t.ok("resume_worker", json!({})), false, "nothing left to resume");
}
