//! The WAL scrub after a forgetting: checkpointing the write-ahead log into the file and truncating
//! it, so no copy of a page as it was before a deletion is left in it; and finishing a scrub an
//! earlier forgetting had to leave pending (`scrub_pending`: another process was reading), which
//! every [`Store::open`](crate::Store::open) does. Here, below `forget`, because opening the
//! store runs it.

use std::time::Duration;

use rusqlite::Connection;

use crate::error::Result;

/// Longest wait for other processes' readers in one truncating checkpoint (it blocks writers while
/// it waits and runs, so it comes only after a passive checkpoint, which blocks no one, has copied
/// the WAL into the file, and it is tried again after as long a pause, for [`SCRUB_WAIT`](crate::forget::SCRUB_WAIT)).
pub(crate) const CHECKPOINT_WAIT: Duration = Duration::from_millis(200);

/// Checkpoints the whole WAL into the file and truncates it to nothing, waiting at most
/// [`CHECKPOINT_WAIT`] for readers; true if it did (no copy of an old page is left in it), false
/// if a reader still needs it. `busy` is the connection's own timeout, put back after.
pub(crate) fn truncate_wal(conn: &Connection, busy: Duration) -> Result<bool> {
    conn.busy_timeout(CHECKPOINT_WAIT)?;
    let truncated = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get::<_, i64>(0));
    conn.busy_timeout(busy)?;
    match truncated {
        Ok(0) => Ok(true),
        Ok(_) => Ok(false),
        Err(e) => {
            tracing::info!(error = %e, "the WAL could not be truncated now");
            Ok(false)
        }
    }
}

pub(crate) fn is_scrub_pending(conn: &Connection) -> Result<bool> {
    Ok(conn
        .prepare_cached(r#"SELECT EXISTS (SELECT 1 FROM scrub_pending)"#)?
        .query_row([], |r| r.get(0))?)
}

pub(crate) fn delete_scrub_pending_in(conn: &Connection) -> Result<()> {
    conn.prepare_cached(r#"DELETE FROM scrub_pending WHERE id = 1"#)?
        .execute([])?;
    Ok(())
}

/// Finishes the scrub an earlier forgetting left pending (a reader kept the WAL alive then), on
/// `conn`, a connection whose busy timeout is `busy`: checkpoints and truncates the WAL, then
/// forgets the record. Run by [`Store::open`](crate::Store::open), so every Sitetrail process
/// (any command, the app, the host, the daemon) finishes it. Returns `None` if none was pending,
/// else whether it is now done (a reader may still be there: the next opening tries again).
pub(crate) fn finish_pending_scrub(conn: &Connection, busy: Duration) -> Result<Option<bool>> {
    if !is_scrub_pending(conn)? {
        return Ok(None);
    }
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
    if !truncate_wal(conn, busy)? {
        tracing::info!("a forgetting's WAL scrub is still pending: another connection is reading");
        return Ok(Some(false));
    }
    delete_scrub_pending_in(conn)?;
    truncate_wal(conn, busy)?;
    tracing::info!("finished an earlier forgetting's scrub of the WAL");
    Ok(Some(true))
}
