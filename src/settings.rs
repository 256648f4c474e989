//! Classifier and worker settings: the saved file, environment overrides, and building a worker
//! from them. The CLI and the desktop app share this module.
//!
//! Precedence, highest first: a CLI flag (or the app's form), the environment
//! (`SITETRAIL_PROVIDER`, `SITETRAIL_BASE_URL`, `SITETRAIL_MODEL`), the settings file, the
//! defaults. The file is JSON at `settings.json` in the user's config directory
//! (`ProjectDirs("app", "Sitetrail", "sitetrail")`, which honours `XDG_CONFIG_HOME`), or the path in
//! `SITETRAIL_SETTINGS`. A missing file means defaults; a malformed one is an error that names it.
//! Saving writes a temp file in the same directory and renames it over the old one, so a crash
//! never leaves half a file.
//!
//! Invariant: the API key is never part of [`Settings`] and never written to disk: it comes from
//! `SITETRAIL_API_KEY` (the app adds the OS keyring) and lives only in an [`ApiKey`]. A settings
//! file that contains an `api_key` is refused.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::category::Category;
use crate::classify::builtin::BuiltinWithUser;
use crate::classify::http::{normalise_base_url, HttpOptions};
use crate::classify::ollama::{self, Ollama, OllamaConfig};
use crate::classify::openai::{self, OpenAi, OpenAiConfig};
use crate::classify::privacy::{Exclusions, PrivacyRouter};
use crate::classify::secret::ApiKey;
use crate::classify::Classifier;
use crate::error::{Error, Result};
use crate::worker::{RetryPolicy, WorkerConfig};

/// Which classifier answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Local rules, no network.
    #[default]
    Builtin,
    /// An OpenAI-compatible server.
    #[serde(rename = "openai")]
    OpenAi,
    /// A local Ollama.
    Ollama,
}

impl Provider {
    /// The name used in settings, flags and env vars.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Builtin => "builtin",
            Provider::OpenAi => "openai",
            Provider::Ollama => "ollama",
        }
    }

    /// True for providers reached over HTTP.
    pub fn is_remote(self) -> bool {
        self != Provider::Builtin
    }
}

impl std::str::FromStr for Provider {
    type Err = Error;
    fn from_str(s: &str) -> Result<Provider> {
        match s.trim().to_ascii_lowercase().as_str() {
            "builtin" => Ok(Provider::Builtin),
            "openai" => Ok(Provider::OpenAi),
            "ollama" => Ok(Provider::Ollama),
            other => Err(Error::InvalidConfig(format!(
                "provider must be builtin, openai or ollama, not {other:?}"
            ))),
        }
    }
}

/// Saved settings. Every field has a default, so a file may hold only some of them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// The classifier.
    pub provider: Provider,
    /// The provider's base URL; `None`: the provider's default.
    pub base_url: Option<String>,
    /// The model; `None`: the provider's default.
    pub model: Option<String>,
    /// Jobs per call; `None`: 1 for builtin, 20 for remote providers.
    pub batch_size: Option<usize>,
    /// Most classifier calls a minute; `None`: no limit beyond the fixed delay.
    pub max_requests_per_minute: Option<u32>,
    /// Sleep between ticks (ms).
    pub fixed_delay_ms: u64,
    /// Retry delay after a job's first failed attempt (ms).
    pub retry_base_ms: u64,
    /// Growth of the retry delay per further attempt.
    pub retry_factor: f64,
    /// Longest retry delay (ms).
    pub retry_max_ms: u64,
    /// Attempts before a job is FAILED.
    pub max_attempts: u32,
    /// A job PROCESSING longer than this is reclaimed (ms).
    pub processing_timeout_ms: u64,
    /// Longest wait to connect to the provider (ms).
    pub connect_timeout_ms: u64,
    /// Longest wait for a whole provider call (ms).
    pub request_timeout_ms: u64,
    /// Hosts never sent to a remote provider: exact domains and `*.suffix` patterns.
    pub exclusions: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        let http = HttpOptions::default();
        Settings {
            provider: Provider::Builtin,
            base_url: None,
            model: None,
            batch_size: None,
            max_requests_per_minute: None,
            fixed_delay_ms: 1_000,
            retry_base_ms: 30_000,
            retry_factor: 2.0,
            retry_max_ms: 30 * 60 * 1_000,
            max_attempts: 5,
            processing_timeout_ms: 300_000,
            connect_timeout_ms: http.connect_timeout.as_millis() as u64,
            request_timeout_ms: http.total_timeout.as_millis() as u64,
            exclusions: Vec::new(),
        }
    }
}

/// Values that override the saved settings (from CLI flags or the app); `None` keeps the saved
/// value. Exclusions given here are added to the saved ones.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides {
    /// See [`Settings::provider`].
    pub provider: Option<Provider>,
    /// See [`Settings::base_url`].
    pub base_url: Option<String>,
    /// See [`Settings::model`].
    pub model: Option<String>,
    /// See [`Settings::batch_size`].
    pub batch_size: Option<usize>,
    /// See [`Settings::max_requests_per_minute`].
    pub max_requests_per_minute: Option<u32>,
    /// See [`Settings::fixed_delay_ms`].
    pub fixed_delay_ms: Option<u64>,
    /// See [`Settings::retry_base_ms`].
    pub retry_base_ms: Option<u64>,
    /// See [`Settings::retry_factor`].
    pub retry_factor: Option<f64>,
    /// See [`Settings::retry_max_ms`].
    pub retry_max_ms: Option<u64>,
    /// See [`Settings::max_attempts`].
    pub max_attempts: Option<u32>,
    /// See [`Settings::processing_timeout_ms`].
    pub processing_timeout_ms: Option<u64>,
    /// See [`Settings::connect_timeout_ms`].
    pub connect_timeout_ms: Option<u64>,
    /// See [`Settings::request_timeout_ms`].
    pub request_timeout_ms: Option<u64>,
    /// Added to [`Settings::exclusions`].
    pub exclusions: Vec<String>,
}

/// The environment's part: `SITETRAIL_PROVIDER`, `SITETRAIL_BASE_URL`, `SITETRAIL_MODEL` and the
/// API key from `SITETRAIL_API_KEY`. Empty variables count as unset.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    /// `SITETRAIL_PROVIDER`.
    pub provider: Option<String>,
    /// `SITETRAIL_BASE_URL`.
    pub base_url: Option<String>,
    /// `SITETRAIL_MODEL`.
    pub model: Option<String>,
    /// `SITETRAIL_API_KEY`.
    pub api_key: Option<ApiKey>,
}

impl Environment {
    /// Reads the process environment.
    pub fn from_process() -> Environment {
        Environment::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads variables through `get` (for tests and for the app's own sources).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Environment {
        let var = |name: &str| get(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
        Environment {
            provider: var("SITETRAIL_PROVIDER"),
            base_url: var("SITETRAIL_BASE_URL"),
            model: var("SITETRAIL_MODEL"),
            api_key: get("SITETRAIL_API_KEY").and_then(ApiKey::new),
        }
    }
}

/// Settings after every layer was applied, with the API key: what a worker is built from.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The effective settings.
    pub settings: Settings,
    /// The API key, if any.
    pub api_key: Option<ApiKey>,
}

/// The settings file: `SITETRAIL_SETTINGS` if set, else `settings.json` in the config directory.
pub fn default_settings_path() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("SITETRAIL_SETTINGS").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let dirs = directories::ProjectDirs::from("app", "Sitetrail", "sitetrail").ok_or_else(|| {
        Error::InvalidConfig("no home directory found; set SITETRAIL_SETTINGS to a file path".into())
    })?;
    Ok(dirs.config_dir().join("settings.json"))
}

/// Loads the settings file (`path`, else [`default_settings_path`]) and applies the process
/// environment and `overrides`: what the CLI and the app run with.
pub fn load_and_resolve(path: Option<&Path>, overrides: &Overrides) -> Result<Resolved> {
    let path = match path {
        Some(p) => p.to_path_buf(),
        None => default_settings_path()?,
    };
    Settings::load(&path)?.resolve(&Environment::from_process(), overrides)
}

impl Settings {
    /// Loads `path`: defaults if it does not exist, an error naming it if it is malformed.
    pub fn load(path: &Path) -> Result<Settings> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Settings::default()),
            Err(e) => return Err(Error::Io(e)),
        };
        let bad = |why: String| {
            Error::InvalidConfig(format!(
                "settings file {} is not valid: {why}; fix it or delete it to start from defaults",
                path.display()
            ))
        };
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if value.get("api_key").is_some() {
            return Err(bad(
                "it contains an api_key; keys are never stored in settings, set SITETRAIL_API_KEY instead"
                    .into(),
            ));
        }
        let settings: Settings = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        settings.validate().map_err(|e| bad(e.to_string()))?;
        Ok(settings)
    }

    /// Validates and writes the settings to `path` atomically (temp file, then rename).
    pub fn save(&self, path: &Path) -> Result<()> {
        self.validate()?;
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        serde_json::to_writer_pretty(&mut tmp, self).map_err(|e| Error::Io(e.into()))?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| Error::Io(e.error))?;
        Ok(())
    }

    /// Checks that every value can work.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::InvalidConfig(m.to_owned()));
        if let Some(url) = &self.base_url {
            normalise_base_url(url).map_err(Error::InvalidConfig)?;
        }
        if self.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
            return bad("model must not be empty");
        }
        if self.batch_size.is_some_and(|b| b == 0 || b > 500) {
            return bad("batch size must be between 1 and 500");
        }
        if self.max_requests_per_minute == Some(0) {
            return bad("max requests per minute must be at least 1 (leave it unset for no limit)");
        }
        if !(1.0..=100.0).contains(&self.retry_factor) {
            return bad("retry factor must be between 1 and 100");
        }
        if self.max_attempts == 0 {
            return bad("max attempts must be at least 1");
        }
        if self.processing_timeout_ms == 0 || self.connect_timeout_ms == 0 || self.request_timeout_ms == 0 {
            return bad("timeouts must be more than 0 ms");
        }
        Exclusions::parse(&self.exclusions)?;
        Ok(())
    }

    /// Applies the environment, then `overrides`, then validates: CLI > env > file > default.
    pub fn resolve(mut self, env: &Environment, overrides: &Overrides) -> Result<Resolved> {
        if let Some(p) = &env.provider {
            self.provider = p.parse()?;
        }
        if env.base_url.is_some() {
            self.base_url = env.base_url.clone();
        }
        if env.model.is_some() {
            self.model = env.model.clone();
        }
        let o = overrides.clone();
        macro_rules! take {
            ($($field:ident),*) => { $( if let Some(v) = o.$field { self.$field = v; } )* };
        }
        take!(
            provider,
            fixed_delay_ms,
            retry_base_ms,
            retry_factor,
            retry_max_ms,
            max_attempts
        );
        take!(processing_timeout_ms, connect_timeout_ms, request_timeout_ms);
        if o.base_url.is_some() {
            self.base_url = o.base_url;
        }
        if o.model.is_some() {
            self.model = o.model;
        }
        if o.batch_size.is_some() {
            self.batch_size = o.batch_size;
        }
        if o.max_requests_per_minute.is_some() {
            self.max_requests_per_minute = o.max_requests_per_minute;
        }
        self.exclusions.extend(o.exclusions);
        self.validate()?;
        Ok(Resolved {
            settings: self,
            api_key: env.api_key.clone(),
        })
    }
}

impl Resolved {
    /// The base URL in use (the provider's default if none is set).
    pub fn base_url(&self) -> &str {
        match (&self.settings.base_url, self.settings.provider) {
            (Some(u), _) => u,
            (None, Provider::Ollama) => ollama::DEFAULT_BASE_URL,
            (None, _) => openai::DEFAULT_BASE_URL,
        }
    }

    /// The model in use (the provider's default if none is set).
    pub fn model(&self) -> &str {
        match (&self.settings.model, self.settings.provider) {
            (Some(m), _) => m,
            (None, Provider::Ollama) => ollama::DEFAULT_MODEL,
            (None, _) => openai::DEFAULT_MODEL,
        }
    }

    /// The worker settings.
    pub fn worker_config(&self) -> WorkerConfig {
        let s = &self.settings;
        let default_batch = if s.provider.is_remote() { 20 } else { 1 };
        WorkerConfig {
            fixed_delay: Duration::from_millis(s.fixed_delay_ms),
            retry: RetryPolicy::exponential(
                Duration::from_millis(s.retry_base_ms),
                s.retry_factor,
                Duration::from_millis(s.retry_max_ms),
            ),
            processing_timeout: Duration::from_millis(s.processing_timeout_ms),
            max_attempts: s.max_attempts,
            batch_size: s.batch_size.unwrap_or(default_batch),
            max_requests_per_minute: s.max_requests_per_minute,
            ..WorkerConfig::default()
        }
    }

    /// The classifier: the built-in rules (with `user_categories` first), or a remote provider
    /// behind the privacy router, which sends private and excluded hosts to the built-in rules.
    pub fn classifier(&self, user_categories: HashMap<String, Category>) -> Result<Arc<dyn Classifier>> {
        let local: Arc<dyn Classifier> = Arc::new(BuiltinWithUser::new(user_categories));
        let s = &self.settings;
        let http = HttpOptions {
            connect_timeout: Duration::from_millis(s.connect_timeout_ms),
            total_timeout: Duration::from_millis(s.request_timeout_ms),
        };
        let remote: Arc<dyn Classifier> = match s.provider {
            Provider::Builtin => return Ok(local),
            Provider::OpenAi => {
                if self.api_key.is_none() && self.base_url().contains("api.openai.com") {
                    return Err(Error::InvalidConfig(
                        "the openai provider at api.openai.com needs an API key: set SITETRAIL_API_KEY"
                            .into(),
                    ));
                }
                Arc::new(OpenAi::new(OpenAiConfig {
                    base_url: self.base_url().to_owned(),
                    model: self.model().to_owned(),
                    api_key: self.api_key.clone(),
                    http,
                })?)
            }
            Provider::Ollama => Arc::new(Ollama::new(OllamaConfig {
                base_url: self.base_url().to_owned(),
                model: self.model().to_owned(),
                http,
            })?),
        };
        let exclusions = Exclusions::parse(&s.exclusions)?;
        Ok(Arc::new(PrivacyRouter::new(remote, local, exclusions)))
    }

    /// Everything a worker needs: its classifier and its configuration. The desktop app and
    /// `sitetrail worker` both build their worker with this.
    pub fn build(
        &self,
        user_categories: HashMap<String, Category>,
    ) -> Result<(Arc<dyn Classifier>, WorkerConfig)> {
        let config = self.worker_config();
        config.validate()?;
        Ok((self.classifier(user_categories)?, config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Environment {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Environment::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn cli_beats_env_beats_file_beats_default() {
        let file = Settings {
            provider: Provider::Ollama,
            model: Some("file-model".into()),
            base_url: Some("http://file.example".into()),
            ..Settings::default()
        };
        let e = env(&[
            ("SITETRAIL_MODEL", "env-model"),
            ("SITETRAIL_BASE_URL", "http://env.example"),
        ]);
        let cli = Overrides {
            base_url: Some("http://cli.example".into()),
            ..Overrides::default()
        };
        let r = file.clone().resolve(&e, &cli).unwrap();
        assert_eq!(r.settings.provider, Provider::Ollama, "file value kept");
        assert_eq!(r.model(), "env-model", "env beats file");
        assert_eq!(r.base_url(), "http://cli.example", "cli beats env");
        assert_eq!(r.settings.fixed_delay_ms, 1_000, "default");
        assert_eq!(r.worker_config().batch_size, 20, "remote default batch");
        let r = Settings::default()
            .resolve(&env(&[]), &Overrides::default())
            .unwrap();
        assert_eq!(r.worker_config().batch_size, 1, "builtin default batch");
        assert!(Settings::default()
            .resolve(&env(&[("SITETRAIL_PROVIDER", "gemini")]), &Overrides::default())
            .is_err());
    }

    #[test]
    fn the_key_comes_only_from_the_environment_and_never_shows() {
        let r = Settings::default()
            .resolve(
                &env(&[("SITETRAIL_API_KEY", "sk-abc-123")]),
                &Overrides::default(),
            )
            .unwrap();
        assert!(r.api_key.is_some());
        assert!(!format!("{r:?}").contains("sk-abc-123"));
        assert!(!serde_json::to_string(&r.settings).unwrap().contains("sk-abc"));
    }

    #[test]
    fn save_then_load_round_trips_and_bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/settings.json");
        assert_eq!(
            Settings::load(&path).unwrap(),
            Settings::default(),
            "missing file: defaults"
        );
        let s = Settings {
            provider: Provider::OpenAi,
            batch_size: Some(7),
            exclusions: vec!["*.corp.example".into()],
            ..Settings::default()
        };
        s.save(&path).unwrap();
        assert_eq!(Settings::load(&path).unwrap(), s);
        let leftovers = std::fs::read_dir(path.parent().unwrap()).unwrap().count();
        assert_eq!(leftovers, 1, "no temp file left behind");

        std::fs::write(&path, "{ not json").unwrap();
        let err = Settings::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("settings.json") && err.contains("not valid"),
            "{err}"
        );
        std::fs::write(&path, r#"{"batch_size": 0}"#).unwrap();
        assert!(Settings::load(&path)
            .unwrap_err()
            .to_string()
            .contains("batch size"));
        std::fs::write(&path, r#"{"api_key": "sk-x"}"#).unwrap();
        let err = Settings::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("SITETRAIL_API_KEY") && !err.contains("sk-x"),
            "{err}"
        );
        assert!(Settings {
            retry_factor: 0.5,
            ..Settings::default()
        }
        .save(&path)
        .is_err());
    }

    #[test]
    fn openai_at_openai_needs_a_key() {
        let r = Settings {
            provider: Provider::OpenAi,
            ..Settings::default()
        }
        .resolve(&env(&[]), &Overrides::default())
        .unwrap();
        let err = r.build(HashMap::new()).err().expect("no key must be refused");
        assert!(err.to_string().contains("SITETRAIL_API_KEY"), "{err}");
    }
}
