//! The classification outbox: claiming jobs and recording their outcome.
//!
//! A job moves `PENDING → PROCESSING → COMPLETED`, or back to `PENDING` after a failure (not
//! claimed before its retry time; then every claim keeps a slot for the oldest due job, so new
//! work comes first but never starves it), or to `FAILED` after `max_attempts`. Every
//! state change bumps `version` and is guarded by the version the worker read when it claimed the
//! job, so a worker whose job was reclaimed after a timeout cannot write its stale result.
//!
//! A claimed job carries a lease (`lease_until`, `worker_id`): the worker renews it while its
//! classifier call is in flight ([`renew_leases`]), and only a job whose lease has expired is
//! reclaimed, so a slow call is never taken from a live worker. A reclaim counts as an attempt; a
//! job whose lease expired at `max_attempts` ends `FAILED` ("its workers kept dying"), so
//! `PROCESSING` is never a final state and attempts never exceed `max_attempts`.
//!
//! Times stored in the future stay bounded when the clock moves backwards: a retry time further
//! ahead than the longest retry delay, or a lease further ahead than the lease length (each plus
//! [`CLOCK_SLACK`]), can only come from a clock that was ahead, and is treated as due.
//!
//! Invariants: a claim is one short `BEGIN IMMEDIATE` transaction that commits at once; the claim
//! queries are served by the partial index `outbox_live_idx` (COMPLETED jobs are not in it), so their
//! cost does not grow with the number of COMPLETED jobs (a test checks `EXPLAIN QUERY PLAN`).

mod actions;
mod claim;
mod lease;
mod queries;
mod settle;

pub use actions::{
    insert_job_in, requeue_job_for_website, retry_all_failed_jobs, retry_job, settle_job_for_website,
};
pub use claim::{claim_jobs, ClaimPolicy, ClaimedJob, CLAIM_QUERIES};
pub use lease::{renew_leases, RENEW_SQL};
pub use queries::{
    get_job, get_next_due_at, get_queue_status, has_live_jobs, list_failed_jobs, FailedJob, JobView,
    QueueStatus,
};
pub use settle::{complete_job, defer_job, fail_job, release_job, FailOutcome, WriteOutcome};

use std::time::Duration;

/// Longest `last_error_message` stored (characters).
pub const MAX_ERROR_CHARS: usize = 1_000;

/// The state of an outbox job, stored as TEXT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStatus {
    /// Waiting to be claimed.
    Pending,
    /// Claimed by a worker.
    Processing,
    /// Done: the website has a category.
    Completed,
    /// Gave up after the maximum attempts; waits for the user to retry.
    Failed,
}

crate::names::named!(JobStatus {
    Pending = "PENDING",
    Processing = "PROCESSING",
    Completed = "COMPLETED",
    Failed = "FAILED",
});

crate::sql_enum::sql_text!(JobStatus, "job status", as_str, parse);

/// How far a stored time may lie beyond what its policy allows before it counts as written by a
/// clock that has since moved back: room for processes whose clocks differ a little, and for a
/// "now" read a moment before another worker's write.
pub const CLOCK_SLACK: Duration = Duration::from_secs(60);
