//! One sync, and the session it runs in: queue what was here before the link, seal operations
//! into records and push them ([`super::push`]), pull and apply the other devices' records
//! ([`super::pull`]). Linking and leaving are in [`super::link`], the long-poll in
//! [`super::wait`], what `sync status` shows in [`super::status`]; their public items are
//! re-exported here, where the CLI and the app have always found them.
//!
//! Every step is resumable and idempotent, so a crash, a killed hub or a lost answer anywhere
//! loses nothing and stores nothing twice:
//! - sealing moves operations from `sync_op` into a numbered record in `sync_sealed` in one
//!   transaction (the record's index and id are fixed from then on, so a repeated push is the
//!   same record: the hub acknowledges it as a duplicate);
//! - a sealed record is deleted only once the hub acknowledged it;
//! - a pulled record is applied, and `sync_applied` moved past it, in one transaction; applying
//!   is on the forgetting's connection (deleted bytes zeroed), one record (at most
//!   [`OPS_PER_RECORD`] operations) per transaction, so the write lock is held briefly.
//!
//! Database work runs on the blocking pool ([`crate::blocking::run`]); only HTTP awaits here.

use std::path::Path;

use rusqlite::named_params;

use sitetrail_sync_wire::Series;

use super::client::{HubClient, Transport, Trust};
use super::crypto::AccountKeys;
use super::keystore;
use super::link::not_linked;
use super::{heal, pull, push, reconcile};
use crate::blocking;
use crate::error::{Error, ErrorKind, Result};
use crate::store::Store;

pub use super::link::{
    default_device_name, get_link, join, join_with, leave, setup, setup_with, Left, Link, Linked,
    MAX_DEVICE_NAME,
};
pub use super::push::{pending, OPS_PER_RECORD};
pub use super::status::{
    devices, key_dir, key_place, pick_device, remove_device, status, DeviceRow, SyncStatus,
};
pub use super::wait::{Waited, Waiter};

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
    /// [`SyncStatus::unreadable`]).
    pub unreadable: u64,
}

fn note_result(store: &Store, result: &Result<SyncReport>) -> Result<()> {
    let now = store.now();
    store.write(None, |tx| {
        match result {
            Ok(_) => tx.execute(
                r#"UPDATE sync_link SET last_sync_at = :now, last_error = NULL"#,
                named_params! { ":now": now },
            )?,
            Err(e) => tx.execute(
                r#"UPDATE sync_link SET last_error = :e"#,
                named_params! { ":e": crate::error::truncate_chars(&e.to_string(), 500) },
            )?,
        };
        Ok(())
    })
}

/// Queues this device's own visits the account may lack (in batches), to the last one.
async fn backfill(store: &Store) -> Result<()> {
    loop {
        let st = store.clone();
        if blocking::run(move || reconcile::backfill_step(&st)).await? {
            return Ok(());
        }
    }
}

/// Sends everything waiting (the backfill, then every sealed and queued operation). A push the
/// hub refuses as not fitting this device's series heals the device ([`heal`]) and sends again,
/// as the new device. Returns the session (a new one after a heal), whether it healed, and the
/// records pushed.
pub(crate) async fn send_waiting(
    mut s: Session,
    store: &Store,
    key_dir: &Path,
) -> (Session, bool, Result<u64>) {
    let mut pushed = 0;
    let mut healed = false;
    loop {
        if let Err(e) = backfill(store).await {
            return (s, healed, Err(e));
        }
        match push::push(&s, store).await {
            Ok(push::Pushed::All(n)) => return (s, healed, Ok(pushed + n)),
            Ok(push::Pushed::Mismatch { pushed: n, why }) => {
                pushed += n;
                if healed {
                    return (s, healed, Err(heal::still_mismatched(why)));
                }
                match heal::heal(&s, store, key_dir, why).await {
                    Ok(new) => {
                        s = new;
                        healed = true;
                    }
                    Err(e) => return (s, healed, Err(e)),
                }
            }
            Err(e) => return (s, healed, Err(e)),
        }
    }
}

/// The index this database had acknowledged and the last index it sealed.
fn own_series(store: &Store) -> Result<(u64, u64)> {
    store.with_conn(|c| {
        let (acked, next): (i64, i64) =
            c.query_row(r#"SELECT acked_idx, next_idx FROM sync_link"#, [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?;
        Ok((
            u64::try_from(acked).unwrap_or(0),
            u64::try_from(next - 1).unwrap_or(0),
        ))
    })
}

/// One sync: heal this device if the hub's index of its series says it no longer matches
/// ([`heal::check_index`]), send everything waiting ([`send_waiting`]), pull and apply what the
/// other devices pushed. A push that fails does not stop the pull, nor the reverse: both run,
/// and the first error is returned. The outcome is noted for `sync status`.
pub async fn sync_now(store: &Store, key_dir: &Path) -> Result<SyncReport> {
    let mut s = session(store, key_dir).await?;
    let mut report = SyncReport::default();
    let mut first_error: Option<Error> = None;
    let mut failed = |e: Error| {
        tracing::debug!(error = %e, "a step of the sync failed");
        first_error.get_or_insert(e);
    };
    // Acknowledged before the index is asked for, sealed after (see `check_index`).
    let st = store.clone();
    let acked = blocking::run(move || own_series(&st)).await.map(|(a, _)| a);
    let heads = s.client.index().await;
    if let (Ok(acked), Ok(heads)) = (&acked, &heads) {
        let me = s.link.device_id;
        let series = series();
        let hub = heads
            .iter()
            .find(|h| h.device_id == me && h.series == series)
            .map_or(0, |h| h.last_idx);
        let st = store.clone();
        match blocking::run(move || own_series(&st)).await {
            Ok((_, sealed)) => {
                if let Some(why) = heal::check_index(hub, sealed, *acked) {
                    match heal::heal(&s, store, key_dir, why).await {
                        Ok(new) => {
                            s = new;
                            report.healed = true;
                        }
                        Err(e) => failed(e),
                    }
                }
            }
            Err(e) => failed(e),
        }
    }
    let (s, healed, sent) = send_waiting(s, store, key_dir).await;
    report.healed |= healed;
    match sent {
        Ok(n) => report.pushed = n,
        Err(e) => failed(e),
    }
    match heads {
        Ok(heads) => {
            if let Err(e) = pull::pull(&s, store, &heads, &mut report).await {
                failed(e);
            }
        }
        Err(e) => failed(e),
    }
    if let Err(e) = acked {
        failed(e);
    }
    let st = store.clone();
    match blocking::run(move || st.with_conn(push::pending)).await {
        Ok(n) => report.pending = n,
        Err(e) => failed(e),
    }
    let result = match first_error {
        Some(e) => Err(e),
        None => Ok(report),
    };
    let st = store.clone();
    blocking::run(move || {
        note_result(&st, &result)?;
        Ok(result)
    })
    .await?
}
