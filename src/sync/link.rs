//! Linking this device to an account (`setup`, `join`), the link as stored (`sync_link`), the
//! device's name, and leaving.

use std::path::Path;

use rusqlite::named_params;
use uuid::Uuid;

use super::client::{check_transport, normalise_hub_url, HubClient, Transport};
use super::crypto::AccountSecret;
use super::push::pending;
use super::reconcile;
use super::send::send_waiting;
use super::session::session;
use super::{apply, keystore};
use crate::blocking;
use crate::error::{Error, ErrorKind, Result};
use crate::store::{Change, Store};
use crate::sync_log::local;
use crate::sync_log::ops::Op;

pub use super::apply::MAX_DEVICE_NAME;

pub use super::session::{get_link, Link};

/// The name this machine goes by (its host name), for a device name not given.
pub fn default_device_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "this device".to_owned())
}

fn clean_name(name: Option<&str>) -> Result<String> {
    let name = name.map_or_else(default_device_name, |n| {
        n.chars().filter(|c| !c.is_control()).collect()
    });
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::InvalidInput("a device name must not be empty".into()));
    }
    if name.chars().count() > MAX_DEVICE_NAME {
        return Err(Error::InvalidInput(format!(
            "a device name is at most {MAX_DEVICE_NAME} characters"
        )));
    }
    Ok(name.to_owned())
}

/// A device just linked.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Linked {
    /// The account's id.
    pub account_id: Uuid,
    /// This device's id.
    pub device_id: Uuid,
    /// This device's name.
    pub device_name: String,
    /// Why the sync key is in a file rather than the OS keyring, when the keyring was tried and
    /// refused it (a sentence for the person; never the key).
    pub key_note: Option<String>,
}

fn already_linked(store: &Store) -> Result<()> {
    if let Some(link) = store.with_conn(get_link)? {
        return Err(Error::Sync {
            kind: ErrorKind::Conflict,
            message: format!(
                "this device is already linked to the hub at {}; run `sitetrail sync leave` first",
                link.hub
            ),
        });
    }
    Ok(())
}

#[tracing::instrument(level = "info", skip_all, fields(create))]
async fn link(
    store: &Store,
    key_dir: &Path,
    hub: &str,
    name: Option<&str>,
    secret: &AccountSecret,
    create: bool,
    transport: Transport,
) -> Result<Linked> {
    let hub = normalise_hub_url(hub)?;
    check_transport(&hub, &transport)?;
    let name = clean_name(name)?;
    {
        let store = store.clone();
        blocking::run(move || already_linked(&store)).await?;
    }
    let keys = secret.keys();
    let device = Uuid::now_v7();
    let client = HubClient::with_transport(
        &hub,
        keys.account_id,
        keys.login.clone(),
        Some(device),
        &transport,
    )?;
    if create {
        client.create_account().await?;
    }
    client.register_device(device).await?;
    let new = NewLink {
        name,
        transport,
        visits: reconcile::Visits::Own,
    };
    store_link(
        store,
        key_dir,
        &client,
        (&hub, keys.account_id, device),
        secret,
        new,
    )
    .await
}

/// The link to write once the hub registered the device: its name, how it reaches the hub, and
/// which visits it sends the account.
pub(crate) struct NewLink {
    pub(crate) name: String,
    pub(crate) transport: Transport,
    pub(crate) visits: reconcile::Visits,
}

/// The local half of a link, once the hub registered `device` in `account`: the key saved (the
/// OS keyring or a file), then the link written with everything this device holds queued for
/// the account. On failure nothing stays behind: the key is deleted and the hub forgets the
/// device (best effort). Used by linking and by rotating the key.
pub(crate) async fn store_link(
    store: &Store,
    key_dir: &Path,
    client: &HubClient,
    (hub, account, device): (&str, Uuid, Uuid),
    secret: &AccountSecret,
    NewLink {
        name,
        transport,
        visits,
    }: NewLink,
) -> Result<Linked> {
    let (st, dir, secret) = (store.clone(), key_dir.to_path_buf(), secret.clone());
    let hub = hub.to_owned();
    let device_name = name.clone();
    let linked = blocking::run(move || {
        let saved = keystore::save(&dir, account, device, &secret)?;
        let written = write_link(&st, (&hub, account, device), &device_name, &transport, visits);
        if written.is_err() {
            // Nothing stays behind: the key goes with the link that was not written.
            if let Err(e) = keystore::delete(&dir, account, device) {
                tracing::warn!(error = %e, "the key of a link that failed was not deleted");
            }
        }
        written.map(|()| saved)
    })
    .await;
    let saved = match linked {
        Ok(saved) => saved,
        Err(e) => {
            // The hub forgets the device too (best effort: the error that matters is `e`), so a
            // failed join does not count against the account's devices.
            if let Err(left) = client.leave(device).await {
                tracing::warn!(error = %left, "a device registered by a failed link was not removed");
            }
            return Err(e);
        }
    };
    Ok(Linked {
        account_id: account,
        device_id: device,
        device_name: name,
        key_note: saved.keyring_problem.map(|problem| {
            format!(
                "The OS keyring did not take the sync key ({problem}), so it is kept in a file readable by you only, in the config folder."
            )
        }),
    })
}

/// Writes the link, this device's name and everything it holds for the account, in one
/// transaction.
fn write_link(
    store: &Store,
    (hub, account, device): (&str, Uuid, Uuid),
    device_name: &str,
    transport: &Transport,
    visits: reconcile::Visits,
) -> Result<()> {
    let now = store.now();
    store.write(Some(Change::Visits), |tx| {
        tx.prepare_cached(
            r#"INSERT INTO sync_link (singleton, hub, account_id, device_id, device_name, linked_at,
                                      insecure_http, ca_file)
               VALUES (1, :hub, :a, :d, :n, :now, :insecure, :ca)"#,
        )?
        .execute(named_params! {
            ":hub": hub, ":a": account.as_bytes().as_slice(), ":d": device.as_bytes().as_slice(),
            ":n": device_name, ":now": now, ":insecure": transport.allow_insecure_http,
            ":ca": transport.trust.file.as_ref().map(|f| f.to_string_lossy().into_owned()),
        })?;
        // The clock starts past every clock this database holds (from an earlier link): what
        // is queued again below keeps its own, older clock, and a new change beats it.
        reconcile::raise_clock_in(tx)?;
        // Names are the device's own, like any other change (its own row is written here).
        let op = Op::Device {
            name: device_name.to_owned(),
        };
        let hlc = local::queue_in(tx, &op)?.map_or(0, |(hlc, _)| hlc);
        apply::set_device_name_in(tx, device, device_name, hlc)?;
        reconcile::queue_everything_in(tx, hlc, visits)?;
        Ok(())
    })
}

/// Creates an account on the hub at `hub` and links this device to it (the first device).
/// Returns the link and the recovery key, to show the user once.
pub async fn setup(store: &Store, key_dir: &Path, hub: &str, name: Option<&str>) -> Result<(Linked, String)> {
    setup_with(store, key_dir, hub, name, Transport::default()).await
}

/// [`setup`], reaching the hub as `transport` allows (kept in the link for every later sync).
pub async fn setup_with(
    store: &Store,
    key_dir: &Path,
    hub: &str,
    name: Option<&str>,
    transport: Transport,
) -> Result<(Linked, String)> {
    let secret = AccountSecret::generate();
    let linked = link(store, key_dir, hub, name, &secret, true, transport).await?;
    Ok((linked, secret.recovery_key()))
}

/// Links this device to the account `recovery_key` opens on the hub at `hub`.
pub async fn join(
    store: &Store,
    key_dir: &Path,
    hub: &str,
    name: Option<&str>,
    recovery_key: &str,
) -> Result<Linked> {
    join_with(store, key_dir, hub, name, recovery_key, Transport::default()).await
}

/// [`join`], reaching the hub as `transport` allows (kept in the link for every later sync).
pub async fn join_with(
    store: &Store,
    key_dir: &Path,
    hub: &str,
    name: Option<&str>,
    recovery_key: &str,
    transport: Transport,
) -> Result<Linked> {
    let secret = AccountSecret::from_recovery_key(recovery_key).map_err(|e| Error::Sync {
        kind: ErrorKind::NeedsUser,
        message: format!("{e}; nothing was changed"),
    })?;
    link(store, key_dir, hub, name, &secret, false, transport).await
}

/// What leaving did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Left {
    /// The link that was.
    pub link: Link,
    /// Records pushed on the way out.
    pub pushed: u64,
    /// Changes not sent (the hub could not be reached and `force` was given, or the hub no longer
    /// takes this device's changes): they stay only on this device until it is linked again (a
    /// link sends everything the device holds).
    pub unsent: u64,
    /// What the hub said when it refused this device for good (the account was deleted or its key
    /// replaced, or this device was removed from it): the device left here all the same, as
    /// nothing more can be sent to that account ([`super::client::refuses_this_device`]).
    pub refused: Option<String>,
}

/// The refusal to leave while changes would stay only here: `why` the hub was not reached.
fn refusal(why: &Error, unsent: u64) -> Error {
    let message = if unsent == 0 {
        format!("{why}; the hub was not told that this device leaves: run `sitetrail sync leave --force` to leave anyway")
    } else {
        format!(
            "{why}; {unsent} change(s) of this device were not sent and would stay only on this device: sync when the hub is back, or run `sitetrail sync leave --force` to leave anyway (joining again later sends them)"
        )
    };
    Error::Sync {
        kind: why.kind(),
        message,
    }
}

/// The local tables of a link, emptied when the device leaves the account (or deletes it): the
/// registers' clocks (`sync_register`) stay, so a later link never overrides a newer change.
const LINK_TABLES: [&str; 6] = [
    "sync_link",
    "sync_op",
    "sync_sealed",
    "sync_applied",
    "sync_device",
    "sync_unreadable",
];

/// Removes this device's link, what it had queued or applied, and its key (keyring entry and
/// file): what leaving and deleting the account end with. The history stays.
pub(crate) async fn unlink(store: &Store, key_dir: &Path, link: &Link) -> Result<()> {
    let (store, dir, l) = (store.clone(), key_dir.to_path_buf(), link.clone());
    blocking::run(move || {
        store.write(None, |tx| {
            for table in LINK_TABLES {
                tx.execute(&format!("DELETE FROM {table}"), [])?;
            }
            Ok(())
        })?;
        keystore::delete(&dir, l.account_id, l.device_id)
    })
    .await
}

/// This device leaves the account. What it queued is pushed first (so the account keeps every
/// change it made); if that or telling the hub fails, it refuses, saying how many changes would
/// stay only here, unless `force`. Then the link, the waiting operations and records, what it
/// applied and the key (its keyring entry and file) are deleted. The history stays, and so do
/// the registers' clocks (`sync_register`): a later link sends every setting again with the
/// clock it had, so it never overrides a newer change made elsewhere meanwhile.
#[tracing::instrument(level = "info", skip_all, fields(force))]
pub async fn leave(store: &Store, key_dir: &Path, force: bool) -> Result<Left> {
    let pending_now = || {
        let st = store.clone();
        blocking::run(move || st.with_conn(pending))
    };
    let mut refused = None;
    let (link, pushed, unsent) = match session(store, key_dir).await {
        Ok(s) => {
            let (s, _, sent) = send_waiting(s, store, key_dir).await;
            let told = match sent {
                Ok(pushed) => s.client.leave_self(s.link.device_id).await.map(|()| pushed),
                Err(e) => Err(e),
            };
            let unsent = pending_now().await?;
            let pushed = match told {
                Ok(pushed) => pushed,
                // The account is gone or this device is no longer of it: nothing can be sent to
                // it any more, whenever the user tries; leaving here is all that is left to do.
                Err(e) if super::client::refuses_this_device(&e) => {
                    tracing::warn!(error = %e, unsent, "the hub refuses this device for good: leaving here");
                    refused = Some(e.to_string());
                    0
                }
                Err(e) if force => {
                    tracing::warn!(error = %e, unsent, "leaving without telling the hub");
                    0
                }
                Err(e) => return Err(refusal(&e, unsent)),
            };
            (s.link, pushed, unsent)
        }
        Err(e) if force || e.kind() == ErrorKind::NeedsUser => {
            let st = store.clone();
            let link = blocking::run(move || st.with_conn(get_link)).await?.ok_or(e)?;
            (link, 0, pending_now().await?)
        }
        Err(e) => return Err(e),
    };
    unlink(store, key_dir, &link).await?;
    Ok(Left {
        link,
        pushed,
        unsent,
        refused,
    })
}
