//! Syncing on its own, for the daemon and the app: soon after a local change (debounced), as soon
//! as another device has pushed (a long-poll on the hub, [`engine::Waiter`]), and every
//! `interval` in any case, with exponential backoff while the hub cannot be reached or refuses.
//! Never on a UI thread: it is a task on the caller's runtime, and its database work goes through
//! the blocking pool.

use std::path::PathBuf;
use std::time::Duration;

use std::sync::Arc;

use tokio::sync::{watch, Notify};

use super::engine;
use crate::blocking;
use crate::error::ErrorKind;
use crate::store::Store;

/// A long-poll's wait: under the hub's cap (`MAX_WAIT_MS`) and the idle timeouts of proxies.
pub const LONG_POLL: Duration = Duration::from_secs(25);

/// The wait after the `failures`-th failure in a row: 10 s, 20 s, 40 s … up to `max`.
fn backoff(failures: u32, max: Duration) -> Duration {
    Duration::from_secs(5)
        .saturating_mul(1u32 << failures.min(8))
        .min(max)
}

/// Whether this device is linked to an account (false if the database cannot say).
async fn linked(store: &Store) -> bool {
    let st = store.clone();
    blocking::run(move || st.with_conn(crate::sync_log::local::is_linked))
        .await
        .unwrap_or(false)
}

/// How the background sync is paced.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    /// Between two syncs for the other devices' changes.
    pub interval: Duration,
    /// After a local change, how long to wait for more before pushing.
    pub debounce: Duration,
    /// The longest wait after failures.
    pub max_backoff: Duration,
    /// How long one long-poll waits on the hub for another device's records (None: no
    /// long-poll, the other devices' changes arrive every `interval`).
    pub long_poll: Option<Duration>,
}

impl Default for Pace {
    fn default() -> Self {
        Pace {
            interval: Duration::from_secs(120),
            debounce: Duration::from_secs(2),
            max_backoff: Duration::from_secs(600),
            long_poll: Some(LONG_POLL),
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
    let (synced, synced_rx) = watch::channel(0u64);
    let watcher = pace.long_poll.map(|wait| {
        tokio::spawn(watch_others(
            store.clone(),
            key_dir.clone(),
            wait,
            pace,
            wake.clone(),
            stop.clone(),
            synced_rx,
        ))
    });
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
            // Let a burst of changes settle; then sync only if some are this device's. A wake
            // (another device pushed, or the worker asks) ends the wait: that sync pushes too.
            let woken = tokio::select! {
                _ = stop.changed() => break,
                () = tokio::time::sleep(pace.debounce) => false,
                () = wake.notified(), if failures == 0 => true,
            };
            let st = store.clone();
            let waiting = blocking::run(move || {
                st.with_conn(|c| Ok(crate::sync_log::local::is_linked(c)? && engine::pending(c)? > 0))
            })
            .await
            .unwrap_or(false);
            if !woken && (!waiting || failures > 0) {
                // Nothing of ours to push (a pull's own changes), or backing off: keep the timer.
                continue;
            }
        }
        if !linked(&store).await {
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
                let wait = if e.kind() == ErrorKind::NeedsUser {
                    pace.max_backoff
                } else {
                    backoff(failures, pace.max_backoff)
                };
                next_at = tokio::time::Instant::now() + wait;
                tracing::warn!(error = %e, retry_in_s = wait.as_secs(), "sync failed; will try again");
                Last {
                    report: None,
                    error: Some(e.to_string()),
                }
            }
        };
        synced.send_modify(|n| *n = n.wrapping_add(1));
        on_sync(&last);
    }
    if let Some(watcher) = watcher {
        watcher.abort();
    }
}

/// The long-poll loop: waits on the hub for another device's records and wakes the sync loop
/// when there are some, then waits for that sync before asking again. Backs off like the sync
/// loop while the hub cannot be reached; a hub without the long-poll (an older one) answers
/// an error each time, so it is asked again only after the longest backoff.
async fn watch_others(
    store: Store,
    key_dir: PathBuf,
    wait: Duration,
    pace: Pace,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
    mut synced: watch::Receiver<u64>,
) {
    let mut failures: u32 = 0;
    let mut last_seen: Option<u64> = None;
    let mut waiter = engine::Waiter::new();
    loop {
        let outcome = tokio::select! {
            _ = stop.changed() => return,
            r = waiter.wait(&store, &key_dir, wait) => r,
        };
        let pause = match outcome {
            // Not linked: look again at the periodic sync's pace.
            Ok(None) => Some(pace.interval.max(wait)),
            Ok(Some(w)) if w.more => {
                failures = 0;
                // The same count twice means the last sync could not apply what is there
                // (it reports why): ask again at the pace of the periodic sync.
                let stuck = last_seen == Some(w.seen);
                last_seen = Some(w.seen);
                synced.borrow_and_update();
                wake.notify_one();
                tokio::select! {
                    _ = stop.changed() => return,
                    _ = synced.changed() => {}
                    () = tokio::time::sleep(pace.max_backoff) => {}
                }
                stuck.then_some(pace.interval)
            }
            Ok(Some(_)) => {
                failures = 0;
                None
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                let pause = if e.kind() == ErrorKind::ProviderFailed {
                    pace.max_backoff
                } else {
                    backoff(failures, pace.max_backoff)
                };
                tracing::debug!(error = %e, retry_in_s = pause.as_secs(), "waiting on the hub failed");
                Some(pause)
            }
        };
        if let Some(pause) = pause {
            tokio::select! {
                _ = stop.changed() => return,
                () = tokio::time::sleep(pause) => {}
            }
        }
    }
}
