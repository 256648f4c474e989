//! No command blocks the async runtime or the UI thread.
//!
//! The app runs here on tauri's mock runtime with a **current-thread** tokio runtime driven by
//! one thread: any blocking call made by async code (a command, the worker, a schedule) lands on
//! that thread. It and the test's own thread (which plays the UI's main thread: tauri runs
//! synchronous commands there) are marked with `sitetrail::blocking::forbid_on_this_thread`, and
//! every blocking function in the library and the app (a pooled connection, a settings file, the
//! keyring, profile detection) reports itself to the probe. Every command is called; none may
//! be reported.

// Test helpers may panic: a panic is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::cast_possible_truncation)]

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};
use sitetrail::{NewVisit, Store};
use sitetrail_app::cmd::export::{SavePicker, SaveRequest};
use sitetrail_app::secret::KeyStore;
use sitetrail_app::state::AppPaths;
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, mock_builder, MockRuntime, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::{WebviewWindow, WebviewWindowBuilder};

#[path = "../../tests/support/poll.rs"]
mod poll;

static BLOCKED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The commands `generate_handler!` registers in `src-tauri/src/lib.rs`, by name, read from the
/// source: a command added there and not called here fails the test.
fn registered_commands() -> BTreeSet<&'static str> {
    let src = include_str!("../src/lib.rs");
    let start = src
        .find("generate_handler![")
        .expect("lib.rs registers its commands with generate_handler!");
    let body = &src[start + "generate_handler![".len()..];
    let body = &body[..body.find(']').expect("the list ends")];
    body.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| e.rsplit("::").next().unwrap_or(e))
        .collect()
}

fn probe(what: &'static str) {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("?").to_owned();
    BLOCKED.lock().unwrap().push(format!("{what} on thread {name}"));
}

fn invoke(window: &WebviewWindow<MockRuntime>, cmd: &str, args: Value) -> Result<Value, Value> {
    get_ipc_response(
        window,
        InvokeRequest {
            cmd: cmd.into(),
            callback: CallbackFn(0),
            error: CallbackFn(1),
            url: "tauri://localhost".parse().unwrap(),
            body: InvokeBody::Json(args),
            headers: Default::default(),
            invoke_key: INVOKE_KEY.to_string(),
        },
    )
    .map(|b| b.deserialize::<Value>().unwrap())
}

#[test]
fn no_command_blocks_the_async_runtime_or_the_ui_thread() {
    sitetrail::blocking::set_probe(probe);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("blocking-pool")
        .build()
        .unwrap();
    tauri::async_runtime::set(rt.handle().clone());
    let driver = std::thread::Builder::new()
        .name("async-runtime".into())
        .spawn(move || {
            sitetrail::blocking::forbid_on_this_thread(true);
            rt.block_on(std::future::pending::<()>());
        })
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let mut paths = AppPaths::under(dir.path());
    // A stand-in `sitetrail` command, so that linking a browser runs to its end.
    let cli = dir.path().join("bin/sitetrail");
    std::fs::create_dir_all(cli.parent().unwrap()).unwrap();
    std::fs::write(&cli, b"#!/bin/sh\n").unwrap();
    paths.cli = Some(cli);
    let store = Store::open(&paths.db).unwrap();
    store
        .record_visit(&NewVisit {
            url: "https://shop.example/a",
            title: Some("A shop"),
            visited_at: store.now(),
            source: "test",
            source_visit_id: None,
        })
        .unwrap();
    drop(store);

    let app = sitetrail_app::builder(mock_builder())
        .build(sitetrail_app::context())
        .unwrap();
    let export_to = dir.path().join("export.csv");
    let picker = SavePicker(Box::new(move |_req: SaveRequest| {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let _ = tx.send(Some(export_to.clone()));
        rx
    }));
    let open_picker = sitetrail_app::cmd::import::OpenPicker(Box::new(|| {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/chromium-History");
        let _ = tx.send(Some(std::path::PathBuf::from(fixture)));
        rx
    }));
    sitetrail_app::setup(
        app.handle(),
        sitetrail_app::Startup {
            paths,
            keys: KeyStore::memory_only("no keyring in tests"),
            picker,
            open_picker,
        },
    )
    .unwrap();
    let main = app.config().app.windows[0].clone();
    let window = WebviewWindowBuilder::from_config(&app, &main)
        .unwrap()
        .build()
        .unwrap();
    // From here this thread is the UI's main thread: synchronous commands run on it.
    sitetrail::blocking::forbid_on_this_thread(true);

    let form = json!({"provider": "builtin", "fixed_delay_ms": 50, "max_attempts": 4});
    let calls: Vec<(&str, Value)> = vec![
        ("get_app_info", json!({})),
        ("get_locale", json!({})),
        ("list_categories", json!({})),
        ("get_queue", json!({})),
        ("get_summary", json!({})),
        ("get_period_overview", json!({"first": "2026-11-30", "days": 7})),
        ("get_timeline", json!({"day": "2026-11-30"})),
        ("get_website_page", json!({"domain": "shop.example"})),
        ("list_history", json!({"query": {"search": "shop"}})),
        (
            "set_category",
            json!({"domain": "shop.example", "category": "shopping"}),
        ),
        ("reclassify_website", json!({"domain": "shop.example"})),
        ("list_review", json!({})),
        (
            "confirm_category",
            json!({"domain": "shop.example", "category": "shopping"}),
        ),
        (
            "retry_jobs",
            json!({"ids": ["01890000-0000-7000-8000-000000000000"]}),
        ),
        ("list_failed_jobs", json!({})),
        ("retry_all_failed", json!({})),
        (
            "get_jobs",
            json!({"ids": ["01890000-0000-7000-8000-000000000000"]}),
        ),
        ("get_settings", json!({})),
        ("save_settings", json!({ "settings": form })),
        ("test_connection", json!({ "settings": form })),
        ("set_api_key", json!({"key": "sk-blocking-test"})),
        ("delete_api_key", json!({})),
        ("resume_worker", json!({})),
        ("export_data", json!({"kind": "history", "format": "csv"})),
        ("detect_browsers", json!({})),
        ("describe_source", json!({"source": "chrome:0000000000000000"})),
        ("import_browsers", json!({"ids": []})),
        ("import_history_file", json!({})),
        ("get_import_settings", json!({})),
        (
            "save_import_settings",
            json!({"settings": {"auto_import_minutes": 30, "import_profiles": []}}),
        ),
        ("get_browser_links", json!({})),
        ("link_browser", json!({"browser": "chromium"})),
        ("unlink_browser", json!({"browser": "chromium"})),
        ("get_time_summary", json!({})),
        (
            "get_visit_times",
            json!({"ids": ["01890000-0000-7000-8000-000000000000"]}),
        ),
        ("get_favicons", json!({"domains": ["shop.example"]})),
        ("get_search_index", json!({})),
        // Refused before anything is opened: no browser starts in this test.
        ("open_url", json!({"url": "file:///etc/passwd"})),
        (
            "forget_visits",
            json!({"ids": ["01890000-0000-7000-8000-000000000000"]}),
        ),
        (
            "forget_website",
            json!({"domain": "absent.example", "block": false}),
        ),
        ("block_domain", json!({"domain": "ads.example"})),
        ("list_blocked", json!({})),
        ("unblock_domain", json!({"domain": "ads.example"})),
        // Sync against a hub that cannot be reached (port 9 on the loopback: nothing listens).
        ("get_sync_status", json!({})),
        (
            "sync_setup",
            json!({"hub": "http://127.0.0.1:9", "deviceName": "test"}),
        ),
        (
            "sync_join",
            json!({"hub": "http://127.0.0.1:9", "deviceName": null, "recoveryKey": "abandon"}),
        ),
        ("sync_now", json!({})),
        ("sync_devices", json!({})),
        ("sync_leave", json!({"force": true})),
        ("sync_remove_device", json!({"device": "0123"})),
        ("sync_rotate_key", json!({"confirm": "01234567"})),
        ("sync_delete_account", json!({"confirm": "01234567"})),
        // Limits and goals, the weekly report, focus sessions and reminders.
        (
            "set_limit",
            json!({"target": "shop.example", "kind": "max", "period": "day", "duration": "30m"}),
        ),
        ("list_limits", json!({})),
        ("get_week_report", json!({"day": null})),
        (
            "remove_limit",
            json!({"target": "shop.example", "kind": "max", "period": "day"}),
        ),
        ("start_focus", json!({"duration": "50m", "blocks": ["social"]})),
        ("get_focus", json!({})),
        ("stop_focus", json!({})),
        (
            "set_reminders",
            json!({"enabled": true, "warnPercent": 80, "quiet": "22:00-07:00"}),
        ),
        ("get_reminders", json!({})),
        // The page's report of its first paint (logged by the shell).
        (
            "first_view_painted",
            json!({"times": {"navigation": 1.0e12, "painted": 1.0e12 + 900.0, "marks": []}}),
        ),
    ];
    // Every command the app registers is called here (forget_recent last, below).
    let called: BTreeSet<&str> = calls.iter().map(|c| c.0).chain(["forget_recent"]).collect();
    assert_eq!(
        called,
        registered_commands(),
        "the commands called here and those src-tauri/src/lib.rs registers"
    );
    for (cmd, args) in calls {
        // Success or a {kind, message} error: either way the command ran to its end.
        let answer = invoke(&window, cmd, args);
        if let Err(e) = &answer {
            assert!(e["kind"].is_string(), "{cmd}: {e}");
        }
    }
    // The worker classifies the website again on the same runtime.
    sitetrail::blocking::forbid_on_this_thread(false);
    let store = Store::open(dir.path().join("data/sitetrail.db")).unwrap();
    let classified = poll::poll(Duration::from_secs(20), Duration::from_millis(50), || {
        store.website("shop.example").unwrap().category
    });
    assert!(
        classified.is_some(),
        "the worker never classified the website again"
    );
    // Last, as it forgets the seeded visits.
    sitetrail::blocking::forbid_on_this_thread(true);
    let answer = invoke(&window, "forget_recent", json!({"period": "hour"}));
    assert!(answer.is_ok(), "forget_recent: {answer:?}");
    sitetrail::blocking::forbid_on_this_thread(false);
    assert!(dir.path().join("export.csv").exists(), "the export ran");
    sitetrail_app::shutdown(app.handle());
    let blocked = BLOCKED.lock().unwrap().clone();
    assert!(
        blocked.is_empty(),
        "blocking work on the async runtime or the UI thread: {blocked:#?}"
    );
    drop(driver);
}
