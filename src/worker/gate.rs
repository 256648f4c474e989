//! Sharing remote classification with the user's other devices: before the worker asks a remote
//! provider about some domains, a [`ClaimGate`] (sync's hub claims, `crate::sync::claims`) says,
//! per domain, whether this device asks now or waits for another device's answer.
//!
//! The gate never costs an attempt: a domain that waits goes back to the queue as it was, due
//! again after the wait ([`crate::outbox::defer_job`]); a gate that cannot decide (the hub is
//! unreachable, the device is not linked) answers [`GateDecision::Ask`] for every domain, so the
//! local outbox keeps its promises unchanged.

use std::time::Duration;

/// What the gate says about one domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateDecision {
    /// Ask the provider now (this device holds the claim, or nobody coordinates).
    Ask,
    /// Another device is asking, or has answered: try again after this long (its answer
    /// normally arrives by sync first and settles the job).
    Wait(Duration),
}

/// Coordinates remote calls across devices.
#[async_trait::async_trait]
pub trait ClaimGate: Send + Sync {
    /// One decision per domain, in order.
    async fn decide(&self, domains: &[String]) -> Vec<GateDecision>;
    /// After the call: the domains asked that got an answer (their claims are completed) and
    /// those that did not (their claims are released at once for another device).
    async fn settle(&self, answered: &[String], unanswered: &[String]);
}
