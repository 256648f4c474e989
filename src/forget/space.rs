//! Giving space back after a forgetting, and making sure no old copy of a deleted page is left in
//! the write-ahead log.
//!
//! A database created with migration 6 or later has `auto_vacuum = INCREMENTAL`: the pages a
//! forgetting freed are moved off the end of the file in short transactions
//! (`PRAGMA incremental_vacuum`, a bounded number of pages each), so the file shrinks. An older
//! database has `auto_vacuum = NONE` and keeps its free pages for the visits to come (switching
//! needs a full `VACUUM`, which rewrites the file under an exclusive lock: see ARCHITECTURE.md).
//! Either way the WAL is then checkpointed and truncated, so the pages as they were before the
//! deletion are not kept in it; the freed pages themselves were zeroed (`secure_delete`).
//!
//! A connection in another process that is reading (an open read transaction) keeps the WAL alive:
//! the truncation is tried again for [`SCRUB_WAIT`]; if it still cannot run, the forgetting is
//! reported as not complete (`scrub_pending`), that is recorded in `scrub_pending`, and the next
//! Sitetrail process to open the file finishes it (`store::scrub::finish_pending_scrub`, from
//! `Store::open`).

use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::error::Result;
use crate::store::Store;

/// Pages moved per transaction: 1 MiB at the default page size, a few milliseconds; the
/// forgetting's pause comes between two steps, as between its batches.
const PAGES_PER_STEP: i64 = 256;
use crate::store::scrub::{delete_scrub_pending_in, is_scrub_pending, truncate_wal, CHECKPOINT_WAIT};
/// How long a forgetting tries again to truncate the WAL while another connection reads, before it
/// leaves the scrub pending.
pub const SCRUB_WAIT: Duration = Duration::from_secs(3);
/// Passive checkpoints tried before the truncating one.
const PASSIVE_TRIES: usize = 5;

/// What was given back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reclaimed {
    /// Bytes the file shrank by.
    pub bytes: u64,
    /// True if the WAL was truncated (no copy of a deleted page is left in it); false if a reader
    /// kept it alive, and the scrub is recorded as pending (`scrub_pending`).
    pub scrubbed: bool,
}

fn pragma_i64(conn: &Connection, name: &str) -> Result<i64> {
    Ok(conn.pragma_query_value(None, name, |r| r.get(0))?)
}

/// Frees the file's unused pages (when it can) and truncates the WAL, pausing `pause` between
/// steps so that other writers get the lock. While another connection reads, the truncation is
/// tried again for `scrub_wait` (calling `waiting` once); if it still cannot run, the scrub is
/// recorded as pending for the next process that opens the file.
pub(super) fn reclaim(
    store: &Store,
    conn: &mut Connection,
    (pause, scrub_wait): (Duration, Duration),
    waiting: &mut dyn FnMut(),
) -> Result<Reclaimed> {
    let page_size = pragma_i64(conn, "page_size")?;
    let before = pragma_i64(conn, "page_count")?;
    if pragma_i64(conn, "auto_vacuum")? == 2 {
        // Each step frees up to PAGES_PER_STEP pages; stop when none is left (or nothing moves).
        let mut last = i64::MAX;
        loop {
            let free = pragma_i64(conn, "freelist_count")?;
            if free == 0 || free >= last {
                break;
            }
            last = free;
            super::pause(pause);
            store.write_on(conn, crate::store::Changes::NONE, |tx| {
                // The pragma frees one page per step (each step returns a row): step to the end.
                let mut stmt = tx.prepare(&format!("PRAGMA incremental_vacuum({PAGES_PER_STEP})"))?;
                let mut rows = stmt.query([])?;
                while rows.next()?.is_some() {}
                Ok(())
            })?;
        }
    }
    let after = pragma_i64(conn, "page_count")?;
    // Copy the WAL into the file without blocking anyone, then truncate it if no reader still
    // needs it.
    for _ in 0..PASSIVE_TRIES {
        let (log, copied): (i64, i64) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get(1)?, r.get(2)?))
        })?;
        if log == copied {
            break;
        }
        super::pause(pause);
    }
    // A connection reading an older snapshot keeps the WAL (and the pages as they were before the
    // deletion) alive: try again for a while, then leave the scrub to the next process that opens
    // the file.
    let deadline = Instant::now() + scrub_wait;
    let mut said = false;
    let scrubbed = loop {
        if truncate_wal(conn, super::BUSY_TIMEOUT)? {
            break true;
        }
        if Instant::now() >= deadline {
            break false;
        }
        if !said {
            tracing::info!(
                ?scrub_wait,
                "another connection is reading; retrying the WAL truncation"
            );
            waiting();
            said = true;
        }
        std::thread::sleep(CHECKPOINT_WAIT);
    };
    let pending = is_scrub_pending(conn)?;
    if scrubbed && pending {
        // Deleting the row writes to the emptied WAL: truncate once more, so it is left empty.
        store.write_on(conn, crate::store::Changes::NONE, |tx| {
            delete_scrub_pending_in(tx)
        })?;
        truncate_wal(conn, super::BUSY_TIMEOUT)?;
    } else if !scrubbed && !pending {
        let now = store.now();
        store.write_on(conn, crate::store::Changes::NONE, |tx| {
            tx.prepare_cached(
                r#"INSERT INTO scrub_pending (id, since) VALUES (1, :now) ON CONFLICT (id) DO NOTHING"#,
            )?
            .execute(rusqlite::named_params! { ":now": now })?;
            Ok(())
        })?;
    }
    if !scrubbed {
        tracing::warn!(
            "a reader kept the WAL alive: the next Sitetrail process to open the database truncates it"
        );
    }
    Ok(Reclaimed {
        bytes: ((before - after).max(0) * page_size) as u64,
        scrubbed,
    })
}
