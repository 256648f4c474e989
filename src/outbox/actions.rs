//! The user's actions on jobs: retry, classify again, and settle a job whose website the user
//! categorised. Each bumps the job's version, so a worker still holding the job finds its result
//! stale and writes nothing.

use rusqlite::{named_params, OptionalExtension, Transaction};

use super::JobStatus;
use crate::error::{Error, Result};
use crate::ids::{OutboxId, WebsiteId};
use crate::store::{Change, Store};
use crate::time::Timestamp;

/// Puts a FAILED (or waiting PENDING) job back at the front of the queue: `PENDING`,
/// `attempt_count` 0, `attempted_at` NULL. A job in flight or already done is refused.
#[tracing::instrument(level = "debug", skip_all, fields(job = %id))]
pub fn retry_job(tx: &Transaction<'_>, id: OutboxId) -> Result<()> {
    let status: Option<JobStatus> = tx
        .prepare_cached(r#"SELECT status FROM website_category_classification_outbox WHERE id = :id"#)?
        .query_row(named_params! { ":id": id }, |r| r.get("status"))
        .optional()?;
    match status {
        None => {
            return Err(Error::NotFound {
                what: "outbox job",
                key: id.to_string(),
            })
        }
        Some(JobStatus::Failed | JobStatus::Pending) => {}
        Some(other) => {
            return Err(Error::Conflict(format!(
                "outbox job {id} is {}, not FAILED; only failed or waiting jobs can be retried \
                 (to classify a website again, use `sitetrail reclassify <DOMAIN>`)",
                other.as_str()
            )))
        }
    }
    reset_job(tx, id)
}

fn reset_job(tx: &Transaction<'_>, id: OutboxId) -> Result<()> {
    tx.prepare_cached(
        r#"UPDATE website_category_classification_outbox
           SET status = 'PENDING', attempt_count = 0, attempted_at = NULL, next_attempt_at = NULL,
               last_error_message = NULL, lease_until = NULL, worker_id = NULL, version = version + 1
           WHERE id = :id"#,
    )?
    .execute(named_params! { ":id": id })?;
    Ok(())
}

/// Puts every FAILED job back at the front of the queue; returns how many.
#[tracing::instrument(level = "debug", skip_all)]
pub fn retry_all_failed_jobs(tx: &Transaction<'_>) -> Result<usize> {
    let ids: Vec<OutboxId> = tx
        .prepare_cached(
            r#"SELECT id FROM website_category_classification_outbox INDEXED BY outbox_live_idx
               WHERE status <> 'COMPLETED' AND status = 'FAILED'"#,
        )?
        .query_map([], |r| r.get("id"))?
        .collect::<rusqlite::Result<_>>()?;
    for &id in &ids {
        reset_job(tx, id)?;
    }
    Ok(ids.len())
}

/// Resets the job of `website_id` to never-attempted `PENDING` (used when the user sends a website
/// back to be classified again). Bumping the version makes any worker holding it stale.
pub fn requeue_job_for_website(tx: &Transaction<'_>, website_id: WebsiteId, now: Timestamp) -> Result<()> {
    let id: Option<OutboxId> = tx
        .prepare_cached(r#"SELECT id FROM website_category_classification_outbox WHERE website_id = :w"#)?
        .query_row(named_params! { ":w": website_id }, |r| r.get("id"))
        .optional()?;
    match id {
        Some(id) => reset_job(tx, id),
        None => insert_job_in(tx, website_id, now),
    }
}

/// Queues a new website's classification job: never attempted, `PENDING`. The one INSERT of a
/// job, for a website recorded for the first time (`visits`) and one sent back without a job.
pub fn insert_job_in(tx: &Transaction<'_>, website_id: WebsiteId, now: Timestamp) -> Result<()> {
    tx.prepare_cached(
        r#"INSERT INTO website_category_classification_outbox
               (id, website_id, status, attempt_count, attempted_at, created_at, version)
           VALUES (:id, :w, 'PENDING', 0, NULL, :now, 0)"#,
    )?
    .execute(named_params! { ":id": OutboxId::new(), ":w": website_id, ":now": now })?;
    Ok(())
}

/// Marks the job of `website_id` COMPLETED unless it already is (the user set the category).
pub fn settle_job_for_website(tx: &Transaction<'_>, website_id: WebsiteId) -> Result<()> {
    tx.prepare_cached(
        r#"UPDATE website_category_classification_outbox
           SET status = 'COMPLETED', next_attempt_at = NULL, lease_until = NULL, worker_id = NULL,
               version = version + 1
           WHERE website_id = :w AND status <> 'COMPLETED'"#,
    )?
    .execute(named_params! { ":w": website_id })?;
    Ok(())
}

impl Store {
    /// Retries the given jobs, all or none.
    pub fn retry_jobs(&self, ids: &[OutboxId]) -> Result<()> {
        self.write(Some(Change::Outbox), |tx| {
            ids.iter().try_for_each(|&id| retry_job(tx, id))
        })
    }

    /// Retries every FAILED job; returns how many.
    pub fn retry_all_failed(&self) -> Result<usize> {
        self.write(Some(Change::Outbox), retry_all_failed_jobs)
    }
}
