//! The settings view: classifier settings (the file the CLI reads too), the API key, a connection
//! test, and resuming a worker that waits for the user.
//!
//! Saving validates everything first, writes the file atomically, then restarts the worker with
//! it; a worker paused for the user (bad key, no quota) is resumed, since the settings changed.
//! The form is drawn from the settings schema (`sitetrail::settings::SCHEMA`, sent with the
//! view) and carries `{name: value}` for the fields it shows; the others keep their saved values,
//! and every value is checked by the same spec that checks the file, the environment and the CLI.

use std::time::Instant;

use serde::Serialize;
use serde_json::{Map, Value};
use sitetrail::classify::http::display_url;
use sitetrail::settings::{Environment, Overrides, Settings, Spec, SCHEMA};
use tauri::State;

use crate::error::{CmdError, CmdResult};
use crate::secret::KeyStatus;
use crate::state::{AppState, Inner};

/// The domain "Test connection" classifies: a public site every provider knows.
pub const TEST_DOMAIN: &str = "wikipedia.org";

/// The settings form as the UI sends it: setting name → value, for the settings it shows (names
/// and values as in [`SCHEMA`]; unknown names are refused, each value is checked by its spec).
pub type SettingsForm = Map<String, Value>;

/// `saved` with the form's values applied, validated.
fn apply_form(saved: Settings, form: &SettingsForm) -> sitetrail::Result<Settings> {
    // The view shows a base URL's credentials as `***`: the same URL sent back keeps the saved ones.
    let mut form = form.clone();
    if let (Some(Value::String(sent)), Some(url)) = (form.get("base_url"), saved.base_url.as_deref()) {
        if *sent != url && *sent == display_url(url) {
            form.insert("base_url".into(), Value::String(url.to_owned()));
        }
    }
    let layer = Overrides::edit_from_json(&form)?;
    let s = saved.apply(&layer)?;
    s.validate()?;
    Ok(s)
}

/// What is in use: the provider, URL and model after the environment was applied.
#[derive(Clone, Debug, Serialize)]
pub struct Effective {
    /// Provider in use.
    pub provider: &'static str,
    /// Base URL in use (remote providers).
    pub base_url: String,
    /// Model in use (remote providers).
    pub model: String,
}

/// The settings view.
#[derive(Clone, Debug, Serialize)]
pub struct SettingsView {
    /// The saved settings.
    pub settings: Settings,
    /// Every setting's name, label, help, limits and unit: the form is drawn from this.
    pub schema: &'static [Spec],
    /// The defaults.
    pub defaults: Settings,
    /// What is in use.
    pub effective: Effective,
    /// Which `SITETRAIL_*` variables are set and win over the saved values.
    pub env_overrides: Vec<String>,
    /// Where the API key comes from.
    pub key: KeyStatus,
    /// The settings file.
    pub settings_file: String,
    /// Why the saved settings could not be used, if they could not.
    pub problem: Option<String>,
}

/// The exclusions the form shows: the list kept on all the user's devices (the database's,
/// synced) and the settings file's, once each.
fn shown_exclusions(state: &Inner, file: &[String]) -> sitetrail::Result<Vec<String>> {
    let stored = state.store.excluded_hosts()?;
    let mut shown: Vec<String> = stored
        .iter()
        .map(|e| sitetrail::exclusions::display(&e.pattern))
        .collect();
    shown.extend(
        file.iter()
            .filter(|p| !sitetrail::exclusions::is_listed(&stored, p))
            .cloned(),
    );
    Ok(shown)
}

/// `saved` with the form applied, the form's exclusions (if it has them) made the list kept on
/// all the user's devices (the database's, synced): the settings file keeps only those of its
/// own still wanted, so one taken off the form is off everywhere. The form is checked whole
/// before anything is written. Blocking.
fn apply_form_and_exclusions(
    state: &Inner,
    saved: Settings,
    form: &SettingsForm,
) -> sitetrail::Result<Settings> {
    let mut new = apply_form(saved.clone(), form)?;
    if form.contains_key("exclusions") {
        let wanted = std::mem::take(&mut new.exclusions);
        let stored = state.store.set_excluded_hosts(&wanted)?;
        new.exclusions = saved
            .exclusions
            .into_iter()
            .filter(|p| sitetrail::exclusions::is_listed(&stored, p))
            .collect();
    }
    Ok(new)
}

/// The view. Blocking (the settings file, the keyring).
fn view(state: &Inner) -> sitetrail::Result<SettingsView> {
    let mut settings = state.load_settings()?;
    let resolved = state.resolve(settings.clone())?;
    settings.exclusions = shown_exclusions(state, &settings.exclusions)?;
    // Credentials in a base URL are never shown: the view has `***` where they are.
    settings.base_url = settings.base_url.as_deref().map(display_url);
    Ok(SettingsView {
        effective: Effective {
            provider: resolved.settings.provider.as_str(),
            base_url: display_url(resolved.base_url()),
            model: resolved.model().to_owned(),
        },
        settings,
        schema: SCHEMA,
        defaults: Settings::default(),
        env_overrides: Environment::from_process().variables_set(),
        key: state.keys.get().1,
        settings_file: state.paths.settings_file.display().to_string(),
        problem: state.worker_problem(),
    })
}

/// The saved settings, what is in use, and the schema the form is drawn from.
#[tauri::command]
pub async fn get_settings(state: State<'_, AppState>) -> CmdResult<SettingsView> {
    state.blocking(view).await
}

/// Validates and saves the classifier settings, then restarts the worker with them.
#[tauri::command]
pub async fn save_settings(state: State<'_, AppState>, settings: SettingsForm) -> CmdResult<SettingsView> {
    state
        .blocking(move |s| {
            s.update_settings(|saved| apply_form_and_exclusions(s, saved, &settings))
                .map(|_| ())
        })
        .await?;
    state.restart_worker().await?;
    state.blocking(|s| s.store.resume_worker().map(|_| ())).await?;
    state.blocking(view).await
}

/// The answer to "Test connection".
#[derive(Clone, Debug, Serialize)]
pub struct TestResult {
    /// The domain classified.
    pub domain: &'static str,
    /// The category it got.
    pub category: String,
    /// The provider that answered.
    pub provider: String,
    /// How long it took.
    pub millis: u64,
}

/// Classifies a sample domain with the form's settings (not saved) and reports the answer.
#[tauri::command]
pub async fn test_connection(state: State<'_, AppState>, settings: SettingsForm) -> CmdResult<TestResult> {
    let resolved = state
        .blocking(move |s| s.resolve(apply_form(s.load_settings()?, &settings)?))
        .await?;
    let provider = resolved.settings.provider.as_str().to_owned();
    let classifier = resolved.classifier(Default::default())?;
    let started = Instant::now();
    let mut answers = classifier
        .classify(&[TEST_DOMAIN.to_owned()])
        .await
        .map_err(|e| CmdError::from(sitetrail::Error::Classify(e)))?;
    let verdict = answers
        .pop()
        .ok_or_else(|| CmdError::unavailable("The provider gave no answer."))?
        .map_err(|m| CmdError::new(sitetrail::ErrorKind::ProviderRefused, m))?;
    Ok(TestResult {
        domain: TEST_DOMAIN,
        category: verdict.category.id().to_owned(),
        provider,
        millis: sitetrail::time::millis(started.elapsed()),
    })
}

/// Stores the API key in the OS keyring (or for this session where there is none) and restarts
/// the worker so it uses it.
#[tauri::command]
pub async fn set_api_key(state: State<'_, AppState>, key: String) -> CmdResult<KeyStatus> {
    let status = sitetrail::blocking::run({
        let state = state.inner().clone();
        move || Ok(state.keys.set(&key))
    })
    .await??;
    state.restart_worker().await?;
    // A new key is new settings: a pause that waits for the user (a refused key) is lifted.
    state.blocking(|s| s.store.resume_worker().map(|_| ())).await?;
    Ok(status)
}

/// Forgets the stored API key and restarts the worker.
#[tauri::command]
pub async fn delete_api_key(state: State<'_, AppState>) -> CmdResult<KeyStatus> {
    let status = state.blocking(|s| Ok(s.keys.delete())).await?;
    state.restart_worker().await?;
    Ok(status)
}

/// Clears a pause that waits for the user (after fixing a key or quota elsewhere).
#[tauri::command]
pub async fn resume_worker(state: State<'_, AppState>) -> CmdResult<bool> {
    state
        .blocking(|s| s.store.resume_worker().map(|r| r.is_some()))
        .await
}
