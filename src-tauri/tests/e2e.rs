//! End-to-end tests: the real app binary in a real WebKitGTK window under Xvfb, driven over
//! WebDriver (tauri-driver + WebKitWebDriver), on a database in a temp dir (`SITETRAIL_DB`,
//! `XDG_CONFIG_HOME`, `XDG_DATA_HOME`). Each test saves screenshots under target/screenshots/.
//!
//! The tests run one at a time (a lock): each starts a display, a driver and a WebKit process,
//! which is plenty for a 2-core machine.

// Test helpers may panic: a panic is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::cast_possible_truncation)]

#[path = "support/failed.rs"]
mod failed;
#[path = "e2e/fake_ai.rs"]
mod fake_ai;
#[path = "e2e/first_run.rs"]
mod first_run;
#[path = "e2e/harness.rs"]
mod harness;
#[path = "e2e/history.rs"]
mod history;
#[path = "e2e/limits.rs"]
mod limits;
#[path = "e2e/overview.rs"]
mod overview;
#[path = "e2e/polish.rs"]
mod polish;
#[path = "e2e/review.rs"]
mod review;
#[path = "e2e/rows.rs"]
mod rows;
#[path = "e2e/scenarios.rs"]
mod scenarios;
#[path = "e2e/screenshots.rs"]
mod screenshots;
#[path = "e2e/settings.rs"]
mod settings;
#[path = "e2e/sync.rs"]
mod sync;
#[path = "../../tests/support/sync.rs"]
mod sync_support;
#[path = "e2e/time_spent.rs"]
mod time_spent;

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use sitetrail::{NewVisit, Store};

static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the e2e lock (a failed test poisons it; the next one still runs).
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A temp home for one app run: database, config and data dirs.
pub struct AppDirs {
    pub dir: tempfile::TempDir,
    pub db: PathBuf,
    pub config: PathBuf,
    pub data: PathBuf,
}

impl AppDirs {
    pub fn create() -> AppDirs {
        let dir = tempfile::tempdir().expect("temp dir");
        let (config, data) = (dir.path().join("config"), dir.path().join("data"));
        AppDirs {
            db: data.join("sitetrail/sitetrail.db"),
            config,
            data,
            dir,
        }
    }

    /// The environment that points the app at these dirs.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("SITETRAIL_DB", self.db.display().to_string()),
            ("XDG_CONFIG_HOME", self.config.display().to_string()),
            ("XDG_DATA_HOME", self.data.display().to_string()),
            ("SITETRAIL_LOG", "sitetrail=info,sitetrail_app=info".into()),
        ]
    }

    /// Where the driver's and the app's output goes.
    pub fn log(&self) -> PathBuf {
        self.dir.path().join("app.log")
    }

    pub fn store(&self) -> Store {
        Store::open(&self.db).expect("open store")
    }
}

/// Records a visit to `https://{domain}/{path}` `minutes_ago` minutes ago.
pub fn visit(store: &Store, domain: &str, path: &str, title: &str, minutes_ago: i64) {
    let at = store
        .now()
        .minus(std::time::Duration::from_secs(60 * minutes_ago as u64));
    store
        .record_visit(&NewVisit {
            url: &format!("https://{domain}/{path}"),
            title: Some(title),
            visited_at: at,
            source: "e2e",
            source_visit_id: None,
        })
        .expect("record visit");
}

/// Records a visit and fails its website's job for good; returns the job id.
pub fn seed_failed(store: &Store, domain: &str, error: &str, attempts: u32) -> String {
    visit(store, domain, "", domain, 5);
    failed::fail_pending_job(store, error, attempts)
}
