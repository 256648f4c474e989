//! The API key: kept in the OS keyring, never in the database, the settings file or a log.
//!
//! Where it comes from, first match wins: the `SITETRAIL_API_KEY` environment variable (the
//! contract for scripts and tests, like every `SITETRAIL_*` override), the OS keyring (Keychain,
//! Credential Manager, Secret Service), then a key typed in this session and held in memory only.
//! On a machine with no keyring service (headless Linux: no D-Bus session, or nothing answering
//! `org.freedesktop.secrets`) a typed key lasts until the app quits, and the UI says so and points
//! at `SITETRAIL_API_KEY`.
//!
//! Invariant: the key is only ever returned to the worker builder; no function here logs it,
//! formats it into an error, or sends it to the UI ([`KeyStatus`] says where a key is, not what).

use std::sync::Mutex;

use serde::Serialize;
use sitetrail::classify::secret::ApiKey;

use crate::error::{CmdError, CmdResult};

/// The keyring entry's service name.
pub const KEYRING_SERVICE: &str = "app.sitetrail.desktop";
/// The keyring entry's user name.
pub const KEYRING_USER: &str = "classifier-api-key";
/// The environment variable that overrides any stored key.
pub const ENV_KEY: &str = sitetrail::settings::API_KEY_ENV;
/// Longest key accepted (characters).
pub const MAX_KEY_CHARS: usize = 512;

/// Where the key in use comes from, for the settings view (never the key itself).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeyStatus {
    /// `environment`, `keyring`, `session` or `none`.
    pub source: &'static str,
    /// True if the OS keyring can store a key on this machine.
    pub keyring_available: bool,
    /// Why the keyring cannot be used, when it cannot.
    pub keyring_problem: Option<String>,
}

/// Reads and writes the API key. Its calls block (the keyring is a D-Bus or OS call): make them
/// through `AppState::blocking`.
#[derive(Default)]
pub struct KeyStore {
    /// A key typed this session when no keyring could take it.
    session: Mutex<Option<ApiKey>>,
    /// When set, the keyring is never touched (tests, and machines without a keyring service).
    no_keyring: Option<String>,
}

fn entry() -> Result<keyring::Entry, String> {
    keyring::Entry::new(KEYRING_SERVICE, KEYRING_USER).map_err(|e| e.to_string())
}

/// Why the OS keyring cannot work here, checked without touching it.
fn keyring_unusable() -> Option<String> {
    if cfg!(all(unix, not(target_os = "macos"))) && std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none() {
        return Some("no keyring service on this system (no D-Bus session)".into());
    }
    None
}

impl KeyStore {
    /// A store that uses the OS keyring when this machine has one.
    pub fn system() -> KeyStore {
        KeyStore {
            session: Mutex::new(None),
            no_keyring: keyring_unusable(),
        }
    }

    /// A store that never touches the OS keyring (for tests).
    pub fn memory_only(reason: &str) -> KeyStore {
        KeyStore {
            session: Mutex::new(None),
            no_keyring: Some(reason.to_owned()),
        }
    }

    fn session_key(&self) -> Option<ApiKey> {
        self.session.lock().map(|s| s.clone()).unwrap_or(None)
    }

    fn keyring_key(&self) -> Result<Option<ApiKey>, String> {
        // Noted even when the keyring is off (tests): the call site is what must not block.
        sitetrail::blocking::note("keyring");
        if let Some(why) = &self.no_keyring {
            return Err(why.clone());
        }
        match entry()?.get_password() {
            Ok(k) => Ok(ApiKey::new(k)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The key to use, with where it came from.
    pub fn get(&self) -> (Option<ApiKey>, KeyStatus) {
        let env = std::env::var(ENV_KEY).ok().and_then(ApiKey::new);
        let stored = self.keyring_key();
        let (keyring_available, keyring_problem) = match &stored {
            Ok(_) => (true, None),
            Err(e) => (false, Some(e.clone())),
        };
        let status = |source| KeyStatus {
            source,
            keyring_available,
            keyring_problem: keyring_problem.clone(),
        };
        if let Some(k) = env {
            return (Some(k), status("environment"));
        }
        if let Ok(Some(k)) = stored {
            return (Some(k), status("keyring"));
        }
        match self.session_key() {
            Some(k) => (Some(k), status("session")),
            None => (None, status("none")),
        }
    }

    /// Stores `key` in the keyring, or for this session only if there is none.
    pub fn set(&self, key: &str) -> CmdResult<KeyStatus> {
        let key = key.trim();
        if key.is_empty() {
            return Err(CmdError::invalid("Type the API key first."));
        }
        if key.chars().count() > MAX_KEY_CHARS || key.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(CmdError::invalid(format!(
                "That does not look like an API key: it must be one word of at most {MAX_KEY_CHARS} characters."
            )));
        }
        sitetrail::blocking::note("keyring");
        let saved = match &self.no_keyring {
            Some(_) => false,
            None => entry()
                .and_then(|e| e.set_password(key).map_err(|e| e.to_string()))
                .is_ok(),
        };
        if let Ok(mut s) = self.session.lock() {
            *s = if saved { None } else { ApiKey::new(key) };
        }
        Ok(self.get().1)
    }

    /// Forgets the stored key (keyring and session; the environment is the user's).
    pub fn delete(&self) -> KeyStatus {
        sitetrail::blocking::note("keyring");
        if self.no_keyring.is_none() {
            if let Ok(e) = entry() {
                // NoEntry is fine: nothing to delete.
                let _ = e.delete_credential();
            }
        }
        if let Ok(mut s) = self.session.lock() {
            *s = None;
        }
        self.get().1
    }
}

impl std::fmt::Debug for KeyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key: only whether one is held for the session.
        f.debug_struct("KeyStore")
            .field("session_key", &self.session_key().is_some())
            .field("no_keyring", &self.no_keyring)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_keyring_a_key_lives_in_memory_and_is_never_shown() {
        let store = KeyStore::memory_only("no keyring in tests");
        assert!(store.set("   ").is_err());
        assert!(store.set("two words").is_err());
        let status = store.set("sk-test-123").unwrap();
        let shown = serde_json::to_string(&status).unwrap();
        assert!(!shown.contains("sk-test"), "{shown}");
        if std::env::var_os(ENV_KEY).is_none() {
            assert_eq!(status.source, "session");
            assert_eq!(store.get().0, ApiKey::new("sk-test-123"));
            assert!(!format!("{:?}", store.get()).contains("sk-test"));
            assert_eq!(store.delete().source, "none");
            assert_eq!(store.get().0, None);
        }
        assert!(!status.keyring_available);
    }
}
