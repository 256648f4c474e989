//! The classification worker: claims jobs from the outbox and classifies them.
//!
//! One tick claims up to `batch_size` jobs in a short `BEGIN IMMEDIATE` transaction that commits
//! at once, calls the classifier with no transaction open and no pooled connection held, then
//! writes each job's outcome guarded by the version read at claim. Between ticks it sleeps a fixed
//! delay, so the outbox is a buffer: a burst of new websites never becomes a burst of calls.
//!
//! The promise is at-least-once processing with an idempotent final write: a worker that dies
//! mid-job leaves the job `PROCESSING`, and another worker reclaims it after the processing
//! timeout; the stale worker's late write is rejected by the version guard.
//!
//! Failures that are not the jobs' fault never cost an attempt: the jobs are given back
//! untouched ([`outbox::release_job`]) and the whole worker pauses, the pause recorded in
//! `worker_state` for every process to see ([`crate::worker_state`]): offline → growing backoff
//! (1 s doubling up to a cap), resumes by itself; rate limited → waits as long as the provider
//! asked; needs the user (bad key, no quota, unknown model) → waits for `sitetrail resume` or a
//! restart with new settings. Failures that are the jobs' fault cost an attempt and send the jobs
//! back with exponential backoff and jitter ([`RetryPolicy`]); a batch that failed as a whole for a
//! transient reason also makes the worker wait before its next call, so an outage cannot burn
//! through the whole queue. `max_requests_per_minute` paces calls on top of the fixed delay.
//!
//! Local first ([`LocalFirst`]): every website gets the built-in category at once, with its
//! confidence, from a local pass that runs at the start of each tick and on its own while the
//! worker waits (on a call, a pause or the fixed delay); only the websites whose built-in answer
//! is not certain (or that the user sent to the AI) wait for the remote provider, which then
//! replaces the provisional category.

mod local;
mod pacing;

pub use local::{LocalFirst, LOCAL_INTERVAL};
pub use pacing::{Backoff, RequestPacer};

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

use crate::classify::{Classifier, ClassifyError, DomainOutcome};
use crate::error::{Error, Result};
use crate::outbox::{self, ClaimPolicy, ClaimedJob, FailOutcome, WriteOutcome};
use crate::store::{Change, Store};
use crate::worker_state::PauseKind;

/// How long a failed job waits before its next attempt: `base * factor^(attempt-1)`, capped at
/// `max`, then spread by up to `±jitter` (a fraction) so that jobs that failed together do not
/// retry together.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Delay after the first failed attempt.
    pub base: Duration,
    /// Growth per further attempt (1.0 = fixed delay).
    pub factor: f64,
    /// Longest delay.
    pub max: Duration,
    /// Random spread, as a fraction of the delay (0.0 = none).
    pub jitter: f64,
}

impl RetryPolicy {
    /// A fixed delay.
    pub fn fixed(delay: Duration) -> Self {
        RetryPolicy {
            base: delay,
            factor: 1.0,
            max: delay,
            jitter: 0.0,
        }
    }

    /// The delay after attempt number `attempt` (1-based) failed.
    pub fn delay(&self, attempt: i64) -> Duration {
        let exp = i32::try_from(attempt.saturating_sub(1).clamp(0, 60)).unwrap_or(60);
        let raw = self.base.as_secs_f64() * self.factor.max(1.0).powi(exp);
        let capped = raw.min(self.max.max(self.base).as_secs_f64());
        let spread = if self.jitter > 0.0 {
            (fastrand::f64() * 2.0 - 1.0) * self.jitter.min(1.0)
        } else {
            0.0
        };
        Duration::from_secs_f64((capped * (1.0 + spread)).max(0.0))
    }

    /// Exponential backoff with ±20% jitter: `base * factor^(attempt-1)`, capped at `max`.
    pub fn exponential(base: Duration, factor: f64, max: Duration) -> Self {
        RetryPolicy {
            base,
            factor,
            max,
            jitter: 0.2,
        }
    }
}

/// How a worker runs.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// Sleep between ticks.
    pub fixed_delay: Duration,
    /// Delay before a failed job is retried.
    pub retry: RetryPolicy,
    /// A job `PROCESSING` for longer than this belongs to a dead worker and is reclaimed.
    pub processing_timeout: Duration,
    /// Attempts before a job is `FAILED`.
    pub max_attempts: u32,
    /// Jobs claimed (and classified in one call) per tick.
    pub batch_size: usize,
    /// On shutdown, how long a classification in flight may take before its jobs are given back.
    pub shutdown_grace: Duration,
    /// Most classifier calls a minute (a token bucket on top of the fixed delay); `None`: no limit.
    pub max_requests_per_minute: Option<u32>,
    /// While the provider is unreachable: first wait, doubled after each failed try...
    pub offline_backoff_first: Duration,
    /// ...up to this. Also used for a rate limit that does not say how long to wait.
    pub offline_backoff_max: Duration,
    /// How often a paused worker checks whether the user resumed it from another process.
    pub pause_poll: Duration,
    /// Longest sleep of an idle worker. It wakes as soon as new work is announced (by this
    /// process or another, see [`crate::changes`]) or a retry falls due; this is the safety net.
    pub idle_poll: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            fixed_delay: Duration::from_secs(1),
            retry: RetryPolicy::fixed(Duration::from_secs(30)),
            processing_timeout: Duration::from_secs(300),
            max_attempts: 5,
            batch_size: 1,
            shutdown_grace: Duration::from_secs(10),
            max_requests_per_minute: None,
            offline_backoff_first: Duration::from_secs(1),
            offline_backoff_max: Duration::from_secs(300),
            pause_poll: Duration::from_secs(1),
            idle_poll: Duration::from_secs(60),
        }
    }
}

impl WorkerConfig {
    /// Checks that the values can work together, within the limits the settings schema gives
    /// each of them ([`crate::settings::SCHEMA`]).
    pub fn validate(&self) -> Result<()> {
        use crate::settings::schema::{limits, number_limits};
        let within = |name: &str, value: u64, what: &str| {
            let (min, max) = limits(name);
            if (min..=max).contains(&value) {
                Ok(())
            } else {
                Err(Error::InvalidConfig(format!(
                    "{what} must be between {min} and {max}, not {value}"
                )))
            }
        };
        within("max_attempts", u64::from(self.max_attempts), "max attempts")?;
        within("batch_size", self.batch_size as u64, "batch size")?;
        let timeout_ms = u64::try_from(self.processing_timeout.as_millis()).unwrap_or(u64::MAX);
        within("processing_timeout_ms", timeout_ms, "processing timeout (ms)")?;
        if let Some(n) = self.max_requests_per_minute {
            within("max_requests_per_minute", u64::from(n), "max requests per minute")?;
        }
        let (min, max) = number_limits("retry_factor");
        if !(self.retry.factor >= min && self.retry.factor <= max) {
            return Err(Error::InvalidConfig(format!(
                "retry factor must be between {min} and {max}"
            )));
        }
        if self.offline_backoff_first.is_zero() || self.pause_poll.is_zero() {
            return Err(Error::InvalidConfig(
                "offline backoff and pause poll must be more than 0".into(),
            ));
        }
        Ok(())
    }
}

/// What one tick did.
#[derive(Debug, PartialEq, Eq)]
pub enum Tick {
    /// Nothing was claimable.
    Idle,
    /// Jobs were claimed and settled (completed, failed or given back).
    Worked {
        /// Jobs claimed.
        claimed: usize,
    },
    /// The classifier could not be used for a reason that is not the jobs' fault; the jobs were
    /// given back and the worker should wait before trying again.
    Blocked(ClassifyError),
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
}

impl Worker {
    /// A worker over `store` using `classifier`.
    pub fn new(store: Store, classifier: Arc<dyn Classifier>, config: WorkerConfig) -> Result<Worker> {
        config.validate()?;
        Ok(Worker {
            store,
            local: Arc::new(LocalFirst::new(classifier.clone())),
            classifier,
            pacer: config.max_requests_per_minute.map(RequestPacer::per_minute),
            config,
            failed_batches: AtomicU32::new(0),
        })
    }

    /// Claims, classifies and settles one batch. If `stop` turns true while the classifier is
    /// working and does not finish within the shutdown grace, the jobs are given back untouched.
    pub async fn tick(&self, stop: &mut watch::Receiver<bool>) -> Result<Tick> {
        let policy = ClaimPolicy {
            limit: self.config.batch_size,
            processing_timeout: self.config.processing_timeout,
        };
        // Built-in categories first, so the claim finds the new websites judged (and answered,
        // where no remote provider needs to see them).
        self.local.catch_up(&self.store, 8).await;
        let local = self.local.clone();
        let jobs = self
            .store
            .run(move |s| {
                let now = s.now();
                s.write(Change::Outbox | Change::Websites, |tx| {
                    local.claim(tx, now, policy)
                })
            })
            .await?;
        if jobs.is_empty() {
            return Ok(Tick::Idle);
        }
        let claimed = jobs.len();
        let (settled, to_classify): (Vec<ClaimedJob>, Vec<ClaimedJob>) =
            jobs.into_iter().partition(|j| j.existing_category.is_some());

        let answer = if to_classify.is_empty() {
            Ok(Vec::new())
        } else {
            let domains: Vec<String> = to_classify.iter().map(|j| j.domain.clone()).collect();
            for d in &domains {
                info!(provider = self.classifier.name(), domain = %d, "classifier call");
            }
            match self.wait_for_slot(stop).await {
                true => self.classify_unless_stopped(&domains, stop).await,
                false => Err(Stopped),
            }
        };
        match &answer {
            Ok(_) => self.failed_batches.store(0, Ordering::Relaxed),
            Err(Failed(ClassifyError::Transient(_))) => {
                self.failed_batches.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {}
        }

        let config = self.config.clone();
        let blocked = self
            .store
            .run(move |s| {
                let now = s.now();
                s.write(Change::Outbox | Change::Websites, |tx| {
                    for job in &settled {
                        debug!(domain = %job.domain, "already categorised; no classifier call");
                        log_stale(job, outbox::complete_job(tx, job, None, now)?);
                    }
                    match answer {
                        Ok(outcomes) if outcomes.len() == to_classify.len() => {
                            for (job, outcome) in to_classify.iter().zip(outcomes) {
                                settle(tx, job, outcome, &config, now)?;
                            }
                            Ok(None)
                        }
                        Ok(outcomes) => {
                            let msg = format!(
                                "the classifier answered {} results for {} domains",
                                outcomes.len(),
                                to_classify.len()
                            );
                            for job in &to_classify {
                                fail(tx, job, &msg, &config, now)?;
                            }
                            Ok(None)
                        }
                        Err(Stopped) => {
                            for job in &to_classify {
                                log_stale(job, outbox::release_job(tx, job)?);
                            }
                            Ok(None)
                        }
                        Err(Failed(e)) if e.consumes_attempt() => {
                            for job in &to_classify {
                                fail(tx, job, &e.to_string(), &config, now)?;
                            }
                            Ok(None)
                        }
                        Err(Failed(e)) => {
                            for job in &to_classify {
                                log_stale(job, outbox::release_job(tx, job)?);
                            }
                            Ok(Some(e))
                        }
                    }
                })
            })
            .await?;
        Ok(match blocked {
            Some(e) => Tick::Blocked(e),
            None => Tick::Worked { claimed },
        })
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
    ) -> std::result::Result<Vec<DomainOutcome>, Interrupted> {
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

    /// Runs ticks until `stop` turns true (or, with `until_idle`, until no job is PENDING or
    /// PROCESSING). Database errors are logged and retried after the fixed delay. A worker that
    /// starts clears a pause left by an earlier run: it may have new settings.
    pub async fn run(self, mut stop: watch::Receiver<bool>, until_idle: bool) -> Result<()> {
        if let Err(e) = self.store.run(|s| s.resume_worker()).await {
            warn!(error = %e, "cannot clear the previous pause state");
        }
        // The local pass goes on by itself while this loop waits on the remote provider.
        let (local_stop, local_stop_rx) = watch::channel(false);
        let local = tokio::spawn(self.local.clone().run(self.store.clone(), local_stop_rx));
        let result = self.run_remote(&mut stop, until_idle).await;
        let _ = local_stop.send(true);
        if let Err(e) = local.await {
            warn!(error = %e, "the local classification pass ended badly");
        }
        result
    }

    async fn run_remote(&self, stop: &mut watch::Receiver<bool>, until_idle: bool) -> Result<()> {
        let mut offline = Backoff::new(self.config.offline_backoff_first, self.config.offline_backoff_max);
        let mut paused = false;
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
            let tick = self.tick(stop).await;
            if !matches!(tick, Ok(Tick::Blocked(_)) | Err(_)) {
                offline.reset();
                if paused {
                    paused = false;
                    info!("classifier available again; worker resumed");
                    self.set_running().await;
                }
            }
            match tick {
                Ok(Tick::Idle) => {
                    if until_idle && !self.store.run(|s| s.with_conn(outbox::has_live_jobs)).await? {
                        break;
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
                        wait_ms = pause_for.map(|d| d.as_millis() as u64),
                        "classifier unavailable; worker paused (no attempt counted)"
                    );
                    paused = true;
                    self.set_paused(kind, &reason, pause_for).await;
                    if self.wait_paused(pause_for, stop).await {
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
        let r = self
            .store
            .run(move |s| s.pause_worker(kind, &reason, pause_for))
            .await;
        if let Err(e) = r {
            warn!(error = %e, "cannot record the pause");
        }
    }

    async fn set_running(&self) {
        if let Err(e) = self.store.run(|s| s.resume_worker()).await {
            warn!(error = %e, "cannot record the resume");
        }
    }

    /// Sleeps `pause_for` (for ever if `None`) or until stopped, checking every `pause_poll`
    /// whether the user resumed the worker (the pause was cleared, maybe by another process).
    /// Returns true if the user resumed it.
    async fn wait_paused(&self, pause_for: Option<Duration>, stop: &mut watch::Receiver<bool>) -> bool {
        let end = pause_for.map(|d| tokio::time::Instant::now() + d);
        loop {
            let now = tokio::time::Instant::now();
            let step = match end {
                Some(end) if end <= now => return false,
                Some(end) => (end - now).min(self.config.pause_poll),
                None => self.config.pause_poll,
            };
            tokio::select! {
                _ = tokio::time::sleep(step) => {}
                _ = stop.wait_for(|s| *s) => return false,
            }
            match self.store.run(|s| s.worker_state()).await {
                Ok(state) if !state.is_paused() => return true,
                Ok(_) => {}
                Err(e) => warn!(error = %e, "cannot read the pause state"),
            }
        }
    }

    /// Starts the worker on the current tokio runtime.
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

enum Interrupted {
    Stopped,
    Failed(ClassifyError),
}
use Interrupted::{Failed, Stopped};

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
            warn!(domain = %job.domain, attempt = job.attempt_count, error = msg, "classification failed; will retry")
        }
        FailOutcome::Failed => {
            warn!(domain = %job.domain, attempts = job.attempt_count, error = msg, "classification FAILED; giving up")
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
            "job changed since it was claimed (reclaimed after a timeout, retried or set by the user); result dropped"
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
