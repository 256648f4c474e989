//! Recording this device's changes for the others: in the transaction of the change itself.
//!
//! Every write path that makes a change other devices should see calls [`queue_in`] with the
//! operation, inside its own transaction: a crash between the change and the push loses nothing.
//! On a device not linked to a hub this is one indexed read that finds no link. While a pull
//! applies other devices' operations ([`applying`]) nothing is queued: they are theirs, not this
//! device's.
//!
//! The clock is a hybrid logical clock packed in an i64: wall milliseconds << 16 | a counter. It
//! never goes backwards, moves past every clock seen in a pulled record, and with the device id
//! breaks ties, so a device whose clock is wrong cannot win forever.

use std::cell::Cell;

use rusqlite::{named_params, Connection, OptionalExtension, Transaction};
use uuid::Uuid;

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

/// The next clock value after `last` at wall time `wall_ms`.
pub fn next_hlc(last: i64, wall_ms: i64) -> i64 {
    let physical = wall_ms.max(0).saturating_mul(1 << 16);
    if physical > last {
        physical
    } else {
        last.saturating_add(1)
    }
}

/// Wall milliseconds of a clock value.
pub fn hlc_wall_ms(hlc: i64) -> i64 {
    hlc >> 16
}

fn wall_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
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
    if is_applying() {
        return Ok(None);
    }
    let Some((device, last)) = link_in(tx)? else {
        return Ok(None);
    };
    let hlc = next_hlc(last, wall_ms());
    tx.prepare_cached(r#"UPDATE sync_link SET hlc = :hlc"#)?
        .execute(named_params! { ":hlc": hlc })?;
    tx.prepare_cached(r#"INSERT INTO sync_op (hlc, op) VALUES (:hlc, :op)"#)?
        .execute(named_params! { ":hlc": hlc, ":op": op.to_json() })?;
    Ok(Some((hlc, device)))
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

/// Moves this device's clock past `seen` (a clock read in a pulled record).
pub fn observe_in(tx: &Transaction<'_>, seen: i64) -> Result<()> {
    tx.prepare_cached(r#"UPDATE sync_link SET hlc = max(hlc, :seen)"#)?
        .execute(named_params! { ":seen": seen })?;
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

/// Offers a write to the register `key`: stored, and true, if it is newer than the winner so
/// far (by clock, then device id).
pub fn offer_register_in(
    tx: &Transaction<'_>,
    key: &str,
    hlc: i64,
    device: Uuid,
    value: Option<&str>,
) -> Result<bool> {
    if let Some(old) = get_register(tx, key)? {
        if (hlc, device) <= (old.hlc, old.device) {
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

/// Queues `op` and records it as the winner of register `key` (a local change is the newest
/// write this device knows of).
pub fn queue_register_in(tx: &Transaction<'_>, key: &str, value: Option<&str>, op: &Op) -> Result<()> {
    if let Some((hlc, device)) = queue_in(tx, op)? {
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
    fn the_clock_never_goes_back_and_counts_within_a_millisecond() {
        let a = next_hlc(0, 1_000);
        assert_eq!(hlc_wall_ms(a), 1_000);
        let b = next_hlc(a, 1_000);
        assert_eq!(b, a + 1);
        // A wall clock set back does not move the clock back.
        let c = next_hlc(b, 10);
        assert_eq!(c, b + 1);
        assert!(next_hlc(c, 2_000) > c);
    }

    #[test]
    fn applying_turns_queueing_off_for_its_duration_only() {
        assert!(!is_applying());
        applying(|| assert!(is_applying()));
        assert!(!is_applying());
        let _ = std::panic::catch_unwind(|| applying(|| panic!("boom")));
        assert!(!is_applying());
    }
}
