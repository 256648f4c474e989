//! This device's link to an account as stored (`sync_link`), a linked device's session with its
//! hub (its link, keys and client), the one series each device writes, and what one sync did:
//! what every step of a sync shares, below them all.

use std::path::Path;

use rusqlite::{Connection, OptionalExtension};
use uuid::Uuid;

use sitetrail_sync_wire::Series;

use super::client::{HubClient, Transport, Trust};
use super::crypto::AccountKeys;
use super::keystore;
use crate::blocking;
use crate::error::{Error, ErrorKind, Result};
use crate::store::Store;
use crate::time::Timestamp;

/// This device's link to an account.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Link {
    /// The hub's URL.
    pub hub: String,
    /// The account's id.
    pub account_id: Uuid,
    /// This device's id.
    pub device_id: Uuid,
    /// This device's name.
    pub device_name: String,
    /// When it was linked.
    pub linked_at: Timestamp,
    /// When it last synced without an error.
    pub last_sync_at: Option<Timestamp>,
    /// The last sync's error, if it failed.
    pub last_error: Option<String>,
    /// What sync did on its own that the user should know, in a sentence (it went on as a new
    /// device after a restore: [`super::heal`]).
    pub notice: Option<String>,
    /// When it did.
    pub notice_at: Option<Timestamp>,
    /// The user allowed a plain `http://` hub on another machine (`--allow-insecure-http`).
    pub insecure_http: bool,
    /// A PEM file of certificate authorities trusted for the hub (`--ca-file`).
    pub ca_file: Option<String>,
}

/// The link, if this database has one.
pub fn get_link(conn: &Connection) -> Result<Option<Link>> {
    let row = conn
        .prepare_cached(
            r#"SELECT hub, account_id, device_id, device_name, linked_at, last_sync_at, last_error,
                      notice, notice_at, insecure_http, ca_file
               FROM sync_link"#,
        )?
        .query_row([], |r| {
            // The ids are checked below, where a damaged one is said as such.
            let ids = (
                r.get::<_, Vec<u8>>("account_id")?,
                r.get::<_, Vec<u8>>("device_id")?,
            );
            let link = Link {
                hub: r.get("hub")?,
                account_id: Uuid::nil(),
                device_id: Uuid::nil(),
                device_name: r.get("device_name")?,
                linked_at: r.get("linked_at")?,
                last_sync_at: r.get("last_sync_at")?,
                last_error: r.get("last_error")?,
                notice: r.get("notice")?,
                notice_at: r.get("notice_at")?,
                insecure_http: r.get("insecure_http")?,
                ca_file: r.get("ca_file")?,
            };
            Ok((ids, link))
        })
        .optional()?;
    let Some(((a, d), link)) = row else {
        return Ok(None);
    };
    let (Ok(account_id), Ok(device_id)) = (Uuid::from_slice(&a), Uuid::from_slice(&d)) else {
        return Err(Error::Sync {
            kind: ErrorKind::Database,
            message: "the sync link in this database is damaged; run `sitetrail sync leave`".into(),
        });
    };
    Ok(Some(Link {
        account_id,
        device_id,
        ..link
    }))
}

pub(crate) fn not_linked() -> Error {
    Error::Sync {
        kind: ErrorKind::NotFound,
        message: "this device is not linked to a hub; run `sitetrail sync setup --hub URL` (first device) or `sitetrail sync join --hub URL`".into(),
    }
}

/// The one series each device writes.
pub const SERIES: &str = "ops";

pub(crate) fn series() -> Series {
    // A constant valid name.
    Series::new(SERIES).unwrap_or_else(|_| series())
}

/// A linked device's link, keys and client, for one sync or one claim.
pub(crate) struct Session {
    pub(crate) link: Link,
    pub(crate) keys: AccountKeys,
    pub(crate) client: HubClient,
}

pub(crate) async fn session(store: &Store, key_dir: &Path) -> Result<Session> {
    let (store, dir) = (store.clone(), key_dir.to_path_buf());
    let (link, secret, trust) = blocking::run(move || {
        let link = store.with_conn(get_link)?.ok_or_else(not_linked)?;
        let secret = keystore::load(&dir, link.account_id, link.device_id)?;
        let trust = Trust::load(link.ca_file.as_deref().map(Path::new))?;
        Ok((link, secret, trust))
    })
    .await?;
    let keys = secret.keys();
    if keys.account_id != link.account_id {
        return Err(Error::Sync {
            kind: ErrorKind::NeedsUser,
            message: "this device's sync key is not the key of its account; run `sitetrail sync leave`, then join again".into(),
        });
    }
    let client = HubClient::with_transport(
        &link.hub,
        link.account_id,
        keys.login.clone(),
        Some(link.device_id),
        &Transport {
            allow_insecure_http: link.insecure_http,
            trust,
        },
    )?;
    Ok(Session { link, keys, client })
}

/// What one sync did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SyncReport {
    /// Records pushed (acknowledged by the hub).
    pub pushed: u64,
    /// Records pulled and applied.
    pub pulled: u64,
    /// Visits added from other devices.
    pub visits: u64,
    /// Operations still waiting to be pushed.
    pub pending: u64,
    /// This device went on as a new device in this sync (its series no longer matched the
    /// hub's; the link's `notice` says why).
    pub healed: bool,
    /// Records of other devices skipped because they cannot be read (counted in
    /// [`super::status::SyncStatus::unreadable`]).
    pub unreadable: u64,
}
