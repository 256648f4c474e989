//! The account as a whole on the hub: deleting it (`sitetrail sync delete-account`), and moving
//! it to a new recovery key (`sitetrail sync rotate-key`), which locks out a lost or stolen device.
//!
//! Deleting removes every record, device and claim of the account, for every device. This
//! device's history stays; its link and sync key are removed afterwards, as `leave` removes them
//! (the registers' clocks stay, as for `leave`). The other devices hear of it on their next sync
//! (the hub refuses their login: [`super::client::ACCOUNT_GONE`]) and keep what they recorded.
//!
//! Rotating the key founds the account anew from this device: every key (the login, the record
//! key, the claims' token key) is derived from the recovery key, so the history on the hub cannot
//! be moved under a new key, only sent again. So a sync first (what the others pushed is here,
//! what this device queued is sent), then a new account on the same hub with this device in it,
//! then the old account deleted (whoever holds the old key reads nothing from then on), then this
//! device linked to the new account with everything it holds queued (as any link), and a sync.
//! The other devices are told on their next sync that the account is gone and to join again with
//! the new key; they keep recording meanwhile, and their join sends everything they hold.
//!
//! Invariant: the local link is removed only once the hub said the old account is deleted, so a
//! failed request (the hub unreachable, a refusal) leaves this device linked and the account
//! whole (a new account made for a rotation that then fails is deleted again, best effort).

use std::path::Path;

use uuid::Uuid;

use crate::blocking;
use crate::error::Result;
use crate::store::Store;

use super::client::{HubClient, Transport, Trust};
use super::crypto::AccountSecret;
use super::engine::{self, Link, Linked, SyncReport};

/// Deletes the account this device is linked to on its hub, then this device's link and key.
/// Returns the link as it was.
pub async fn delete_account(store: &Store, key_dir: &Path) -> Result<Link> {
    let session = engine::session(store, key_dir).await?;
    session.client.delete_account().await?;
    tracing::info!("the account was deleted on the hub");
    let link = session.link;
    super::link::unlink(store, key_dir, &link).await?;
    Ok(link)
}

/// What rotating the key did.
#[derive(Debug)]
pub struct Rotated {
    /// The hub.
    pub hub: String,
    /// The account that was deleted.
    pub old_account: Uuid,
    /// The new account and this device in it.
    pub linked: Linked,
    /// The new recovery key: shown once, as at setup.
    pub recovery_key: String,
    /// The first sync to the new account (what this device holds sent), or why it failed (the
    /// background sync or `sync now` sends it later: it is queued).
    pub first_sync: std::result::Result<SyncReport, crate::Error>,
}

/// Moves the account this device is linked to onto a new recovery key (see the module docs).
#[tracing::instrument(level = "info", skip_all)]
pub async fn rotate_key(store: &Store, key_dir: &Path) -> Result<Rotated> {
    // What the other devices pushed is here, and what this device queued is sent, before the old
    // account goes.
    // One session (the key read once) for the sync and the rotation.
    let (old, synced) = engine::sync_with(engine::session(store, key_dir).await?, store, key_dir).await;
    synced?;
    let ca_file = old.link.ca_file.clone();
    let trust = blocking::run(move || Trust::load(ca_file.as_deref().map(Path::new))).await?;
    let transport = Transport {
        allow_insecure_http: old.link.insecure_http,
        trust,
    };
    let secret = AccountSecret::generate();
    let keys = secret.keys();
    let device = Uuid::now_v7();
    let client = HubClient::with_transport(
        &old.link.hub,
        keys.account_id,
        keys.login.clone(),
        Some(device),
        &transport,
    )?;
    client.create_account().await?;
    let made = async {
        client.register_device(device).await?;
        old.client.delete_account().await
    }
    .await;
    if let Err(e) = made {
        if let Err(undo) = client.delete_account().await {
            tracing::warn!(error = %undo, "the new account of a rotation that failed was not deleted");
        }
        return Err(e);
    }
    tracing::info!("the old account was deleted on the hub; this device moves to the new one");
    super::link::unlink(store, key_dir, &old.link).await?;
    let new = super::link::NewLink {
        name: old.link.device_name.clone(),
        transport,
        // The new account has nothing: it gets every visit this device holds, lost devices'
        // included.
        visits: super::reconcile::Visits::All,
    };
    let linked = super::link::store_link(
        store,
        key_dir,
        &client,
        (&old.link.hub, keys.account_id, device),
        &secret,
        new,
    )
    .await?;
    let first_sync = engine::sync_now(store, key_dir).await;
    Ok(Rotated {
        hub: old.link.hub,
        old_account: old.link.account_id,
        linked,
        recovery_key: secret.recovery_key(),
        first_sync,
    })
}
