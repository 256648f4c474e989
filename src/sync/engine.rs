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

use super::send::send_waiting;
use super::{heal, pull, push};
use crate::blocking;
use crate::error::{Error, Result};
use crate::store::Store;

pub use super::link::{
    default_device_name, get_link, join, join_with, leave, setup, setup_with, Left, Link, Linked,
    MAX_DEVICE_NAME,
};
pub use super::push::{pending, OPS_PER_RECORD};
pub(crate) use super::session::{series, session, Session};
pub use super::session::{SyncReport, SERIES};
pub use super::status::{
    devices, key_dir, key_place, pick_device, remove_device, status, DeviceRow, SyncStatus,
};
pub use super::wait::{Waited, Waiter};

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
#[tracing::instrument(level = "info", skip_all)]
pub async fn sync_now(store: &Store, key_dir: &Path) -> Result<SyncReport> {
    let s = session(store, key_dir).await?;
    sync_with(s, store, key_dir).await.1
}

/// [`sync_now`] with a session the caller opened (the key read once); returns the session as it
/// is afterwards (a new one if the device healed) with the outcome.
pub(crate) async fn sync_with(
    mut s: Session,
    store: &Store,
    key_dir: &Path,
) -> (Session, Result<SyncReport>) {
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
    let noted = blocking::run(move || {
        note_result(&st, &result)?;
        Ok(result)
    })
    .await;
    (s, noted.and_then(|r| r))
}
