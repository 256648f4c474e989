//! Sitetrail's settings: one schema ([`SCHEMA`], declared once below with the [`Settings`]
//! struct), the layers that set them, and building a worker from them. The CLI and the desktop
//! app share this module, and one file: the classifier and worker settings, how the database is
//! opened (`synchronous`) and the automatic import (`auto_import_minutes`, `import_profiles`, which
//! the app kept in its own `app.json` before: it moves them here at its first start).
//!
//! Precedence, highest first: a CLI flag (or the app's form), the environment
//! (`SITETRAIL_<NAME>` for every setting: `SITETRAIL_PROVIDER`, `SITETRAIL_FIXED_DELAY_MS`, ...),
//! the settings file, the defaults. Exclusions add up across layers instead: a host excluded
//! anywhere is never sent out. The file is JSON at `settings.json` in the user's config directory
//! (`ProjectDirs("app", "Sitetrail", "sitetrail")`, which honours `XDG_CONFIG_HOME`), or the path
//! in `SITETRAIL_SETTINGS`. A missing file means defaults; a malformed one is an error that names
//! it. Saving writes a temp file in the same directory and renames it over the old one, so a
//! crash never leaves half a file.
//!
//! The database's `synchronous` and a malformed file: only the processes that load the settings
//! anyway read the file's `synchronous` when they open the database: the app (whose database
//! opens even when the file is malformed: the file's problem is then the worker's, shown in the
//! app, and the database opens as the environment says), and `worker` and `daemon` (which refuse
//! a malformed file as before, since they build their worker from it). Every other command
//! (`history`, `visit`, `import`, the native host, ...) never reads the file, as before, so an
//! unrelated bad setting cannot make it fail: it takes `SITETRAIL_SYNCHRONOUS` alone
//! ([`StoreOptions::from_env`]). Everywhere, the variable wins over the file and is checked
//! first, with the same values and the same error as before it was a setting.
//!
//! Invariant: the API key is never part of [`Settings`] and never written to disk: it comes from
//! `SITETRAIL_API_KEY` (the app adds the OS keyring) and lives only in an [`ApiKey`]. A settings
//! file that contains an `api_key` is refused.

mod build;
pub mod schema;

pub use build::Resolved;
pub use schema::{Kind, Scope, Spec};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::classify::secret::ApiKey;
use crate::error::{Error, Result};
use crate::store::{StoreOptions, Synchronous};
use crate::worker::WorkerConfig as W;

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
    /// Every provider's name, as settings, flags and env vars take them.
    pub const NAMES: &'static [&'static str] = &["builtin", "openai", "ollama"];

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
            other => Err(Error::InvalidInput(format!(
                "provider must be builtin, openai or ollama, not {other:?}"
            ))),
        }
    }
}

/// Declares [`Settings`] (with its defaults) and [`SCHEMA`] from one list: each setting's doc
/// comment, name, type, default and [`Spec`]. The worker's settings take their defaults and
/// limits from [`WorkerConfig`](crate::worker::WorkerConfig)'s [`Bounds`](crate::worker::Bounds),
/// where each is defined once.
macro_rules! settings {
    ($( $(#[doc = $doc:literal])* $name:ident : $ty:ty = $default:expr, $spec:expr; )*) => {
        /// Saved settings. Every field has a default, so a file may hold only some of them.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(default)]
        pub struct Settings {
            $( $(#[doc = $doc])* pub $name: $ty, )*
        }

        impl Default for Settings {
            fn default() -> Self {
                Settings { $( $name: $default, )* }
            }
        }

        /// Every setting, in the order the app's form shows them.
        pub static SCHEMA: &[Spec] = &[ $( $spec.named(stringify!($name)), )* ];
    };
}

settings! {
    /// The classifier.
    provider: Provider = Provider::Builtin,
        Spec::choice("provider", "Provider", Provider::NAMES).provider()
            .help("Which classifier answers: the built-in rules (offline), an OpenAI-compatible server, or a local Ollama.");
    /// The provider's base URL; `None`: the provider's default.
    base_url: Option<String> = None,
        Spec::url("base-url", "Base URL").provider()
            .optional("the provider's default: https://api.openai.com/v1, or http://127.0.0.1:11434 for Ollama")
            .help("The provider's address (LM Studio, vLLM, llama.cpp, OpenRouter, Groq... all speak the OpenAI API).");
    /// The model; `None`: the provider's default.
    model: Option<String> = None,
        Spec::text("model", "Model").provider()
            .optional("the provider's default: gpt-4o-mini, or llama3.2 for Ollama")
            .help("The model that classifies.");
    /// Sleep between ticks (ms).
    fixed_delay_ms: u64 = W::FIXED_DELAY_MS.default,
        Spec::integer("fixed-delay-ms", "Delay between requests", W::FIXED_DELAY_MS.min, W::FIXED_DELAY_MS.max).unit("ms")
            .help("Pause between one batch and the next: the queue is a buffer, so a burst of new sites never becomes a burst of calls.");
    /// Most classifier calls a minute; `None`: no limit beyond the fixed delay.
    max_requests_per_minute: Option<u32> = W::MAX_REQUESTS_PER_MINUTE.default,
        Spec::integer("max-requests-per-minute", "Requests per minute",
                      W::MAX_REQUESTS_PER_MINUTE.min as u64, W::MAX_REQUESTS_PER_MINUTE.max as u64)
            .optional("no limit beyond the delay")
            .help("Most classifier calls per minute, evenly spaced.");
    /// Jobs per call; `None`: 1 for builtin, 20 for remote providers.
    batch_size: Option<usize> = None,
        Spec::integer("batch-size", "Websites per request", W::BATCH_SIZE.min as u64, W::BATCH_SIZE.max as u64)
            .optional("1 for the built-in rules, 20 for remote providers")
            .help("Websites claimed and classified together in one call; each completes or fails on its own.");
    /// Attempts before a job is FAILED.
    max_attempts: u32 = W::MAX_ATTEMPTS.default,
        Spec::integer("max-attempts", "Attempts before giving up", W::MAX_ATTEMPTS.min as u64, W::MAX_ATTEMPTS.max as u64)
            .help("Attempts before a website's job is FAILED (failures that are not its fault, such as being offline, cost none).");
    /// Hosts never sent to a remote provider: exact domains and `*.suffix` patterns.
    exclusions: Vec<String> = Vec::new(),
        Spec::hosts("exclude", "Never send these to a remote provider").provider()
            .help("Hosts classified by the built-in rules only: a domain, or *.suffix for the suffix and everything under it (repeat the flag for more; added to the saved ones).");
    /// Retry delay after a job's first failed attempt (ms).
    retry_base_ms: u64 = W::RETRY_BASE_MS.default,
        Spec::integer("retry-delay-ms", "First retry after", W::RETRY_BASE_MS.min, W::RETRY_BASE_MS.max).unit("ms").advanced()
            .help("Delay before a failed job is retried the first time; later retries grow by the retry factor up to the longest retry delay, with ±20% jitter.");
    /// Growth of the retry delay per further attempt.
    retry_factor: f64 = W::RETRY_FACTOR.default,
        Spec::number("retry-factor", "Retry delay growth", W::RETRY_FACTOR.min, W::RETRY_FACTOR.max).advanced()
            .help("Growth of the retry delay per failed attempt.");
    /// Longest retry delay (ms).
    retry_max_ms: u64 = W::RETRY_MAX_MS.default,
        Spec::integer("retry-max-delay-ms", "Longest retry delay", W::RETRY_MAX_MS.min, W::RETRY_MAX_MS.max).unit("ms").advanced()
            .help("Longest delay between two attempts of a failed job.");
    /// The lease on a claimed job (ms): renewed by a live worker every third of it; a job whose
    /// worker died is reclaimed this long after its last renewal.
    processing_timeout_ms: u64 = W::PROCESSING_TIMEOUT_MS.default,
        Spec::integer("processing-timeout-ms", "Processing timeout", W::PROCESSING_TIMEOUT_MS.min, W::PROCESSING_TIMEOUT_MS.max).unit("ms").advanced()
            .help("The lease on a claimed job: a worker renews it every third of this while it works on the job, so a slow call never loses it; a job whose worker died is taken over this long after its last renewal.");
    /// Longest wait to connect to the provider (ms).
    connect_timeout_ms: u64 = crate::classify::http::HttpOptions::DEFAULT_CONNECT_MS,
        Spec::integer("connect-timeout-ms", "Connect timeout", 1, 600_000).unit("ms").provider().advanced()
            .help("Longest wait to connect to the provider.");
    /// Longest wait for a whole provider call (ms).
    request_timeout_ms: u64 = crate::classify::http::HttpOptions::DEFAULT_TOTAL_MS,
        Spec::integer("request-timeout-ms", "Request timeout", 1, 3_600_000).unit("ms").provider().advanced()
            .help("Longest wait for a whole provider call, from sending to the last byte of the answer.");
    /// How hard SQLite works to keep the last commits after a power cut.
    synchronous: Synchronous = Synchronous::Normal,
        Spec::choice("synchronous", "Durability", Synchronous::NAMES).store().advanced()
            .help("How hard SQLite keeps the last commits after a power cut: normal (a crash of Sitetrail loses nothing, a power cut may lose the last commits) or full (every commit synced to disk, an fsync each). Read when the database opens: the app, worker and daemon also take the saved setting, other commands only SITETRAIL_SYNCHRONOUS.");
    /// Minutes between automatic imports of the browsers' history; 0: never.
    auto_import_minutes: u32 = 15,
        Spec::integer("import-interval-min", "Import new history every", 0, 7 * 24 * 60).unit("min").import()
            .help("Minutes between imports of every detected browser profile (or those chosen), which keeps the history current without the extension; at most a week, 0: never (the daemon's flag takes 1 or more).");
    /// History files (profile paths) the automatic import reads; empty: every detected profile.
    import_profiles: Vec<String> = Vec::new(),
        Spec::paths("import-profile", "Browsers to import").import()
            .help("A browser profile's history file for the automatic import to read (repeat the flag for more); none: every profile found on this computer.");
}

/// Values for some settings, by name, each checked against its [`Spec`]: one layer of the
/// settings (the command line, the app's form). Names not in the layer keep the lower layers'
/// values; list values are added to them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides {
    values: Map<String, Value>,
    /// True for an edit of the saved settings (the app's form): its lists replace the saved
    /// ones instead of adding to them, so an exclusion can be removed.
    replaces_lists: bool,
}

impl Overrides {
    /// No overrides.
    pub fn new() -> Overrides {
        Overrides::default()
    }

    /// Sets `name` to `value` (JSON, as the settings file holds it), checked against its spec.
    pub fn set(&mut self, name: &str, value: Value) -> Result<&mut Overrides> {
        let spec = schema::spec(name)
            .ok_or_else(|| Error::InvalidInput(format!("there is no setting named {name:?}")))?;
        let value = spec
            .check(&value)
            .map_err(|why| Error::InvalidInput(format!("{name} {why}")))?;
        self.values.insert(name.to_owned(), value);
        Ok(self)
    }

    /// Sets `name` from `value` written as text, as a flag or an environment variable gives it.
    pub fn set_text(&mut self, name: &str, value: &str) -> Result<&mut Overrides> {
        let spec = schema::spec(name)
            .ok_or_else(|| Error::InvalidInput(format!("there is no setting named {name:?}")))?;
        let value = spec
            .parse_text(value)
            .map_err(|why| Error::InvalidInput(format!("{name} {why}")))?;
        self.values.insert(name.to_owned(), value);
        Ok(self)
    }

    /// The value given for `name`, if any.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.values.get(name)
    }

    /// This layer with `other`'s values added (the daemon's worker and import flags).
    pub fn extend(&mut self, other: &Overrides) -> &mut Overrides {
        self.values
            .extend(other.values.iter().map(|(k, v)| (k.clone(), v.clone())));
        self
    }

    /// A layer from already-checked values (the CLI's parsed flags).
    pub fn from_checked(values: Map<String, Value>) -> Overrides {
        Overrides {
            values,
            replaces_lists: false,
        }
    }

    /// An edit of the saved settings from a JSON object (the app's form): every key must be a
    /// setting, every value is checked; keys not in the object keep their saved values, and a
    /// list given replaces the saved list.
    pub fn edit_from_json(object: &Map<String, Value>) -> Result<Overrides> {
        let mut o = Overrides::new();
        for (name, value) in object {
            o.set(name, value.clone())?;
        }
        o.replaces_lists = true;
        Ok(o)
    }
}

/// The environment's part: `SITETRAIL_<NAME>` for every setting (read as text, checked when the
/// settings are resolved, with an error naming the variable) and the API key from
/// `SITETRAIL_API_KEY`. Empty variables count as unset.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    /// Setting name → (variable, raw value).
    vars: BTreeMap<&'static str, (String, String)>,
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
        let mut vars = BTreeMap::new();
        for spec in SCHEMA {
            let var = spec.env_var();
            if let Some(v) = get(&var).filter(|v| !v.trim().is_empty()) {
                vars.insert(spec.name, (var, v));
            }
        }
        Environment {
            vars,
            api_key: get(API_KEY_ENV).and_then(ApiKey::new),
        }
    }

    /// The variables that are set (settings and the key), to tell the user why a saved value is
    /// not the one in use.
    pub fn variables_set(&self) -> Vec<String> {
        let mut names: Vec<String> = self.vars.values().map(|(var, _)| var.clone()).collect();
        if self.api_key.is_some() {
            names.push(API_KEY_ENV.into());
        }
        names
    }

    /// The settings layer the variables make, each value checked.
    fn layer(&self) -> Result<Overrides> {
        self.layer_where(|_| true)
    }

    /// The layer of the variables whose spec passes `keep`.
    fn layer_where(&self, keep: impl Fn(&Spec) -> bool) -> Result<Overrides> {
        let mut o = Overrides::new();
        for (name, (var, raw)) in &self.vars {
            let spec = schema::spec(name).ok_or_else(|| Error::Task(format!("no spec for {name}")))?;
            if !keep(spec) {
                continue;
            }
            let value = spec
                .parse_text(raw)
                .map_err(|why| Error::InvalidConfig(format!("{var} {why}")))?;
            o.values.insert((*name).to_owned(), value);
        }
        Ok(o)
    }
}

/// The environment variable holding the API key (never a setting: it is not saved in the
/// settings file).
pub const API_KEY_ENV: &str = "SITETRAIL_API_KEY";

/// The settings file: `SITETRAIL_SETTINGS` if set, else `settings.json` in the config directory.
pub fn default_settings_path() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("SITETRAIL_SETTINGS").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    Ok(crate::fsutil::project_dirs()?.config_dir().join("settings.json"))
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

/// The largest settings file read: a few hundred bytes is usual.
const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

impl Settings {
    /// Loads `path`: defaults if it does not exist, an error naming it if it is malformed or a
    /// value is out of its limits. Keys it does not know are ignored (a newer Sitetrail may have
    /// written them). A leading UTF-8 byte-order mark is skipped; anything but a regular file (a
    /// folder, a FIFO, `/dev/zero`), or a file over 1 MiB, is refused before it is read.
    pub fn load(path: &Path) -> Result<Settings> {
        crate::blocking::note("settings file");
        let bytes = match crate::fsutil::read_small_file(path, MAX_SETTINGS_BYTES) {
            Ok(Some(b)) => b,
            Ok(None) => return Ok(Settings::default()),
            Err(why) => {
                return Err(Error::InvalidConfig(format!(
                    "cannot read the settings file {}: {why}",
                    path.display()
                )))
            }
        };
        let bad = |why: String| {
            Error::InvalidConfig(format!(
                "settings file {} is not valid: {why}; fix it or delete it to start from defaults",
                path.display()
            ))
        };
        let text = std::str::from_utf8(&bytes).map_err(|e| bad(format!("it is not UTF-8 text ({e})")))?;
        // Editors on Windows start UTF-8 files with a byte-order mark, which JSON does not allow.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let value: Value = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
        let Value::Object(object) = value else {
            return Err(bad("it is not a JSON object".into()));
        };
        if object.contains_key("api_key") {
            return Err(bad(
                "it contains an api_key; keys are never stored in settings, set SITETRAIL_API_KEY instead"
                    .into(),
            ));
        }
        let mut layer = Overrides::new();
        for (name, value) in &object {
            if let Some(spec) = schema::spec(name) {
                let v = spec.check(value).map_err(|why| bad(format!("{name} {why}")))?;
                layer.values.insert(name.clone(), v);
            }
        }
        let settings = Settings::default()
            .apply(&layer)
            .map_err(|e| bad(e.to_string()))?;
        settings.validate().map_err(|e| bad(e.to_string()))?;
        Ok(settings)
    }

    /// Validates and writes the settings to `path` atomically (temp file, then rename).
    pub fn save(&self, path: &Path) -> Result<()> {
        self.validate()?;
        let text = serde_json::to_vec_pretty(self).map_err(|e| Error::Io(e.into()))?;
        crate::fsutil::write_atomically(path, &text)
    }

    /// Checks every value against its spec.
    pub fn validate(&self) -> Result<()> {
        let Value::Object(object) = serde_json::to_value(self).map_err(|e| Error::Io(e.into()))? else {
            return Err(Error::Task("settings are not an object".into()));
        };
        for spec in SCHEMA {
            let value = object.get(spec.name).unwrap_or(&Value::Null);
            spec.check(value)
                .map_err(|why| Error::InvalidConfig(format!("{} {why}", spec.name)))?;
        }
        Ok(())
    }

    /// These settings with `layer` on top: its values replace these, its lists add to these
    /// (unless the layer is an edit, [`Overrides::edit_from_json`]).
    pub fn apply(self, layer: &Overrides) -> Result<Settings> {
        let Value::Object(mut object) = serde_json::to_value(&self).map_err(|e| Error::Io(e.into()))? else {
            return Err(Error::Task("settings are not an object".into()));
        };
        for (name, value) in &layer.values {
            let list = !layer.replaces_lists && schema::spec(name).is_some_and(Spec::adds_up);
            match (list, object.get_mut(name.as_str()), value) {
                (true, Some(Value::Array(have)), Value::Array(more)) => {
                    for v in more {
                        if !have.contains(v) {
                            have.push(v.clone());
                        }
                    }
                }
                _ => {
                    object.insert(name.clone(), value.clone());
                }
            }
        }
        serde_json::from_value(Value::Object(object))
            .map_err(|e| Error::InvalidConfig(format!("settings do not fit together: {e}")))
    }

    /// These settings with the environment's values for the settings of `scope` only: for a
    /// process that uses only those (the app's import schedule), which a bad variable for another
    /// setting must not stop.
    pub fn with_env_for(self, env: &Environment, scope: Scope) -> Result<Settings> {
        let settings = self.apply(&env.layer_where(|s| s.scope == scope)?)?;
        settings.validate()?;
        Ok(settings)
    }

    /// How a process that loaded these settings from the file opens the database (the app):
    /// `SITETRAIL_SYNCHRONOUS` if set, checked and refused exactly as for every command
    /// ([`StoreOptions::from_env`]), else these settings' `synchronous`.
    pub fn store_options(&self) -> Result<StoreOptions> {
        let synchronous = crate::store::synchronous_from_env()?.unwrap_or(self.synchronous);
        Ok(StoreOptions {
            synchronous,
            ..StoreOptions::default()
        })
    }

    /// Applies the environment, then `overrides`, then validates: CLI > env > file > default.
    pub fn resolve(self, env: &Environment, overrides: &Overrides) -> Result<Resolved> {
        let settings = self.apply(&env.layer()?)?.apply(overrides)?;
        settings.validate()?;
        Ok(Resolved {
            settings,
            api_key: env.api_key.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The help texts name the providers' defaults (a const fn cannot build them from the
    /// constants): they must be the providers' own.
    #[test]
    fn the_help_names_each_providers_own_defaults() {
        use crate::classify::{ollama, openai};
        let url = schema::spec("base_url").unwrap().unset;
        assert!(
            url.contains(openai::DEFAULT_BASE_URL) && url.contains(ollama::DEFAULT_BASE_URL),
            "{url}"
        );
        let model = schema::spec("model").unwrap().unset;
        assert!(
            model.contains(openai::DEFAULT_MODEL) && model.contains(ollama::DEFAULT_MODEL),
            "{model}"
        );
    }
    use serde_json::json;
    use std::collections::HashMap;

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
            max_attempts: 3,
            ..Settings::default()
        };
        let e = env(&[
            ("SITETRAIL_MODEL", "env-model"),
            ("SITETRAIL_BASE_URL", "http://env.example"),
            ("SITETRAIL_MAX_ATTEMPTS", "9"),
            ("SITETRAIL_FIXED_DELAY_MS", "250"),
        ]);
        let mut cli = Overrides::new();
        cli.set_text("base_url", "http://cli.example").unwrap();
        cli.set_text("max_attempts", "4").unwrap();
        let r = file.clone().resolve(&e, &cli).unwrap();
        assert_eq!(r.settings.provider, Provider::Ollama, "file value kept");
        assert_eq!(r.model(), "env-model", "env beats file");
        assert_eq!(r.base_url(), "http://cli.example", "cli beats env");
        assert_eq!(r.settings.max_attempts, 4, "cli beats env beats file");
        assert_eq!(r.settings.fixed_delay_ms, 250, "every setting has its variable");
        assert_eq!(r.settings.retry_base_ms, 30_000, "default");
        assert_eq!(r.worker_config().batch_size, 20, "remote default batch");
        let r = Settings::default().resolve(&env(&[]), &Overrides::new()).unwrap();
        assert_eq!(r.worker_config().batch_size, 1, "builtin default batch");
        let err = Settings::default()
            .resolve(&env(&[("SITETRAIL_PROVIDER", "gemini")]), &Overrides::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("SITETRAIL_PROVIDER") && err.contains("gemini"),
            "{err}"
        );
        let err = Settings::default()
            .resolve(&env(&[("SITETRAIL_BATCH_SIZE", "0")]), &Overrides::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("SITETRAIL_BATCH_SIZE") && err.contains("from 1 to 500"),
            "{err}"
        );
    }

    /// Every choice a spec offers is a value its field takes (the names are written beside the
    /// enums: `Provider::NAMES`, `Synchronous::NAMES`).
    #[test]
    fn every_choice_is_a_value_of_its_setting() {
        for spec in SCHEMA {
            if let Kind::Choice { choices } = spec.kind {
                for c in choices {
                    let mut layer = Overrides::new();
                    layer.set(spec.name, json!(c)).unwrap();
                    let s = Settings::default().apply(&layer).unwrap();
                    let back = serde_json::to_value(&s).unwrap();
                    assert_eq!(back[spec.name], json!(c), "{}", spec.name);
                }
            }
        }
    }

    #[test]
    fn synchronous_and_the_import_are_settings_with_their_variables() {
        let d = Settings::default();
        assert_eq!(d.synchronous, Synchronous::Normal);
        assert_eq!((d.auto_import_minutes, d.import_profiles.len()), (15, 0));
        assert_eq!(schema::limits("auto_import_minutes"), (0, 7 * 24 * 60));
        let file = Settings {
            synchronous: Synchronous::Full,
            import_profiles: vec!["/a/History".into()],
            ..Settings::default()
        };
        let r = file.clone().resolve(&env(&[]), &Overrides::new()).unwrap();
        assert_eq!(r.store_options().synchronous, Synchronous::Full, "the file's");
        let r = file
            .clone()
            .resolve(
                &env(&[
                    ("SITETRAIL_SYNCHRONOUS", "normal"),
                    ("SITETRAIL_AUTO_IMPORT_MINUTES", "60"),
                    ("SITETRAIL_IMPORT_PROFILES", "/b/History"),
                ]),
                &Overrides::new(),
            )
            .unwrap();
        assert_eq!(
            r.store_options().synchronous,
            Synchronous::Normal,
            "the variable wins"
        );
        assert_eq!(r.settings.auto_import_minutes, 60);
        assert_eq!(
            r.settings.import_profiles,
            ["/b/History"],
            "a choice of profiles replaces the lower layer's, unlike exclusions"
        );
        let err = file
            .clone()
            .resolve(&env(&[("SITETRAIL_SYNCHRONOUS", "off")]), &Overrides::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("SITETRAIL_SYNCHRONOUS") && err.contains("off"),
            "{err}"
        );
        // The import reads its own variables only: a bad classifier variable does not stop it.
        let s = file
            .clone()
            .with_env_for(
                &env(&[
                    ("SITETRAIL_MAX_ATTEMPTS", "lots"),
                    ("SITETRAIL_AUTO_IMPORT_MINUTES", "0"),
                ]),
                Scope::Import,
            )
            .unwrap();
        assert_eq!((s.auto_import_minutes, s.max_attempts), (0, 5));
        assert!(file
            .with_env_for(&env(&[("SITETRAIL_AUTO_IMPORT_MINUTES", "10081")]), Scope::Import)
            .is_err());
    }

    #[test]
    fn exclusions_add_up_across_layers() {
        let file = Settings {
            exclusions: vec!["file.example".into()],
            ..Settings::default()
        };
        let mut cli = Overrides::new();
        cli.set("exclusions", json!(["cli.example", "file.example"]))
            .unwrap();
        let r = file
            .resolve(
                &env(&[("SITETRAIL_EXCLUSIONS", "env.example,*.corp.example")]),
                &cli,
            )
            .unwrap();
        assert_eq!(
            r.settings.exclusions,
            ["file.example", "env.example", "*.corp.example", "cli.example"]
        );
    }

    #[test]
    fn the_key_comes_only_from_the_environment_and_never_shows() {
        let r = Settings::default()
            .resolve(&env(&[("SITETRAIL_API_KEY", "sk-abc-123")]), &Overrides::new())
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
        let err = Settings::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("batch_size") && err.contains("from 1 to 500"),
            "{err}"
        );
        std::fs::write(&path, r#"{"fixed_delay_ms": "soon"}"#).unwrap();
        assert!(Settings::load(&path)
            .unwrap_err()
            .to_string()
            .contains("fixed_delay_ms"));
        std::fs::write(&path, r#"{"a_newer_setting": true, "max_attempts": 2}"#).unwrap();
        assert_eq!(
            Settings::load(&path).unwrap().max_attempts,
            2,
            "unknown keys are ignored"
        );
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
    fn the_form_layer_names_unknown_settings_and_bad_values() {
        let err = Overrides::edit_from_json(json!({"fixed_delay": 5}).as_object().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("fixed_delay"), "{err}");
        let err = Overrides::edit_from_json(json!({"max_attempts": 1000}).as_object().unwrap()).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("max_attempts"), "{err}");
        let o = Overrides::edit_from_json(
            json!({"model": "  ", "batch_size": null, "exclusions": ["b.example"]})
                .as_object()
                .unwrap(),
        )
        .unwrap();
        let s = Settings {
            model: Some("m".into()),
            batch_size: Some(3),
            exclusions: vec!["a.example".into(), "b.example".into()],
            ..Settings::default()
        }
        .apply(&o)
        .unwrap();
        assert_eq!((s.model, s.batch_size), (None, None), "blank text and null unset");
        assert_eq!(s.exclusions, ["b.example"], "an edit can remove an exclusion");
    }
}
