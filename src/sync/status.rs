//! Sync's state as `sync status` and `sync devices` show it, and where the key is kept.

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use uuid::Uuid;

use super::engine::session;
use super::keystore;
use super::link::{get_link, Link};
use super::push::pending;
use crate::blocking;
use crate::error::Result;
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
    Ok(SyncStatus {
        pending: if link.is_some() { pending(conn)? } else { 0 },
        devices: known_devices(conn, link.as_ref().map(|l| l.device_id))?,
        link,
    })
}

fn millis(ms: i64) -> Timestamp {
    Timestamp(ms.saturating_mul(1000))
}

/// The account's devices as the hub knows them, with the names they gave.
pub async fn devices(store: &Store, key_dir: &Path) -> Result<Vec<DeviceRow>> {
    let s = session(store, key_dir).await?;
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
