//! Browser import from the app: the auto-import schedule and one import run with progress events.
//!
//! The import itself is the library's (`sitetrail::import`): each profile is copied to a private
//! snapshot and read incrementally from its cursor, so a run only reads what is new. Runs never
//! overlap (a second request while one runs is refused), and they run on a blocking thread.
//! Auto-import is on by default (every 15 minutes, every detected browser) and skips the browsers
//! linked to this database, whose visits the extension records live. How often and which
//! browsers are two settings of the one settings file (`auto_import_minutes`, `import_profiles`
//! in `sitetrail::settings`, shared with `sitetrail daemon`); the app's old `app.json` is moved
//! into it at start (`crate::migrate`).

use serde::Serialize;
use sitetrail::auto_import::{self as schedule, AutoImport};
use sitetrail::import::{self, DetectedProfile, ImportOptions};
use sitetrail::settings::{Environment, Scope, Settings};
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::error::{CmdError, CmdResult};
use crate::events::IMPORT_PROGRESS;
use crate::state::AppState;

/// The import settings as the import form shows them: the saved values of the two settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ImportSettings {
    /// Minutes between automatic imports; 0: never.
    pub auto_import_minutes: u32,
    /// History files (profile ids) to import; empty: every detected profile.
    pub import_profiles: Vec<String>,
}

impl From<&Settings> for ImportSettings {
    fn from(s: &Settings) -> Self {
        ImportSettings {
            auto_import_minutes: s.auto_import_minutes,
            import_profiles: s.import_profiles.clone(),
        }
    }
}

/// A detected browser profile as the UI shows it.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileView {
    /// Stable id: the history file's path.
    pub id: String,
    /// "Google Chrome (Default)".
    pub name: String,
    /// `chrome`, `firefox` or `safari`.
    pub browser: &'static str,
}

impl From<&DetectedProfile> for ProfileView {
    fn from(p: &DetectedProfile) -> Self {
        ProfileView {
            id: p.path.display().to_string(),
            name: format!("{} ({})", p.product, p.profile),
            browser: p.browser.as_str(),
        }
    }
}

/// Progress of an import run, sent as [`IMPORT_PROGRESS`] events.
#[derive(Clone, Debug, Serialize)]
pub struct ImportProgress {
    /// The profile being imported.
    pub profile: String,
    /// Visits read in this profile so far.
    pub read: u64,
    /// Visits to read in this profile.
    pub total: u64,
    /// Profiles finished.
    pub done_profiles: usize,
    /// Profiles in this run.
    pub profiles: usize,
}

/// What a run did, per profile.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileResult {
    /// The profile.
    pub profile: ProfileView,
    /// Visits stored.
    pub imported: u64,
    /// Websites created.
    pub new_websites: u64,
    /// Visits skipped (not web pages, bad rows).
    pub skipped: u64,
    /// Why the profile could not be imported, if it could not.
    pub error: Option<String>,
}

/// The profiles to import: `ids` if given (each must be detected), else the saved choice, else all.
pub fn choose(detected: Vec<DetectedProfile>, ids: &[String]) -> CmdResult<Vec<DetectedProfile>> {
    if ids.is_empty() {
        return Ok(detected);
    }
    let mut chosen = Vec::with_capacity(ids.len());
    for id in ids {
        match detected.iter().find(|p| p.path.display().to_string() == *id) {
            Some(p) => chosen.push(p.clone()),
            None => {
                return Err(CmdError::invalid(format!(
                    "{:?} is not a browser profile found on this computer.",
                    sitetrail::error::truncate_chars(id, 120)
                )))
            }
        }
    }
    Ok(chosen)
}

/// Imports `profiles`, sending progress events; refuses to start while another run goes.
pub async fn run<R: Runtime>(
    app: &AppHandle<R>,
    profiles: Vec<DetectedProfile>,
) -> CmdResult<Vec<ProfileResult>> {
    let state = app.state::<AppState>();
    let Some(slot) = state.imports.try_begin() else {
        return Err(CmdError::new(
            sitetrail::ErrorKind::Busy,
            "An import is already running; wait for it to finish.",
        ));
    };
    let store = state.store.clone();
    let emitter = app.clone();
    let count = profiles.len();
    let result = sitetrail::blocking::run(move || {
        // The slot is freed when this blocking work ends, whatever happens to the command.
        let _slot = slot;
        let mut done = 0usize;
        let mut last = String::new();
        Ok(
            import::import_detected(&store, profiles, &ImportOptions::default(), &mut |p, progress| {
                let name = ProfileView::from(p).name;
                if last != name && !last.is_empty() {
                    done += 1;
                }
                last.clone_from(&name);
                let _ = emitter.emit(
                    IMPORT_PROGRESS,
                    ImportProgress {
                        profile: name,
                        read: progress.read,
                        total: progress.total,
                        done_profiles: done,
                        profiles: count,
                    },
                );
            })
            .into_iter()
            .map(|r| {
                let profile = ProfileView::from(&r.profile);
                match r.result {
                    Ok(rep) => ProfileResult {
                        profile,
                        imported: rep.imported,
                        new_websites: rep.new_websites,
                        skipped: rep.skipped.total,
                        error: None,
                    },
                    Err(e) => ProfileResult {
                        profile,
                        imported: 0,
                        new_websites: 0,
                        skipped: 0,
                        error: Some(e.to_string()),
                    },
                }
            })
            .collect::<Vec<_>>(),
        )
    })
    .await;
    result.map_err(CmdError::from)
}

/// The auto-import schedule (the library's, `sitetrail::auto_import`, as `sitetrail daemon`
/// runs it): every `auto_import_minutes` (re-read from the settings file each round, so a change
/// in Settings applies at the next look), the chosen profiles are imported, except browsers
/// linked to this database.
pub async fn schedule<R: Runtime>(app: AppHandle<R>) {
    let Some(state) = app.try_state::<AppState>() else {
        return;
    };
    let state = state.inner().clone();
    let settings_file = state.paths.settings_file.clone();
    // The saved settings with the environment's values for the import only: a bad variable for
    // the classifier is the worker's problem, not a reason to stop importing.
    let settings = move || {
        let s = Settings::load(&settings_file)?.with_env_for(&Environment::from_process(), Scope::Import)?;
        Ok(AutoImport::from_settings(&s))
    };
    // The schedule ends with the app's runtime; nothing else stops it.
    let (_keep, stop) = tokio::sync::watch::channel(false);
    let round = |profiles: Vec<DetectedProfile>| {
        let app = app.clone();
        async move {
            match run(&app, profiles).await {
                Ok(results) => {
                    let n: u64 = results.iter().map(|r| r.imported).sum();
                    tracing::info!(imported = n, "auto-import done");
                }
                Err(e) => tracing::info!(error = %e, "auto-import skipped"),
            }
        }
    };
    schedule::run(
        state.paths.roots(),
        state.paths.db.clone(),
        settings,
        round,
        false,
        stop,
    )
    .await;
}
