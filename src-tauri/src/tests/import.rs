//! Import commands: settings round trip and bad input, the old `app.json` moved into the
//! settings file. (Importing a real Chromium profile is the
//! first-run end-to-end test, which can point the app's home directory at a fixture.)

use serde_json::json;

use super::TestApp;

fn saved(t: &TestApp) -> serde_json::Value {
    let text = std::fs::read_to_string(&t.paths.settings_file).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn import_settings_round_trip_and_bad_values_are_refused() {
    let t = TestApp::start(|_| {});
    let v = t.ok("get_import_settings", json!({}));
    assert_eq!(
        v["settings"]["auto_import_minutes"], 15,
        "on by default, every 15 minutes"
    );
    assert!(v["profiles"].is_array());
    // The form takes its limits from the settings schema the settings view sends.
    let schema = t.ok("get_settings", json!({}))["schema"].clone();
    let minutes = schema
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "auto_import_minutes")
        .expect("the interval is a setting of the schema")
        .clone();
    assert_eq!(minutes["kind"]["max"], 10_080, "at most a week: {minutes}");

    // The classifier's form and the import's share the one settings file: neither loses the other's.
    t.ok("save_settings", json!({"settings": {"max_attempts": 7}}));
    let v = t.ok(
        "save_import_settings",
        json!({"settings": {"auto_import_minutes": 30, "import_profiles": []}}),
    );
    assert_eq!(v["settings"]["auto_import_minutes"], 30);
    let file = saved(&t);
    assert_eq!(file["auto_import_minutes"], 30, "{file}");
    assert_eq!(
        file["max_attempts"], 7,
        "the classifier's setting is kept: {file}"
    );
    assert!(
        !t.paths.config_dir.join("app.json").exists(),
        "no second settings file"
    );
    t.ok("save_settings", json!({"settings": {"max_attempts": 6}}));
    assert_eq!(
        saved(&t)["auto_import_minutes"],
        30,
        "kept by the classifier's save"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&t.paths.settings_file), 0o600, "private");
    }
    assert_eq!(
        t.ok("get_import_settings", json!({}))["settings"]["auto_import_minutes"],
        30
    );

    assert_eq!(
        t.err_kind(
            "save_import_settings",
            json!({"settings": {"auto_import_minutes": 20000, "import_profiles": []}})
        ),
        "invalid_input"
    );
    assert_eq!(
        t.err_kind(
            "save_import_settings",
            json!({"settings": {"auto_import_minutes": 5, "import_profiles": ["/nowhere/History"]}})
        ),
        "invalid_input"
    );
    assert_eq!(
        t.ok("get_import_settings", json!({}))["settings"]["auto_import_minutes"],
        30,
        "refused values change nothing"
    );
    assert_eq!(saved(&t)["auto_import_minutes"], 30);
}

/// An app that ran before the import settings were settings kept them in `app.json`: the first
/// start moves them into the settings file (its other settings kept), then removes `app.json`.
#[test]
fn the_old_app_json_moves_into_the_settings_file_at_the_first_start() {
    let profile = "/home/someone/.config/chromium/Default/History";
    let t = TestApp::start_with(
        |_| {},
        |paths| {
            std::fs::create_dir_all(&paths.config_dir).unwrap();
            std::fs::write(
                paths.config_dir.join("app.json"),
                json!({"auto_import_minutes": 45, "import_profiles": [profile]}).to_string(),
            )
            .unwrap();
            std::fs::write(&paths.settings_file, r#"{"max_attempts": 3}"#).unwrap();
        },
    );
    let file = saved(&t);
    assert_eq!(file["auto_import_minutes"], 45, "{file}");
    assert_eq!(file["import_profiles"], json!([profile]), "{file}");
    assert_eq!(file["max_attempts"], 3, "nothing lost: {file}");
    assert!(!t.paths.config_dir.join("app.json").exists(), "app.json is gone");
    let v = t.ok("get_import_settings", json!({}));
    assert_eq!(v["settings"]["auto_import_minutes"], 45);
    assert_eq!(v["settings"]["import_profiles"], json!([profile]));
}

/// A malformed `app.json` is left as it is (the app logs why), and so is the settings file.
#[test]
fn a_malformed_app_json_changes_nothing() {
    let t = TestApp::start_with(
        |_| {},
        |paths| {
            std::fs::create_dir_all(&paths.config_dir).unwrap();
            std::fs::write(paths.config_dir.join("app.json"), "{ not json").unwrap();
            std::fs::write(&paths.settings_file, r#"{"max_attempts": 3}"#).unwrap();
        },
    );
    assert_eq!(
        std::fs::read_to_string(t.paths.config_dir.join("app.json")).unwrap(),
        "{ not json"
    );
    assert_eq!(
        std::fs::read_to_string(&t.paths.settings_file).unwrap(),
        r#"{"max_attempts": 3}"#
    );
    assert_eq!(
        t.ok("get_import_settings", json!({}))["settings"]["auto_import_minutes"],
        15,
        "the defaults until it is fixed"
    );
}

#[test]
fn import_browsers_refuses_profiles_that_were_not_found() {
    let t = TestApp::start(|_| {});
    assert_eq!(
        t.err_kind("import_browsers", json!({"ids": ["/etc/passwd"]})),
        "invalid_input"
    );
    let many: Vec<String> = (0..101).map(|i| format!("/p{i}")).collect();
    assert_eq!(
        t.err_kind("import_browsers", json!({ "ids": many })),
        "invalid_input"
    );
    assert_eq!(t.store().visit_count().unwrap(), 0, "nothing imported");
}

#[test]
fn a_picked_history_file_is_imported_and_a_wrong_file_changes_nothing() {
    let t = TestApp::start(|_| {});
    // Cancelled: nothing happens.
    assert_eq!(t.ok("import_history_file", json!({})), serde_json::Value::Null);
    // A real Chromium history file, under a name that says nothing: what it is comes from its
    // tables.
    let copy = t.dir.path().join("copied-from-my-laptop.db");
    std::fs::copy(
        concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/chromium-History"),
        &copy,
    )
    .unwrap();
    *t.open_from.lock().unwrap() = Some(copy);
    let v = t.ok("import_history_file", json!({}));
    assert_eq!(v["browser"], "chrome", "{v}");
    assert!(v["imported"].as_u64().unwrap() > 0, "{v}");
    let visits = t.store().visit_count().unwrap();
    assert_eq!(visits as u64, v["imported"].as_u64().unwrap());
    // Not a history file: refused, nothing written.
    let wrong = t.dir.path().join("notes.txt");
    std::fs::write(&wrong, b"just some notes").unwrap();
    *t.open_from.lock().unwrap() = Some(wrong);
    assert_eq!(t.err_kind("import_history_file", json!({})), "invalid_input");
    assert_eq!(t.store().visit_count().unwrap(), visits);
}
