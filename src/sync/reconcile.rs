//! What this device holds that the account may not: queued again for the hub when the device
//! is linked (its state, then its own visits in batches).

use rusqlite::named_params;

use crate::error::Result;
use crate::ids::VisitId;
use crate::store::Store;
use crate::sync_log::local;
use crate::sync_log::ops::Op;
use crate::time::Timestamp;

/// Visits queued per transaction when queueing what was here before the link.
const BACKFILL_BATCH: usize = 5_000;

/// What this device knew before it was linked, other than its visits (queued in batches by
/// [`backfill_step`]): the user's and the AI's categories, the never-record list, the exclusions, the forgotten
/// time ranges and the forgotten websites (known here only by their domain's SHA-256, which is
/// what is sent: the other devices forget the website whose domain has it).
pub(crate) fn queue_state_in(tx: &rusqlite::Transaction<'_>) -> Result<()> {
    let categories: Vec<(String, String, String)> = tx
        .prepare(
            r#"SELECT domain, category, category_source FROM website
               WHERE category_source IN ('user', 'ai') AND category IS NOT NULL"#,
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (domain, category, source) in categories {
        let key = if source == "user" {
            local::user_key(&domain)
        } else {
            local::ai_key(&domain)
        };
        let value = category.clone();
        local::queue_register_in(
            tx,
            &key,
            Some(&value),
            &Op::Category {
                domain,
                category,
                source,
            },
        )?;
    }
    let blocked: Vec<String> = tx
        .prepare(r#"SELECT domain FROM blocked_domain"#)?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for domain in blocked {
        local::queue_register_in(
            tx,
            &local::block_key(&domain),
            Some(local::flag(true)),
            &Op::Block {
                domain,
                blocked: true,
            },
        )?;
    }
    for e in crate::exclusions::list_in(tx)? {
        local::queue_register_in(
            tx,
            &local::exclude_key(&e.pattern),
            Some(local::flag(true)),
            &Op::Exclude {
                pattern: e.pattern,
                excluded: true,
            },
        )?;
    }
    let ranges: Vec<(i64, i64)> = tx
        .prepare(r#"SELECT since, until FROM tombstone WHERE kind = 'range'"#)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (since, until) in ranges {
        local::queue_in(tx, &Op::ForgetRange { since, until })?;
    }
    // This device's own website forgettings (those from other devices carry a clock).
    let websites: Vec<(Vec<u8>, i64)> = tx
        .prepare(
            r#"SELECT domain_sha256, forgotten_at FROM tombstone
               WHERE kind = 'website' AND domain_sha256 IS NOT NULL AND sync_hlc IS NULL"#,
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (hash, at) in websites {
        let domain_sha256 = hash.iter().map(|b| format!("{b:02x}")).collect();
        local::queue_in(tx, &Op::ForgetWebsiteHash { domain_sha256, at })?;
    }
    Ok(())
}

/// Queues the next batch of this device's own visits recorded before the link; true when all
/// are queued.
pub(crate) fn backfill_step(store: &Store) -> Result<bool> {
    store.write(None, |tx| {
        let (done, after): (bool, Option<VisitId>) = tx
            .prepare_cached(r#"SELECT backfill_done, backfill_after FROM sync_link"#)?
            .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        if done {
            return Ok(true);
        }
        let linked_at: Timestamp = tx.query_row(r#"SELECT linked_at FROM sync_link"#, [], |r| r.get(0))?;
        let hlc = local::next_hlc(0, linked_at.as_micros() / 1000);
        // Visits recorded since the link were queued as they were recorded, with their clock
        // (`sync_hlc`): only those without one are this device's from before.
        let rows: Vec<(VisitId, String)> = tx
            .prepare_cached(
                r#"SELECT v.id, json_object('t', 'visit', 'id', lower(hex(v.id)), 'url', v.url,
                                            'title', v.title, 'at', v.visited_at, 'source', v.source,
                                            'active_ms', t.active_ms, 'estimated_ms', t.estimated_ms)
                   FROM visit v LEFT JOIN visit_time t ON t.visit_id = v.id
                   WHERE v.device_id IS NULL AND v.sync_hlc IS NULL AND v.id > coalesce(:after, x'')
                   ORDER BY v.id LIMIT :n"#,
            )?
            .query_map(
                named_params! {
                    ":after": after,
                    ":n": BACKFILL_BATCH as i64,
                },
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?
            .collect::<rusqlite::Result<_>>()?;
        let mut insert = tx.prepare_cached(r#"INSERT INTO sync_op (hlc, op) VALUES (:h, :op)"#)?;
        for (id, op) in &rows {
            insert.execute(named_params! { ":h": hlc, ":op": op })?;
            // The same clock here as on the devices that receive it.
            local::set_visit_hlc_in(tx, *id, hlc)?;
        }
        let done = rows.len() < BACKFILL_BATCH;
        tx.prepare_cached(r#"UPDATE sync_link SET backfill_after = :a, backfill_done = :d"#)?
            .execute(named_params! { ":a": rows.last().map(|r| r.0).or(after), ":d": done })?;
        Ok(done)
    })
}
