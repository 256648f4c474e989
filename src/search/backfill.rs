//! Building the index for visits stored before it existed (databases from before migration 6).
//!
//! Not one transaction: migration 6 only creates the index and a cursor (`search_state`); this
//! fills it in committed batches of [`BackfillOptions::batch_size`] visits, newest first (so recent
//! history is searchable first), each batch moving the cursor in its own transaction. An
//! interrupted backfill loses at most the batch in flight and continues where the cursor is; two
//! processes backfilling at once each take the next batch under the write lock. Visits recorded
//! meanwhile are indexed by the write path itself and skipped here.
//!
//! Visits stored before migration 6 may share a key (two in the same microsecond): the second one
//! seen gets the next free key of its millisecond and a new id to match (the id of a visit is not
//! referenced anywhere else). Visits sharing a key are next to each other in id order: in one
//! batch the first indexed keeps the key; across two batches the one at the previous batch's
//! cursor holds it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rusqlite::{named_params, Connection, Transaction};

use crate::error::Result;
use crate::ids::VisitId;
use crate::store::{Change, Store};

use super::{free_id_from, index_visit_in, is_indexed, key_of, next_key, IndexedText};

/// Visits indexed per transaction by default: about 100 ms of write lock on this machine.
pub const DEFAULT_BACKFILL_BATCH: usize = 10_000;

/// The pause between two batches by default, so other writers get the lock (see
/// [`crate::store::pause_between_batches`]).
pub const DEFAULT_BACKFILL_PAUSE: std::time::Duration = crate::store::BATCH_PAUSE;

/// How far the index is built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IndexStatus {
    /// Visits to index when the upgrade began (0 for a database that started with the index).
    pub total: u64,
    /// Visits looked at so far.
    pub done: u64,
    /// True once every visit is in the index.
    pub complete: bool,
}

/// How to backfill.
#[derive(Clone, Debug)]
pub struct BackfillOptions {
    /// Visits per transaction.
    pub batch_size: usize,
    /// Checked between batches: when set, the backfill stops after the batch in flight.
    pub cancel: Option<Arc<AtomicBool>>,
    /// The pause between two batches.
    pub pause: std::time::Duration,
}

impl Default for BackfillOptions {
    fn default() -> Self {
        BackfillOptions {
            batch_size: DEFAULT_BACKFILL_BATCH,
            cancel: None,
            pause: DEFAULT_BACKFILL_PAUSE,
        }
    }
}

/// Where the backfill is.
pub fn get_index_status(conn: &Connection) -> Result<IndexStatus> {
    let (below, total, done): (Option<VisitId>, i64, i64) = conn
        .prepare_cached(r#"SELECT below, total, done FROM search_state WHERE id = 1"#)?
        .query_row([], |r| Ok((r.get("below")?, r.get("total")?, r.get("done")?)))?;
    Ok(status(below, total, done))
}

fn status(below: Option<VisitId>, total: i64, done: i64) -> IndexStatus {
    let (total, done) = (total.max(0) as u64, done.max(0) as u64);
    IndexStatus {
        total: total.max(done),
        done,
        complete: below.is_none(),
    }
}

/// One visit the backfill reads.
struct Pending {
    id: VisitId,
    url: String,
    title: Option<String>,
    domain: String,
}

/// Indexes the next batch of up to `batch_size` visits in the caller's write transaction.
pub fn backfill_batch(tx: &Transaction<'_>, batch_size: usize, now: crate::Timestamp) -> Result<IndexStatus> {
    let (below, total, done): (Option<VisitId>, i64, i64) = tx
        .prepare_cached(r#"SELECT below, total, done FROM search_state WHERE id = 1"#)?
        .query_row([], |r| Ok((r.get("below")?, r.get("total")?, r.get("done")?)))?;
    let Some(below) = below else {
        return Ok(status(None, total, done));
    };
    let batch_size = batch_size.max(1);
    // Read the batch first: ids may change below while it is written.
    let pending: Vec<Pending> = tx
        .prepare_cached(
            r#"SELECT v.id, v.url, v.title, w.domain
               FROM visit v JOIN website w ON w.id = v.website_id
               WHERE v.id < :below
               ORDER BY v.id DESC"#,
        )?
        .query_map(named_params! { ":below": below }, |r| {
            Ok(Pending {
                id: r.get("id")?,
                url: r.get("url")?,
                title: r.get("title")?,
                domain: r.get("domain")?,
            })
        })?
        .take(batch_size)
        .collect::<rusqlite::Result<_>>()?;
    // The batch is the newest visits below the cursor; they are indexed oldest first: FTS5 flushes
    // its pending terms into a new segment whenever a rowid is smaller than the one before, so a
    // descending batch would write one segment per visit (measured: 17,000 visits/s instead of
    // about 100,000, and a fragmented index).
    let mut previous_key = None;
    // The visit at the cursor was indexed by the previous batch (the first cursor is past every id).
    let cursor_key = (below.0 != uuid::Uuid::max()).then(|| key_of(below));
    for p in pending.iter().rev() {
        let key = key_of(p.id);
        let text = IndexedText::new(&p.domain, &p.url, p.title.as_deref());
        if previous_key == Some(key) || cursor_key == Some(key) {
            // Shares its key with a visit already indexed: move it to a free one.
            let free = match next_key(p.id) {
                Some(next) => free_id_from(tx, next),
                None => Err(crate::Error::Conflict("end of millisecond".into())),
            };
            match free {
                Ok(new_id) => {
                    tx.prepare_cached(r#"UPDATE visit SET id = :new WHERE id = :old"#)?
                        .execute(named_params! { ":new": new_id, ":old": p.id })?;
                    index_visit_in(tx, new_id, &text)?;
                }
                // Thousands of visits in one millisecond: this one stays out of the index
                // rather than stopping the backfill for good.
                Err(_) => {
                    tracing::warn!(visit = %p.id, "visit shares its time with 4,096 others; not indexed");
                }
            }
            continue;
        }
        previous_key = Some(key);
        if !is_indexed(tx, p.id)? {
            index_visit_in(tx, p.id, &text)?;
        }
    }
    let next_below = if pending.len() < batch_size {
        None
    } else {
        pending.last().map(|p| p.id)
    };
    let done = done + pending.len() as i64;
    tx.prepare_cached(
        r#"UPDATE search_state SET below = :below, done = :done, updated_at = :now WHERE id = 1"#,
    )?
    .execute(named_params! { ":below": next_below, ":done": done, ":now": now })?;
    Ok(status(next_below, total, done))
}

/// Builds the rest of the index in committed batches; `progress` hears after each. Returns at
/// once when the index is complete.
pub fn backfill(
    store: &Store,
    opts: &BackfillOptions,
    progress: &mut dyn FnMut(IndexStatus),
) -> Result<IndexStatus> {
    let mut st = store.with_conn(get_index_status)?;
    if st.complete {
        return Ok(st);
    }
    progress(st);
    let mut conn = store.conn()?;
    loop {
        if opts.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Ok(st);
        }
        let now = store.now();
        st = store.write_on(&mut conn, Change::Visits, |tx| {
            backfill_batch(tx, opts.batch_size, now)
        })?;
        progress(st);
        if st.complete {
            return Ok(st);
        }
        crate::store::pause_between_batches(opts.pause);
    }
}

impl Store {
    /// How far the search index is built.
    pub fn search_index_status(&self) -> Result<IndexStatus> {
        self.with_conn(get_index_status)
    }
}
