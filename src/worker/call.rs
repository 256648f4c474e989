//! One classifier call of the worker: after the request pacer's slot, given up (its jobs given
//! back) when the worker stops and the shutdown grace runs out. Used by a tick ([`super::tick`])
//! and by the narrowing of a failed batch ([`super::narrowing`]), which sit above it.

use tokio::sync::watch;
use tracing::{info, warn};

use super::Worker;
use crate::classify::{ClassifyError, DomainOutcome};

/// Why a call has no result.
pub(super) enum Interrupted {
    Stopped,
    Failed(ClassifyError),
}
pub(super) use Interrupted::{Failed, Stopped};

/// A call's result, or why there is none.
pub(super) type CallResult = std::result::Result<Vec<DomainOutcome>, Interrupted>;

impl Worker {
    /// One classifier call for `domains`, after the request pacer's slot: one outcome per domain,
    /// or why there is none (an answer with another number of outcomes is a transient failure).
    pub(super) async fn call(&self, domains: &[String], stop: &mut watch::Receiver<bool>) -> CallResult {
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
}
