//! Sealing this device's waiting operations into numbered records and pushing them to the hub;
//! a sealed record is deleted only once the hub acknowledged it.

use rusqlite::{named_params, Connection};
use uuid::Uuid;

use sitetrail_sync_wire as wire;

use super::crypto::{AccountKeys, Place};
use super::heal;
use super::session::{series, Session};
use crate::blocking;
use crate::error::{Error, ErrorKind, Result};
use crate::store::Store;
use crate::sync_log::ops;

/// Most operations sealed into one record.
pub const OPS_PER_RECORD: usize = 1_000;
/// Most plaintext bytes (deflated) of one record, well below the hub's 256 KiB.
const MAX_PACKED_BYTES: usize = 192 * 1024;

/// Seals waiting operations into one record; false if none were waiting.
fn seal_one(store: &Store, keys: &AccountKeys, device: Uuid) -> Result<bool> {
    let series = series();
    store.write(None, |tx| {
        // A record is sealed for its place (device, index): under the device the link names now.
        // Another process of this device may have healed it since this session began.
        let linked: Vec<u8> = tx.query_row(r#"SELECT device_id FROM sync_link"#, [], |r| r.get(0))?;
        if linked != device.as_bytes() {
            return Err(Error::Sync {
                kind: ErrorKind::Busy,
                message: "this device went on as a new device during this sync (in another process); the next sync sends what waits".into(),
            });
        }
        let mut n = OPS_PER_RECORD;
        let ops: Vec<(i64, i64, String)> = tx
            .prepare_cached(r#"SELECT seq, hlc, op FROM sync_op ORDER BY seq LIMIT :n"#)?
            .query_map(named_params! { ":n": n as i64 }, |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        if ops.is_empty() {
            return Ok(false);
        }
        let pairs: Vec<(i64, String)> = ops.iter().map(|(_, h, o)| (*h, o.clone())).collect();
        n = n.min(pairs.len());
        let mut packed = ops::pack(&pairs[..n]);
        while packed.len() > MAX_PACKED_BYTES && n > 1 {
            n /= 2;
            packed = ops::pack(&pairs[..n]);
        }
        if packed.len() > MAX_PACKED_BYTES {
            // One operation too large to send (a title is capped, so this is damage): dropped,
            // said in the log.
            tracing::warn!(bytes = packed.len(), "an operation too large to sync was dropped");
        }
        let idx: i64 = tx.query_row(r#"SELECT next_idx FROM sync_link"#, [], |r| r.get(0))?;
        let record_id = Uuid::now_v7();
        let place = Place {
            device_id: device,
            series: &series,
            idx: u64::try_from(idx).unwrap_or(0),
            record_id,
        };
        let last_seq = ops[n - 1].0;
        if packed.len() <= MAX_PACKED_BYTES {
            let payload = keys.seal(&place, &packed);
            tx.prepare_cached(
                r#"INSERT INTO sync_sealed (idx, record_id, payload, ops) VALUES (:i, :r, :p, :n)"#,
            )?
            .execute(named_params! {
                ":i": idx, ":r": record_id.as_bytes().as_slice(), ":p": payload, ":n": n as i64,
            })?;
            tx.prepare_cached(r#"UPDATE sync_link SET next_idx = next_idx + 1"#)?
                .execute([])?;
        }
        tx.prepare_cached(r#"DELETE FROM sync_op WHERE seq <= :s"#)?
            .execute(named_params! { ":s": last_seq })?;
        Ok(true)
    })
}

type Sealed = (i64, Vec<u8>, Vec<u8>);

fn list_sealed(store: &Store) -> Result<Vec<Sealed>> {
    store.with_conn(|c| {
        let mut bytes = 0usize;
        let mut out = Vec::new();
        let mut stmt =
            c.prepare_cached(r#"SELECT idx, record_id, payload FROM sync_sealed ORDER BY idx LIMIT :n"#)?;
        let mut rows = stmt.query(named_params! { ":n": wire::limits::MAX_RECORDS_PER_PUSH as i64 })?;
        while let Some(r) = rows.next()? {
            let payload: Vec<u8> = r.get(2)?;
            bytes += payload.len();
            if bytes > wire::limits::MAX_PUSH_PAYLOAD_BYTES - wire::limits::MAX_RECORD_BYTES
                && !out.is_empty()
            {
                break;
            }
            out.push((r.get(0)?, r.get(1)?, payload));
        }
        Ok(out)
    })
}

/// Pending operations and sealed records not yet acknowledged.
pub fn pending(conn: &Connection) -> Result<u64> {
    let n: i64 = conn.query_row(
        r#"SELECT (SELECT count(*) FROM sync_op) + coalesce((SELECT sum(ops) FROM sync_sealed), 0)"#,
        [],
        |r| r.get(0),
    )?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// What a push did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pushed {
    /// Every waiting operation was pushed: this many records.
    All(u64),
    /// The hub refused a record as not fitting this device's series (see [`heal`]); `pushed`
    /// records before it were acknowledged.
    Mismatch {
        /// Records acknowledged before the refused one.
        pushed: u64,
        /// Why it was refused.
        why: heal::Mismatch,
    },
}

/// Seals everything waiting and pushes it, in order; a record is deleted here (and the
/// acknowledged index moved) only once the hub holds it, and only up to the first one it
/// refuses, so "acknowledged up to" always means every record up to there.
#[tracing::instrument(level = "debug", skip_all, fields(device = %s.link.device_id))]
pub(crate) async fn push(s: &Session, store: &Store) -> Result<Pushed> {
    let mut pushed = 0;
    loop {
        // Seal everything waiting first, so records stay in order and full.
        loop {
            let (st, keys, device) = (store.clone(), s.keys.clone(), s.link.device_id);
            if !blocking::run(move || seal_one(&st, &keys, device)).await? {
                break;
            }
        }
        let st = store.clone();
        let batch = blocking::run(move || list_sealed(&st)).await?;
        if batch.is_empty() {
            return Ok(Pushed::All(pushed));
        }
        let records = batch
            .iter()
            .map(|(idx, id, payload)| wire::Record {
                record_id: Uuid::from_slice(id).unwrap_or_default(),
                device_id: s.link.device_id,
                series: series(),
                idx: u64::try_from(*idx).unwrap_or(0),
                payload: wire::Payload(payload.clone()),
            })
            .collect();
        let results = s.client.push(records).await?;
        let mut acked = Vec::new();
        let mut refused = None;
        for (r, (idx, _, _)) in results.iter().zip(&batch) {
            match heal::check_push(u64::try_from(*idx).unwrap_or(0), r.status) {
                None => acked.push(*idx),
                Some(why) => {
                    refused = Some(why);
                    break;
                }
            }
        }
        pushed += acked.len() as u64;
        let st = store.clone();
        blocking::run(move || {
            st.write(None, |tx| {
                let mut del = tx.prepare_cached(r#"DELETE FROM sync_sealed WHERE idx = :i"#)?;
                for i in &acked {
                    del.execute(named_params! { ":i": i })?;
                }
                if let Some(last) = acked.last() {
                    tx.prepare_cached(r#"UPDATE sync_link SET acked_idx = max(acked_idx, :i)"#)?
                        .execute(named_params! { ":i": last })?;
                }
                Ok(())
            })
        })
        .await?;
        if let Some(why) = refused {
            return Ok(Pushed::Mismatch { pushed, why });
        }
    }
}
