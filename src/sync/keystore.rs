//! Where a device keeps the account secret: a file readable by its owner only (0600, in a 0700
//! folder) in the config directory, `<settings dir>/sync/<account>-<device>.key`. Never in the
//! database, a log, argv or an error message. (The OS keyring is not used yet: see README, Sync.)

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use uuid::Uuid;

use super::crypto::AccountSecret;
use crate::error::{Error, ErrorKind, Result};

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

/// Stores `secret` for `account`/`device` in `dir` (owner-only permissions).
pub fn save(dir: &Path, account: Uuid, device: Uuid, secret: &AccountSecret) -> Result<PathBuf> {
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

/// Reads the secret of `account`/`device` from `dir`.
pub fn load(dir: &Path, account: Uuid, device: Uuid) -> Result<AccountSecret> {
    let path = file(dir, account, device);
    let text = std::fs::read_to_string(&path).map_err(|e| Error::Sync {
        kind: ErrorKind::NeedsUser,
        message: format!(
            "this device's sync key is missing from {} ({}); run `sitetrail sync leave`, then `sitetrail sync join` with the recovery key",
            path.display(),
            e.kind()
        ),
    })?;
    AccountSecret::from_hex(&text).ok_or_else(|| Error::Sync {
        kind: ErrorKind::NeedsUser,
        message: format!(
            "this device's sync key file {} is damaged; run `sitetrail sync leave`, then `sitetrail sync join` with the recovery key",
            path.display()
        ),
    })
}

/// Deletes the key file of `account`/`device` (fine if it is gone already).
pub fn delete(dir: &Path, account: Uuid, device: Uuid) -> Result<()> {
    match std::fs::remove_file(file(dir, account, device)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_file_is_owner_only_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let keys = dir.path().join("sync");
        let (a, d) = (Uuid::now_v7(), Uuid::now_v7());
        let s = AccountSecret::generate();
        let path = save(&keys, a, d, &s).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            std::fs::metadata(&keys).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(load(&keys, a, d).unwrap().to_hex(), s.to_hex());
        std::fs::write(&path, "garbage").unwrap();
        let e = load(&keys, a, d).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NeedsUser);
        assert!(!e.to_string().contains("garbage"));
        delete(&keys, a, d).unwrap();
        delete(&keys, a, d).unwrap();
        assert_eq!(load(&keys, a, d).unwrap_err().kind(), ErrorKind::NeedsUser);
    }
}
