//! `POST /v1/records`: storing a push, in one transaction.
//!
//! ```text
//! BEGIN
//!   lock the push's devices' rows (FOR NO KEY UPDATE, in id order): registered? not left?
//!   read those devices' series heads (the series limit counts them)
//!   read the record ids already at the places the push names at or below a head
//!   add the new records' bytes and count to the account's row (its lock: pushes of one account
//!   take turns from here to COMMIT), refused if past a quota
//!   INSERT the new records (one statement, arrays)
//!   INSERT ... ON CONFLICT DO UPDATE the heads that moved
//! COMMIT, then answer
//! ```
//!
//! Invariants: a series is contiguous (a record is stored only at its head + 1; past it is a
//! `gap`), and a place is written once (the same id again is a `duplicate`, another id a
//! `conflict`). The device-row lock is what keeps both with any number of pushes and hub
//! processes at once: every writer of a device's heads and records holds it until COMMIT (a
//! device pushes in order anyway, so it costs no parallelism a device uses), and a device
//! leaving waits for it too. Locks are taken in one order (device ids sorted, then the
//! account's row), the order every writer of the hub keeps, so two requests never deadlock. A push killed at any point stores nothing (one transaction), so repeating it
//! stores each record once.

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use sitetrail_sync_wire::{limits, PushResponse, PushResult, PushStatus, Quota, Record, SeriesHead};
use uuid::Uuid;

use crate::app::App;
use crate::auth::Authed;
use crate::body::Body;
use crate::error::{HubError, HubResult};
use crate::quota::{self, Quotas};
use crate::request::{parse_push, series_limit};
use crate::sql::{Queries, Transaction};
use tokio_postgres::types::Type;

/// Waits, before the body is read, for the account's slot if it was refused for a quota lately
/// (`crate::pace`).
pub struct Paced;

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Paced {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        let account = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| sitetrail_sync_wire::parse_authorization(v).ok())
            .map(|(account, _)| account);
        if let Some(account) = account {
            let delay = crate::pace::delay(account);
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
        }
        Ok(Paced)
    }
}

/// A series: its device and name.
type SeriesKey = (Uuid, String);

/// Stores a push: one result per record, in the request's order; the account's bytes and records
/// stored in the quota headers.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn push(
    State(app): State<App>,
    authed: Authed,
    _paced: Paced,
    Body(body): Body,
) -> HubResult<(HeaderMap, Json<PushResponse>)> {
    let request = parse_push(&body)?;
    drop(body);
    if request.records.is_empty() {
        return Ok((HeaderMap::new(), Json(PushResponse { results: vec![] })));
    }
    let mut client = app.pool.get().await?;
    let tx = client.transaction().await?;
    let stored = store(&tx, authed.account_id, &request.records, &app.quotas).await;
    if let Err(crate::error::HubError::QuotaExceeded(_)) = &stored {
        crate::pace::note_refused(authed.account_id);
    }
    let Stored {
        results,
        usage: (bytes, records),
        moved,
    } = stored?;
    let mut headers = HeaderMap::new();
    app.quotas.header(&mut headers, Quota::Bytes, bytes);
    app.quotas.header(&mut headers, Quota::Records, records);
    let stored = results.iter().filter(|r| r.status == PushStatus::Stored).count();
    if stored > 0 {
        // Delivered at COMMIT to every hub process's listener, with the heads that moved, so
        // only the waits they put behind wake and none reads the index again (crate::notify).
        tx.execute(
            "SELECT pg_notify($1, $2)",
            &[
                (&crate::notify::CHANNEL, Type::TEXT),
                (&crate::notify::payload(authed.account_id, &moved), Type::TEXT),
            ],
        )
        .await?;
    }
    tx.commit().await?;
    if stored > 0 {
        crate::pace::note_stored(authed.account_id);
        // This process's waits need not wait for the round trip.
        app.notifier.changed(authed.account_id, &moved);
    }
    let stored_bytes: usize = results
        .iter()
        .zip(&request.records)
        .filter(|(r, _)| r.status == PushStatus::Stored)
        .map(|(_, record)| record.payload.0.len())
        .sum();
    crate::metrics::METRICS.pushed(stored as u64, stored_bytes as u64);
    tracing::debug!(records = results.len(), stored, "push stored");
    Ok((headers, Json(PushResponse { results })))
}

/// What a push stored.
struct Stored {
    /// One per record, in the request's order.
    results: Vec<PushResult>,
    /// The account's (bytes, records) stored afterwards.
    usage: (u64, u64),
    /// The series heads the push moved, at their new place.
    moved: Vec<SeriesHead>,
}

/// Stores the records.
async fn store(
    tx: &Transaction<'_>,
    account_id: Uuid,
    records: &[Record],
    quotas: &Quotas,
) -> HubResult<Stored> {
    let devices: Vec<Uuid> = records
        .iter()
        .map(|r| r.device_id)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let rows = tx
        .query(
            r#"SELECT device_id, left_at IS NOT NULL AS left FROM device
               WHERE account_id = $1 AND device_id = ANY($2)
               ORDER BY device_id FOR NO KEY UPDATE"#,
            &[(&account_id, Type::UUID), (&devices, Type::UUID_ARRAY)],
        )
        .await?;
    if rows.len() != devices.len() {
        return Err(super::not_registered());
    }
    if rows.iter().any(|r| r.get::<_, bool>("left")) {
        return Err(super::left());
    }

    let mut heads: BTreeMap<SeriesKey, i64> = BTreeMap::new();
    let rows = tx
        .query(
            "SELECT device_id, series, last_idx FROM series_head WHERE account_id = $1 AND device_id = ANY($2)",
            &[(&account_id, Type::UUID), (&devices, Type::UUID_ARRAY)],
        )
        .await?;
    for row in rows {
        heads.insert((row.get("device_id"), row.get("series")), row.get("last_idx"));
    }
    // The series limit counts the series each device has and those this push would add.
    let mut per_device: BTreeMap<Uuid, BTreeSet<&str>> = BTreeMap::new();
    for (device, series) in heads.keys() {
        per_device.entry(*device).or_default().insert(series);
    }
    for r in records {
        per_device
            .entry(r.device_id)
            .or_default()
            .insert(r.series.as_str());
    }
    if per_device
        .values()
        .any(|s| s.len() > limits::MAX_SERIES_PER_DEVICE)
    {
        return Err(series_limit());
    }

    // The record ids already stored at the places at or below their head.
    let known: Vec<&Record> = records
        .iter()
        .filter(|r| {
            let head = heads
                .get(&(r.device_id, r.series.as_str().to_owned()))
                .copied()
                .unwrap_or(0);
            idx(r) <= head
        })
        .collect();
    let mut stored_ids: BTreeMap<(Uuid, String, i64), Uuid> = BTreeMap::new();
    if !known.is_empty() {
        let d: Vec<Uuid> = known.iter().map(|r| r.device_id).collect();
        let s: Vec<&str> = known.iter().map(|r| r.series.as_str()).collect();
        let i: Vec<i64> = known.iter().map(|r| idx(r)).collect();
        let rows = tx
            .query(
                STORED_IDS,
                &[
                    (&account_id, Type::UUID),
                    (&d, Type::UUID_ARRAY),
                    (&s, Type::TEXT_ARRAY),
                    (&i, Type::INT8_ARRAY),
                ],
            )
            .await?;
        for row in rows {
            stored_ids.insert(
                (row.get("device_id"), row.get("series"), row.get("idx")),
                row.get("record_id"),
            );
        }
    }

    let plan = plan(records, &heads, &stored_ids);
    let new: Vec<&Record> = plan
        .iter()
        .zip(records)
        .filter(|(s, _)| **s == PushStatus::Stored)
        .map(|(_, r)| r)
        .collect();
    let usage = add_usage(tx, account_id, &new, quotas).await?;
    let mut moved_heads = Vec::new();
    if !new.is_empty() {
        let d: Vec<Uuid> = new.iter().map(|r| r.device_id).collect();
        let s: Vec<&str> = new.iter().map(|r| r.series.as_str()).collect();
        let i: Vec<i64> = new.iter().map(|r| idx(r)).collect();
        let ids: Vec<Uuid> = new.iter().map(|r| r.record_id).collect();
        let payloads: Vec<&[u8]> = new.iter().map(|r| r.payload.0.as_slice()).collect();
        tx.execute(
            r#"INSERT INTO record (account_id, device_id, series, idx, record_id, payload)
               SELECT $1, * FROM unnest($2::uuid[], $3::text[], $4::int8[], $5::uuid[], $6::bytea[])"#,
            &[
                (&account_id, Type::UUID),
                (&d, Type::UUID_ARRAY),
                (&s, Type::TEXT_ARRAY),
                (&i, Type::INT8_ARRAY),
                (&ids, Type::UUID_ARRAY),
                (&payloads, Type::BYTEA_ARRAY),
            ],
        )
        .await?;

        let mut moved: BTreeMap<(Uuid, &str), i64> = BTreeMap::new();
        for r in &new {
            let head = moved.entry((r.device_id, r.series.as_str())).or_insert(0);
            *head = (*head).max(idx(r));
        }
        let d: Vec<Uuid> = moved.keys().map(|k| k.0).collect();
        let s: Vec<&str> = moved.keys().map(|k| k.1).collect();
        let i: Vec<i64> = moved.values().copied().collect();
        tx.execute(
            r#"INSERT INTO series_head (account_id, device_id, series, last_idx)
               SELECT $1, * FROM unnest($2::uuid[], $3::text[], $4::int8[])
               ON CONFLICT (account_id, device_id, series) DO UPDATE SET last_idx = excluded.last_idx"#,
            &[
                (&account_id, Type::UUID),
                (&d, Type::UUID_ARRAY),
                (&s, Type::TEXT_ARRAY),
                (&i, Type::INT8_ARRAY),
            ],
        )
        .await?;
        moved_heads = new
            .iter()
            .filter(|r| moved.get(&(r.device_id, r.series.as_str())) == Some(&idx(r)))
            .map(|r| SeriesHead {
                device_id: r.device_id,
                series: r.series.clone(),
                last_idx: r.idx,
            })
            .collect();
    }

    let results = records
        .iter()
        .zip(plan)
        .map(|(r, status)| PushResult {
            device_id: r.device_id,
            series: r.series.clone(),
            idx: r.idx,
            status,
        })
        .collect();
    Ok(Stored {
        results,
        usage,
        moved: moved_heads,
    })
}

/// Adds the new records' bytes and count to the account's counters (locking its row until
/// COMMIT) and refuses the push if that passes a quota: the caller then stores nothing (the
/// transaction is rolled back). Returns the account's (bytes, records) stored with them.
async fn add_usage(
    tx: &Transaction<'_>,
    account_id: Uuid,
    new: &[&Record],
    quotas: &Quotas,
) -> HubResult<(u64, u64)> {
    if new.is_empty() {
        let (bytes, records, _) = quota::counters(tx, account_id).await?;
        return Ok((bytes, records));
    }
    let added_bytes: u64 = new.iter().map(|r| r.payload.0.len() as u64).sum();
    let added_records = new.len() as u64;
    let row = tx
        .query_opt(
            r#"UPDATE account SET bytes_stored = bytes_stored + $2, records_stored = records_stored + $3
               WHERE account_id = $1 RETURNING bytes_stored, records_stored"#,
            &[
                (&account_id, Type::UUID),
                (&i64::try_from(added_bytes).unwrap_or(i64::MAX), Type::INT8),
                (&i64::try_from(added_records).unwrap_or(i64::MAX), Type::INT8),
            ],
        )
        .await?
        // Deleted since the login: its login opens nothing any more.
        .ok_or(HubError::Unauthorized)?;
    let bytes = u64::try_from(row.get::<_, i64>("bytes_stored")).unwrap_or(0);
    let records = u64::try_from(row.get::<_, i64>("records_stored")).unwrap_or(0);
    quotas.check(Quota::Bytes, bytes.saturating_sub(added_bytes), added_bytes)?;
    quotas.check(
        Quota::Records,
        records.saturating_sub(added_records),
        added_records,
    )?;
    Ok((bytes, records))
}

/// The ids already stored at the places a push names, by primary key (public for the plan test
/// in `hub/tests/schema.rs`).
pub const STORED_IDS: &str = r#"
    SELECT r.device_id, r.series, r.idx, r.record_id
    FROM unnest($2::uuid[], $3::text[], $4::int8[]) AS p(device_id, series, idx)
    JOIN record r ON r.account_id = $1 AND r.device_id = p.device_id
                 AND r.series = p.series AND r.idx = p.idx"#;

/// A checked record's index ([`Record::check`] keeps it within `i64`).
fn idx(r: &Record) -> i64 {
    i64::try_from(r.idx).unwrap_or(i64::MAX)
}

/// What becomes of each record (in the request's order), given the heads and the ids already
/// stored at or below them. Per series the records are taken in index order, so a push that
/// lists them out of order stores the same; a place named twice is decided by its first record.
fn plan(
    records: &[Record],
    heads: &BTreeMap<SeriesKey, i64>,
    stored_ids: &BTreeMap<(Uuid, String, i64), Uuid>,
) -> Vec<PushStatus> {
    let mut order: Vec<usize> = (0..records.len()).collect();
    order.sort_by(|&a, &b| {
        let (ra, rb) = (&records[a], &records[b]);
        (ra.device_id, ra.series.as_str(), ra.idx, a).cmp(&(rb.device_id, rb.series.as_str(), rb.idx, b))
    });
    let mut next: BTreeMap<(Uuid, &str), i64> = BTreeMap::new();
    let mut placed: BTreeMap<(Uuid, &str, i64), Uuid> = BTreeMap::new();
    let mut status = vec![PushStatus::Gap; records.len()];
    for i in order {
        let r = &records[i];
        let key = (r.device_id, r.series.as_str());
        let head = heads
            .get(&(r.device_id, r.series.as_str().to_owned()))
            .copied()
            .unwrap_or(0);
        let next_free = next.entry(key).or_insert(head + 1);
        let at = idx(r);
        let existing = stored_ids
            .get(&(r.device_id, r.series.as_str().to_owned(), at))
            .or_else(|| placed.get(&(r.device_id, r.series.as_str(), at)));
        status[i] = match existing {
            Some(id) if *id == r.record_id => PushStatus::Duplicate,
            Some(_) => PushStatus::Conflict,
            None if at == *next_free => {
                *next_free += 1;
                placed.insert((r.device_id, r.series.as_str(), at), r.record_id);
                PushStatus::Stored
            }
            // At or below the head but not found: cannot happen in a contiguous series; refuse
            // to write over it rather than guess.
            None if at <= head => PushStatus::Conflict,
            None => PushStatus::Gap,
        };
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use sitetrail_sync_wire::{Payload, Series};

    fn rec(device: u128, series: &str, idx: u64, id: u128) -> Record {
        Record {
            record_id: Uuid::from_u128(id),
            device_id: Uuid::from_u128(device),
            series: Series::new(series).unwrap(),
            idx,
            payload: Payload(vec![1]),
        }
    }

    #[test]
    fn a_plan_keeps_series_contiguous_and_places_written_once() {
        use PushStatus::{Conflict, Duplicate, Gap, Stored};
        let mut heads = BTreeMap::new();
        heads.insert((Uuid::from_u128(1), "visits".to_owned()), 2);
        let mut ids = BTreeMap::new();
        ids.insert((Uuid::from_u128(1), "visits".to_owned(), 1), Uuid::from_u128(11));
        ids.insert((Uuid::from_u128(1), "visits".to_owned(), 2), Uuid::from_u128(12));
        let records = [
            rec(1, "visits", 4, 14), // after 3 in this push: stored
            rec(1, "visits", 3, 13), // head + 1
            rec(1, "visits", 2, 12), // same id: duplicate
            rec(1, "visits", 1, 99), // another id: conflict
            rec(1, "visits", 6, 16), // 5 is missing: gap
            rec(1, "visits", 3, 13), // named twice, same id
            rec(1, "visits", 4, 98), // named twice, another id
            rec(1, "state", 1, 21),  // a new series starts at 1
            rec(1, "forget", 2, 31), // ... not at 2
        ];
        assert_eq!(
            plan(&records, &heads, &ids),
            vec![Stored, Stored, Duplicate, Conflict, Gap, Duplicate, Conflict, Stored, Gap]
        );
    }
}
