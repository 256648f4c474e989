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

use super::client::HubClient;
use super::crypto::AccountKeys;
use super::keystore;
use super::link::not_linked;
use super::{pull, push, reconcile};
use crate::blocking;
use crate::error::{Error, ErrorKind, Result};
use crate::store::Store;

pub use super::link::{default_device_name, get_link, join, leave, setup, Link, Linked, MAX_DEVICE_NAME};
pub use super::push::{pending, OPS_PER_RECORD};
pub use super::status::{devices, key_dir, key_place, status, DeviceRow, SyncStatus};
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
    let (link, secret) = blocking::run(move || {
        let link = store.with_conn(get_link)?.ok_or_else(not_linked)?;
        let secret = keystore::load(&dir, link.account_id, link.device_id)?;
        Ok((link, secret))
    })
    .await?;
    let keys = secret.keys();
    if keys.account_id != link.account_id {
        return Err(Error::Sync {
            kind: ErrorKind::NeedsUser,
            message: "this device's sync key is not the key of its account; run `sitetrail sync leave`, then join again".into(),
        });
    }
    let client = HubClient::new(
        &link.hub,
        link.account_id,
        keys.login.clone(),
        Some(link.device_id),
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

/// One sync: queue what was here before the link (in batches), push everything waiting, pull
/// and apply what the other devices pushed. The outcome is noted for `sync status`.
pub async fn sync_now(store: &Store, key_dir: &Path) -> Result<SyncReport> {
    let s = session(store, key_dir).await?;
    let result = async {
        loop {
            let st = store.clone();
            if blocking::run(move || reconcile::backfill_step(&st)).await? {
                break;
            }
        }
        let mut report = SyncReport {
            pushed: push::push(&s, store).await?,
            ..SyncReport::default()
        };
        let heads = s.client.index().await?;
        pull::pull(&s, store, &heads, &mut report).await?;
        let st = store.clone();
        report.pending = blocking::run(move || st.with_conn(push::pending)).await?;
        Ok(report)
    }
    .await;
    let st = store.clone();
    let noted = blocking::run(move || {
        note_result(&st, &result)?;
        Ok(result)
    })
    .await?;
    noted
}
