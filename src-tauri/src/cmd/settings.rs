//! The settings view: classifier settings (the file the CLI reads too), the API key, a connection
//! test, and resuming a worker that waits for the user.
//!
//! Saving validates everything first, writes the file atomically, then restarts the worker with
//! it; a worker paused for the user (bad key, no quota) is resumed, since the settings changed.
//! The form only carries the fields the UI shows: the others keep their saved values.

use std::time::Instant;

use serde::{Deserialize, Serialize};
use sitetrail::settings::{Provider, Settings};
use tauri::State;

use super::lib;
use crate::error::{CmdError, CmdResult};
use crate::secret::KeyStatus;
use crate::state::AppState;

/// The domain "Test connection" classifies: a public site every provider knows.
pub const TEST_DOMAIN: &str = "wikipedia.org";
/// Environment variables that override saved settings, shown so the user knows why a saved value
/// is not the one in use.
const ENV_OVERRIDES: [&str; 4] = [
    "SITETRAIL_PROVIDER",
    "SITETRAIL_BASE_URL",
    "SITETRAIL_MODEL",
    "SITETRAIL_API_KEY",
];

/// The classifier fields of the settings form.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SettingsForm {
    /// `builtin`, `ollama` or `openai`.
    pub provider: String,
    /// Empty: the provider's default.
    pub base_url: Option<String>,
    /// Empty: the provider's default.
    pub model: Option<String>,
    /// Sleep between requests (ms).
    pub fixed_delay_ms: u64,
    /// Request limit per minute; none: no limit.
    pub max_requests_per_minute: Option<u32>,
    /// Websites per request; none: the provider's default.
    pub batch_size: Option<usize>,
    /// Attempts before a job is FAILED.
    pub max_attempts: u32,
    /// Hosts never sent to a remote provider.
    pub exclusions: Vec<String>,
}

fn blank_to_none(v: Option<String>) -> Option<String> {
    v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

impl SettingsForm {
    /// The saved settings with the form's fields applied, validated.
    pub fn apply_to(self, mut s: Settings) -> CmdResult<Settings> {
        s.provider = self.provider.parse::<Provider>()?;
        s.base_url = blank_to_none(self.base_url);
        s.model = blank_to_none(self.model);
        if self.fixed_delay_ms > 3_600_000 {
            return Err(CmdError::invalid(
                "The delay between requests can be at most one hour.",
            ));
        }
        s.fixed_delay_ms = self.fixed_delay_ms;
        s.max_requests_per_minute = self.max_requests_per_minute;
        s.batch_size = self.batch_size;
        if self.max_attempts > 100 {
            return Err(CmdError::invalid("At most 100 attempts."));
        }
        s.max_attempts = self.max_attempts;
        s.exclusions = self
            .exclusions
            .into_iter()
            .map(|e| e.trim().to_owned())
            .filter(|e| !e.is_empty())
            .collect();
        s.validate()?;
        Ok(s)
    }
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
    /// What is in use.
    pub effective: Effective,
    /// Which `SITETRAIL_*` variables are set and win over the saved values.
    pub env_overrides: Vec<&'static str>,
    /// Where the API key comes from.
    pub key: KeyStatus,
    /// The settings file.
    pub settings_file: String,
    /// Why the saved settings could not be used, if they could not.
    pub problem: Option<String>,
}

fn view(state: &AppState) -> CmdResult<SettingsView> {
    let settings = state.load_settings()?;
    let resolved = state.resolve(settings.clone())?;
    Ok(SettingsView {
        effective: Effective {
            provider: resolved.settings.provider.as_str(),
            base_url: resolved.base_url().to_owned(),
            model: resolved.model().to_owned(),
        },
        settings,
        env_overrides: ENV_OVERRIDES
            .into_iter()
            .filter(|v| std::env::var(v).is_ok_and(|x| !x.trim().is_empty()))
            .collect(),
        key: state.keys.get().1,
        settings_file: state.paths.settings_file.display().to_string(),
        problem: state.worker_problem(),
    })
}

/// The saved settings and what is in use.
#[tauri::command]
pub fn get_settings(state: State<'_, AppState>) -> CmdResult<SettingsView> {
    view(&state)
}

/// Validates and saves the classifier settings, then restarts the worker with them.
#[tauri::command]
pub async fn save_settings(state: State<'_, AppState>, settings: SettingsForm) -> CmdResult<SettingsView> {
    let new = settings.apply_to(state.load_settings()?)?;
    new.save(&state.paths.settings_file)?;
    state.restart_worker().await?;
    lib(state.store.run(|s| s.resume_worker().map(|_| ())).await)?;
    view(&state)
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
    let form = settings.apply_to(state.load_settings()?)?;
    let resolved = state.resolve(form)?;
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
        millis: started.elapsed().as_millis() as u64,
    })
}

/// Stores the API key in the OS keyring (or for this session where there is none) and restarts
/// the worker so it uses it.
#[tauri::command]
pub async fn set_api_key(state: State<'_, AppState>, key: String) -> CmdResult<KeyStatus> {
    let status = state.keys.set(&key)?;
    state.restart_worker().await?;
    Ok(status)
}

/// Forgets the stored API key and restarts the worker.
#[tauri::command]
pub async fn delete_api_key(state: State<'_, AppState>) -> CmdResult<KeyStatus> {
    let status = state.keys.delete();
    state.restart_worker().await?;
    Ok(status)
}

/// Clears a pause that waits for the user (after fixing a key or quota elsewhere).
#[tauri::command]
pub async fn resume_worker(state: State<'_, AppState>) -> CmdResult<bool> {
    lib(state.store.run(|s| s.resume_worker().map(|r| r.is_some())).await)
}
