//! Sync from the app's Settings: set up (the recovery key shown once), join (the key pasted),
//! status (last sync, waiting changes, the devices, what sync did on its own), sync now, leave,
//! remove another device, rotate the recovery key (the new one shown once) and delete the
//! account (both confirmed, as `sitetrail sync rotate-key` and `delete-account` confirm them: the
//! first 8 characters of the account's id typed). All of it is the library's
//! (`sitetrail::sync`); its HTTP is async and its database work runs on the blocking pool. The
//! background sync runs from `setup` (see `crate::lib`).

use serde::Serialize;
use sitetrail::sync::engine::{self, DeviceRow, Link, SyncReport};
use sitetrail::sync::keystore::KeyPlace;
use sitetrail::sync::unreadable::UnreadableSummary;
use tauri::State;

use super::lib;
use crate::error::{CmdError, CmdResult};
use crate::state::AppState;

/// Longest hub URL accepted (characters).
const MAX_URL_CHARS: usize = 2_000;
/// Longest recovery key accepted (characters): 24 words of at most 8 letters, and spaces.
const MAX_KEY_CHARS: usize = 1_000;

fn check_url(hub: &str) -> CmdResult<String> {
    if hub.chars().count() > MAX_URL_CHARS {
        return Err(CmdError::invalid("That hub URL is too long."));
    }
    lib(sitetrail::sync::client::normalise_hub_url(hub))
}

/// Sync's state for the Settings view.
#[derive(Clone, Debug, Serialize)]
pub struct SyncView {
    /// The link, if this device syncs.
    pub link: Option<Link>,
    /// Changes waiting to be sent.
    pub pending: u64,
    /// The devices this one has heard of.
    pub devices: Vec<DeviceRow>,
    /// Where this device's sync key is kept, as `sync status --json` says it: `keyring`, `file`,
    /// `missing` (linked, but no key found), or `None` when not linked.
    pub key_store: Option<&'static str>,
    /// Other devices' records skipped because they cannot be read: how many, and the latest.
    pub unreadable: UnreadableSummary,
    /// The hub refused the last sync at the account's quota: its sentence ("the hub's quota for
    /// this account is full: 2.0 of 2.0 GiB; ..."), as `sync status --json`'s `quota_full`.
    pub quota_full: Option<String>,
    /// The link reaches its hub in clear (`--allow-insecure-http`): the warning, as `sync status
    /// --json`'s `insecure_warning`.
    pub insecure_warning: Option<&'static str>,
}

/// A new account: the recovery key, to show once.
#[derive(Clone, Debug, Serialize)]
pub struct SetupView {
    /// The account's id.
    pub account_id: String,
    /// This device's id.
    pub device_id: String,
    /// The 24 words.
    pub recovery_key: String,
}

/// Sync's state: the database's, and where the key is (a file, or a keyring call: on the
/// blocking pool too).
#[tauri::command]
pub async fn get_sync_status(state: State<'_, AppState>) -> CmdResult<SyncView> {
    let key_dir = state.sync_keys.clone();
    let (s, key_store) = lib(state
        .store
        .run(move |s| {
            let status = s.with_conn(engine::status)?;
            let key_store = status
                .link
                .as_ref()
                .map(|l| engine::key_place(&key_dir, l).map(KeyPlace::name))
                .transpose()?;
            Ok((status, key_store))
        })
        .await)?;
    Ok(SyncView {
        link: s.link,
        pending: s.pending,
        devices: s.devices,
        key_store,
        unreadable: s.unreadable,
        quota_full: s.quota_full,
        insecure_warning: s.insecure_warning,
    })
}

/// Creates an account on `hub` and links this device; returns the recovery key (once).
#[tauri::command]
pub async fn sync_setup(
    state: State<'_, AppState>,
    hub: String,
    device_name: Option<String>,
) -> CmdResult<SetupView> {
    let hub = check_url(&hub)?;
    let (linked, key) =
        lib(engine::setup(&state.store, &state.sync_keys, &hub, device_name.as_deref()).await)?;
    state.sync_wake.notify_one();
    Ok(SetupView {
        account_id: linked.account_id.to_string(),
        device_id: linked.device_id.to_string(),
        recovery_key: key,
    })
}

/// Links this device to the account `recovery_key` opens on `hub`.
#[tauri::command]
pub async fn sync_join(
    state: State<'_, AppState>,
    hub: String,
    device_name: Option<String>,
    recovery_key: String,
) -> CmdResult<SyncView> {
    let hub = check_url(&hub)?;
    if recovery_key.chars().count() > MAX_KEY_CHARS {
        return Err(CmdError::invalid(
            "That is not a recovery key (it is far too long).",
        ));
    }
    lib(engine::join(
        &state.store,
        &state.sync_keys,
        &hub,
        device_name.as_deref(),
        &recovery_key,
    )
    .await)?;
    state.sync_wake.notify_one();
    get_sync_status(state).await
}

/// Syncs now.
#[tauri::command]
pub async fn sync_now(state: State<'_, AppState>) -> CmdResult<SyncReport> {
    lib(engine::sync_now(&state.store, &state.sync_keys).await)
}

/// The account's devices as the hub knows them.
#[tauri::command]
pub async fn sync_devices(state: State<'_, AppState>) -> CmdResult<Vec<DeviceRow>> {
    lib(engine::devices(&state.store, &state.sync_keys).await)
}

/// Longest device id or name accepted to remove a device (characters).
const MAX_DEVICE_CHARS: usize = 200;

/// Removes another device of the account (lost, wiped, reinstalled), by id, the start of its id
/// or its exact name, as `sitetrail sync devices remove` does; returns the new state.
#[tauri::command]
pub async fn sync_remove_device(state: State<'_, AppState>, device: String) -> CmdResult<SyncView> {
    if device.chars().count() > MAX_DEVICE_CHARS {
        return Err(CmdError::invalid(
            "That is not a device's id or name (it is far too long).",
        ));
    }
    lib(engine::remove_device(&state.store, &state.sync_keys, &device).await)?;
    get_sync_status(state).await
}

/// This device leaves the account (`force`: even if the hub cannot be reached).
#[tauri::command]
pub async fn sync_leave(state: State<'_, AppState>, force: bool) -> CmdResult<SyncView> {
    lib(engine::leave(&state.store, &state.sync_keys, force).await)?;
    get_sync_status(state).await
}

/// What rotating the recovery key did: the new key, to show once.
#[derive(Clone, Debug, Serialize)]
pub struct RotatedView {
    /// The hub.
    pub hub: String,
    /// The account that was deleted.
    pub old_account_id: String,
    /// The new account.
    pub account_id: String,
    /// This device's id in it.
    pub device_id: String,
    /// The new 24 words.
    pub recovery_key: String,
    /// Why the first sync to the new account failed, if it did (what this device holds is
    /// queued: the background sync sends it).
    pub first_sync_error: Option<String>,
}

/// Checks that `confirm` is the first 8 characters of the linked account's id (as the CLI asks
/// them typed); `what` says what would not have happened.
async fn confirmed(state: &State<'_, AppState>, confirm: &str, what: &str) -> CmdResult<()> {
    let link = lib(state.store.run(|s| s.with_conn(engine::get_link)).await)?.ok_or_else(|| {
        CmdError::new(
            sitetrail::ErrorKind::NotFound,
            "This device is not linked to a hub.",
        )
    })?;
    let id = link.account_id.simple().to_string();
    let short = id.get(..8).unwrap_or(&id);
    if confirm.trim() != short {
        return Err(CmdError::new(
            sitetrail::ErrorKind::Conflict,
            format!("Not confirmed (type {short}, the start of the account's id): nothing was {what}."),
        ));
    }
    Ok(())
}

/// Moves the account to a new recovery key, as `sitetrail sync rotate-key` does: this device's
/// history goes to a new account on the same hub, the old account is deleted there (the old key
/// reads nothing more), and the other devices are told on their next sync to join again with
/// the new key. `confirm`: the first 8 characters of the account's id.
#[tauri::command]
pub async fn sync_rotate_key(state: State<'_, AppState>, confirm: String) -> CmdResult<RotatedView> {
    confirmed(&state, &confirm, "changed").await?;
    let r = lib(sitetrail::sync::account::rotate_key(&state.store, &state.sync_keys).await)?;
    state.sync_wake.notify_one();
    Ok(RotatedView {
        hub: r.hub,
        old_account_id: r.old_account.to_string(),
        account_id: r.linked.account_id.to_string(),
        device_id: r.linked.device_id.to_string(),
        recovery_key: r.recovery_key,
        first_sync_error: r.first_sync.err().map(|e| e.to_string()),
    })
}

/// Deletes the account on the hub with everything of it, for every device, as `sitetrail sync
/// delete-account` does; this device's history stays, its link and key are removed.
/// `confirm`: the first 8 characters of the account's id.
#[tauri::command]
pub async fn sync_delete_account(state: State<'_, AppState>, confirm: String) -> CmdResult<SyncView> {
    confirmed(&state, &confirm, "deleted").await?;
    lib(sitetrail::sync::account::delete_account(&state.store, &state.sync_keys).await)?;
    get_sync_status(state).await
}
