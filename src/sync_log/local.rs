//! Recording this device's changes for the others: in the transaction of the change itself.
//!
//! Every write path that makes a change other devices should see calls [`queue_in`] with the
//! operation, inside its own transaction: a crash between the change and the push loses nothing.
//! On a device not linked to a hub this is one indexed read that finds no link. While a pull
//! applies other devices' operations ([`applying`]) nothing is queued: they are theirs, not this
//! device's.
//!
//! The clock is a hybrid logical clock packed in an i64: wall milliseconds << 16 | a counter. It
//! never goes backwards, moves past the clocks seen in pulled records up to a day past its own
//! wall clock, and with the device id breaks ties. Its rules, and those of who wins, are
//! [`super::conflict`]'s; the wall time it reads is the store's clock during a write
//! ([`crate::time::write_now`]), so tests can set a device's clock.

use std::cell::Cell;

use rusqlite::{named_params, Connection, OptionalExtension, Transaction};
use uuid::Uuid;

use super::conflict;
use super::ops::Op;
use crate::error::Result;
use crate::ids::VisitId;

thread_local! {
    static APPLYING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with queueing off on this thread: the changes it makes come from other devices.
pub fn applying<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            APPLYING.with(|a| a.set(self.0));
        }
    }
    let _reset = Reset(APPLYING.with(|a| a.replace(true)));
    f()
}

/// True while this thread applies other devices' operations.
pub fn is_applying() -> bool {
    APPLYING.with(Cell::get)
}

pub use super::conflict::{next_hlc, wall_of_stamp as hlc_wall_ms};

fn wall_ms() -> i64 {
    crate::time::write_now().as_micros().div_euclid(1000)
}

/// This device's id and clock, if it is linked.
fn link_in(conn: &Connection) -> Result<Option<(Uuid, i64)>> {
    Ok(conn
        .prepare_cached(r#"SELECT device_id, hlc FROM sync_link"#)?
        .query_row([], |r| {
            let id: Vec<u8> = r.get("device_id")?;
            Ok((id, r.get::<_, i64>("hlc")?))
        })
        .optional()?
        .and_then(|(id, hlc)| Uuid::from_slice(&id).ok().map(|u| (u, hlc))))
}

/// True if this database is linked to a hub.
pub fn is_linked(conn: &Connection) -> Result<bool> {
    Ok(link_in(conn)?.is_some())
}

/// Queues `op` for the other devices in `tx` (nothing if not linked, or while applying). Returns
/// the clock it was stamped with and this device's id.
pub fn queue_in(tx: &Transaction<'_>, op: &Op) -> Result<Option<(i64, Uuid)>> {
    queue_past_in(tx, op, |_| Ok(None))
}

/// [`queue_in`] for a change over something stamped `known(tx)` (a register's winner, a
/// website's forgetting or its visits): the change is stamped past it
/// ([`conflict::stamp_past`]), this device's clock is not.
pub fn queue_past_in(
    tx: &Transaction<'_>,
    op: &Op,
    known: impl FnOnce(&Transaction<'_>) -> Result<Option<i64>>,
) -> Result<Option<(i64, Uuid)>> {
    if is_applying() {
        return Ok(None);
    }
    let Some((device, last)) = link_in(tx)? else {
        return Ok(None);
    };
    let clock = next_hlc(last, wall_ms());
    tx.prepare_cached(r#"UPDATE sync_link SET hlc = :hlc"#)?
        .execute(named_params! { ":hlc": clock })?;
    let hlc = conflict::stamp_past(clock, known(tx)?);
    tx.prepare_cached(r#"INSERT INTO sync_op (hlc, op) VALUES (:hlc, :op)"#)?
        .execute(named_params! { ":hlc": hlc, ":op": op.to_json() })?;
    Ok(Some((hlc, device)))
}

/// The stamp of the last forgetting of the website of `domain` here, if it was forgotten (a
/// visit recorded here after it is stamped past it).
pub fn website_forgetting_stamp(conn: &Connection, domain: &str) -> Result<Option<i64>> {
    use sha2::Digest;
    let hash = sha2::Sha256::digest(domain.as_bytes()).to_vec();
    let rows: Vec<(Option<i64>, i64)> = conn
        .prepare_cached(
            r#"SELECT sync_hlc, forgotten_at FROM tombstone INDEXED BY tombstone_domain_idx
               WHERE kind = 'website' AND domain_sha256 = :h"#,
        )?
        .query_map(named_params! { ":h": hash }, |r| {
            Ok((r.get("sync_hlc")?, r.get("forgotten_at")?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(rows
        .into_iter()
        .map(|(hlc, at)| conflict::tombstone_stamp(hlc, at))
        .max())
}

/// The stamp of the last visit of website `website` here (a forgetting of it made here is
/// stamped past it).
pub fn website_visits_stamp(conn: &Connection, website: crate::ids::WebsiteId) -> Result<Option<i64>> {
    Ok(conn
        .prepare_cached(r#"SELECT max(sync_hlc) FROM visit WHERE website_id = :w"#)?
        .query_row(named_params! { ":w": website }, |r| r.get(0))?)
}

/// The id every device knows visit `local` by: its `sync_id` if it came from another device,
/// else its own id (also for an id not stored).
pub fn global_visit_id(conn: &Connection, local: VisitId) -> Result<VisitId> {
    Ok(conn
        .prepare_cached(r#"SELECT coalesce(sync_id, id) FROM visit WHERE id = :v"#)?
        .query_row(named_params! { ":v": local }, |r| r.get(0))
        .optional()?
        .unwrap_or(local))
}

/// The local id of the visit every device knows as `global`, if it is stored here.
pub fn local_visit_id(conn: &Connection, global: VisitId) -> Result<Option<VisitId>> {
    Ok(conn
        .prepare_cached(
            r#"SELECT id FROM visit WHERE sync_id = :g
               UNION ALL SELECT id FROM visit WHERE id = :g AND sync_id IS NULL
               LIMIT 1"#,
        )?
        .query_row(named_params! { ":g": global }, |r| r.get(0))
        .optional()?)
}

/// Records the clock of the change that recorded visit `id`.
pub fn set_visit_hlc_in(tx: &Transaction<'_>, id: VisitId, hlc: i64) -> Result<()> {
    tx.prepare_cached(r#"UPDATE visit SET sync_hlc = :h WHERE id = :v"#)?
        .execute(named_params! { ":h": hlc, ":v": id })?;
    Ok(())
}

/// Moves this device's clock past `seen` (a clock read in a pulled record), at most a day past
/// its wall clock ([`conflict::observe`]).
pub fn observe_in(tx: &Transaction<'_>, seen: i64) -> Result<()> {
    let Some((_, last)) = link_in(tx)? else {
        return Ok(());
    };
    let clock = conflict::observe(last, seen, wall_ms());
    if clock != last {
        tx.prepare_cached(r#"UPDATE sync_link SET hlc = :h"#)?
            .execute(named_params! { ":h": clock })?;
    }
    Ok(())
}

/// A last-writer-wins register's winner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Register {
    /// Clock of the winning write.
    pub hlc: i64,
    /// Device of the winning write.
    pub device: Uuid,
    /// Its value.
    pub value: Option<String>,
}

/// The register `key`, if any write reached it.
pub fn get_register(conn: &Connection, key: &str) -> Result<Option<Register>> {
    Ok(conn
        .prepare_cached(r#"SELECT hlc, device_id, value FROM sync_register WHERE key = :k"#)?
        .query_row(named_params! { ":k": key }, |r| {
            let d: Vec<u8> = r.get("device_id")?;
            Ok(Register {
                hlc: r.get("hlc")?,
                device: Uuid::from_slice(&d).unwrap_or_default(),
                value: r.get("value")?,
            })
        })
        .optional()?)
}

/// Offers a write to the register `key`: stored, and true, if it wins over the winner so far
/// ([`conflict::wins`]: by clock, then device id).
pub fn offer_register_in(
    tx: &Transaction<'_>,
    key: &str,
    hlc: i64,
    device: Uuid,
    value: Option<&str>,
) -> Result<bool> {
    if let Some(old) = get_register(tx, key)? {
        if !conflict::wins((hlc, device), (old.hlc, old.device)) {
            return Ok(false);
        }
    }
    tx.prepare_cached(
        r#"INSERT INTO sync_register (key, hlc, device_id, value) VALUES (:k, :h, :d, :v)
           ON CONFLICT (key) DO UPDATE SET hlc = excluded.hlc, device_id = excluded.device_id,
                                           value = excluded.value"#,
    )?
    .execute(named_params! { ":k": key, ":h": hlc, ":d": device.as_bytes().as_slice(), ":v": value })?;
    Ok(true)
}

/// Queues `op` and records it as the winner of register `key`: a local change is the newest
/// write this device knows of, stamped past the winner so far even when that one's clock runs
/// ahead of this device's.
pub fn queue_register_in(tx: &Transaction<'_>, key: &str, value: Option<&str>, op: &Op) -> Result<()> {
    let known = |tx: &Transaction<'_>| Ok(get_register(tx, key)?.map(|r| r.hlc));
    if let Some((hlc, device)) = queue_past_in(tx, op, known)? {
        offer_register_in(tx, key, hlc, device, value)?;
    }
    Ok(())
}

/// The value an on/off register (blocked, excluded) holds: `1` for on, `0` for off.
pub fn flag(on: bool) -> &'static str {
    if on {
        "1"
    } else {
        "0"
    }
}

/// The register key of the user's category of `domain`.
pub fn user_key(domain: &str) -> String {
    format!("user:{domain}")
}

/// The register key of an AI's category of `domain`.
pub fn ai_key(domain: &str) -> String {
    format!("ai:{domain}")
}

/// The register key of a visit's title (by its id on every device).
pub fn title_key(visit: VisitId) -> String {
    format!("title:{visit}")
}

/// The register key of `domain`'s blocking.
pub fn block_key(domain: &str) -> String {
    format!("block:{domain}")
}

/// The register key of an exclusion pattern (`bank.example`, `*.corp.example`).
pub fn exclude_key(pattern: &str) -> String {
    format!("exclude:{pattern}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applying_turns_queueing_off_for_its_duration_only() {
        assert!(!is_applying());
        applying(|| assert!(is_applying()));
        assert!(!is_applying());
        let _ = std::panic::catch_unwind(|| applying(|| panic!("boom")));
        assert!(!is_applying());
    }
}
