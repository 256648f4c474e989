//! The move of the app's old settings file into the one settings file.
//!
//! Before the import settings were settings of the schema (`auto_import_minutes`,
//! `import_profiles` in `sitetrail::settings`), the app kept them in its own `app.json` in the
//! config directory, beside `settings.json`. At start, before anything reads the settings,
//! [`app_json`] moves them: it reads `app.json`, checks its values with the settings' own specs,
//! writes them into the settings file (its other settings kept) atomically and synced, and only
//! then removes `app.json`. Its values win over the same keys in the settings file: they are the
//! ones the app was using. Nothing is lost on any failure: a malformed `app.json` (not JSON, a
//! value out of its limits, unreadable), or a settings file that cannot be read or written,
//! leaves both files as they are, and the reason is returned for the app to log. The next start
//! tries again.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use sitetrail::settings::{Overrides, Settings};

/// The old file's name, in the config directory.
pub const OLD_FILE: &str = "app.json";

/// The keys `app.json` held, which are settings now.
const KEYS: [&str; 2] = ["auto_import_minutes", "import_profiles"];

/// The largest `app.json` read: it held two values.
const MAX_BYTES: u64 = 1024 * 1024;

/// What [`app_json`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// There was no `app.json`.
    NothingToMove,
    /// Its values are in the settings file, and it is gone.
    Moved {
        /// The file that was removed.
        from: PathBuf,
    },
    /// Nothing changed, for this reason (a sentence naming the file and what to do).
    LeftAsItIs(String),
}

/// Moves `config_dir/app.json` into `settings_file` (see the module doc). Blocking.
pub fn app_json(config_dir: &Path, settings_file: &Path) -> Outcome {
    let old = config_dir.join(OLD_FILE);
    let left = |why: String| {
        Outcome::LeftAsItIs(format!(
            "the old import settings {} were not moved into {}: {why}; both files were left as they are \
             (fix or delete {OLD_FILE}, and the app tries again at its next start)",
            old.display(),
            settings_file.display()
        ))
    };
    let bytes = match sitetrail::fsutil::read_small_file(&old, MAX_BYTES) {
        Ok(None) => return Outcome::NothingToMove,
        Ok(Some(b)) => b,
        Err(why) => return left(format!("it cannot be read ({why})")),
    };
    let layer = match values_of(&bytes) {
        Ok(layer) => layer,
        Err(why) => return left(format!("it is not valid ({why})")),
    };
    let saved = match Settings::load(settings_file) {
        Ok(s) => s,
        Err(e) => return left(e.to_string()),
    };
    let moved = match saved.apply(&layer) {
        Ok(s) => s,
        Err(e) => return left(e.to_string()),
    };
    if let Err(e) = moved.save(settings_file) {
        return left(format!("the settings file could not be written ({e})"));
    }
    // The new file's rename must be on disk before the old file's removal is.
    sync_dir(settings_file);
    match std::fs::remove_file(&old) {
        Ok(()) => Outcome::Moved { from: old },
        Err(e) => Outcome::LeftAsItIs(format!(
            "the old import settings {} were copied into {}, but it could not be removed ({e}): delete it, \
             or its values are copied again at the next start",
            old.display(),
            settings_file.display()
        )),
    }
}

/// The settings layer `app.json`'s bytes hold: its known keys, each checked by its spec
/// (unknown keys were ignored by the old app too).
fn values_of(bytes: &[u8]) -> Result<Overrides, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("it is not UTF-8 text: {e}"))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let Value::Object(object) = value else {
        return Err("it is not a JSON object".into());
    };
    let known: Map<String, Value> = object
        .into_iter()
        .filter(|(k, _)| KEYS.contains(&k.as_str()))
        .collect();
    Overrides::edit_from_json(&known).map_err(|e| e.to_string())
}

/// Syncs the directory holding `file`, so a rename into it is durable (Unix; elsewhere the
/// rename is left to the file system).
fn sync_dir(file: &Path) {
    #[cfg(unix)]
    if let Some(dir) = file.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Err(e) = std::fs::File::open(dir).and_then(|d| d.sync_all()) {
            tracing::warn!(error = %e, dir = %dir.display(), "could not sync the settings folder");
        }
    }
    #[cfg(not(unix))]
    let _ = file;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        std::fs::create_dir_all(&config).unwrap();
        let settings = config.join("settings.json");
        (dir, config, settings)
    }

    #[test]
    fn the_values_move_and_the_other_settings_stay() {
        let (_dir, config, settings) = dirs();
        std::fs::write(&settings, r#"{"max_attempts": 3, "auto_import_minutes": 60}"#).unwrap();
        std::fs::write(
            config.join(OLD_FILE),
            r#"{"auto_import_minutes": 45, "import_profiles": ["/home/u/.config/chromium/Default/History"], "something_else": 1}"#,
        )
        .unwrap();
        assert!(matches!(app_json(&config, &settings), Outcome::Moved { .. }));
        let s = Settings::load(&settings).unwrap();
        assert_eq!(
            s.auto_import_minutes, 45,
            "app.json's value wins: the app used it"
        );
        assert_eq!(s.import_profiles, ["/home/u/.config/chromium/Default/History"]);
        assert_eq!(s.max_attempts, 3, "the other settings are kept");
        assert!(!config.join(OLD_FILE).exists());
        assert_eq!(app_json(&config, &settings), Outcome::NothingToMove);
    }

    #[test]
    fn a_bad_app_json_or_settings_file_changes_nothing() {
        for (old, saved, says) in [
            ("{ not json", r#"{"max_attempts": 3}"#, "not valid"),
            (
                r#"{"auto_import_minutes": 20000}"#,
                r#"{"max_attempts": 3}"#,
                "auto_import_minutes",
            ),
            (
                r#"{"import_profiles": "one"}"#,
                r#"{"max_attempts": 3}"#,
                "import_profiles",
            ),
            ("[15]", r#"{"max_attempts": 3}"#, "not a JSON object"),
            (r#"{"auto_import_minutes": 30}"#, "{ broken", "settings.json"),
        ] {
            let (_dir, config, settings) = dirs();
            std::fs::write(config.join(OLD_FILE), old).unwrap();
            std::fs::write(&settings, saved).unwrap();
            let Outcome::LeftAsItIs(why) = app_json(&config, &settings) else {
                panic!("{old} / {saved} was moved");
            };
            assert!(why.contains("app.json") && why.contains(says), "{why}");
            assert_eq!(std::fs::read_to_string(config.join(OLD_FILE)).unwrap(), old);
            assert_eq!(std::fs::read_to_string(&settings).unwrap(), saved);
        }
    }
}
