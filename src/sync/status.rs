//! Sync's state as `sync status` and `sync devices` show it, and where the key is kept.

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use uuid::Uuid;

use super::keystore;
use super::link::{get_link, Link};
use super::push::pending;
use super::session::{session, Session};
use crate::blocking;
use crate::error::{Error, ErrorKind, Result};
use crate::store::Store;
use crate::time::Timestamp;

/// A device of the account, as `sync status` and `sync devices` show it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DeviceRow {
    /// Its id.
    pub device_id: Uuid,
    /// Its name (as it last told the others).
    pub name: Option<String>,
    /// This device.
    pub this_device: bool,
    /// When it registered with the hub (only from the hub).
    pub created_at: Option<Timestamp>,
    /// When the hub last heard from it (only from the hub).
    pub last_seen_at: Option<Timestamp>,
    /// When it left, if it did.
    pub left_at: Option<Timestamp>,
}

/// The state of sync on this device, from the database alone.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SyncStatus {
    /// The link (None: not linked).
    pub link: Option<Link>,
    /// Operations waiting to be pushed.
    pub pending: u64,
    /// The devices this one has heard of.
    pub devices: Vec<DeviceRow>,
    /// Other devices' records not applied because they cannot be read.
    pub unreadable: super::unreadable::UnreadableSummary,
    /// The hub refused the last sync at the account's quota: its sentence ("the hub's quota for
    /// this account is full: 2.0 of 2.0 GiB; ..."). Recording goes on; None otherwise.
    pub quota_full: Option<String>,
    /// The link reaches its hub in clear (`--allow-insecure-http`): the warning said on every
    /// sync ([`super::client::INSECURE_WARNING`]); None otherwise.
    pub insecure_warning: Option<&'static str>,
}

fn known_devices(conn: &Connection, me: Option<Uuid>) -> Result<Vec<DeviceRow>> {
    let rows: Vec<(Vec<u8>, String)> = conn
        .prepare_cached(r#"SELECT device_id, name FROM sync_device ORDER BY name"#)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, name)| Uuid::from_slice(&id).ok().map(|id| (id, name)))
        .map(|(device_id, name)| DeviceRow {
            device_id,
            name: Some(name),
            this_device: Some(device_id) == me,
            created_at: None,
            last_seen_at: None,
            left_at: None,
        })
        .collect())
}

/// Sync's state on this device.
pub fn status(conn: &Connection) -> Result<SyncStatus> {
    let link = get_link(conn)?;
    let quota_full = link
        .as_ref()
        .and_then(|l| l.last_error.as_deref())
        .and_then(super::client::quota_full_in)
        .map(str::to_owned);
    let insecure_warning = link
        .as_ref()
        .is_some_and(|l| l.insecure_http)
        .then_some(super::client::INSECURE_WARNING);
    Ok(SyncStatus {
        quota_full,
        insecure_warning,
        pending: if link.is_some() { pending(conn)? } else { 0 },
        devices: known_devices(conn, link.as_ref().map(|l| l.device_id))?,
        unreadable: super::unreadable::summary(conn)?,
        link,
    })
}

fn millis(ms: i64) -> Timestamp {
    Timestamp(ms.saturating_mul(1000))
}

/// The account's devices as the hub knows them, with the names they gave.
pub async fn devices(store: &Store, key_dir: &Path) -> Result<Vec<DeviceRow>> {
    let s = session(store, key_dir).await?;
    devices_of(&s, store).await
}

async fn devices_of(s: &Session, store: &Store) -> Result<Vec<DeviceRow>> {
    let on_hub = s.client.devices().await?;
    let st = store.clone();
    let me = s.link.device_id;
    let known = blocking::run(move || st.with_conn(|c| known_devices(c, Some(me)))).await?;
    Ok(on_hub
        .into_iter()
        .map(|d| DeviceRow {
            device_id: d.device_id,
            name: known
                .iter()
                .find(|k| k.device_id == d.device_id)
                .and_then(|k| k.name.clone()),
            this_device: d.device_id == me,
            created_at: Some(millis(d.created_at_ms)),
            last_seen_at: Some(millis(d.last_seen_at_ms)),
            left_at: d.left_at_ms.map(millis),
        })
        .collect())
}

/// Where the key of the device linked as `link` is kept (None: nowhere; see
/// [`keystore::locate`]). It blocks (a file, a keyring call).
pub fn key_place(key_dir: &Path, link: &Link) -> Result<Option<keystore::KeyPlace>> {
    keystore::locate(key_dir, link.account_id, link.device_id)
}

/// The key folder for a settings path (see [`keystore::key_dir`]).
pub fn key_dir(settings: Option<&Path>) -> Result<PathBuf> {
    keystore::key_dir(settings)
}

/// The device `which` names among `devices`: its id, a prefix of its id (at least 4 characters),
/// or its exact name. Refuses a name or prefix that fits several (listing them), one that fits
/// none, and this device (which leaves with `sync leave`).
pub fn pick_device<'a>(devices: &'a [DeviceRow], which: &str) -> Result<&'a DeviceRow> {
    let which = which.trim();
    let id_like = which.to_ascii_lowercase();
    let by_id = |d: &&DeviceRow| {
        let id = d.device_id.hyphenated().to_string();
        id == id_like
            || (id_like.len() >= 4
                && (id.starts_with(&id_like) || d.device_id.simple().to_string().starts_with(&id_like)))
    };
    let mut found: Vec<&DeviceRow> = devices.iter().filter(by_id).collect();
    if found.is_empty() {
        found = devices
            .iter()
            .filter(|d| d.name.as_deref() == Some(which))
            .collect();
    }
    match found.as_slice() {
        [] => Err(Error::Sync {
            kind: ErrorKind::NotFound,
            message: format!(
                "no device of the account has the id or name {which:?} (`sitetrail sync devices` lists them)"
            ),
        }),
        [d] if d.this_device => Err(Error::Sync {
            kind: ErrorKind::InvalidInput,
            message: "that is this device: it leaves the account with `sitetrail sync leave`".into(),
        }),
        [d] => Ok(d),
        many => Err(Error::Sync {
            kind: ErrorKind::InvalidInput,
            message: format!(
                "{which:?} fits {} devices; name one by its id: {}",
                many.len(),
                many.iter()
                    .map(|d| format!("{} ({})", d.device_id, d.name.as_deref().unwrap_or("unnamed")))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// Removes another device of the account (lost, wiped, reinstalled): the hub marks it left, so
/// it can push no more, its claims are released, and it no longer counts against the account's
/// devices. Its records stay (the others have applied them). `which` is as for [`pick_device`].
/// Returns the device as it was.
pub async fn remove_device(store: &Store, key_dir: &Path, which: &str) -> Result<DeviceRow> {
    let s = session(store, key_dir).await?;
    let devices = devices_of(&s, store).await?;
    let device = pick_device(&devices, which)?.clone();
    s.client.leave(device.device_id).await?;
    Ok(device)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: u128, name: &str, this_device: bool) -> DeviceRow {
        DeviceRow {
            device_id: Uuid::from_u128(id),
            name: Some(name.to_owned()),
            this_device,
            created_at: None,
            last_seen_at: None,
            left_at: None,
        }
    }

    #[test]
    fn a_device_is_named_by_its_id_a_prefix_of_it_or_its_exact_name() {
        let devices = [
            row(0xaaaa_0000_0000_0000_0000_0000_0000_0001, "laptop", false),
            row(0xbbbb_0000_0000_0000_0000_0000_0000_0002, "desktop", false),
            row(0xbbbb_1000_0000_0000_0000_0000_0000_0003, "laptop", false),
            row(0xcccc_0000_0000_0000_0000_0000_0000_0004, "me", true),
        ];
        let id = devices[1].device_id.to_string();
        assert_eq!(
            pick_device(&devices, &id).unwrap().name.as_deref(),
            Some("desktop")
        );
        assert_eq!(
            pick_device(&devices, &id.to_uppercase()).unwrap().device_id,
            devices[1].device_id
        );
        assert_eq!(
            pick_device(&devices, "aaaa").unwrap().device_id,
            devices[0].device_id
        );
        assert_eq!(
            pick_device(&devices, "desktop").unwrap().device_id,
            devices[1].device_id
        );
        // Ambiguous: the matches are listed.
        let e = pick_device(&devices, "laptop").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.to_string().contains(&devices[0].device_id.to_string()), "{e}");
        assert!(e.to_string().contains(&devices[2].device_id.to_string()), "{e}");
        assert_eq!(
            pick_device(&devices, "bbbb").unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
        // Too short a prefix is no id; nothing fits.
        assert_eq!(
            pick_device(&devices, "aaa").unwrap_err().kind(),
            ErrorKind::NotFound
        );
        assert_eq!(
            pick_device(&devices, "phone").unwrap_err().kind(),
            ErrorKind::NotFound
        );
        // This device leaves with `sync leave`.
        let e = pick_device(&devices, "me").unwrap_err();
        assert!(e.to_string().contains("sync leave"), "{e}");
    }
}
