//! Command tests on tauri's mock runtime: the real config, capabilities and command wiring, a real
//! SQLite file in a temp dir, the real worker (built-in rules), and IPC calls made the way the
//! webview makes them. No display needed.

mod capture;
mod commands;
mod first_paint;
mod forget;
mod import;
mod limits;
mod live;
mod review;
mod settings;
mod sync;
#[path = "../../../tests/support/sync.rs"]
mod sync_support;
mod sync_view;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use sitetrail::{NewVisit, Store};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, mock_builder, MockRuntime, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::{WebviewWindow, WebviewWindowBuilder};
use tokio::sync::oneshot;

use crate::cmd::export::{SavePicker, SaveRequest};
use crate::secret::KeyStore;
use crate::state::AppPaths;
use crate::Startup;

/// A running app on the mock runtime with its temp dir.
pub struct TestApp {
    pub app: tauri::App<MockRuntime>,
    pub window: WebviewWindow<MockRuntime>,
    pub dir: tempfile::TempDir,
    pub paths: AppPaths,
    /// What the fake save dialog answers.
    pub save_to: Arc<Mutex<Option<PathBuf>>>,
    /// What the fake save dialog was asked.
    pub asked: Arc<Mutex<Vec<SaveRequest>>>,
    /// What the fake open dialog answers.
    pub open_from: Arc<Mutex<Option<PathBuf>>>,
}

/// The app's origin as the real webview sends it (local capabilities only match it).
fn app_url() -> tauri::Url {
    let url = if cfg!(any(windows, target_os = "android")) {
        "http://tauri.localhost"
    } else {
        "tauri://localhost"
    };
    url.parse().expect("app url")
}

impl TestApp {
    /// Every `STORE_CHANGED` event the UI would hear from now on, as its JSON payload.
    fn store_changes(&self) -> Arc<Mutex<Vec<Value>>> {
        use tauri::Listener;
        let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
        let log = seen.clone();
        self.app.listen_any(crate::events::STORE_CHANGED, move |e| {
            log.lock()
                .unwrap()
                .push(serde_json::from_str(e.payload()).unwrap());
        });
        seen
    }

    /// An app over a fresh database; `seed` runs on it before the app (and its worker) starts.
    pub fn start(seed: impl FnOnce(&Store)) -> TestApp {
        TestApp::start_with(seed, |_| {})
    }

    /// [`TestApp::start`] with the paths changed by `adjust` first.
    pub fn start_with(seed: impl FnOnce(&Store), adjust: impl FnOnce(&mut AppPaths)) -> TestApp {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut paths = AppPaths::under(dir.path());
        adjust(&mut paths);
        let store = Store::open(&paths.db).expect("open store");
        seed(&store);
        drop(store);

        let app = crate::builder(mock_builder())
            .build(crate::context())
            .expect("build mock app");
        let save_to: Arc<Mutex<Option<PathBuf>>> = Arc::new(Mutex::new(None));
        let asked = Arc::new(Mutex::new(Vec::new()));
        let (answer, log) = (save_to.clone(), asked.clone());
        let picker = SavePicker(Box::new(move |req: SaveRequest| {
            log.lock().unwrap().push(req);
            let (tx, rx) = oneshot::channel();
            let _ = tx.send(answer.lock().unwrap().clone());
            rx
        }));
        let open_from: Arc<Mutex<Option<PathBuf>>> = Arc::new(Mutex::new(None));
        let open_answer = open_from.clone();
        let open_picker = crate::cmd::import::OpenPicker(Box::new(move || {
            let (tx, rx) = oneshot::channel();
            let _ = tx.send(open_answer.lock().unwrap().clone());
            rx
        }));
        crate::setup(
            app.handle(),
            Startup {
                paths: paths.clone(),
                keys: KeyStore::memory_only("no keyring in tests"),
                picker,
                open_picker,
            },
        )
        .expect("setup");
        let main = app
            .config()
            .app
            .windows
            .iter()
            .find(|w| w.label == "main")
            .expect("main window in config")
            .clone();
        let window = WebviewWindowBuilder::from_config(&app, &main)
            .expect("window from config")
            .build()
            .expect("mock main window");
        TestApp {
            app,
            window,
            dir,
            paths,
            save_to,
            asked,
            open_from,
        }
    }

    /// Invokes `cmd` through IPC; `Err` is the serialized error.
    pub fn invoke(&self, cmd: &str, args: Value) -> Result<Value, Value> {
        get_ipc_response(
            &self.window,
            InvokeRequest {
                cmd: cmd.into(),
                callback: CallbackFn(0),
                error: CallbackFn(1),
                url: app_url(),
                body: InvokeBody::Json(args),
                headers: Default::default(),
                invoke_key: INVOKE_KEY.to_string(),
            },
        )
        .map(|body| body.deserialize::<Value>().expect("json response"))
    }

    /// Invokes `cmd` and expects success.
    pub fn ok(&self, cmd: &str, args: Value) -> Value {
        self.invoke(cmd, args)
            .unwrap_or_else(|e| panic!("{cmd} failed: {e}"))
    }

    /// Invokes `cmd`, expects a `{kind, message}` error, returns its kind (and checks the message
    /// is a sentence, not empty).
    pub fn err_kind(&self, cmd: &str, args: Value) -> String {
        let e = self
            .invoke(cmd, args)
            .expect_err(&format!("{cmd} should have failed"));
        let kind = e["kind"]
            .as_str()
            .unwrap_or_else(|| panic!("not {{kind, message}}: {e}"));
        assert!(e["message"].as_str().is_some_and(|m| m.len() > 5), "{e}");
        kind.to_string()
    }

    /// A second handle on the app's database, as the CLI would open it.
    pub fn store(&self) -> Store {
        Store::open(&self.paths.db).expect("open store")
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        crate::shutdown(self.app.handle());
    }
}

/// Records a visit to `https://{domain}/page` now.
pub fn visit(store: &Store, domain: &str, title: &str) {
    visit_ago(store, domain, title, 0);
}

/// Records a visit to `https://{domain}/page` `minutes` minutes ago (visits within one
/// millisecond have no defined order, so ordering tests space them out).
pub fn visit_ago(store: &Store, domain: &str, title: &str, minutes: u64) {
    store
        .record_visit(&NewVisit {
            url: &format!("https://{domain}/page"),
            title: Some(title),
            visited_at: store.now().minus(Duration::from_secs(60 * minutes)),
            source: "test",
            source_visit_id: None,
        })
        .expect("record visit");
}

/// Records a visit and fails its website's job for good (as after the last attempt).
pub fn seed_failed(store: &Store, domain: &str, error: &str) {
    visit(store, domain, domain);
    failed::fail_pending_job(store, error, 1);
}

#[path = "../../tests/support/failed.rs"]
mod failed;

#[path = "../../../tests/support/poll.rs"]
mod poll;

/// Polls `f` every 20 ms until it returns Some; panics after `timeout`.
pub fn wait_for<T>(timeout: Duration, f: impl FnMut() -> Option<T>) -> T {
    poll::poll(timeout, Duration::from_millis(20), f).unwrap_or_else(|| panic!("timed out after {timeout:?}"))
}
