//! Pulling the other devices' records and applying them: a pulled record is applied, and
//! `sync_applied` moved past it, in one transaction, on the forgetting's connection (deleted
//! bytes zeroed).

use rusqlite::{named_params, Connection, OptionalExtension};
use uuid::Uuid;

use sitetrail_sync_wire as wire;

use super::apply;
use super::crypto::Place;
use super::engine::{series, Session, SyncReport, SERIES};
use crate::blocking;
use crate::error::{Error, ErrorKind, Result};
use crate::store::Store;
use crate::sync_log::ops;

/// Records asked for per page.
const PAGE_RECORDS: u32 = 100;

fn applied_idx(conn: &Connection, device: Uuid) -> Result<u64> {
    let n: Option<i64> = conn
        .prepare_cached(r#"SELECT last_idx FROM sync_applied WHERE device_id = :d AND series = :s"#)?
        .query_row(
            named_params! { ":d": device.as_bytes().as_slice(), ":s": SERIES },
            |r| r.get(0),
        )
        .optional()?;
    Ok(n.map_or(0, |n| u64::try_from(n).unwrap_or(0)))
}

fn tampered(device: Uuid, idx: u64) -> Error {
    Error::Sync {
        kind: ErrorKind::Conflict,
        message: format!(
            "record {idx} of device {device} on the hub was changed or moved (it does not open with this account's key): it was not applied, and nothing after it is"
        ),
    }
}

/// Applies one opened record and moves past it, in one transaction.
fn apply_record(
    store: &Store,
    conn: &mut Connection,
    device: Uuid,
    idx: u64,
    stamped: &[ops::Stamped],
) -> Result<apply::Applied> {
    let now = store.now();
    store.write_on(conn, crate::forget::forgetting(), |tx| {
        // Applied already (another process of this device got here first): nothing to do.
        if applied_idx(tx, device)? >= idx {
            return Ok(apply::Applied::default());
        }
        let applied = apply::apply_in(tx, device, stamped, now)?;
        tx.prepare_cached(
            r#"INSERT INTO sync_applied (device_id, series, last_idx) VALUES (:d, :s, :i)
               ON CONFLICT (device_id, series) DO UPDATE SET last_idx = excluded.last_idx"#,
        )?
        .execute(named_params! { ":d": device.as_bytes().as_slice(), ":s": SERIES, ":i": idx as i64 })?;
        Ok(applied)
    })
}

pub(crate) async fn pull(
    s: &Session,
    store: &Store,
    heads: &[wire::SeriesHead],
    report: &mut SyncReport,
) -> Result<()> {
    let series = series();
    for head in heads {
        if head.device_id == s.link.device_id || head.series != series {
            continue;
        }
        let (st, d) = (store.clone(), head.device_id);
        let mut after = blocking::run(move || st.with_conn(|c| applied_idx(c, d))).await?;
        while after < head.last_idx {
            let page = s
                .client
                .page(head.device_id, &series, after, PAGE_RECORDS)
                .await?;
            if page.records.is_empty() {
                break;
            }
            let mut opened = Vec::with_capacity(page.records.len());
            for stored in &page.records {
                let r = &stored.record;
                let expected = after + opened.len() as u64 + 1;
                if r.device_id != head.device_id || r.series != series || r.idx != expected {
                    return Err(tampered(head.device_id, expected));
                }
                let place = Place {
                    device_id: r.device_id,
                    series: &series,
                    idx: r.idx,
                    record_id: r.record_id,
                };
                let plain = s
                    .keys
                    .open(&place, &r.payload.0)
                    .map_err(|_| tampered(r.device_id, r.idx))?;
                let stamped = ops::unpack(&plain).map_err(|_| tampered(r.device_id, r.idx))?;
                opened.push((r.idx, stamped));
            }
            let st = store.clone();
            let device = head.device_id;
            let count = opened.len() as u64;
            let (visits, forgetting_left) = blocking::run(move || {
                let mut conn = crate::forget::open_connection(&st)?;
                let (mut visits, mut left) = (0, false);
                for (idx, stamped) in &opened {
                    let a = apply_record(&st, &mut conn, device, *idx, stamped)?;
                    visits += a.visits;
                    left |= a.forgetting_left;
                }
                Ok((visits, left))
            })
            .await?;
            if forgetting_left {
                let st = store.clone();
                blocking::run(move || {
                    st.resume_forgetting(&crate::forget::ForgetOptions::default(), &mut |_| {})
                        .map(|_| ())
                })
                .await?;
            }
            after += count;
            report.pulled += count;
            report.visits += visits;
            if !page.more && after < head.last_idx {
                // The index said more; the page says no more yet: next sync.
                break;
            }
        }
    }
    Ok(())
}

