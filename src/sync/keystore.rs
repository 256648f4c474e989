//! Where a device keeps the account secret: in the OS keyring when this machine has one that
//! works (Secret Service on Linux, the Keychain on macOS, the Credential Manager on Windows), one
//! entry per (account, device): service [`KEYRING_SERVICE`], user `<account>-<device>`. Else in a
//! file readable by its owner only (0600, in a 0700 folder) in the config directory,
//! `<settings dir>/sync/<account>-<device>.key`. Never in the database, a log, argv or an error
//! message.
//!
//! - Saving tries the keyring first and keeps the key there only once it reads back equal; if the
//!   keyring is off, missing or refuses, the key goes to the file (and a warning, without the
//!   key, says why).
//! - Loading looks in the keyring, then in the file. A key found in a file while the keyring
//!   works is moved into it: the file is removed only after the keyring has read it back equal
//!   (so a device set up before the keyring was used, or while it was locked, keeps working).
//! - Deleting removes both.
//! - [`KEYRING_ENV`]`=off` (or [`use_file_only`], for a program embedding the library) keeps the
//!   keyring untouched: the file only. Without a D-Bus session (`DBUS_SESSION_BUS_ADDRESS`
//!   unset: headless Linux) the keyring is not tried either.
//!
//! Every function here blocks (a file, or a D-Bus or OS call): async code calls them through
//! [`crate::blocking::run`]. Errors from the keyring are described by their kind and the
//! platform's message only, and any occurrence of the key is cut out of them.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use uuid::Uuid;

use super::crypto::AccountSecret;
use crate::error::{Error, ErrorKind, Result};

/// The keyring entries' service name (their user is `<account>-<device>`).
pub const KEYRING_SERVICE: &str = "app.sitetrail.sync";
/// The environment variable that keeps the OS keyring out of it: `off` (the file only), or `on`
/// (the default: the keyring when one works here).
pub const KEYRING_ENV: &str = "SITETRAIL_SYNC_KEYRING";

/// Where a device's key is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyPlace {
    /// The OS keyring.
    Keyring,
    /// The 0600 file in the config directory.
    File,
}

impl KeyPlace {
    /// `keyring` or `file` (as in `sync status --json`).
    pub fn as_str(self) -> &'static str {
        match self {
            KeyPlace::Keyring => "keyring",
            KeyPlace::File => "file",
        }
    }

    /// The name `sync status --json` (`key_store`) and the app give where a linked device's key
    /// is: `keyring`, `file`, or `missing` when it is in neither.
    pub fn name(place: Option<KeyPlace>) -> &'static str {
        place.map_or("missing", KeyPlace::as_str)
    }
}

static FILE_ONLY: AtomicBool = AtomicBool::new(false);

/// From now on, this process never touches the OS keyring: keys are kept in files (tests, and
/// programs embedding the library that want no keyring). It cannot be undone.
pub fn use_file_only() {
    FILE_ONLY.store(true, Ordering::Relaxed);
}

/// Why the keyring is not used here, checked without touching it (None: it is tried). A value
/// of [`KEYRING_ENV`] other than `off` or `on` is refused.
pub fn keyring_off() -> Result<Option<&'static str>> {
    if FILE_ONLY.load(Ordering::Relaxed) {
        return Ok(Some("the keyring is turned off for this program"));
    }
    match std::env::var(KEYRING_ENV) {
        Ok(v) if v.trim().eq_ignore_ascii_case("off") => {
            return Ok(Some("SITETRAIL_SYNC_KEYRING=off"));
        }
        Ok(v) if v.trim().is_empty() || v.trim().eq_ignore_ascii_case("on") => {}
        Err(std::env::VarError::NotPresent) => {}
        Ok(_) | Err(std::env::VarError::NotUnicode(_)) => {
            return Err(Error::Sync {
                kind: ErrorKind::InvalidInput,
                message: format!("{KEYRING_ENV} must be `off` (keep the sync key in a file) or `on`"),
            });
        }
    }
    if cfg!(all(unix, not(target_os = "macos"))) && std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none() {
        return Ok(Some("no keyring service on this system (no D-Bus session)"));
    }
    Ok(None)
}

/// The key files' folder for a settings file at `settings` (or the default settings path).
pub fn key_dir(settings: Option<&Path>) -> Result<PathBuf> {
    let settings = match settings {
        Some(p) => p.to_path_buf(),
        None => crate::settings::default_settings_path()?,
    };
    Ok(settings
        .parent()
        .map_or_else(|| PathBuf::from("sync"), |p| p.join("sync")))
}

fn file(dir: &Path, account: Uuid, device: Uuid) -> PathBuf {
    dir.join(format!("{}-{}.key", account.hyphenated(), device.hyphenated()))
}

/// The keyring entry's user name for `account`/`device`.
pub fn keyring_user(account: Uuid, device: Uuid) -> String {
    format!("{}-{}", account.hyphenated(), device.hyphenated())
}

fn entry(account: Uuid, device: Uuid) -> std::result::Result<keyring::Entry, keyring::Error> {
    keyring::Entry::new(KEYRING_SERVICE, &keyring_user(account, device))
}

/// A keyring error in words: its kind and the platform's message, never a stored value, and with
/// any occurrence of `secret` cut out in case a platform message quoted it.
fn describe(e: &keyring::Error, secret: Option<&AccountSecret>) -> String {
    let text = match e {
        keyring::Error::PlatformFailure(err) => format!("the keyring failed: {err}"),
        keyring::Error::NoStorageAccess(err) => format!("the keyring cannot be reached: {err}"),
        keyring::Error::NoEntry => "no entry in the keyring".to_owned(),
        keyring::Error::BadEncoding(_) => "the keyring's entry is not text".to_owned(),
        keyring::Error::Ambiguous(items) => format!("{} keyring entries match", items.len()),
        keyring::Error::TooLong(..) | keyring::Error::Invalid(..) => {
            "the keyring refused the entry's name".to_owned()
        }
        _ => "the keyring failed".to_owned(),
    };
    match secret {
        Some(s) => text.replace(&s.to_hex(), "[key]"),
        None => text,
    }
}

/// Puts `secret` in the keyring and reads it back; Ok only if it reads back equal (else the
/// entry is removed again).
fn keyring_put(account: Uuid, device: Uuid, secret: &AccountSecret) -> std::result::Result<(), String> {
    let e = entry(account, device).map_err(|e| describe(&e, Some(secret)))?;
    e.set_password(&secret.to_hex())
        .map_err(|err| describe(&err, Some(secret)))?;
    match e.get_password() {
        Ok(back) if AccountSecret::from_hex(&back).is_some_and(|b| b.to_hex() == secret.to_hex()) => Ok(()),
        Ok(_) => {
            let _ = e.delete_credential();
            Err("the keyring gave back a different key than it was given".to_owned())
        }
        Err(err) => {
            let _ = e.delete_credential();
            Err(describe(&err, Some(secret)))
        }
    }
}

fn save_file(dir: &Path, account: Uuid, device: Uuid, secret: &AccountSecret) -> Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    let path = file(dir, account, device);
    let tmp = path.with_extension("key.tmp");
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(secret.to_hex().as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, &path)?;
    Ok(path)
}

fn delete_file(dir: &Path, account: Uuid, device: Uuid) -> Result<()> {
    match std::fs::remove_file(file(dir, account, device)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// Where [`save`] put a key, and why not in the keyring when it tried the keyring and failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Saved {
    /// Where the key is.
    pub place: KeyPlace,
    /// The keyring's refusal, when the keyring was tried and the key went to a file instead
    /// (never holds the key). `None` when the keyring took it or was not tried (turned off).
    pub keyring_problem: Option<String>,
}

/// Stores `secret` for `account`/`device`: in the keyring when it works here, else in a file in
/// `dir` (owner-only permissions). Returns where it went and, if the keyring refused it, why:
/// the caller says so to the person (a log line is no answer to a command).
pub fn save(dir: &Path, account: Uuid, device: Uuid, secret: &AccountSecret) -> Result<Saved> {
    crate::blocking::note("keyring");
    let mut keyring_problem = None;
    if keyring_off()?.is_none() {
        match keyring_put(account, device, secret) {
            Ok(()) => {
                delete_file(dir, account, device)?;
                return Ok(Saved {
                    place: KeyPlace::Keyring,
                    keyring_problem: None,
                });
            }
            Err(problem) => {
                tracing::info!(%problem, "the OS keyring did not take the sync key; it is kept in a file");
                keyring_problem = Some(problem);
            }
        }
    }
    save_file(dir, account, device, secret)?;
    Ok(Saved {
        place: KeyPlace::File,
        keyring_problem,
    })
}

fn damaged(where_: &str) -> Error {
    Error::Sync {
        kind: ErrorKind::NeedsUser,
        message: format!(
            "this device's sync key {where_} is damaged; run `sitetrail sync leave`, then `sitetrail sync join` with the recovery key"
        ),
    }
}

/// Reads the secret of `account`/`device`: from the keyring, else from its file in `dir`.
pub fn load(dir: &Path, account: Uuid, device: Uuid) -> Result<AccountSecret> {
    load_from(dir, account, device).map(|(s, _)| s)
}

/// [`load`], saying where the key was. A key found in its file while the keyring works is moved
/// into the keyring (the file goes once the keyring reads it back equal).
pub fn load_from(dir: &Path, account: Uuid, device: Uuid) -> Result<(AccountSecret, KeyPlace)> {
    crate::blocking::note("keyring");
    let off = keyring_off()?;
    let mut problem = None;
    if off.is_none() {
        match entry(account, device).and_then(|e| e.get_password()) {
            Ok(text) => {
                let secret = AccountSecret::from_hex(&text)
                    .ok_or_else(|| damaged(&format!("in the OS keyring (service {KEYRING_SERVICE})")))?;
                return Ok((secret, KeyPlace::Keyring));
            }
            Err(keyring::Error::NoEntry) => {}
            Err(e) => problem = Some(describe(&e, None)),
        }
    }
    let path = file(dir, account, device);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        let keyring = match (off, &problem) {
            (Some(why), _) => format!("the OS keyring was not looked in ({why})"),
            (None, Some(p)) => format!("the OS keyring could not be read: {p}"),
            (None, None) => format!("nor in the OS keyring (service {KEYRING_SERVICE})"),
        };
        Error::Sync {
            kind: ErrorKind::NeedsUser,
            message: format!(
                "this device's sync key is missing from {} ({}); {keyring}; run `sitetrail sync leave`, then `sitetrail sync join` with the recovery key",
                path.display(),
                e.kind()
            ),
        }
    })?;
    let secret =
        AccountSecret::from_hex(&text).ok_or_else(|| damaged(&format!("file {}", path.display())))?;
    if off.is_none() && problem.is_none() {
        match keyring_put(account, device, &secret) {
            Ok(()) => {
                if let Err(e) = delete_file(dir, account, device) {
                    tracing::warn!(error = %e, "the sync key is now in the OS keyring but its old file could not be removed");
                }
                return Ok((secret, KeyPlace::Keyring));
            }
            Err(problem) => {
                tracing::warn!(%problem, "the sync key could not be moved into the OS keyring; it stays in its file");
            }
        }
    }
    Ok((secret, KeyPlace::File))
}

/// Where the key of `account`/`device` is, looked up without moving it (None: nowhere).
pub fn locate(dir: &Path, account: Uuid, device: Uuid) -> Result<Option<KeyPlace>> {
    crate::blocking::note("keyring");
    if keyring_off()?.is_none() && entry(account, device).and_then(|e| e.get_password()).is_ok() {
        return Ok(Some(KeyPlace::Keyring));
    }
    Ok(file(dir, account, device).exists().then_some(KeyPlace::File))
}

/// Deletes the key of `account`/`device`, its file and its keyring entry (fine if they are gone
/// already). When the keyring fails, the file is gone and the error says which entry is left.
pub fn delete(dir: &Path, account: Uuid, device: Uuid) -> Result<()> {
    crate::blocking::note("keyring");
    delete_file(dir, account, device)?;
    if keyring_off()?.is_none() {
        match entry(account, device).and_then(|e| e.delete_credential()) {
            Ok(()) | Err(keyring::Error::NoEntry) => {}
            Err(e) => {
                return Err(Error::Sync {
                    kind: ErrorKind::Unavailable,
                    message: format!(
                        "the sync key could not be deleted from the OS keyring ({}); remove the entry of service {KEYRING_SERVICE}, user {} with your keyring's tool",
                        describe(&e, None),
                        keyring_user(account, device)
                    ),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_file_is_owner_only_and_round_trips() {
        use_file_only();
        let dir = tempfile::tempdir().unwrap();
        let keys = dir.path().join("sync");
        let (a, d) = (Uuid::now_v7(), Uuid::now_v7());
        let s = AccountSecret::generate();
        assert_eq!(save(&keys, a, d, &s).unwrap().place, KeyPlace::File);
        let path = file(&keys, a, d);
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            std::fs::metadata(&keys).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(load(&keys, a, d).unwrap().to_hex(), s.to_hex());
        assert_eq!(locate(&keys, a, d).unwrap(), Some(KeyPlace::File));
        std::fs::write(&path, "garbage").unwrap();
        let e = load(&keys, a, d).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NeedsUser);
        assert!(!e.to_string().contains("garbage"));
        delete(&keys, a, d).unwrap();
        delete(&keys, a, d).unwrap();
        assert_eq!(locate(&keys, a, d).unwrap(), None);
        let e = load(&keys, a, d).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NeedsUser);
        assert!(e.to_string().contains("not looked in"), "{e}");
    }

    #[test]
    fn keyring_errors_never_carry_the_key() {
        let s = AccountSecret::generate();
        let leaky = keyring::Error::PlatformFailure(format!("could not store {}", s.to_hex()).into());
        let text = describe(&leaky, Some(&s));
        assert!(!text.contains(&s.to_hex()), "{text}");
        assert!(text.contains("[key]"));
        let bad = keyring::Error::BadEncoding(s.to_hex().into_bytes());
        assert!(!describe(&bad, None).contains(&s.to_hex()));
    }
}
