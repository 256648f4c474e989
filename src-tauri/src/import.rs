//! Browser import from the app: the app's own import settings (how often, which profiles), the
//! auto-import schedule, and one import run with progress events.
//!
//! The import itself is the library's (`sitetrail::import`): each profile is copied to a private
//! snapshot and read incrementally from its cursor, so a run only reads what is new. Runs never
//! overlap (a second request while one runs is refused), and they run on a blocking thread.
//! Auto-import is on by default (every 15 minutes, every detected browser) and skips the browsers
//! linked to this database, whose visits the extension records live.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sitetrail::auto_import::{self as schedule, AutoImport};
use sitetrail::import::{self, DetectedProfile, ImportOptions};
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::error::{CmdError, CmdResult};
use crate::events::IMPORT_PROGRESS;
use crate::state::AppState;

/// The app's import settings, saved as `app.json` beside the classifier settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ImportSettings {
    /// Minutes between automatic imports; 0: never.
    pub auto_import_minutes: u32,
    /// History files (profile ids) to import; empty: every detected profile.
    pub import_profiles: Vec<String>,
}

/// Minutes between automatic imports unless the user chose otherwise (the library's, shared with
/// `sitetrail daemon`).
pub const DEFAULT_AUTO_IMPORT_MINUTES: u32 = sitetrail::auto_import::DEFAULT_INTERVAL_MINUTES;

impl Default for ImportSettings {
    fn default() -> Self {
        ImportSettings {
            auto_import_minutes: DEFAULT_AUTO_IMPORT_MINUTES,
            import_profiles: Vec::new(),
        }
    }
}

/// Longest auto-import interval accepted: one week (the library's).
pub const MAX_AUTO_IMPORT_MINUTES: u32 = sitetrail::auto_import::MAX_INTERVAL_MINUTES;

impl ImportSettings {
    /// The file.
    pub fn path(config_dir: &Path) -> PathBuf {
        config_dir.join("app.json")
    }

    /// Loads the file; defaults if it does not exist.
    pub fn load(config_dir: &Path) -> CmdResult<ImportSettings> {
        sitetrail::blocking::note("settings file");
        let path = Self::path(config_dir);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                CmdError::invalid(format!(
                    "{} is not valid ({e}); fix it or delete it to start from defaults",
                    path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ImportSettings::default()),
            Err(e) => Err(sitetrail::Error::Io(e).into()),
        }
    }

    /// Validates and saves atomically (temp file, then rename), private to the user like the
    /// settings file (the file 0600, its folder 0700 if the app creates it: `fsutil`).
    pub fn save(&self, config_dir: &Path) -> CmdResult<()> {
        if self.auto_import_minutes > MAX_AUTO_IMPORT_MINUTES {
            return Err(CmdError::invalid(format!(
                "Import at least once a week (at most {MAX_AUTO_IMPORT_MINUTES} minutes)."
            )));
        }
        let text =
            serde_json::to_vec_pretty(self).map_err(|e| CmdError::from(sitetrail::Error::Io(e.into())))?;
        Ok(sitetrail::fsutil::write_atomically(
            &Self::path(config_dir),
            &text,
        )?)
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

/// At most one import at a time, owned by the app state. A run holds an [`ImportRun`] for as long
/// as its blocking work goes, and dropping it frees the slot, so a command whose future is
/// dropped (the window closed) cannot leave the slot taken for ever.
#[derive(Debug, Default)]
pub struct ImportSlot(Arc<AtomicBool>);

/// Proof that this run has the [`ImportSlot`]; frees it when dropped.
#[derive(Debug)]
pub struct ImportRun(Arc<AtomicBool>);

impl ImportSlot {
    /// Takes the slot, or `None` while another run has it.
    pub fn try_begin(&self) -> Option<ImportRun> {
        (!self.0.swap(true, Ordering::SeqCst)).then(|| ImportRun(self.0.clone()))
    }
}

impl Drop for ImportRun {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
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
/// runs it): every `auto_import_minutes` (re-read each round, so a change in Settings applies at
/// the next look), the chosen profiles are imported, except browsers linked to this database.
pub async fn schedule<R: Runtime>(app: AppHandle<R>) {
    let Some(state) = app.try_state::<AppState>() else {
        return;
    };
    let state = state.inner().clone();
    let config_dir = state.paths.config_dir.clone();
    let settings = move || {
        let s = ImportSettings::load(&config_dir).map_err(|e| sitetrail::Error::InvalidConfig(e.message))?;
        Ok(AutoImport {
            every: (s.auto_import_minutes > 0)
                .then(|| Duration::from_secs(60 * u64::from(s.auto_import_minutes))),
            profiles: s.import_profiles,
        })
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
