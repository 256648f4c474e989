//! Syncing on its own, for the daemon and the app: soon after a local change (debounced), every
//! `interval` for the other devices' changes, with exponential backoff while the hub cannot be
//! reached or refuses. Never on a UI thread: it is a task on the caller's runtime, and its
//! database work goes through the blocking pool.

use std::path::PathBuf;
use std::time::Duration;

use std::sync::Arc;

use tokio::sync::{watch, Notify};

use super::engine;
use crate::blocking;
use crate::error::ErrorKind;
use crate::store::Store;

/// How the background sync is paced.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    /// Between two syncs for the other devices' changes.
    pub interval: Duration,
    /// After a local change, how long to wait for more before pushing.
    pub debounce: Duration,
    /// The longest wait after failures.
    pub max_backoff: Duration,
}

impl Default for Pace {
    fn default() -> Self {
        Pace {
            interval: Duration::from_secs(120),
            debounce: Duration::from_secs(2),
            max_backoff: Duration::from_secs(600),
        }
    }
}

/// What the last background sync did, for a status display.
#[derive(Clone, Debug, Default)]
pub struct Last {
    /// The last report, if the last try worked.
    pub report: Option<engine::SyncReport>,
    /// The last error, if it failed.
    pub error: Option<String>,
}

/// Runs until `stop` turns true. `wake` asks for a sync now (the worker's claims: another
/// device's answer is to be pulled, or this one's pushed). `on_sync` hears every outcome.
pub async fn run(
    store: Store,
    key_dir: PathBuf,
    pace: Pace,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
    mut on_sync: impl FnMut(&Last) + Send,
) {
    let mut changes = store.subscribe();
    let mut failures: u32 = 0;
    let mut next_at = tokio::time::Instant::now();
    loop {
        let local_change = tokio::select! {
            _ = stop.changed() => break,
            () = tokio::time::sleep_until(next_at) => false,
            () = wake.notified(), if failures == 0 => false,
            c = changes.recv() => c.is_ok() || matches!(c, Err(tokio::sync::broadcast::error::RecvError::Lagged(_))),
        };
        if *stop.borrow() {
            break;
        }
        if local_change {
            // Let a burst of changes settle; then sync only if some are this device's.
            tokio::select! {
                _ = stop.changed() => break,
                () = tokio::time::sleep(pace.debounce) => {}
            }
            let st = store.clone();
            let waiting = blocking::run(move || {
                st.with_conn(|c| Ok(super::local::is_linked(c)? && engine::pending(c)? > 0))
            })
            .await
            .unwrap_or(false);
            if !waiting || failures > 0 {
                // Nothing of ours to push (a pull's own changes), or backing off: keep the timer.
                continue;
            }
        }
        let st = store.clone();
        let linked = blocking::run(move || st.with_conn(super::local::is_linked))
            .await
            .unwrap_or(false);
        if !linked {
            next_at = tokio::time::Instant::now() + pace.interval;
            continue;
        }
        let outcome = engine::sync_now(&store, &key_dir).await;
        let last = match outcome {
            Ok(r) => {
                failures = 0;
                next_at = tokio::time::Instant::now() + pace.interval;
                tracing::debug!(
                    pushed = r.pushed,
                    pulled = r.pulled,
                    pending = r.pending,
                    "synced"
                );
                Last {
                    report: Some(r),
                    error: None,
                }
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                let base = if e.kind() == ErrorKind::NeedsUser {
                    pace.max_backoff
                } else {
                    Duration::from_secs(5).saturating_mul(1u32 << failures.min(8))
                };
                let wait = base.min(pace.max_backoff);
                next_at = tokio::time::Instant::now() + wait;
                tracing::warn!(error = %e, retry_in_s = wait.as_secs(), "sync failed; will try again");
                Last {
                    report: None,
                    error: Some(e.to_string()),
                }
            }
        };
        on_sync(&last);
    }
}
