//! The settings file: where it is, reading it (checked, never more than a small file) and writing
//! it atomically.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{schema, Environment, Overrides, Resolved, Settings};
use crate::error::{Error, Result};

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
}
