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

mod config;
mod gate;
mod heartbeat;
mod local;
mod narrowing;
mod pacing;
pub mod state;
mod supervisor;

pub use config::{RetryPolicy, WorkerConfig};
pub use gate::{ClaimGate, GateDecision};
pub use local::{LocalFirst, LOCAL_INTERVAL};
pub use pacing::{Backoff, RequestPacer};
pub use supervisor::PanicsOn;

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

use crate::classify::{Classifier, ClassifyError, DomainOutcome};
use crate::error::{Error, Result};
use crate::ids::WorkerId;
use crate::outbox::{self, ClaimPolicy, ClaimedJob, FailOutcome, WriteOutcome};
use crate::store::{Change, Store};
use crate::worker::state::{PauseKind, WorkerState, MAX_PAUSE};
use narrowing::Settle;

/// What one tick did.
#[derive(Debug, PartialEq, Eq)]
pub enum Tick {
    /// Nothing was claimable.
    Idle,
    /// Jobs were claimed and settled (completed, failed or given back).
    Worked {
        /// Jobs claimed.
        claimed: usize,
        /// True if the classifier answered at least one call.
        answered: bool,
    },
    /// The classifier could not be used for a reason that is not the jobs' fault; the jobs were
    /// given back and the worker should wait before trying again.
    Blocked(ClassifyError),
    /// A pause recorded for this worker's provider (by this or another worker) holds: nothing was
    /// claimed.
    Paused(WorkerState),
}

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

/// Why a call has no result.
enum Interrupted {
    Stopped,
    Failed(ClassifyError),
}
use Interrupted::{Failed, Stopped};

/// A call's result, or why there is none.
type CallResult = std::result::Result<Vec<DomainOutcome>, Interrupted>;

impl Worker {
    /// A worker over `store` using `classifier`.
    pub fn new(store: Store, classifier: Arc<dyn Classifier>, config: WorkerConfig) -> Result<Worker> {
        config.validate()?;
        let scope = config
            .pause_scope
            .clone()
            .unwrap_or_else(|| classifier.name().to_owned());
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

    fn claim_policy(&self) -> ClaimPolicy {
        // One job at a time while isolating a crash (counted down by the claims that took a job).
        let careful = self.careful_claims.load(Ordering::Relaxed) > 0;
        ClaimPolicy {
            limit: if careful { 1 } else { self.config.batch_size },
            processing_timeout: self.config.processing_timeout,
            max_attempts: self.config.max_attempts,
            longest_retry_delay: self.config.retry.longest(),
            worker: Some(self.id),
        }
    }

    /// Claims, classifies and settles one batch, unless a pause of this worker's provider holds
    /// (then nothing is claimed). The jobs' leases are renewed while the batch is worked on. If
    /// `stop` turns true while the classifier is working and does not finish within the shutdown
    /// grace, the jobs are given back untouched.
    pub async fn tick(&self, stop: &mut watch::Receiver<bool>) -> Result<Tick> {
        let policy = self.claim_policy();
        let scope = self.scope.clone();
        // Built-in categories first, so the claim finds the new websites judged (and answered,
        // where no remote provider needs to see them).
        self.local.catch_up(&self.store, 8).await;
        let local = self.local.clone();
        let claimed = self
            .store
            .run(move |s| {
                let now = s.now();
                let state = s.worker_state()?;
                if state.holds(&scope, now) {
                    return Ok(Err(state));
                }
                // "Now" is read once the write lock is held: a lease another worker renewed while
                // this one waited for the lock must not look like one from a clock that was ahead.
                Ok(Ok(s.write(Change::Outbox | Change::Websites, |tx| {
                    local.claim(tx, s.now(), policy)
                })?))
            })
            .await?;
        let jobs = match claimed {
            Err(state) => return Ok(Tick::Paused(state)),
            Ok(jobs) if jobs.is_empty() => return Ok(Tick::Idle),
            Ok(jobs) => jobs,
        };
        let _ = self
            .careful_claims
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        self.set_held(jobs.clone());
        let claimed = jobs.len();
        let lease = self.config.processing_timeout;
        let worked =
            heartbeat::with_heartbeat(&self.store, &jobs, lease, self.work(jobs.clone(), stop)).await;
        if worked.is_err() {
            // The outcome could not be written: give the jobs back rather than leave them to
            // their lease.
            self.release_held().await;
        }
        self.set_held(Vec::new());
        let (blocked, answered) = worked?;
        Ok(match blocked {
            Some(e) => Tick::Blocked(e),
            None => Tick::Worked { claimed, answered },
        })
    }

    /// Classifies `jobs` (narrowing a failed batch down) and writes every outcome. Returns the
    /// error that blocks the worker, if any, and whether the classifier answered.
    async fn work(
        &self,
        jobs: Vec<ClaimedJob>,
        stop: &mut watch::Receiver<bool>,
    ) -> Result<(Option<ClassifyError>, bool)> {
        let (settled, to_classify): (Vec<ClaimedJob>, Vec<ClaimedJob>) =
            jobs.into_iter().partition(|j| j.existing_category.is_some());
        // Another device may be asking about some of these domains, or have answered already.
        let mut deferred = Vec::new();
        let to_classify = match &self.gate {
            Some(gate) if !to_classify.is_empty() => {
                let domains: Vec<String> = to_classify.iter().map(|j| j.domain.clone()).collect();
                let decisions = gate.decide(&domains).await;
                let mut ask = Vec::with_capacity(to_classify.len());
                for (i, job) in to_classify.into_iter().enumerate() {
                    match decisions.get(i).copied().unwrap_or(GateDecision::Ask) {
                        GateDecision::Ask => ask.push(job),
                        GateDecision::Wait(d) => {
                            debug!(domain = %job.domain, wait_ms = d.as_millis(), "another device is asking; waiting for its answer");
                            deferred.push((job, d));
                        }
                    }
                }
                ask
            }
            _ => to_classify,
        };
        let domains: Vec<String> = to_classify.iter().map(|j| j.domain.clone()).collect();
        let (settles, blocked, answered) = if domains.is_empty() {
            (Vec::new(), None, false)
        } else {
            match self.call(&domains, stop).await {
                Ok(outcomes) => (outcomes.into_iter().map(Settle::Outcome).collect(), None, true),
                Err(Stopped) => (domains.iter().map(|_| Settle::Release).collect(), None, false),
                Err(Failed(e)) if narrowing::may_be_one_host(&e, domains.len()) => {
                    let n = narrowing::narrow(self, &domains, e, stop).await;
                    (n.settles, n.blocked, n.answered)
                }
                Err(Failed(e)) if e.consumes_attempt() => {
                    let msg = e.to_string();
                    (
                        domains.iter().map(|_| Settle::Fail(msg.clone())).collect(),
                        None,
                        false,
                    )
                }
                Err(Failed(e)) => (domains.iter().map(|_| Settle::Release).collect(), Some(e), false),
            }
        };
        if answered {
            self.failed_batches.store(0, Ordering::Relaxed);
        } else if settles.iter().any(|s| matches!(s, Settle::Fail(_))) {
            self.failed_batches.fetch_add(1, Ordering::Relaxed);
        }
        let gate_settle = self.gate.as_ref().filter(|_| !domains.is_empty()).map(|g| {
            let (mut yes, mut no) = (Vec::new(), Vec::new());
            for (d, s) in domains.iter().zip(&settles) {
                match s {
                    Settle::Outcome(_) => yes.push(d.clone()),
                    Settle::Fail(_) | Settle::Release => no.push(d.clone()),
                }
            }
            (g.clone(), yes, no)
        });

        let config = self.config.clone();
        self.store
            .run(move |s| {
                let now = s.now();
                s.write(Change::Outbox | Change::Websites, |tx| {
                    for job in &settled {
                        debug!(domain = %job.domain, "already categorised; no classifier call");
                        log_stale(job, outbox::complete_job(tx, job, None, now)?);
                    }
                    for (job, settle) in to_classify.iter().zip(settles) {
                        match settle {
                            Settle::Outcome(outcome) => self::settle(tx, job, outcome, &config, now)?,
                            Settle::Fail(msg) => fail(tx, job, &msg, &config, now)?,
                            Settle::Release => log_stale(job, outbox::release_job(tx, job)?),
                        }
                    }
                    for (job, wait) in &deferred {
                        log_stale(job, outbox::defer_job(tx, job, now.plus(*wait))?);
                    }
                    Ok(())
                })
            })
            .await?;
        // The answers are written (and queued for the other devices): the claims are done.
        if let Some((gate, yes, no)) = gate_settle {
            gate.settle(&yes, &no).await;
        }
        Ok((blocked, answered))
    }

    /// One classifier call for `domains`, after the request pacer's slot: one outcome per domain,
    /// or why there is none (an answer with another number of outcomes is a transient failure).
    async fn call(&self, domains: &[String], stop: &mut watch::Receiver<bool>) -> CallResult {
        for d in domains {
            info!(provider = self.classifier.name(), domain = %d, "classifier call");
        }
        if !self.wait_for_slot(stop).await {
            return Err(Stopped);
        }
        let outcomes = self.classify_unless_stopped(domains, stop).await?;
        if outcomes.len() != domains.len() {
            return Err(Failed(ClassifyError::Transient(format!(
                "the classifier answered {} results for {} domains",
                outcomes.len(),
                domains.len()
            ))));
        }
        Ok(outcomes)
    }

    /// Waits for the request pacer's next slot; false if `stop` turned true meanwhile.
    async fn wait_for_slot(&self, stop: &mut watch::Receiver<bool>) -> bool {
        let Some(pacer) = &self.pacer else {
            return true;
        };
        let wait = pacer.reserve();
        if wait.is_zero() {
            return true;
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => true,
            _ = stop.wait_for(|s| *s) => false,
        }
    }

    async fn classify_unless_stopped(
        &self,
        domains: &[String],
        stop: &mut watch::Receiver<bool>,
    ) -> CallResult {
        let call = self.classifier.classify(domains);
        tokio::pin!(call);
        let grace = self.config.shutdown_grace;
        let stopping = async {
            // Wait for the stop signal, then for the grace period.
            let _ = stop.wait_for(|s| *s).await;
            tokio::time::sleep(grace).await;
        };
        tokio::select! {
            r = &mut call => r.map_err(Failed),
            _ = stopping => {
                warn!("shutdown grace over with a classification in flight; giving its jobs back");
                Err(Stopped)
            }
        }
    }

    fn set_held(&self, jobs: Vec<ClaimedJob>) {
        // A poisoned lock only means a panic elsewhere; the list is still a list.
        *self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = jobs;
    }

    fn take_held(&self) -> Vec<ClaimedJob> {
        std::mem::take(
            &mut *self
                .held
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Gives every held job back untouched (best effort: a job left is reclaimed after its lease).
    async fn release_held(&self) {
        let held = self.take_held();
        if held.is_empty() {
            return;
        }
        let r = self
            .store
            .run(move |s| {
                s.write(Some(Change::Outbox), |tx| {
                    held.iter()
                        .try_for_each(|job| outbox::release_job(tx, job).map(drop))
                })
            })
            .await;
        if let Err(e) = r {
            warn!(error = %e, "cannot give the claimed jobs back; they are reclaimed when their lease runs out");
        }
    }

    /// Runs ticks until `stop` turns true (or, with `until_idle`, until no job is PENDING or
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
                if self.saw_pause.swap(false, Ordering::Relaxed) {
                    self.set_running().await;
                }
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
                    if self.wait_paused(pause_for, &mut stop).await {
                        offline.reset();
                    }
                    continue;
                }
                Ok(Tick::Blocked(e)) => {
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
                    if self.wait_paused(pause_for, &mut stop).await {
                        offline.reset();
                        info!("resumed by the user");
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
            match self.store.run(super::store::Store::worker_state).await {
                Ok(state) if !state.is_paused() => return true,
                Ok(_) => {}
                Err(e) => warn!(error = %e, "cannot read the pause state"),
            }
        }
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
            Ok(Change::Worker) => {}
            Err(RecvError::Closed) => std::future::pending::<()>().await,
        }
    }
}

fn settle(
    tx: &rusqlite::Transaction<'_>,
    job: &ClaimedJob,
    outcome: DomainOutcome,
    config: &WorkerConfig,
    now: crate::time::Timestamp,
) -> Result<()> {
    match outcome {
        Ok(v) => {
            let r = crate::provisional::complete_with_verdict(tx, job, &v, now)?;
            if r == WriteOutcome::Applied {
                info!(domain = %job.domain, category = %v.category, source = v.source.as_str(), "classified");
            }
            log_stale(job, r);
        }
        Err(msg) => fail(tx, job, &msg, config, now)?,
    }
    Ok(())
}

fn fail(
    tx: &rusqlite::Transaction<'_>,
    job: &ClaimedJob,
    msg: &str,
    config: &WorkerConfig,
    now: crate::time::Timestamp,
) -> Result<()> {
    let retry_at = now.plus(config.retry.delay(job.attempt_count));
    match outbox::fail_job(tx, job, msg, config.max_attempts, now, retry_at)? {
        FailOutcome::WillRetry(_) => {
            warn!(domain = %job.domain, attempt = job.attempt_count, error = msg, "classification failed; will retry");
        }
        FailOutcome::Failed => {
            warn!(domain = %job.domain, attempts = job.attempt_count, error = msg, "classification FAILED; giving up");
        }
        FailOutcome::Stale => log_stale(job, WriteOutcome::Stale),
    }
    Ok(())
}

fn log_stale(job: &ClaimedJob, outcome: WriteOutcome) {
    if outcome == WriteOutcome::Stale {
        warn!(
            job = %job.id,
            domain = %job.domain,
            version = job.version,
            "job changed since it was claimed (reclaimed after its lease ran out, retried or set by the user); result dropped"
        );
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delays_grow_exponentially_with_jitter_up_to_the_cap() {
        let p = RetryPolicy::exponential(Duration::from_secs(1), 2.0, Duration::from_secs(10));
        for (attempt, nominal) in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (9, 10.0)] {
            let spread: Vec<f64> = (0..200).map(|_| p.delay(attempt).as_secs_f64()).collect();
            let (lo, hi) = spread
                .iter()
                .fold((f64::MAX, 0.0f64), |(l, h), d| (l.min(*d), h.max(*d)));
            assert!(
                lo >= nominal * 0.8 - 1e-9 && hi <= nominal * 1.2 + 1e-9,
                "attempt {attempt}: {lo}..{hi}"
            );
            assert!(
                hi - lo > nominal * 0.1,
                "attempt {attempt}: jitter spreads the delays ({lo}..{hi})"
            );
        }
        assert_eq!(
            RetryPolicy::fixed(Duration::from_millis(5)).delay(7),
            Duration::from_millis(5)
        );
    }

    #[test]
    fn config_rejects_values_that_cannot_work() {
        let ok = WorkerConfig::default();
        assert!(ok.validate().is_ok());
        assert!(WorkerConfig {
            max_requests_per_minute: Some(0),
            ..ok.clone()
        }
        .validate()
        .is_err());
        let slow = RetryPolicy::exponential(Duration::from_secs(1), 0.5, Duration::from_secs(1));
        assert!(WorkerConfig { retry: slow, ..ok }.validate().is_err());
    }
}
