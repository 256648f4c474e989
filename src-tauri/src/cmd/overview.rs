//! The overview: queue counts, pause state, how long the backlog will take, and the summaries
//! behind the charts. The queue part is cheap (served by the outbox's live index) and refreshed on
//! every outbox change; the summaries scan a month of visits and are refreshed less often.

use std::time::{Duration, Instant};

use serde::Serialize;
use sitetrail::history::{CategoryCount, TopWebsite};
use sitetrail::outbox::QueueStatus;
use sitetrail::worker::state::{CrashStatus, PauseStatus};
use sitetrail::Category;
use tauri::State;

use super::lib;
use crate::error::CmdResult;
use crate::state::AppState;

/// The queue panel.
#[derive(Clone, Debug, Serialize)]
pub struct QueueView {
    /// Job counts.
    pub queue: QueueStatus,
    /// The pause, if the worker is paused: `{kind, reason, until, provider}` (the library's
    /// status, which `sitetrail status --json` gives as flat keys).
    pub pause: Option<PauseStatus>,
    /// The worker's crashes, if it ever crashed: `{count, at, message}`.
    pub crash: Option<CrashStatus>,
    /// False while this build cannot report pauses.
    pub pause_supported: bool,
    /// Jobs finished per minute recently (measured), once known.
    pub rate_per_minute: Option<f64>,
    /// Seconds until the backlog is done at that rate (or at the configured pace).
    pub eta_seconds: Option<f64>,
    /// `measured` or `configured`: what the ETA is based on.
    pub eta_basis: Option<sitetrail::backlog::EtaBasis>,
    /// The classifier in use.
    pub provider: String,
    /// Why the saved classifier settings could not be used, if they could not.
    pub problem: Option<String>,
    /// All visits recorded.
    pub visits: i64,
}

/// Queue counts, pause state and backlog ETA.
#[tauri::command]
pub async fn get_queue(state: State<'_, AppState>) -> CmdResult<QueueView> {
    let (queue, visits, worker) = lib(state
        .store
        .run(|s| Ok((s.queue_status()?, s.visit_count()?, s.worker_status()?)))
        .await)?;
    let done = queue.completed + queue.failed;
    let measured = state
        .rate
        .lock()
        .ok()
        .and_then(|mut m| m.sample(Instant::now(), done));
    let eta = sitetrail::backlog::estimate(&queue, &state.worker_config(), measured);
    Ok(QueueView {
        queue,
        pause: worker.pause,
        crash: worker.crash,
        pause_supported: true,
        rate_per_minute: measured.map(|r| r * 60.0),
        eta_seconds: eta.map(|e| e.seconds),
        eta_basis: eta.map(|e| e.basis),
        provider: state.provider_name(),
        problem: state.worker_problem(),
        visits,
    })
}

/// The charts' data.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Visits per category over the last 7 days.
    pub categories_7d: Vec<CategoryCount>,
    /// Visits per category over the last 30 days.
    pub categories_30d: Vec<CategoryCount>,
    /// The most visited websites over the last 30 days.
    pub top_websites: Vec<TopWebsite>,
}

/// Most websites in the overview's top list.
pub const TOP_WEBSITES: usize = 10;

/// Visits per category (7 and 30 days) and the top websites (30 days).
#[tauri::command]
pub async fn get_summary(state: State<'_, AppState>) -> CmdResult<Summary> {
    lib(state
        .store
        .run(|s| {
            let now = s.now();
            let day = Duration::from_secs(86_400);
            Ok(Summary {
                categories_7d: s.category_counts(now.minus(day * 7))?,
                categories_30d: s.category_counts(now.minus(day * 30))?,
                top_websites: s.top_websites(now.minus(day * 30), TOP_WEBSITES)?,
            })
        })
        .await)
}

/// The page has drawn its first view with today's figures: logs where the start's time went
/// (once per process; [`crate::startup`]).
#[tauri::command]
pub fn first_view_painted(times: crate::startup::PageTimes) -> CmdResult<()> {
    crate::startup::first_view_painted(&times).map(|_| ())
}

/// A category as the UI shows it.
#[derive(Clone, Debug, Serialize)]
pub struct CategoryInfo {
    /// Stable id.
    pub id: &'static str,
    /// Readable name.
    pub name: &'static str,
}

/// Every category, in display order.
#[tauri::command]
pub fn list_categories() -> Vec<CategoryInfo> {
    Category::ALL
        .iter()
        .map(|c| CategoryInfo {
            id: c.id(),
            name: c.name(),
        })
        .collect()
}

/// The system's locale and the desktop's clock setting, for the UI's dates and times
/// ([`crate::locale`]).
#[tauri::command]
pub async fn get_locale() -> CmdResult<crate::locale::LocaleInfo> {
    lib(sitetrail::blocking::run(|| Ok(crate::locale::system())).await)
}

/// Where the app keeps its files, for the settings view.
#[derive(Clone, Debug, Serialize)]
pub struct AppInfo {
    /// The database file.
    pub db_path: String,
    /// The settings directory.
    pub config_dir: String,
    /// The app's version.
    pub version: &'static str,
    /// The open data the built-in classifier ships, with its licence, for the About section.
    pub open_data: Vec<OpenData>,
}

/// A data set shipped with the app and the terms it comes under.
#[derive(Clone, Debug, Serialize)]
pub struct OpenData {
    /// What it is.
    pub name: &'static str,
    /// How many entries.
    pub entries: usize,
    /// What an entry is (`domains`, `words`, `weights`).
    pub unit: &'static str,
    /// Where it comes from and under which licence, in a few words.
    pub source: &'static str,
    /// The attribution text the licence asks for.
    pub attribution: &'static str,
}

/// Paths, version and the open data it ships.
#[tauri::command]
pub fn get_app_info(state: State<'_, AppState>) -> AppInfo {
    AppInfo {
        db_path: state.paths.db.display().to_string(),
        config_dir: state.paths.config_dir.display().to_string(),
        version: env!("CARGO_PKG_VERSION"),
        open_data: vec![
            OpenData {
                name: "Open domain table (the built-in classifier's second lookup)",
                entries: sitetrail::classify::open_table::ROWS,
                unit: "domains",
                source: sitetrail::classify::open_table::SOURCE_SHORT,
                attribution: sitetrail::classify::open_table::ATTRIBUTION.trim(),
            },
            OpenData {
                name: "Word list (the learned classifier's segmentation of site names)",
                entries: sitetrail::classify::model::segment::ROWS,
                unit: "words",
                source: sitetrail::classify::model::segment::SOURCE_SHORT,
                attribution: sitetrail::classify::model::segment::ATTRIBUTION.trim(),
            },
            OpenData {
                name: "Learned classifier weights (the built-in classifier's model)",
                entries: sitetrail::classify::model::WEIGHT_COUNT,
                unit: "weights",
                source: sitetrail::classify::model::SOURCE_SHORT,
                attribution: sitetrail::classify::model::ATTRIBUTION.trim(),
            },
        ],
    }
}
