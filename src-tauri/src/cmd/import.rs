//! Browser import: the profiles found on this computer, importing them with progress, and the
//! auto-import settings (two settings of the one settings file, checked by their specs).

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

/// What a visit's source id is, as people say it ("Google Chrome, profile Default", "the Sitetrail
/// extension in Firefox"), from the profiles found on this computer.
#[tauri::command]
pub async fn describe_source(source: String) -> CmdResult<String> {
    if source.chars().count() > 200 {
        return Err(CmdError::invalid("A source id has at most 200 characters."));
    }
    let profiles = detected().await?;
    Ok(sitetrail::blocking::run(move || Ok(sitetrail::sources::describe_source(&source, &profiles))).await?)
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
    let saved = state.blocking(crate::state::Inner::load_settings).await?;
    Ok(ImportView {
        settings: ImportSettings::from(&saved),
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

/// Validates and saves the auto-import settings into the settings file, the other settings kept
/// (applied at the schedule's next tick). Each value is checked by its setting's spec, and each
/// profile must be one found on this computer.
#[tauri::command]
pub async fn save_import_settings(state: State<'_, AppState>, settings: ImportForm) -> CmdResult<ImportView> {
    let found = detected().await?;
    choose(found.clone(), &settings.import_profiles)?;
    let mut form = serde_json::Map::new();
    form.insert("auto_import_minutes".into(), settings.auto_import_minutes.into());
    form.insert("import_profiles".into(), settings.import_profiles.into());
    let layer = sitetrail::settings::Overrides::edit_from_json(&form)?;
    let saved = state
        .blocking(move |s| s.update_settings(|saved| saved.apply(&layer)))
        .await?;
    Ok(ImportView {
        settings: ImportSettings::from(&saved),
        profiles: found.iter().map(ProfileView::from).collect(),
    })
}

/// Asks the user for a browser's history file; the answer is `None` if they cancelled.
pub type PickOpenPath = dyn Fn() -> tokio::sync::oneshot::Receiver<Option<std::path::PathBuf>> + Send + Sync;

/// The open dialog for a history file (managed state, so command tests can stand in for it). As
/// with exports, the dialog opens from Rust: the UI never names a file.
pub struct OpenPicker(pub Box<PickOpenPath>);

/// What importing a picked file gave.
#[derive(Clone, Debug, Serialize)]
pub struct FileImport {
    /// The file.
    pub path: String,
    /// `chrome`, `firefox` or `safari`: what the file turned out to be.
    pub browser: &'static str,
    /// Visits stored.
    pub imported: u64,
    /// Websites created.
    pub new_websites: u64,
    /// Visits skipped (not web pages, bad rows).
    pub skipped: u64,
}

/// The browser families to try for `path`: the one its name says first, then the others.
fn families_for(path: &std::path::Path) -> [import::Browser; 3] {
    use import::Browser::{Chrome, Firefox, Safari};
    match path.file_name().and_then(|n| n.to_str()) {
        Some("places.sqlite") => [Firefox, Chrome, Safari],
        Some("History.db") => [Safari, Chrome, Firefox],
        _ => [Chrome, Firefox, Safari],
    }
}

/// Imports a browser's history file the user picks (for a browser installed somewhere detection
/// does not look, or a file copied from another computer); `None` if they cancelled. What the
/// file is comes from its tables, tried for each browser family; a file of none is refused
/// with nothing written.
#[tauri::command]
pub async fn import_history_file(
    state: State<'_, AppState>,
    picker: State<'_, OpenPicker>,
) -> CmdResult<Option<FileImport>> {
    let Ok(Some(path)) = (picker.0)().await else {
        return Ok(None);
    };
    let Some(slot) = state.imports.try_begin() else {
        return Err(CmdError::new(
            sitetrail::ErrorKind::Busy,
            "An import is already running; wait for it to finish.",
        ));
    };
    let store = state.store.clone();
    let done = sitetrail::blocking::run(move || {
        let _slot = slot;
        let mut last = None;
        for browser in families_for(&path) {
            match import::import_file(
                &store,
                browser,
                &path,
                &import::ImportOptions::default(),
                &mut |_| {},
            ) {
                Ok(rep) => {
                    return Ok(Ok(FileImport {
                        path: path.display().to_string(),
                        browser: browser.as_str(),
                        imported: rep.imported,
                        new_websites: rep.new_websites,
                        skipped: rep.skipped.total,
                    }))
                }
                Err(e) => last = Some(e),
            }
        }
        Ok(Err(last))
    })
    .await?;
    done.map(Some).map_err(|last| {
        CmdError::invalid(format!(
            "That file is not a history file of Chrome (or Chromium, Edge, Brave, Vivaldi, Opera), Firefox or Safari{}",
            last.map(|e| format!(" ({e})")).unwrap_or_default()
        ))
    })
}
