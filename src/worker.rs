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

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

use crate::classify::{Classifier, ClassifyError, DomainOutcome};
use crate::error::{Error, Result};
use crate::outbox::{self, ClaimPolicy, ClaimedJob, FailOutcome, WriteOutcome};
use crate::store::{Change, Store};

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
            // A cheap uniform draw in [-1, 1) from the time-ordered id's random bits.
            let r = uuid::Uuid::new_v4().as_u128() as u64 as f64 / u64::MAX as f64;
            (r * 2.0 - 1.0) * self.jitter.min(1.0)
        } else {
            0.0
        };
        Duration::from_secs_f64((capped * (1.0 + spread)).max(0.0))
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
        }
    }
}

impl WorkerConfig {
    /// Checks that the values can work together.
    pub fn validate(&self) -> Result<()> {
        if self.max_attempts == 0 {
            return Err(Error::InvalidConfig("max attempts must be at least 1".into()));
        }
        if self.batch_size == 0 || self.batch_size > 500 {
            return Err(Error::InvalidConfig(
                "batch size must be between 1 and 500".into(),
            ));
        }
        if self.processing_timeout.is_zero() {
            return Err(Error::InvalidConfig(
                "processing timeout must be more than 0".into(),
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
}

impl Worker {
    /// A worker over `store` using `classifier`.
    pub fn new(store: Store, classifier: Arc<dyn Classifier>, config: WorkerConfig) -> Result<Worker> {
        config.validate()?;
        Ok(Worker {
            store,
            classifier,
            config,
        })
    }

    /// Claims, classifies and settles one batch. If `stop` turns true while the classifier is
    /// working and does not finish within the shutdown grace, the jobs are given back untouched.
    pub async fn tick(&self, stop: &mut watch::Receiver<bool>) -> Result<Tick> {
        let policy = ClaimPolicy {
            limit: self.config.batch_size,
            processing_timeout: self.config.processing_timeout,
        };
        let jobs = self
            .store
            .run(move |s| {
                let now = s.now();
                let jobs = s.write(None, |tx| outbox::claim_jobs(tx, now, policy))?;
                if !jobs.is_empty() {
                    s.notify(Change::Outbox);
                }
                Ok(jobs)
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
            self.classify_unless_stopped(&domains, stop).await
        };

        let config = self.config.clone();
        let blocked = self
            .store
            .run(move |s| {
                let now = s.now();
                s.write(Some(Change::Outbox), |tx| {
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
    /// PROCESSING). Database errors are logged and retried after the fixed delay.
    pub async fn run(self, mut stop: watch::Receiver<bool>, until_idle: bool) -> Result<()> {
        let mut blocked_for = Duration::ZERO;
        loop {
            if *stop.borrow() {
                break;
            }
            let mut wait = self.config.fixed_delay;
            match self.tick(&mut stop).await {
                Ok(Tick::Idle) => {
                    blocked_for = Duration::ZERO;
                    if until_idle && !self.store.run(|s| s.with_conn(outbox::has_live_jobs)).await? {
                        break;
                    }
                }
                Ok(Tick::Worked { .. }) => blocked_for = Duration::ZERO,
                Ok(Tick::Blocked(e)) => {
                    blocked_for = match e {
                        ClassifyError::RateLimited {
                            retry_after: Some(d), ..
                        } => d,
                        _ => (blocked_for * 2).clamp(Duration::from_secs(1), Duration::from_secs(300)),
                    };
                    warn!(error = %e, wait_ms = blocked_for.as_millis() as u64, "classifier unavailable; pausing");
                    wait = wait.max(blocked_for);
                }
                Err(e) => warn!(error = %e, "worker tick failed; will try again"),
            }
            if wait.is_zero() {
                // tokio's timer has millisecond resolution: a zero sleep would still cost ~1 ms.
                tokio::task::yield_now().await;
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

    /// Starts the worker on the current tokio runtime.
    pub fn spawn(self) -> WorkerHandle {
        let (tx, rx) = watch::channel(false);
        let join = tokio::spawn(self.run(rx, false));
        WorkerHandle { stop: tx, join }
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
            let r = outbox::complete_job(tx, job, Some((v.category, v.source)), now)?;
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
