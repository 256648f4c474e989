//! The classification worker: claims jobs from the outbox and classifies them.
//!
//! One tick claims up to `batch_size` jobs in a short `BEGIN IMMEDIATE` transaction that commits
//! at once, calls the classifier with no transaction open and no pooled connection held, then
//! writes each job's outcome guarded by the version read at claim. Between ticks it sleeps a fixed
//! delay, so the outbox is a buffer: a burst of new websites never becomes a burst of calls.
//!
//! The promise is at-least-once processing with an idempotent final write. A claimed job carries
//! a lease the worker renews while its call is in flight ([`heartbeat`]), so a slow call is never
//! taken away from a live worker; a worker that dies stops renewing, and another reclaims the job
//! once the lease (`processing_timeout`) has run out. A stale worker's late write is rejected by
//! the version guard.
//!
//! Failures that are not the jobs' fault never cost an attempt: the jobs are given back
//! untouched ([`outbox::release_job`]) and the whole worker pauses, the pause recorded in
//! `worker_state` under the provider's name for every worker to respect ([`state`]):
//! offline → growing backoff (1 s doubling up to a cap), resumes by itself; rate limited → waits as
//! long as the provider asked; needs the user (bad key, no quota, unknown model) → waits for
//! `sitetrail resume` or new settings. A pause recorded by another worker for the same provider
//! holds this one too, also when it starts. Failures that are the jobs' fault cost an attempt and
//! send the jobs back with exponential backoff and jitter ([`RetryPolicy`]); a whole batch that
//! fails for a reason one host may cause is narrowed down first ([`narrowing`]), so only the jobs
//! that fail on their own lose the attempt. A batch that failed as a whole for a transient reason
//! also makes the worker wait before its next call, so an outage cannot burn through the whole
//! queue. `max_requests_per_minute` paces every call, the narrowing ones too.
//!
//! [`Worker::run`] runs the loop under a [`supervisor`]: a panic is logged and recorded for
//! `status` and the app, the jobs the worker held are given back, and the loop restarts with
//! backoff.
//!
//! Local first ([`LocalFirst`]): every website gets the built-in category at once, with its
//! confidence, from a local pass that runs at the start of each tick and on its own while the
//! worker waits (on a call, a pause or the fixed delay); only the websites whose built-in answer
//! is not certain (or that the user sent to the AI) wait for the remote provider, which then
//! replaces the provisional category.
//!
//! This file owns the worker and its loop: ticks, the wait between them (the fixed delay, or
//! sleeping until work is announced or due), the stop. One tick (claim, call, settle) is in
//! `tick.rs`; recording, waiting out and lifting a pause in `pause.rs`.

mod call;
mod config;
mod gate;
mod heartbeat;
mod local;
mod narrowing;
mod pacing;
mod pause;
pub mod state;
mod supervisor;
mod tick;

pub use config::{Bounds, RetryPolicy, WorkerConfig};
pub use gate::{ClaimGate, GateDecision};
pub use local::{LocalFirst, LOCAL_INTERVAL};
pub use pacing::{Backoff, RequestPacer};
pub use supervisor::PanicsOn;
pub use tick::Tick;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

use crate::classify::Classifier;
use crate::error::{Error, Result};
use crate::ids::WorkerId;
use crate::outbox::{self, ClaimedJob};
use crate::store::{Change, Store};

/// A classification worker.
pub struct Worker {
    store: Store,
    classifier: Arc<dyn Classifier>,
    config: WorkerConfig,
    pacer: Option<RequestPacer>,
    /// Batches in a row that failed as a whole for a transient reason (0 after any answer).
    failed_batches: AtomicU32,
    /// Built-in categories at once, and the local decisions of the claim.
    local: Arc<LocalFirst>,
    /// This worker, as recorded on the jobs it holds.
    id: WorkerId,
    /// The provider, as pauses are recorded.
    scope: String,
    /// The jobs claimed and not yet settled: what the supervisor gives back after a crash.
    held: Mutex<Vec<ClaimedJob>>,
    /// Claims still to make one job at a time (after a crash with several jobs in flight, so a
    /// website that crashes the worker is found alone).
    careful_claims: AtomicUsize,
    /// True once this worker waited on a pause of its provider: its next answered call lifts it.
    saw_pause: AtomicBool,
    /// Shares remote calls with the user's other devices (sync), if set.
    gate: Option<Arc<dyn ClaimGate>>,
}

impl Worker {
    /// A worker over `store` using `classifier`.
    pub fn new(store: Store, classifier: Arc<dyn Classifier>, config: WorkerConfig) -> Result<Worker> {
        config.validate()?;
        let scope = pause::scope_of(&config, classifier.as_ref());
        Ok(Worker {
            store,
            local: Arc::new(LocalFirst::new(classifier.clone())),
            classifier,
            pacer: config.max_requests_per_minute.map(RequestPacer::per_minute),
            config,
            failed_batches: AtomicU32::new(0),
            id: WorkerId::new(),
            scope,
            held: Mutex::new(Vec::new()),
            careful_claims: AtomicUsize::new(0),
            saw_pause: AtomicBool::new(false),
            gate: None,
        })
    }

    /// This worker, asking `gate` before each remote call (one call per website for all of a
    /// person's devices: see [`ClaimGate`]).
    #[must_use]
    pub fn with_gate(mut self, gate: Arc<dyn ClaimGate>) -> Worker {
        self.gate = Some(gate);
        self
    }

    /// This worker's id, as recorded in the `worker_id` of the jobs it holds.
    pub fn id(&self) -> WorkerId {
        self.id
    }

    /// PROCESSING), under a supervisor that restarts the loop after a crash. Database errors are
    /// logged and retried after the fixed delay. Starting clears no pause: a pause recorded for
    /// this provider by an earlier run or another process is waited out.
    pub async fn run(self, stop: watch::Receiver<bool>, until_idle: bool) -> Result<()> {
        let worker = Arc::new(self);
        // The local pass goes on by itself (supervised too) while this loop waits on the remote
        // provider.
        let (local_stop, local_stop_rx) = watch::channel(false);
        let local = tokio::spawn(supervisor::supervise_local(worker.clone(), local_stop_rx));
        let result = supervisor::supervise(worker, stop, until_idle).await;
        let _ = local_stop.send(true);
        if let Err(e) = local.await {
            warn!(error = %e, "the local classification pass ended badly");
        }
        result
    }

    /// The loop [`Worker::run`] supervises.
    async fn run_loop(self: Arc<Self>, mut stop: watch::Receiver<bool>, until_idle: bool) -> Result<()> {
        let mut offline = Backoff::new(self.config.offline_backoff_first, self.config.offline_backoff_max);
        // New visits and jobs are announced here, from this process and others: an idle worker
        // sleeps until then instead of claiming on a timer.
        let mut announced = self.store.subscribe();
        loop {
            if *stop.borrow() {
                break;
            }
            let mut wait = self.config.fixed_delay;
            let mut idle = false;
            // What was announced before this claim is seen by it.
            while !matches!(
                announced.try_recv(),
                Err(TryRecvError::Empty | TryRecvError::Closed)
            ) {}
            let tick = self.tick(&mut stop).await;
            if matches!(tick, Ok(Tick::Worked { answered: true, .. })) {
                offline.reset();
                self.lift_pause_if_waited().await;
            }
            match tick {
                Ok(Tick::Idle) => {
                    if until_idle {
                        // A database error is logged and the question asked again after the
                        // wait: it never ends the worker (the store may be busy a moment).
                        match self.store.run(|s| s.with_conn(outbox::has_live_jobs)).await {
                            Ok(false) => break,
                            Ok(true) => {}
                            Err(e) => warn!(error = %e, "cannot tell whether jobs are left; will look again"),
                        }
                    }
                    idle = true;
                    wait = self.idle_wait().await;
                }
                Ok(Tick::Worked { .. }) => {
                    let failed = self.failed_batches.load(Ordering::Relaxed);
                    if failed > 0 {
                        // The provider failed a whole batch: give it time before the next call.
                        wait = wait.max(self.config.retry.delay(i64::from(failed)));
                    }
                }
                Ok(Tick::Paused(state)) => {
                    if self.wait_out_recorded(&state, &mut stop).await {
                        offline.reset();
                    }
                    continue;
                }
                Ok(Tick::Blocked(e)) => {
                    if self.pause_for(e, &mut offline, &mut stop).await {
                        offline.reset();
                    }
                    continue;
                }
                Err(e) => warn!(error = %e, "worker tick failed; will try again"),
            }
            if wait.is_zero() {
                // tokio's timer has millisecond resolution: a zero sleep would still cost ~1 ms.
                tokio::task::yield_now().await;
                continue;
            }
            if idle {
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = wait_for_work(&mut announced) => debug!("new work announced; worker woken"),
                    _ = stop.wait_for(|s| *s) => break,
                }
                continue;
            }
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.wait_for(|s| *s) => break,
            }
        }
        info!("worker stopped");
        Ok(())
    }

    /// How long an idle worker may sleep: until the next retry or timeout falls due, at most
    /// `idle_poll`, at least the fixed delay.
    async fn idle_wait(&self) -> Duration {
        let timeout = self.config.processing_timeout;
        let due = self
            .store
            .run(move |s| {
                let now = s.now();
                Ok(s.with_conn(|c| outbox::get_next_due_at(c, timeout))?
                    .map(|t| Duration::from_millis(u64::try_from(t.millis_since(now)).unwrap_or(0))))
            })
            .await;
        let until_due = match due {
            Ok(Some(d)) => d,
            Ok(None) => self.config.idle_poll,
            Err(e) => {
                warn!(error = %e, "cannot read when the next job is due");
                self.config.fixed_delay
            }
        };
        // Never a busy loop: a job "due" in the past that the claim could not take (a clock that
        // went back) is looked at again after a short pause.
        until_due
            .min(self.config.idle_poll)
            .max(self.config.fixed_delay)
            .max(Duration::from_millis(10))
    }

    /// Starts the worker (supervised) on the current tokio runtime.
    pub fn spawn(self) -> WorkerHandle {
        let (tx, rx) = watch::channel(false);
        let join = tokio::spawn(self.run(rx, false));
        WorkerHandle { stop: tx, join }
    }
}

/// Returns once new work may have been announced: visits, websites or jobs changed (or
/// notifications were missed). Never returns if the store is gone.
async fn wait_for_work(rx: &mut broadcast::Receiver<Change>) {
    loop {
        match rx.recv().await {
            Ok(Change::Visits | Change::Websites | Change::Outbox) | Err(RecvError::Lagged(_)) => return,
            Ok(Change::Worker | Change::Limits) => {}
            Err(RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
}

/// A running worker.
pub struct WorkerHandle {
    stop: watch::Sender<bool>,
    join: JoinHandle<Result<()>>,
}

impl WorkerHandle {
    /// Stops claiming, lets the batch in flight finish (or gives it back after the grace period)
    /// and waits for the worker to end.
    pub async fn shutdown(self) -> Result<()> {
        let _ = self.stop.send(true);
        self.join.await.map_err(|e| Error::Task(e.to_string()))?
    }
}
