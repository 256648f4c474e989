//! The one helper for blocking work called from async code, and the probe that catches blocking
//! work where it does not belong.
//!
//! Async code (the worker, the app's commands and schedules) never touches SQLite, a file or the
//! OS keyring itself: it hands the work to [`run`], which runs it on tokio's blocking pool.
//! [`Store::run`](crate::Store::run) is `run` with the store.
//!
//! Every function that blocks (taking a pooled connection, reading or writing a settings file,
//! the keyring calls (the app's API key, the sync key), looking for browser profiles) calls [`note`] first. In production
//! that is one atomic load. A test installs a probe with [`set_probe`] and marks the threads that
//! must never block (the async runtime's thread, the UI's main thread) with
//! [`forbid_on_this_thread`]: a blocking call made on them is then reported instead of passing
//! unnoticed.

use std::cell::Cell;
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// Runs `f` on tokio's blocking pool and waits for it without blocking the async thread.
pub async fn run<T, F>(f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Task(e.to_string()))?
}

static PROBE: OnceLock<fn(&'static str)> = OnceLock::new();

thread_local! {
    static FORBIDDEN: Cell<bool> = const { Cell::new(false) };
}

/// Says that the caller is about to block doing `what` ("database", "settings file", ...).
pub fn note(what: &'static str) {
    if let Some(probe) = PROBE.get() {
        if FORBIDDEN.with(Cell::get) {
            probe(what);
        }
    }
}

/// Installs the probe called when a thread marked with [`forbid_on_this_thread`] blocks (tests).
/// The first probe installed stays.
pub fn set_probe(probe: fn(&'static str)) {
    let _ = PROBE.set(probe);
}

/// Marks (or unmarks) the current thread as one that must never block.
pub fn forbid_on_this_thread(forbidden: bool) {
    FORBIDDEN.with(|f| f.set(forbidden));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static SEEN: AtomicUsize = AtomicUsize::new(0);

    fn count(_: &'static str) {
        SEEN.fetch_add(1, Ordering::SeqCst);
    }

    #[test]
    fn the_probe_hears_blocking_work_only_on_forbidden_threads() {
        set_probe(count);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        forbid_on_this_thread(true);
        let before = SEEN.load(Ordering::SeqCst);
        // Through the helper: on the blocking pool, not reported.
        rt.block_on(run(|| {
            note("database");
            Ok(())
        }))
        .unwrap();
        assert_eq!(SEEN.load(Ordering::SeqCst), before);
        // Inline on the forbidden thread: reported.
        rt.block_on(async { note("database") });
        assert_eq!(SEEN.load(Ordering::SeqCst), before + 1);
        forbid_on_this_thread(false);
        note("database");
        assert_eq!(SEEN.load(Ordering::SeqCst), before + 1);
    }
}
