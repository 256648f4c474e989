//! Reading the queue: counts by state, the failed jobs, one job, and when the next one falls due.
//! Every query is served by the partial index `outbox_live_idx`, never by the COMPLETED history.

use std::time::Duration;

use rusqlite::{named_params, Connection, OptionalExtension};

use super::JobStatus;
use crate::category::{Category, CategorySource};
use crate::error::{Error, Result};
use crate::ids::{OutboxId, WebsiteId};
use crate::store::Store;
use crate::time::Timestamp;

/// Job counts by state, as `sitetrail status` prints them.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct QueueStatus {
    /// Jobs waiting.
    pub pending: i64,
    /// Jobs claimed by a worker.
    pub processing: i64,
    /// Jobs done.
    pub completed: i64,
    /// Jobs given up on.
    pub failed: i64,
    /// Age of the oldest PENDING job, in milliseconds.
    pub oldest_pending_age_ms: Option<i64>,
}

/// A FAILED job, as `sitetrail failed` lists it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FailedJob {
    /// The outbox row.
    pub id: OutboxId,
    /// Its website.
    pub website_id: WebsiteId,
    /// The website's domain.
    pub domain: String,
    /// The domain as people read it (Unicode for an internationalised name).
    pub display: String,
    /// Attempts made.
    pub attempt_count: i64,
    /// When the last attempt ended.
    pub attempted_at: Option<Timestamp>,
    /// Why the last attempt failed.
    pub last_error_message: Option<String>,
    /// The category the website has meanwhile (a provisional built-in one, usually), if any.
    pub category: Option<Category>,
    /// Who set it.
    pub category_source: Option<CategorySource>,
    /// How sure it is.
    pub category_confidence: Option<crate::confidence::Confidence>,
}

/// One outbox job with its website, for progress displays.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct JobView {
    /// The outbox row.
    pub id: OutboxId,
    /// Its website's domain.
    pub domain: String,
    /// The job's state.
    pub status: JobStatus,
    /// Attempts made.
    pub attempt_count: i64,
    /// Last attempt.
    pub attempted_at: Option<Timestamp>,
    /// Last error.
    pub last_error_message: Option<String>,
    /// The website's category, once it has one.
    pub category: Option<Category>,
}

/// Counts jobs by state.
pub fn get_queue_status(conn: &Connection, now: Timestamp) -> Result<QueueStatus> {
    let mut status = QueueStatus::default();
    let mut stmt = conn.prepare_cached(
        r#"SELECT status, count(*) AS n FROM website_category_classification_outbox INDEXED BY outbox_live_idx
           WHERE status <> 'COMPLETED'
           GROUP BY status"#,
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let n: i64 = row.get("n")?;
        match row.get::<_, JobStatus>("status")? {
            JobStatus::Pending => status.pending = n,
            JobStatus::Processing => status.processing = n,
            JobStatus::Completed => {}
            JobStatus::Failed => status.failed = n,
        }
    }
    let oldest: Option<Timestamp> = conn
        .prepare_cached(
            r#"SELECT min(created_at) AS t FROM website_category_classification_outbox INDEXED BY outbox_live_idx
               WHERE status <> 'COMPLETED' AND status = 'PENDING'"#,
        )?
        .query_row([], |r| r.get("t"))?;
    // COMPLETED jobs are not in the live index; the total is a count of the smallest B-tree.
    let total: i64 = conn
        .prepare_cached(r#"SELECT count(*) FROM website_category_classification_outbox"#)?
        .query_row([], |r| r.get(0))?;
    status.completed = total - status.pending - status.processing - status.failed;
    status.oldest_pending_age_ms = oldest.map(|t| now.millis_since(t).max(0));
    Ok(status)
}

/// Every FAILED job, most recently attempted first.
pub fn list_failed_jobs(conn: &Connection) -> Result<Vec<FailedJob>> {
    let mut stmt = conn.prepare_cached(
        r#"SELECT o.id, o.website_id, w.domain, o.attempt_count, o.attempted_at, o.last_error_message,
                  w.category, w.category_source, w.category_confidence
           FROM website_category_classification_outbox o INDEXED BY outbox_live_idx
           JOIN website w ON w.id = o.website_id
           WHERE o.status <> 'COMPLETED' AND o.status = 'FAILED'
           ORDER BY o.attempted_at DESC"#,
    )?;
    let rows = stmt.query_map([], |r| {
        let domain: String = r.get("domain")?;
        Ok(FailedJob {
            id: r.get("id")?,
            website_id: r.get("website_id")?,
            display: crate::domain::unicode_form(&domain).into_owned(),
            domain,
            attempt_count: r.get("attempt_count")?,
            attempted_at: r.get("attempted_at")?,
            last_error_message: r.get("last_error_message")?,
            category: r.get("category")?,
            category_source: r.get("category_source")?,
            category_confidence: r.get("category_confidence")?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// One job with its website.
pub fn get_job(conn: &Connection, id: OutboxId) -> Result<JobView> {
    conn.prepare_cached(
        r#"SELECT o.id, w.domain, o.status, o.attempt_count, o.attempted_at, o.last_error_message, w.category
           FROM website_category_classification_outbox o JOIN website w ON w.id = o.website_id
           WHERE o.id = :id"#,
    )?
    .query_row(named_params! { ":id": id }, |r| {
        Ok(JobView {
            id: r.get("id")?,
            domain: r.get("domain")?,
            status: r.get("status")?,
            attempt_count: r.get("attempt_count")?,
            attempted_at: r.get("attempted_at")?,
            last_error_message: r.get("last_error_message")?,
            category: r.get("category")?,
        })
    })
    .optional()?
    .ok_or_else(|| Error::NotFound {
        what: "outbox job",
        key: id.to_string(),
    })
}

/// When the next job that is not claimable now becomes claimable: the earliest retry time of a
/// PENDING job that failed before, or the earliest time the lease of a PROCESSING job runs out. `None` if
/// no job waits on time. Served by `outbox_live_idx` (it walks the waiting retries, never the
/// COMPLETED history). An idle worker sleeps until then, or until new work is announced.
pub fn get_next_due_at(conn: &Connection, processing_timeout: Duration) -> Result<Option<Timestamp>> {
    let retry: Option<Timestamp> = conn
        .prepare_cached(
            r#"SELECT min(coalesce(next_attempt_at, attempted_at)) AS t
               FROM website_category_classification_outbox INDEXED BY outbox_live_idx
               WHERE status <> 'COMPLETED' AND status = 'PENDING' AND attempted_at IS NOT NULL"#,
        )?
        .query_row([], |r| r.get("t"))?;
    // A claimed job falls due when its lease runs out (one claimed before leases existed,
    // `processing_timeout` after its attempt).
    let timeout_us = i64::try_from(processing_timeout.as_micros()).unwrap_or(i64::MAX);
    let timeout: Option<Timestamp> = conn
        .prepare_cached(
            r#"SELECT min(coalesce(lease_until, attempted_at + :timeout)) AS t
               FROM website_category_classification_outbox INDEXED BY outbox_live_idx
               WHERE status <> 'COMPLETED' AND status = 'PROCESSING'"#,
        )?
        .query_row(named_params! { ":timeout": timeout_us }, |r| r.get("t"))?;
    Ok(match (retry, timeout) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    })
}

/// True while any job is PENDING or PROCESSING.
pub fn has_live_jobs(conn: &Connection) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            r#"SELECT EXISTS (SELECT 1 FROM website_category_classification_outbox INDEXED BY outbox_live_idx
                              WHERE status <> 'COMPLETED' AND status IN ('PENDING', 'PROCESSING'))"#,
        )?
        .query_row([], |r| r.get(0))?)
}

impl Store {
    /// Job counts by state.
    pub fn queue_status(&self) -> Result<QueueStatus> {
        let now = self.now();
        self.with_conn(|c| get_queue_status(c, now))
    }

    /// Every FAILED job.
    pub fn failed_jobs(&self) -> Result<Vec<FailedJob>> {
        self.with_conn(list_failed_jobs)
    }

    /// One job with its website.
    pub fn job(&self, id: OutboxId) -> Result<JobView> {
        self.with_conn(|c| get_job(c, id))
    }
}
