//! The supervisor: a worker that panics is restarted, and nothing it held is lost.
//!
//! [`supervise`] runs the worker's loop in its own task. When the task panics (in a tick, in the
//! classifier, anywhere in the loop), the supervisor:
//! - logs the panic and records it in `worker_state` (`crash_count`, the last crash's time and
//!   message), so `sitetrail status` and the app show it;
//! - gives back the jobs the worker held. A crash is the program's fault, not the website's: jobs
//!   of a batch are released untouched, and the next claims are made one job at a time (as many
//!   as were in flight) so that a website that crashes the worker is found alone. A job that
//!   crashes the worker on its own keeps the attempt its claim counted and is retried after its
//!   retry delay with the crash as its last error, so a website that crashes the worker every
//!   time ends `FAILED` after `max_attempts` crashes instead of crash-looping forever;
//! - restarts the loop after a backoff that doubles from `crash_backoff_first` to
//!   `crash_backoff_max` (and starts over once the worker has run longer than that).
//!
//! A stop request ends the supervision during the backoff too.

use std::any::Any;
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::watch;
use tracing::error;

use super::tick::{fail, log_stale};
use super::{Backoff, Worker};
use crate::classify::{Classifier, ClassifyError, DomainOutcome};
use crate::error::{truncate_chars, Error, Result};
use crate::outbox;
use crate::store::Change;

/// Longest panic message kept (characters).
const MAX_PANIC_CHARS: usize = 300;

/// Runs `worker`'s loop until it ends, restarting it after each panic.
pub(super) async fn supervise(
    worker: Arc<Worker>,
    mut stop: watch::Receiver<bool>,
    until_idle: bool,
) -> Result<()> {
    let config = &worker.config;
    let mut backoff = Backoff::new(config.crash_backoff_first, config.crash_backoff_max);
    loop {
        let started = tokio::time::Instant::now();
        let task = tokio::spawn(worker.clone().run_loop(stop.clone(), until_idle));
        let panic = match task.await {
            Ok(result) => return result,
            Err(e) if e.is_panic() => panic_message(e.into_panic()),
            Err(e) => return Err(Error::Task(e.to_string())),
        };
        error!(panic = %panic, "the worker crashed; giving its jobs back and restarting it");
        recover(&worker, &panic).await;
        if started.elapsed() > config.crash_backoff_max {
            backoff.reset();
        }
        let wait = backoff.next_wait();
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|s| *s) => return Ok(()),
        }
    }
}

/// Runs `worker`'s local pass (built-in categories at once) until `stop`, restarting it after a
/// panic, which is logged and recorded like a crash of the loop. It holds no job, so there is
/// nothing to give back.
pub(super) async fn supervise_local(worker: Arc<Worker>, mut stop: watch::Receiver<bool>) {
    let config = &worker.config;
    let mut backoff = Backoff::new(config.crash_backoff_first, config.crash_backoff_max);
    loop {
        let task = tokio::spawn(worker.local.clone().run(worker.store.clone(), stop.clone()));
        let panic = match task.await {
            Ok(()) => return,
            Err(e) if e.is_panic() => panic_message(e.into_panic()),
            Err(_) => return,
        };
        error!(panic = %panic, "the local classification pass crashed; restarting it");
        let crash = format!("the local classification pass crashed: {panic}");
        if let Err(e) = worker.store.run(move |s| s.record_worker_crash(&crash)).await {
            error!(error = %e, "cannot record the crash");
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff.next_wait()) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// What a panic said, shortened.
fn panic_message(payload: Box<dyn Any + Send>) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned());
    truncate_chars(&text, MAX_PANIC_CHARS)
}

/// Records the crash and gives back the jobs the crashed worker held.
async fn recover(worker: &Arc<Worker>, panic: &str) {
    let held = worker.take_held();
    if held.len() > 1 {
        worker
            .careful_claims
            .store(held.len(), std::sync::atomic::Ordering::Relaxed);
    }
    let config = worker.config.clone();
    let crash = format!("the worker crashed: {panic}");
    let job_message = format!("Sitetrail's worker crashed while classifying this website ({panic})");
    let r = worker
        .store
        .run(move |s| {
            s.record_worker_crash(&crash)?;
            let now = s.now();
            s.write(Some(Change::Outbox), |tx| {
                for job in &held {
                    if held.len() == 1 {
                        fail(tx, job, &job_message, &config, now)?;
                    } else {
                        log_stale(job, outbox::release_job(tx, job)?);
                    }
                }
                Ok(())
            })
        })
        .await;
    if let Err(e) = r {
        error!(error = %e, "cannot record the crash or give the jobs back; they are reclaimed when their lease runs out");
    }
}

/// A classifier that panics when asked about `domain` and otherwise asks `inner`: simulates a
/// crash, for tests of the supervisor (the CLI's hidden `--simulate-panic-on`).
pub struct PanicsOn {
    inner: Arc<dyn Classifier>,
    domain: String,
}

impl PanicsOn {
    /// `inner`, except that a batch holding `domain` panics.
    pub fn new(inner: Arc<dyn Classifier>, domain: impl Into<String>) -> Self {
        PanicsOn {
            inner,
            domain: domain.into(),
        }
    }
}

#[async_trait]
impl Classifier for PanicsOn {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn classify(&self, domains: &[String]) -> std::result::Result<Vec<DomainOutcome>, ClassifyError> {
        if domains.contains(&self.domain) {
            panic!("simulated crash while classifying {}", self.domain);
        }
        self.inner.classify(domains).await
    }

    /// It stands in for a remote provider that crashes: every host is treated as sent out, so
    /// the worker makes the call for everything that is not certain.
    fn asks_remote(&self, _domain: &str) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_messages_are_read_and_shortened() {
        assert_eq!(panic_message(Box::new("boom")), "boom");
        assert_eq!(panic_message(Box::new(String::from("bang"))), "bang");
        assert_eq!(panic_message(Box::new(42)), "a panic without a message");
        let long = panic_message(Box::new("x".repeat(1000)));
        assert_eq!(long.chars().count(), MAX_PANIC_CHARS);
    }
}
