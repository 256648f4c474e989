//! Import commands: settings round trip and bad input. (Importing a real Chromium profile is the
//! first-run end-to-end test, which can point the app's home directory at a fixture.)

use serde_json::json;

use super::TestApp;

#[test]
fn import_settings_round_trip_and_bad_values_are_refused() {
    let t = TestApp::start(|_| {});
    let v = t.ok("get_import_settings", json!({}));
    assert_eq!(
        v["settings"]["auto_import_minutes"], 15,
        "on by default, every 15 minutes"
    );
    assert!(v["profiles"].is_array());

    let v = t.ok(
        "save_import_settings",
        json!({"settings": {"auto_import_minutes": 30, "import_profiles": []}}),
    );
    assert_eq!(v["settings"]["auto_import_minutes"], 30);
    let saved = std::fs::read_to_string(t.paths.config_dir.join("app.json")).unwrap();
    assert!(saved.contains("30"), "{saved}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            mode(&t.paths.config_dir.join("app.json")),
            0o600,
            "private like the settings"
        );
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
