//! Settling a claimed job: its outcome written only if the job is still at the version the
//! worker read when it claimed it.

use rusqlite::{named_params, Transaction};

use super::{ClaimedJob, MAX_ERROR_CHARS};
use crate::category::{Category, CategorySource};
use crate::error::{truncate_chars, Result};
use crate::time::Timestamp;

/// What happened to a result written for a claimed job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Written.
    Applied,
    /// The job's version moved on (reclaimed, retried or set by the user): nothing written.
    Stale,
}

/// What happened to a failed job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOutcome {
    /// Back to `PENDING`, to be retried at the given time.
    WillRetry(Timestamp),
    /// `FAILED`: attempts exhausted.
    Failed,
    /// The job's version moved on: nothing written.
    Stale,
}

/// Marks `job` COMPLETED and, if the website has no category yet or only a provisional built-in
/// one, sets it (never over the user's or an AI's); both only if the job is still at the version
/// read at claim. The category's confidence is the source's default (`high` for the user,
/// `medium` otherwise); the worker writes the classifier's own through
/// [`crate::provisional::complete_with_verdict`].
#[tracing::instrument(level = "debug", skip_all, fields(job = %job.id, version = job.version))]
pub fn complete_job(
    tx: &Transaction<'_>,
    job: &ClaimedJob,
    verdict: Option<(Category, CategorySource)>,
    now: Timestamp,
) -> Result<WriteOutcome> {
    let done = tx
        .prepare_cached(
            r#"UPDATE website_category_classification_outbox
               SET status = 'COMPLETED', last_error_message = NULL, next_attempt_at = NULL,
                   lease_until = NULL, worker_id = NULL, version = version + 1
               WHERE id = :id AND version = :version AND status = 'PROCESSING'"#,
        )?
        .execute(named_params! { ":id": job.id, ":version": job.version })?;
    if done == 0 {
        return Ok(WriteOutcome::Stale);
    }
    if let Some((category, source)) = verdict {
        tx.prepare_cached(
            r#"UPDATE website
               SET category = :category, category_source = :source, classified_at = :now,
                   category_confidence = CASE WHEN :source = 'user' THEN 'high' ELSE 'medium' END,
                   category_rule = NULL, version = version + 1
               WHERE id = :id AND (category IS NULL OR category_source = 'builtin')"#,
        )?
        .execute(named_params! {
            ":id": job.website_id, ":category": category, ":source": source, ":now": now,
        })?;
    }
    Ok(WriteOutcome::Applied)
}

/// Records a failed attempt of `job`: back to `PENDING` with `next_attempt_at = retry_at`, or
/// `FAILED` once `attempt_count` has reached `max_attempts`. The message is cut to
/// [`MAX_ERROR_CHARS`]; the caller makes sure it holds no secret.
#[tracing::instrument(level = "debug", skip_all, fields(job = %job.id, attempt = job.attempt_count))]
pub fn fail_job(
    tx: &Transaction<'_>,
    job: &ClaimedJob,
    message: &str,
    max_attempts: u32,
    now: Timestamp,
    retry_at: Timestamp,
) -> Result<FailOutcome> {
    let message = truncate_chars(message, MAX_ERROR_CHARS);
    let max = i64::from(max_attempts.max(1));
    let n = tx
        .prepare_cached(
            r#"UPDATE website_category_classification_outbox
               SET status = CASE WHEN attempt_count >= :max THEN 'FAILED' ELSE 'PENDING' END,
                   attempted_at = :now, next_attempt_at = :retry_at,
                   last_error_message = :message, lease_until = NULL, worker_id = NULL,
                   version = version + 1
               WHERE id = :id AND version = :version AND status = 'PROCESSING'"#,
        )?
        .execute(named_params! {
            ":id": job.id, ":version": job.version, ":max": max,
            ":now": now, ":retry_at": retry_at, ":message": message,
        })?;
    // The version guard means the row still has the attempt_count read at claim.
    Ok(match n {
        0 => FailOutcome::Stale,
        _ if job.attempt_count >= max => FailOutcome::Failed,
        _ => FailOutcome::WillRetry(retry_at),
    })
}

/// Puts a claimed job back without an attempt, due again at `until` (another device is asking
/// the provider about its website: its answer, arriving by sync, settles the job first). A job
/// never attempted keeps its place among the retries (its `attempted_at` is the claim's time).
#[tracing::instrument(level = "debug", skip_all, fields(job = %job.id))]
pub fn defer_job(tx: &Transaction<'_>, job: &ClaimedJob, until: Timestamp) -> Result<WriteOutcome> {
    let n = tx
        .prepare_cached(
            r#"UPDATE website_category_classification_outbox
               SET status = 'PENDING', attempt_count = max(attempt_count - 1, 0),
                   attempted_at = coalesce(:attempted_at, attempted_at), next_attempt_at = :until,
                   lease_until = NULL, worker_id = NULL, version = version + 1
               WHERE id = :id AND version = :version AND status = 'PROCESSING'"#,
        )?
        .execute(named_params! {
            ":id": job.id, ":version": job.version,
            ":attempted_at": job.previous_attempted_at, ":until": until,
        })?;
    Ok(if n == 1 {
        WriteOutcome::Applied
    } else {
        WriteOutcome::Stale
    })
}

/// Gives a claimed job back untouched, as if it had never been claimed: `PENDING`, its previous
/// `attempt_count`, `attempted_at` and `next_attempt_at`. For failures that are not the job's
/// fault (offline, rate limited, bad credentials): they must not burn attempts.
#[tracing::instrument(level = "debug", skip_all, fields(job = %job.id))]
pub fn release_job(tx: &Transaction<'_>, job: &ClaimedJob) -> Result<WriteOutcome> {
    let n = tx
        .prepare_cached(
            r#"UPDATE website_category_classification_outbox
               SET status = 'PENDING', attempt_count = max(attempt_count - 1, 0),
                   attempted_at = :attempted_at, next_attempt_at = :next_attempt_at,
                   lease_until = NULL, worker_id = NULL, version = version + 1
               WHERE id = :id AND version = :version AND status = 'PROCESSING'"#,
        )?
        .execute(named_params! {
            ":id": job.id, ":version": job.version,
            ":attempted_at": job.previous_attempted_at, ":next_attempt_at": job.previous_next_attempt_at,
        })?;
    Ok(if n == 1 {
        WriteOutcome::Applied
    } else {
        WriteOutcome::Stale
    })
}
