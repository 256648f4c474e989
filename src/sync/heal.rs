//! A device whose series no longer matches the hub's heals itself (docs/SYNC.md "What a device
//! does when ..."): its database was restored from a backup, or copied to another machine that
//! syncs too, or the hub was restored from an older dump.
//!
//! It notices ([`check_index`], [`check_push`]): the hub holds more records of its series than
//! the database ever sealed (a restored or copied database), or fewer than it acknowledged (a
//! restored hub), or a pushed record is refused as a `conflict` (another record holds its place)
//! or a `gap` (the hub lost records before it). It then goes on as a new device ([`heal`]): a new
//! device id registered on the hub (two machines sharing a copied file become two devices, and
//! the other one is never told to leave), a new series from index 1, the operations of the
//! records it had sealed and not seen acknowledged put back in the queue, and everything it holds
//! queued again ([`super::reconcile`]). What it applied of the other devices stays; its old id
//! becomes one of the others, whose records it pulls from where it had acknowledged them (so a
//! restored database gets back its own changes made after the backup). What happened is said in
//! a sentence on the link (`notice`), for `sync status` and the app.

use std::path::Path;

use rusqlite::{named_params, Transaction};
use uuid::Uuid;

use sitetrail_sync_wire::PushStatus;

use super::client::HubClient;
use super::crypto::{AccountKeys, Place};
use super::session::{series, session, Session, SERIES};
use super::{apply, keystore, reconcile};
use crate::blocking;
use crate::error::{Error, ErrorKind, Result};
use crate::store::Store;
use crate::sync_log::local;
use crate::sync_log::ops::{self, Op};

/// Why this device's series no longer matches the hub's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mismatch {
    /// The hub holds records of this device past the last one this database sealed: the database
    /// was restored from a backup, or copied to a machine that has synced since.
    HubAhead {
        /// The hub's last index of this device's series.
        hub: u64,
        /// The last index this database sealed.
        sealed: u64,
    },
    /// The hub holds fewer records of this device than it acknowledged: it was restored from an
    /// older dump.
    HubBehind {
        /// The hub's last index of this device's series.
        hub: u64,
        /// The last index the hub acknowledged to this database.
        acked: u64,
    },
    /// Another record holds the place of a pushed one (as [`Mismatch::HubAhead`]).
    Conflict {
        /// The pushed record's index.
        idx: u64,
    },
    /// A pushed record lies past the end of the hub's series (as [`Mismatch::HubBehind`]).
    Gap {
        /// The pushed record's index.
        idx: u64,
    },
}

/// What the hub's last index of this device's series (`hub`) says against the last index this
/// database sealed (`sealed`) and the last the hub acknowledged to it (`acked`, read before the
/// index was asked for: another process of this device may push meanwhile, and a sealed index
/// is read after it for the same reason). `None`: they match.
pub(crate) fn check_index(hub: u64, sealed: u64, acked: u64) -> Option<Mismatch> {
    if hub > sealed {
        Some(Mismatch::HubAhead { hub, sealed })
    } else if hub < acked {
        Some(Mismatch::HubBehind { hub, acked })
    } else {
        None
    }
}

/// What the hub's answer to pushed record `idx` says: `None` when it holds the record.
pub(crate) fn check_push(idx: u64, status: PushStatus) -> Option<Mismatch> {
    match status {
        PushStatus::Stored | PushStatus::Duplicate => None,
        PushStatus::Conflict => Some(Mismatch::Conflict { idx }),
        PushStatus::Gap => Some(Mismatch::Gap { idx }),
    }
}

impl Mismatch {
    /// True when the hub lost records: the old device id was this database's alone, so it may
    /// leave the account. A copied database's old id is the other machine's, and stays.
    pub(crate) fn hub_lost_records(self) -> bool {
        matches!(self, Mismatch::HubBehind { .. } | Mismatch::Gap { .. })
    }

    /// What happened, in plain words, for `sync status` and the app.
    pub(crate) fn notice(self, new_device: Uuid) -> String {
        let id = new_device.hyphenated().to_string();
        let short = &id[..8];
        let what = if self.hub_lost_records() {
            "The hub had lost changes this device had sent (it was restored from an older copy)"
        } else {
            "The hub holds changes of this device that this database does not (it was restored from a backup, or copied to another machine)"
        };
        format!(
            "{what}, so this device went on syncing as a new device ({short}...) and sent everything it holds again; nothing was lost"
        )
    }
}

/// Heals this device (see the module's doc) and returns its new session. Another process of
/// this device that healed it first is fine: its heal stands, and this one's new id is given up.
#[tracing::instrument(level = "info", skip_all, fields(device = %s.link.device_id))]
pub(crate) async fn heal(s: &Session, store: &Store, key_dir: &Path, why: Mismatch) -> Result<Session> {
    let (account, old) = (s.link.account_id, s.link.device_id);
    tracing::warn!(
        ?why,
        "this device's series does not match the hub's: going on as a new device"
    );
    let new = Uuid::now_v7();
    let client = HubClient::new(&s.link.hub, account, s.keys.login.clone(), Some(new))?;
    client.register_device(new).await.map_err(|e| Error::Sync {
        kind: e.kind(),
        message: format!(
            "this device's series does not match the hub's ({why:?}) and it could not go on as a new device: {e}"
        ),
    })?;
    let (st, dir, keys) = (store.clone(), key_dir.to_path_buf(), s.keys.clone());
    let notice = why.notice(new);
    let healed = blocking::run(move || {
        let secret = keystore::load(&dir, account, old)?;
        keystore::save(&dir, account, new, &secret)?;
        let now = st.now();
        let written = st.write(None, |tx| heal_in(tx, &keys, (old, new), &notice, now));
        match written {
            Ok(true) => {
                // The old id's key entry goes (its secret is the same as the new one's).
                if let Err(e) = keystore::delete(&dir, account, old) {
                    tracing::warn!(error = %e, "the old device id's key was not deleted");
                }
                Ok(true)
            }
            Ok(false) | Err(_) => {
                if let Err(e) = keystore::delete(&dir, account, new) {
                    tracing::warn!(error = %e, "the key of a heal that did not happen was not deleted");
                }
                written
            }
        }
    })
    .await;
    let gone = match &healed {
        // The hub lost records: the old id was this device's alone, and counts no more.
        Ok(true) if why.hub_lost_records() => Some((&s.client, old)),
        Ok(true) => None,
        // Healed elsewhere, or not at all: the new id is given up.
        Ok(false) | Err(_) => Some((&client, new)),
    };
    if let Some((c, id)) = gone {
        if let Err(e) = c.leave(id).await {
            tracing::warn!(error = %e, "a device id given up was not removed from the hub");
        }
    }
    healed?;
    session(store, key_dir).await
}

/// The database's side of a heal, in one transaction: false (nothing done) if the link is no
/// longer `old`'s.
fn heal_in(
    tx: &Transaction<'_>,
    keys: &AccountKeys,
    (old, new): (Uuid, Uuid),
    notice: &str,
    now: crate::time::Timestamp,
) -> Result<bool> {
    let (device, acked, name): (Vec<u8>, i64, String) = tx
        .prepare_cached(r#"SELECT device_id, acked_idx, device_name FROM sync_link"#)?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    if device != old.as_bytes() {
        return Ok(false);
    }
    // The operations of the records sealed and not acknowledged go back in the queue.
    let sealed: Vec<(i64, Vec<u8>, Vec<u8>)> = tx
        .prepare_cached(r#"SELECT idx, record_id, payload FROM sync_sealed ORDER BY idx"#)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let series = series();
    for (idx, record_id, payload) in sealed {
        let place = Place {
            device_id: old,
            series: &series,
            idx: u64::try_from(idx).unwrap_or(0),
            record_id: Uuid::from_slice(&record_id).unwrap_or_default(),
        };
        let stamped = keys
            .open(&place, &payload)
            .ok()
            .and_then(|plain| ops::unpack(&plain).ok());
        let Some(stamped) = stamped else {
            // Damaged here: its changes go with everything this device holds, below.
            tracing::warn!(idx, "a sealed record that does not open was dropped");
            continue;
        };
        for s in stamped.iter().filter(|s| s.op != Op::Unknown) {
            reconcile::queue_held_in(tx, s.hlc, &s.op)?;
        }
    }
    tx.execute(r#"DELETE FROM sync_sealed"#, [])?;
    tx.prepare_cached(
        r#"UPDATE sync_link SET device_id = :new, next_idx = 1, acked_idx = 0,
                                notice = :notice, notice_at = :now"#,
    )?
    .execute(named_params! { ":new": new.as_bytes().as_slice(), ":notice": notice, ":now": now })?;
    // The old id is one of the others from now on: what it had acknowledged is held here.
    tx.prepare_cached(
        r#"INSERT INTO sync_applied (device_id, series, last_idx) VALUES (:d, :s, :i)
           ON CONFLICT (device_id, series) DO UPDATE SET last_idx = max(last_idx, excluded.last_idx)"#,
    )?
    .execute(named_params! { ":d": old.as_bytes().as_slice(), ":s": SERIES, ":i": acked })?;
    let hlc = local::queue_in(tx, &Op::Device { name: name.clone() })?.map_or(0, |(hlc, _)| hlc);
    apply::set_device_name_in(tx, new, &name, hlc)?;
    reconcile::queue_everything_in(tx, hlc, reconcile::Visits::Own)?;
    Ok(true)
}

/// The error for a series that still does not match right after a heal (it cannot: the new
/// series is empty), kept in words rather than a loop.
pub(crate) fn still_mismatched(why: Mismatch) -> Error {
    Error::Sync {
        kind: ErrorKind::Conflict,
        message: format!(
            "the hub refused this device's records even as a new device ({why:?}); the changes wait here"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_ahead_of_what_was_sealed_is_a_restored_or_copied_database() {
        assert_eq!(
            check_index(9, 6, 4),
            Some(Mismatch::HubAhead { hub: 9, sealed: 6 })
        );
        // Records sealed and not yet pushed are no mismatch; nor is a series never pushed.
        assert_eq!(check_index(4, 6, 4), None);
        assert_eq!(check_index(0, 0, 0), None);
        assert_eq!(check_index(6, 6, 6), None);
    }

    #[test]
    fn an_index_behind_what_was_acknowledged_is_a_restored_hub() {
        assert_eq!(
            check_index(3, 8, 8),
            Some(Mismatch::HubBehind { hub: 3, acked: 8 })
        );
        assert_eq!(
            check_index(0, 8, 8),
            Some(Mismatch::HubBehind { hub: 0, acked: 8 })
        );
    }

    #[test]
    fn a_conflict_or_a_gap_is_a_mismatch_and_a_duplicate_is_not() {
        assert_eq!(check_push(5, PushStatus::Stored), None);
        assert_eq!(check_push(5, PushStatus::Duplicate), None);
        assert_eq!(
            check_push(5, PushStatus::Conflict),
            Some(Mismatch::Conflict { idx: 5 })
        );
        assert_eq!(check_push(5, PushStatus::Gap), Some(Mismatch::Gap { idx: 5 }));
    }

    #[test]
    fn only_a_hub_that_lost_records_lets_the_old_id_go() {
        // A copy's old id is the other machine's: it must never be told to leave.
        assert!(!Mismatch::HubAhead { hub: 2, sealed: 1 }.hub_lost_records());
        assert!(!Mismatch::Conflict { idx: 2 }.hub_lost_records());
        assert!(Mismatch::HubBehind { hub: 1, acked: 2 }.hub_lost_records());
        assert!(Mismatch::Gap { idx: 2 }.hub_lost_records());
    }

    #[test]
    fn the_notice_says_what_happened_in_plain_words() {
        let id = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        let copied = Mismatch::Conflict { idx: 3 }.notice(id);
        assert!(copied.contains("restored from a backup, or copied"), "{copied}");
        assert!(copied.contains("01234567") && copied.contains("nothing was lost"));
        let hub = Mismatch::Gap { idx: 3 }.notice(id);
        assert!(hub.contains("hub had lost"), "{hub}");
    }
}
