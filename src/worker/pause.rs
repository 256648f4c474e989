//! The worker's side of a pause: recording it, waiting it out and lifting it.
//!
//! A failure that is not the jobs' fault ([`Tick::Blocked`](super::Tick::Blocked)) pauses the
//! worker: offline → the growing offline backoff; rate limited → as long as the provider asked
//! (else the backoff); needs the user → until `sitetrail resume` or new settings. The pause is
//! recorded in `worker_state` ([`super::state`]) under the worker's pause scope (the provider's
//! name, or `pause_scope`), so every worker using that provider respects it; a pause found at
//! claim ([`Tick::Paused`](super::Tick::Paused), recorded by this or another worker) is waited
//! out the same way. While it waits, the worker looks whether the pause was lifted (by the user,
//! maybe from another process, or by another worker's successful call) whenever the worker state
//! is announced to have changed, and at the latest every `pause_poll`. A worker that waited on a
//! pause lifts its provider's pause after its next answered call, and never touches another
//! provider's.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::broadcast::{self, error::RecvError};
use tokio::sync::watch;
use tracing::{info, warn};

use super::state::{PauseKind, WorkerState, MAX_PAUSE};
use super::{Backoff, Worker, WorkerConfig};
use crate::classify::{Classifier, ClassifyError};
use crate::store::{Change, Store};

/// The provider's name as this worker's pauses are recorded: `pause_scope` if set, else the
/// classifier's name.
pub(super) fn scope_of(config: &WorkerConfig, classifier: &dyn Classifier) -> String {
    config
        .pause_scope
        .clone()
        .unwrap_or_else(|| classifier.name().to_owned())
}

/// Returns once the worker state (a pause) was announced to have changed, or notifications were
/// missed. Never returns if the store is gone.
async fn worker_state_changed(rx: &mut broadcast::Receiver<Change>) {
    loop {
        match rx.recv().await {
            Ok(Change::Worker) | Err(RecvError::Lagged(_)) => return,
            Ok(_) => {}
            Err(RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
}

impl Worker {
    /// After an answered call: lifts the pause of this worker's provider if this worker waited
    /// on one.
    pub(super) async fn lift_pause_if_waited(&self) {
        if self.saw_pause.swap(false, Ordering::Relaxed) {
            self.set_running().await;
        }
    }

    /// Waits out `state`, a pause of this worker's provider found at claim (recorded by this or
    /// another worker), or until stopped. Returns true if the pause was lifted.
    pub(super) async fn wait_out_recorded(
        &self,
        state: &WorkerState,
        stop: &mut watch::Receiver<bool>,
    ) -> bool {
        self.saw_pause.store(true, Ordering::Relaxed);
        let now = self.store.now();
        let pause_for = state.paused_until.map(|until| {
            let left = until.as_micros().saturating_sub(now.as_micros());
            Duration::from_micros(u64::try_from(left).unwrap_or(0)).min(MAX_PAUSE)
        });
        info!(
            reason = state.paused_reason.as_deref().unwrap_or_default(),
            wait_ms = pause_for.map(crate::time::millis),
            "the provider is paused (recorded by this or another worker); waiting"
        );
        self.wait_paused(pause_for, stop).await
    }

    /// Records the pause that `e` (a failure that is not the jobs' fault) calls for, then waits
    /// it out or until stopped. `offline` gives the wait when the provider gave none. Returns
    /// true if the pause was lifted before its end.
    pub(super) async fn pause_for(
        &self,
        e: ClassifyError,
        offline: &mut Backoff,
        stop: &mut watch::Receiver<bool>,
    ) -> bool {
        let (kind, reason, pause_for) = match e {
            ClassifyError::RateLimited { retry_after, message } => {
                let d = retry_after.unwrap_or_else(|| offline.next_wait());
                (PauseKind::RateLimited, message, Some(d))
            }
            ClassifyError::NeedsUser(m) => (PauseKind::NeedsUser, m, None),
            other => (PauseKind::Offline, other.to_string(), Some(offline.next_wait())),
        };
        warn!(
            reason = %reason,
            wait_ms = pause_for.map(crate::time::millis),
            "classifier unavailable; worker paused (no attempt counted)"
        );
        self.saw_pause.store(true, Ordering::Relaxed);
        self.set_paused(kind, &reason, pause_for).await;
        let lifted = self.wait_paused(pause_for, stop).await;
        if lifted {
            info!("resumed by the user");
        }
        lifted
    }

    async fn set_paused(&self, kind: PauseKind, reason: &str, pause_for: Option<Duration>) {
        let reason = reason.to_owned();
        let scope = self.scope.clone();
        let pause_for = pause_for.map(|d| d.min(MAX_PAUSE));
        let r = self
            .store
            .run(move |s| s.pause_provider(Some(&scope), kind, &reason, pause_for))
            .await;
        if let Err(e) = r {
            warn!(error = %e, "cannot record the pause");
        }
    }

    /// Lifts the pause of this worker's provider after a successful call (another provider's
    /// pause is left alone).
    async fn set_running(&self) {
        let scope = self.scope.clone();
        match self.store.run(move |s| s.resume_provider(Some(&scope))).await {
            Ok(Some(_)) => info!("classifier available again; pause lifted"),
            Ok(None) => {}
            Err(e) => warn!(error = %e, "cannot record the resume"),
        }
    }

    /// Sleeps `pause_for` (for ever if `None`) or until stopped, looking whether the pause was
    /// lifted (by the user, maybe from another process, or by another worker's successful call)
    /// whenever the worker state is announced to have changed, and at the latest every
    /// `pause_poll`. Returns true if it was.
    async fn wait_paused(&self, pause_for: Option<Duration>, stop: &mut watch::Receiver<bool>) -> bool {
        // Any classifier may ask for any wait: at most the longest pause a worker respects, and
        // never an overflowing instant.
        let end = pause_for.map(|d| tokio::time::Instant::now() + d.min(MAX_PAUSE));
        let mut announced = self.store.subscribe();
        loop {
            let now = tokio::time::Instant::now();
            let step = match end {
                Some(end) if end <= now => return false,
                Some(end) => (end - now).min(self.config.pause_poll),
                None => self.config.pause_poll,
            };
            tokio::select! {
                _ = tokio::time::sleep(step) => {}
                _ = worker_state_changed(&mut announced) => {}
                _ = stop.wait_for(|s| *s) => return false,
            }
            match self.store.run(Store::worker_state).await {
                Ok(state) if !state.is_paused() => return true,
                Ok(_) => {}
                Err(e) => warn!(error = %e, "cannot read the pause state"),
            }
        }
    }
}
