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

use std::time::Duration;

use rusqlite::Connection;

use crate::error::Result;
use crate::store::Store;

/// Pages moved per transaction: 1 MiB at the default page size, a few milliseconds; the
/// forgetting's pause comes between two steps, as between its batches.
const PAGES_PER_STEP: i64 = 256;
/// Longest wait for other processes' readers before truncating the WAL (that checkpoint blocks
/// writers while it waits and runs, so it comes only after a passive checkpoint, which blocks no
/// one, has copied the WAL into the file; if it cannot finish, SQLite's automatic checkpoints
/// overwrite the WAL later).
const CHECKPOINT_WAIT: Duration = Duration::from_millis(200);
/// Passive checkpoints tried before the truncating one.
const PASSIVE_TRIES: usize = 5;

/// What was given back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reclaimed {
    /// Bytes the file shrank by.
    pub bytes: u64,
}

fn pragma_i64(conn: &Connection, name: &str) -> Result<i64> {
    Ok(conn.pragma_query_value(None, name, |r| r.get(0))?)
}

/// Frees the file's unused pages (when it can) and truncates the WAL, pausing `pause` between
/// steps so that other writers get the lock.
pub(super) fn reclaim(store: &Store, conn: &mut Connection, pause: Duration) -> Result<Reclaimed> {
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
    conn.busy_timeout(CHECKPOINT_WAIT)?;
    let truncated = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get::<_, i64>(0));
    conn.busy_timeout(super::BUSY_TIMEOUT)?;
    match truncated {
        Ok(0) => {}
        Ok(_) => tracing::info!("another process is reading; the WAL is truncated at a later checkpoint"),
        Err(e) => tracing::info!(error = %e, "the WAL could not be truncated now; a later checkpoint will"),
    }
    Ok(Reclaimed {
        bytes: ((before - after).max(0) * page_size) as u64,
    })
}
