//! Browser import: the profiles found on this computer, importing them with progress, and the
//! auto-import settings.

use serde::{Deserialize, Serialize};
use sitetrail::import;
use tauri::{AppHandle, Runtime, State};

use crate::error::{CmdError, CmdResult};
use crate::import::{choose, ImportSettings, ProfileResult, ProfileView};
use crate::state::AppState;

async fn detected() -> CmdResult<Vec<import::DetectedProfile>> {
    Ok(sitetrail::blocking::run(|| Ok(import::detect_profiles())).await?)
}

/// The browser profiles found on this computer.
#[tauri::command]
pub async fn detect_browsers() -> CmdResult<Vec<ProfileView>> {
    Ok(detected().await?.iter().map(ProfileView::from).collect())
}

/// Imports the named profiles (every detected one if `ids` is empty), sending `import-progress`
/// events; returns what each profile gave.
#[tauri::command]
pub async fn import_browsers<R: Runtime>(
    app: AppHandle<R>,
    ids: Vec<String>,
) -> CmdResult<Vec<ProfileResult>> {
    if ids.len() > 100 {
        return Err(CmdError::invalid("Name at most 100 profiles."));
    }
    let profiles = choose(detected().await?, &ids)?;
    if profiles.is_empty() {
        return Err(CmdError::invalid(
            "No browser profile was found on this computer.",
        ));
    }
    crate::import::run(&app, profiles).await
}

/// The import settings with the profiles to choose from.
#[derive(Clone, Debug, Serialize)]
pub struct ImportView {
    /// Saved settings.
    pub settings: ImportSettings,
    /// Profiles found now.
    pub profiles: Vec<ProfileView>,
}

/// The auto-import settings and the detected profiles.
#[tauri::command]
pub async fn get_import_settings(state: State<'_, AppState>) -> CmdResult<ImportView> {
    let dir = state.paths.config_dir.clone();
    let settings = sitetrail::blocking::run(move || Ok(ImportSettings::load(&dir))).await??;
    Ok(ImportView {
        settings,
        profiles: detected().await?.iter().map(ProfileView::from).collect(),
    })
}

/// The form's import fields.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportForm {
    /// Minutes between automatic imports; 0: never.
    pub auto_import_minutes: u32,
    /// Profiles to import (ids from `detect_browsers`); empty: all.
    pub import_profiles: Vec<String>,
}

/// Validates and saves the auto-import settings (applied at the schedule's next tick).
#[tauri::command]
pub async fn save_import_settings(state: State<'_, AppState>, settings: ImportForm) -> CmdResult<ImportView> {
    let found = detected().await?;
    choose(found.clone(), &settings.import_profiles)?;
    let s = ImportSettings {
        auto_import_minutes: settings.auto_import_minutes,
        import_profiles: settings.import_profiles,
    };
    let dir = state.paths.config_dir.clone();
    let s = sitetrail::blocking::run(move || Ok(s.save(&dir).map(|()| s))).await??;
    Ok(ImportView {
        settings: s,
        profiles: found.iter().map(ProfileView::from).collect(),
    })
}
