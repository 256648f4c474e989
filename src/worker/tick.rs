//! One tick of the worker: the claim, the call and the settling of one batch.
//!
//! The claim is a short `BEGIN IMMEDIATE` transaction (after the local pass, and only when no
//! pause of the worker's provider holds) that commits at once. The classifier is then called with
//! no transaction open and no pooled connection held, after the request pacer's slot and, if
//! set, the [`ClaimGate`](super::ClaimGate)'s decision; a batch that failed as a whole for a
//! reason one host may cause is narrowed down ([`narrowing`]). Last, every job's outcome is
//! written in one transaction, each write guarded by the version read at claim (completed,
//! failed with backoff, given back or deferred). The jobs claimed and not yet settled are kept
//! for the supervisor, which gives them back after a crash.

use std::sync::atomic::Ordering;

use tokio::sync::watch;
use tracing::{debug, info, warn};

use super::call::{Failed, Stopped};
use super::narrowing::{self, Settle};
use super::state::WorkerState;
use super::{heartbeat, GateDecision, Worker, WorkerConfig};
use crate::classify::{ClassifyError, DomainOutcome};
use crate::error::Result;
use crate::outbox::{self, ClaimPolicy, ClaimedJob, FailOutcome, WriteOutcome};
use crate::store::Change;

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

impl Worker {
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
    #[tracing::instrument(level = "debug", skip_all, fields(provider = self.classifier.name()))]
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

    fn set_held(&self, jobs: Vec<ClaimedJob>) {
        // A poisoned lock only means a panic elsewhere; the list is still a list.
        *self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = jobs;
    }

    pub(super) fn take_held(&self) -> Vec<ClaimedJob> {
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

pub(super) fn fail(
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

pub(super) fn log_stale(job: &ClaimedJob, outcome: WriteOutcome) {
    if outcome == WriteOutcome::Stale {
        warn!(
            job = %job.id,
            domain = %job.domain,
            version = job.version,
            "job changed since it was claimed (reclaimed after its lease ran out, retried or set by the user); result dropped"
        );
    }
}
