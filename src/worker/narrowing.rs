//! Narrowing a failed batch down to the hosts that fail on their own.
//!
//! A batch sent in one call can fail as a whole because of one host in it: the provider refuses
//! the request (a 400, a refusal, a content filter: [`ClassifyError::Permanent`]) or answers
//! something unusable (not JSON, no results, cut off by `finish_reason=length`, the wrong number
//! of results: [`ClassifyError::Transient`]). Failing every job of the batch would let one host
//! push innocent jobs to `FAILED`. So such a batch is split in halves and each half is asked
//! again, down to single hosts where needed; a job loses an attempt only when it fails on its
//! own (or in a part that cannot be narrowed further), and every other job completes.
//!
//! How far to go depends on the evidence:
//! - a half that fails while its other half was answered is narrowed further (the failure
//!   depends on which hosts are asked);
//! - when both halves fail, a refusal ([`ClassifyError::Permanent`]) is narrowed further in each
//!   half (two hosts may be refused), but a transient failure is not: a provider that fails
//!   every request (5xx, timeouts) is failing, not a host, and the jobs lose the attempt as a
//!   whole-batch failure always did.
//!
//! Cost: at most 2·⌈log2 n⌉ extra calls for each host that fails on its own, never more than
//! `n + 2·⌈log2 n⌉` extra calls for a batch of `n` (then what is left fails as it is), and 2
//! extra calls for a batch the provider fails as a whole for a transient reason. Every call
//! waits for the request pacer like any other. A failure that is not the jobs' fault (offline,
//! rate limited, needs the user) stops the narrowing: the jobs not yet settled are given back
//! untouched and the worker pauses.

use std::ops::Range;

use tokio::sync::watch;
use tracing::info;

use super::call::{Failed, Stopped};
use super::Worker;
use crate::classify::{ClassifyError, DomainOutcome};

/// What to do with one job of the batch.
pub(super) enum Settle {
    /// The classifier answered for it (a category, or why it failed on its own).
    Outcome(DomainOutcome),
    /// It failed (costs an attempt) with this message.
    Fail(String),
    /// Give it back untouched.
    Release,
}

/// The outcome of narrowing.
pub(super) struct Narrowed {
    /// One per job, in the batch's order.
    pub settles: Vec<Settle>,
    /// Why the worker must pause, if narrowing met such a failure.
    pub blocked: Option<ClassifyError>,
    /// True if any call was answered.
    pub answered: bool,
}

/// True if a batch of `n` that failed with `e` is worth narrowing down.
pub(super) fn may_be_one_host(e: &ClassifyError, n: usize) -> bool {
    n > 1 && matches!(e, ClassifyError::Permanent(_) | ClassifyError::Transient(_))
}

/// Most extra calls narrowing one batch of `n` may make.
pub(super) fn call_budget(n: usize) -> usize {
    n + 2 * ceil_log2(n)
}

fn ceil_log2(n: usize) -> usize {
    (usize::BITS - n.saturating_sub(1).leading_zeros()) as usize
}

/// Narrows the batch `domains`, which failed as a whole with `first`, down to the hosts that fail
/// on their own.
pub(super) async fn narrow(
    worker: &Worker,
    domains: &[String],
    first: ClassifyError,
    stop: &mut watch::Receiver<bool>,
) -> Narrowed {
    let n = domains.len();
    info!(hosts = n, error = %first, "the batch failed as a whole; asking again in smaller batches");
    let mut settles: Vec<Option<Settle>> = (0..n).map(|_| None).collect();
    let mut budget = call_budget(n);
    let mut answered = false;
    let mut blocked = None;
    let mut todo: Vec<(Range<usize>, ClassifyError)> = vec![(0..n, first)];
    'narrowing: while let Some((range, error)) = todo.pop() {
        if range.len() == 1 || budget < 2 {
            let msg = error.to_string();
            for i in range {
                settles[i] = Some(Settle::Fail(msg.clone()));
            }
            continue;
        }
        let mid = range.start + range.len() / 2;
        let mut failed: Vec<(Range<usize>, ClassifyError)> = Vec::new();
        for half in [range.start..mid, mid..range.end] {
            budget -= 1;
            match worker.call(&domains[half.clone()], stop).await {
                Ok(outcomes) => {
                    answered = true;
                    for (i, outcome) in half.zip(outcomes) {
                        settles[i] = Some(Settle::Outcome(outcome));
                    }
                }
                Err(Failed(e)) if e.consumes_attempt() => failed.push((half, e)),
                Err(Failed(e)) => {
                    blocked = Some(e);
                    break 'narrowing;
                }
                Err(Stopped) => break 'narrowing,
            }
        }
        let both_failed = failed.len() == 2;
        for (half, e) in failed {
            if both_failed && !matches!(e, ClassifyError::Permanent(_)) {
                let msg = e.to_string();
                for i in half {
                    settles[i] = Some(Settle::Fail(msg.clone()));
                }
            } else {
                todo.push((half, e));
            }
        }
    }
    Narrowed {
        settles: settles
            .into_iter()
            .map(|s| s.unwrap_or(Settle::Release))
            .collect(),
        blocked,
        answered,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_covers_one_bad_host_at_any_batch_size() {
        for n in 2..=500 {
            assert!(call_budget(n) >= 2 * ceil_log2(n), "{n}");
        }
        assert_eq!(ceil_log2(1), 0);
        assert_eq!(ceil_log2(2), 1);
        assert_eq!(ceil_log2(20), 5);
        assert_eq!(ceil_log2(32), 5);
        assert_eq!(call_budget(20), 30);
    }

    #[test]
    fn only_failures_one_host_may_cause_are_narrowed() {
        assert!(may_be_one_host(&ClassifyError::Permanent("400".into()), 2));
        assert!(may_be_one_host(&ClassifyError::Transient("not JSON".into()), 20));
        assert!(!may_be_one_host(&ClassifyError::Permanent("400".into()), 1));
        assert!(!may_be_one_host(&ClassifyError::Offline("down".into()), 20));
        assert!(!may_be_one_host(&ClassifyError::NeedsUser("key".into()), 20));
    }
}
