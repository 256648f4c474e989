//! Sitetrail's settings: one schema ([`SCHEMA`], declared once with the [`Settings`] struct in
//! `declared.rs`; what a setting is in `schema.rs`), the layers that set them (`layers.rs`: flags
//! and the app's form, the environment), the file (`file.rs`), and building a worker from them
//! (`build.rs`); this file applies the layers in their order. The CLI and the desktop
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
//! `SITETRAIL_API_KEY` (the app adds the OS keyring) and lives only in an [`ApiKey`](crate::classify::secret::ApiKey). A settings
//! file that contains an `api_key` is refused.

mod build;
mod declared;
mod file;
mod layers;
mod provider;
pub mod schema;

pub use build::Resolved;
pub use declared::{Settings, SCHEMA};
pub use file::{default_settings_path, load_and_resolve};
pub use layers::{Environment, Overrides, API_KEY_ENV};
pub use provider::Provider;
pub use schema::{Kind, Scope, Spec};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::store::StoreOptions;

impl Settings {
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
    use crate::store::Synchronous;

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
