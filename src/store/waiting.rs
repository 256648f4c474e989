//! Writers waiting for the write lock, seen across processes.
//!
//! SQLite's write lock is not fair: a writer that finds it taken sleeps in its busy handler
//! between tries, and work that takes it again and again (a pull applying a million visits in
//! many transactions) would take it back before a sleeper wakes, unless it paused after every
//! transaction for as long as a sleeper may sleep. So a waiting writer says it waits instead:
//! - **A writer** ([`begin_immediate`], every [`super::Store::write`]) whose `BEGIN IMMEDIATE`
//!   finds the lock taken holds a shared lock on the file `<database>-writers` while it waits
//!   (taken at its first failed try, given back once it has the write lock, or by the system if
//!   it dies), and tries again every millisecond (every 5 ms after its first 200 tries) until its
//!   busy timeout.
//! - **Long work** ([`Watch`]) asks between its steps whether anyone waits (a try of the
//!   exclusive lock on that file, which never blocks); if so it commits and, before its next
//!   transaction, waits until the writers have the lock ([`Watch::let_in`]). Nobody waiting, it
//!   pauses for no one.
//!
//! The file holds nothing (it is created empty, private, and only ever locked); a lock on it is
//! advisory and released with the process that held it. A writer that cannot take it (the file
//! cannot be created) waits as SQLite's own handler would, only unseen.

use std::cell::RefCell;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{Connection, Transaction, TransactionBehavior};

/// Tries of a waiting writer one millisecond apart before it spaces them out.
const FAST_TRIES: i32 = 200;
/// How often [`Watch::let_in`] looks whether the writers have the lock.
const LET_IN_POLL: Duration = Duration::from_micros(500);

/// The file waiting writers lock: `<database>-writers`.
pub(crate) fn writers_file(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-writers");
    PathBuf::from(name)
}

fn open_private(path: &Path) -> std::io::Result<File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path)
}

#[derive(Clone, Copy)]
enum Mode {
    Shared,
    Exclusive,
}

#[derive(PartialEq, Eq)]
enum Tried {
    Locked,
    /// Another holds a lock that excludes this one.
    Busy,
    Failed,
}

/// Tries to take an advisory lock on `file`, never waiting.
#[cfg(unix)]
fn try_lock(file: &File, mode: Mode) -> Tried {
    use rustix::fs::{flock, FlockOperation};
    let op = match mode {
        Mode::Shared => FlockOperation::NonBlockingLockShared,
        Mode::Exclusive => FlockOperation::NonBlockingLockExclusive,
    };
    match flock(file, op) {
        Ok(()) => Tried::Locked,
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => Tried::Busy,
        Err(_) => Tried::Failed,
    }
}

#[cfg(unix)]
fn unlock(file: &File) {
    let _ = rustix::fs::flock(file, rustix::fs::FlockOperation::Unlock);
}

/// Elsewhere waiting writers are not seen (long work pauses for them instead).
#[cfg(not(unix))]
fn try_lock(_: &File, _: Mode) -> Tried {
    Tried::Failed
}

#[cfg(not(unix))]
fn unlock(_: &File) {}

/// The writer waiting on this thread, if its `BEGIN IMMEDIATE` is under way: the busy handler
/// (a plain function, called by SQLite on this thread) finds it here.
struct Waiter {
    file: PathBuf,
    deadline: Instant,
    /// The shared lock held while waiting, once taken.
    lock: Option<File>,
}

thread_local! {
    static WAITER: RefCell<Option<Waiter>> = const { RefCell::new(None) };
}

/// SQLite's busy handler during [`begin_immediate`]: says this writer waits (once), then sleeps a
/// millisecond (5 after [`FAST_TRIES`]) and tries again, until the deadline.
fn busy(tries: i32) -> bool {
    WAITER.with_borrow_mut(|w| {
        let Some(w) = w else {
            return false;
        };
        if w.lock.is_none() {
            w.lock = open_private(&w.file)
                .ok()
                .filter(|f| try_lock(f, Mode::Shared) == Tried::Locked);
        }
        let now = Instant::now();
        if now >= w.deadline {
            return false;
        }
        let nap = if tries < FAST_TRIES { 1 } else { 5 };
        std::thread::sleep(Duration::from_millis(nap).min(w.deadline - now));
        true
    })
}

/// Runs `f` in a `BEGIN IMMEDIATE` transaction on `conn` (a connection to `db`), waiting for the
/// write lock at most the connection's busy timeout, seen by [`Watch`]es while it waits.
pub(crate) fn begin_immediate<T>(
    conn: &mut Connection,
    db: &Path,
    f: impl FnOnce(Transaction<'_>) -> crate::error::Result<T>,
) -> crate::error::Result<T> {
    let timeout_ms: u64 = conn
        .prepare_cached("PRAGMA busy_timeout")?
        .query_row([], |r| r.get(0))?;
    let timeout = Duration::from_millis(timeout_ms);
    WAITER.with_borrow_mut(|w| {
        *w = Some(Waiter {
            file: writers_file(db),
            deadline: Instant::now() + timeout,
            lock: None,
        });
    });
    conn.busy_handler(Some(busy))?;
    // `conn` is ours alone (`&mut`): the unchecked begin only lets the error path reach it too.
    let began = Transaction::new_unchecked(conn, TransactionBehavior::Immediate);
    // The write lock is ours (or the wait is over): no longer waiting.
    WAITER.with_borrow_mut(|w| *w = None);
    match began {
        Ok(tx) => {
            tx.busy_timeout(timeout)?;
            f(tx)
        }
        Err(e) => {
            conn.busy_timeout(timeout)?;
            Err(e.into())
        }
    }
}

/// Long write work's view of the writers waiting for the lock it holds (see the module doc).
pub struct Watch {
    file: File,
}

impl Watch {
    /// Watches the writers of the database at `db` (creating the empty `-writers` file).
    pub(crate) fn open(db: &Path) -> std::io::Result<Watch> {
        if cfg!(not(unix)) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "waiting writers are seen on Unix only",
            ));
        }
        Ok(Watch {
            file: open_private(&writers_file(db))?,
        })
    }

    /// True if a writer waits for the write lock now (in this process or another).
    pub fn anyone_waiting(&self) -> bool {
        match try_lock(&self.file, Mode::Exclusive) {
            Tried::Locked => {
                // Ours for an instant: a writer arriving now fails to take its lock this once
                // and takes it at its next try.
                unlock(&self.file);
                false
            }
            Tried::Busy => true,
            Tried::Failed => false,
        }
    }

    /// After a commit: waits until the writers that were waiting have the write lock (they stop
    /// waiting the moment they have it), at most `max`. Blocking.
    pub fn let_in(&self, max: Duration) {
        let started = Instant::now();
        while self.anyone_waiting() && started.elapsed() < max {
            std::thread::sleep(LET_IN_POLL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;

    #[test]
    fn a_writer_waiting_for_the_lock_is_seen_until_it_has_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sitetrail.db");
        let store = Store::open(&path).unwrap();
        let watch = store.watch_writers().unwrap();
        assert!(!watch.anyone_waiting(), "nobody waits yet");
        // Another connection holds the write lock.
        let holder = Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();
        std::thread::scope(|s| {
            let writer = s.spawn(|| store.write(None, |tx| Ok(tx.execute_batch("CREATE TABLE t (x)")?)));
            let seen = Instant::now();
            while !watch.anyone_waiting() {
                assert!(
                    seen.elapsed() < Duration::from_secs(5),
                    "the waiting writer was never seen"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(!writer.is_finished(), "it waits for the lock");
            holder.execute_batch("COMMIT").unwrap();
            watch.let_in(Duration::from_secs(5));
            assert!(!watch.anyone_waiting(), "it has the lock: it waits no more");
            writer.join().unwrap().unwrap();
        });
        assert!(!watch.anyone_waiting());
    }

    #[test]
    fn a_writer_waits_no_longer_than_its_busy_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sitetrail.db");
        let store = Store::open(&path).unwrap();
        let holder = Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();
        let mut conn = store.conn().unwrap();
        conn.busy_timeout(Duration::from_millis(50)).unwrap();
        let err = begin_immediate(&mut conn, &path, |_| Ok(())).unwrap_err();
        assert!(err.to_string().contains("locked"), "{err}");
        // The connection keeps its own busy timeout afterwards.
        let ms: i64 = conn.query_row("PRAGMA busy_timeout", [], |r| r.get(0)).unwrap();
        assert_eq!(ms, 50);
        let watch = store.watch_writers().unwrap();
        assert!(!watch.anyone_waiting(), "a writer that gave up waits no more");
    }
}
