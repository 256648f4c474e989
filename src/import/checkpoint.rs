//! Checkpoints while an import writes: the WAL's frames copied back into the database file on a
//! thread and connection of their own, so that the thread that writes does not stop for them.
//!
//! The import's connection runs no automatic checkpoint (`wal_autocheckpoint = 0`, restored
//! after). After each batch commits, [`Checkpoints::after_commit`] asks this thread for a
//! `PASSIVE` checkpoint (it never waits for readers or writers), which copies the frames while the
//! writer works on the next batch. SQLite starts the WAL over from its beginning only when a
//! writer begins a transaction with every frame copied back; the checkpoints running beside the
//! writer are always a batch behind it, so once the WAL holds [`MAX_WAL_FRAMES`] the writer waits
//! for one checkpoint to catch up before its next batch, and the WAL starts over: its size stays
//! bounded whatever the file's size.
//!
//! A checkpoint that fails is not the import's failure (the frames stay in the WAL, safe, and the
//! next one copies them): the thread reports the WAL's size, or nothing.

use std::sync::mpsc::{Receiver, SyncSender};

use rusqlite::Connection;

use crate::error::Result;

/// WAL frames (pages) past which the writer waits for a checkpoint to catch up before its next
/// batch: 8,192 pages of 4 KiB, 32 MiB. SQLite's own limit is 1,000.
pub(super) const MAX_WAL_FRAMES: i64 = 8_192;

/// A request to the checkpointing thread.
enum Ask {
    /// Checkpoint when you can.
    Checkpoint,
    /// Checkpoint now and say when it is done.
    CatchUp(SyncSender<()>),
}

/// The writer's side of the checkpointing thread.
pub(super) struct Checkpoints {
    asks: SyncSender<Ask>,
    /// The WAL's size in frames at the last checkpoint, as it reported it.
    frames: std::sync::Arc<std::sync::atomic::AtomicI64>,
}

/// The checkpointing thread's side: run it with [`Checkpointer::run`].
pub(super) struct Checkpointer {
    asks: Receiver<Ask>,
    conn: Connection,
    frames: std::sync::Arc<std::sync::atomic::AtomicI64>,
}

/// The two sides, the thread's checkpointing on `conn` (a connection of its own to the database).
pub(super) fn checkpoints(conn: Connection) -> (Checkpoints, Checkpointer) {
    // One request waiting is enough: it checkpoints every frame committed before it runs.
    let (asks, asked) = std::sync::mpsc::sync_channel(1);
    let frames = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
    (
        Checkpoints {
            asks,
            frames: frames.clone(),
        },
        Checkpointer {
            asks: asked,
            conn,
            frames,
        },
    )
}

impl Checkpoints {
    /// Call after each batch commits: asks for a checkpoint, and when the WAL has grown past
    /// [`MAX_WAL_FRAMES`] waits for it, so that the next batch starts the WAL over.
    pub(super) fn after_commit(&self) {
        use std::sync::atomic::Ordering;
        if self.frames.load(Ordering::Relaxed) < MAX_WAL_FRAMES {
            // Refused when a request is waiting already (it will copy this batch's frames too) or
            // the thread stopped (the WAL is then checkpointed after the import).
            let _ = self.asks.try_send(Ask::Checkpoint);
            return;
        }
        let (done, wait) = std::sync::mpsc::sync_channel(1);
        if self.asks.send(Ask::CatchUp(done)).is_ok() {
            // An error: the thread stopped; the WAL is then checkpointed after the import.
            let _ = wait.recv();
        }
        self.frames.store(0, Ordering::Relaxed);
    }
}

impl Checkpointer {
    /// Checkpoints as asked until the writer's side is dropped.
    pub(super) fn run(self) {
        while let Ok(ask) = self.asks.recv() {
            let frames = passive_checkpoint(&self.conn).unwrap_or(0);
            self.frames.store(frames, std::sync::atomic::Ordering::Relaxed);
            if let Ask::CatchUp(done) = ask {
                let _ = done.send(());
            }
        }
    }
}

/// A `PASSIVE` checkpoint on `conn`: the WAL's size in frames (before it starts over).
fn passive_checkpoint(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row(r#"PRAGMA wal_checkpoint(PASSIVE)"#, [], |r| r.get(1))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(path: &std::path::Path) -> Connection {
        let conn = Connection::open(path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        conn
    }

    #[test]
    fn the_wal_starts_over_once_it_passes_the_bound_however_much_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let writer = open(&path);
        writer.execute_batch("CREATE TABLE t (b BLOB)").unwrap();
        let (checkpoints, checkpointer) = super::checkpoints(open(&path));
        // 160 MiB in transactions of 1 MiB, the writer's own checkpoints off, as an import's: with
        // no checkpoint beside it the WAL would grow to all of it.
        std::thread::scope(|scope| {
            scope.spawn(move || checkpointer.run());
            for _ in 0..160 {
                writer
                    .execute("INSERT INTO t VALUES (zeroblob(1048576))", [])
                    .unwrap();
                checkpoints.after_commit();
            }
            drop(checkpoints);
        });
        let wal = std::fs::metadata(dir.path().join("db.sqlite-wal")).unwrap().len();
        let page: i64 = writer
            .pragma_query_value(None, "page_size", |r| r.get(0))
            .unwrap();
        // Twice the bound (the WAL's size is known a checkpoint late, and the writer goes on
        // meanwhile), with SQLite's frame headers: 64 MiB here, not 160.
        let bound = 2 * MAX_WAL_FRAMES * (page + 24);
        assert!(wal <= bound as u64, "the WAL grew to {wal} bytes (bound {bound})");
        let rows: i64 = writer
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 160);
    }
}
