//! The classification outbox: claiming jobs and recording their outcome.
//!
//! A job moves `PENDING → PROCESSING → COMPLETED`, or back to `PENDING` after a failure (behind
//! work never attempted, not before its retry time), or to `FAILED` after `max_attempts`. Every
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

mod lease;

pub use lease::{renew_leases, RENEW_SQL};

use std::time::Duration;

use rusqlite::{named_params, Connection, OptionalExtension, Transaction};

use crate::category::{Category, CategorySource};
use crate::error::{truncate_chars, Error, Result};
use crate::ids::{OutboxId, WebsiteId, WorkerId};
use crate::store::{Change, Store};
use crate::time::Timestamp;

/// Longest `last_error_message` stored (characters).
pub const MAX_ERROR_CHARS: usize = 1_000;

/// The state of an outbox job, stored as TEXT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
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

impl JobStatus {
    /// The stored value.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Pending => "PENDING",
            JobStatus::Processing => "PROCESSING",
            JobStatus::Completed => "COMPLETED",
            JobStatus::Failed => "FAILED",
        }
    }

    /// Parses the stored value.
    pub fn parse(s: &str) -> Option<JobStatus> {
        match s {
            "PENDING" => Some(JobStatus::Pending),
            "PROCESSING" => Some(JobStatus::Processing),
            "COMPLETED" => Some(JobStatus::Completed),
            "FAILED" => Some(JobStatus::Failed),
            _ => None,
        }
    }
}

crate::sql_enum::sql_text!(JobStatus, "job status", as_str, parse);

/// Which jobs a claim may take, and what the claim records.
#[derive(Clone, Copy, Debug)]
pub struct ClaimPolicy {
    /// Most jobs claimed at once.
    pub limit: usize,
    /// The lease: a claimed job belongs to its worker until this long after the claim or its last
    /// renewal; then its worker is taken to be dead and the job is reclaimed.
    pub processing_timeout: Duration,
    /// Attempts before a job is `FAILED`: a job due again (or whose lease expired) that has used
    /// them all ends `FAILED` instead of being claimed.
    pub max_attempts: u32,
    /// The longest delay the retry policy gives. A retry time further ahead than this was set by
    /// a clock that has since moved back: the job is due.
    pub longest_retry_delay: Duration,
    /// The claiming worker, recorded in `worker_id`.
    pub worker: Option<WorkerId>,
}

impl Default for ClaimPolicy {
    fn default() -> Self {
        ClaimPolicy {
            limit: 1,
            processing_timeout: Duration::from_secs(300),
            max_attempts: 5,
            longest_retry_delay: Duration::from_secs(86_400),
            worker: None,
        }
    }
}

/// A job a worker has claimed, with what it read at claim time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimedJob {
    /// The outbox row.
    pub id: OutboxId,
    /// Its website.
    pub website_id: WebsiteId,
    /// The website's domain.
    pub domain: String,
    /// The website's final category at claim time (set by the user, say): then no classifier
    /// call. A provisional built-in category does not count (see [`crate::provisional`]).
    pub existing_category: Option<Category>,
    /// `attempt_count` after the claim (1 on the first attempt).
    pub attempt_count: i64,
    /// `version` after the claim; every later write is guarded by it.
    pub version: i64,
    /// `attempted_at` before the claim, restored if the attempt is given back.
    pub previous_attempted_at: Option<Timestamp>,
    /// `next_attempt_at` before the claim, restored if the attempt is given back.
    pub previous_next_attempt_at: Option<Timestamp>,
}

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

/// The claim's first query: never-attempted PENDING jobs, oldest first.
const CLAIM_FRESH_SQL: &str = r#"SELECT id FROM website_category_classification_outbox
    INDEXED BY outbox_live_idx
    WHERE status <> 'COMPLETED' AND status = 'PENDING' AND attempted_at IS NULL
    ORDER BY created_at"#;

/// The claim's second query: attempted PENDING jobs whose retry time has come (or lies beyond
/// `:horizon`, now plus the longest retry delay and [`CLOCK_SLACK`]: set by a clock that moved
/// back), oldest attempt
/// first. Jobs not yet due are stepped over while walking the index; they are the live set of
/// failed jobs, never the COMPLETED history.
const CLAIM_RETRY_SQL: &str = r#"SELECT id, attempted_at, attempt_count FROM website_category_classification_outbox
    INDEXED BY outbox_live_idx
    WHERE status <> 'COMPLETED' AND status = 'PENDING' AND attempted_at IS NOT NULL
      AND (coalesce(next_attempt_at, attempted_at) <= :now
           OR coalesce(next_attempt_at, attempted_at) > :horizon)
    ORDER BY attempted_at"#;

/// The claim's third query: PROCESSING jobs whose lease has expired (their worker died), or lies
/// beyond `:lease_horizon` (now plus the lease and [`CLOCK_SLACK`]: set by a clock that moved
/// back). A job claimed
/// before leases existed has none: it expires `:lease` after its `attempted_at`. Only the live
/// PROCESSING jobs (a few per worker) are walked.
const CLAIM_EXPIRED_SQL: &str = r#"SELECT id, attempted_at, attempt_count FROM website_category_classification_outbox
    INDEXED BY outbox_live_idx
    WHERE status <> 'COMPLETED' AND status = 'PROCESSING'
      AND CASE WHEN lease_until IS NOT NULL THEN lease_until <= :now OR lease_until > :lease_horizon
               ELSE attempted_at <= :legacy_cutoff OR attempted_at > :lease_horizon END
    ORDER BY attempted_at"#;

/// How far a stored time may lie beyond what its policy allows before it counts as written by a
/// clock that has since moved back: room for processes whose clocks differ a little, and for a
/// "now" read a moment before another worker's write.
pub const CLOCK_SLACK: Duration = Duration::from_secs(60);

/// The claim's read queries, for plan checks (`EXPLAIN QUERY PLAN` must show a search of
/// `outbox_live_idx`, no table scan and no sort). `INDEXED BY` pins the index: without statistics
/// on a young file the planner could choose another plan and sort.
pub const CLAIM_QUERIES: [&str; 3] = [CLAIM_FRESH_SQL, CLAIM_RETRY_SQL, CLAIM_EXPIRED_SQL];

/// Claims up to `policy.limit` jobs in the caller's `BEGIN IMMEDIATE` transaction: never-attempted
/// `PENDING` jobs first (oldest `created_at`), then, oldest `attempted_at` first, `PENDING` jobs
/// whose retry time has come and `PROCESSING` jobs whose lease expired. Each claimed job gets a
/// lease of `policy.processing_timeout` held by `policy.worker`. A due job that has already used
/// `policy.max_attempts` attempts ends `FAILED` instead (see [`give_up_job`]).
pub fn claim_jobs(tx: &Transaction<'_>, now: Timestamp, policy: ClaimPolicy) -> Result<Vec<ClaimedJob>> {
    // No `LIMIT :n` in the SQL: a bound LIMIT makes SQLite re-prepare the statement on every run
    // (its planner looks at the value). The rows come lazily in index order, so taking the first
    // `limit` of them reads no more than a LIMIT would.
    let limit = policy.limit.max(1);
    let mut ids: Vec<OutboxId> = tx
        .prepare_cached(CLAIM_FRESH_SQL)?
        .query_map([], |r| r.get("id"))?
        .take(limit)
        .collect::<rusqlite::Result<_>>()?;
    let remaining = limit - ids.len();
    if remaining > 0 {
        let read = |expired: bool| {
            move |r: &rusqlite::Row<'_>| {
                Ok((
                    r.get::<_, Timestamp>("attempted_at")?,
                    r.get::<_, OutboxId>("id")?,
                    r.get::<_, i64>("attempt_count")?,
                    expired,
                ))
            }
        };
        let mut due: Vec<(Timestamp, OutboxId, i64, bool)> = tx
            .prepare_cached(CLAIM_RETRY_SQL)?
            .query_map(
                named_params! {
                    ":now": now, ":horizon": now.plus(policy.longest_retry_delay).plus(CLOCK_SLACK),
                },
                read(false),
            )?
            .take(remaining)
            .collect::<rusqlite::Result<_>>()?;
        let lease = policy.processing_timeout;
        let expired: Vec<(Timestamp, OutboxId, i64, bool)> = tx
            .prepare_cached(CLAIM_EXPIRED_SQL)?
            .query_map(
                named_params! {
                    ":now": now, ":lease_horizon": now.plus(lease).plus(CLOCK_SLACK),
                    ":legacy_cutoff": now.minus(lease),
                },
                read(true),
            )?
            .take(remaining)
            .collect::<rusqlite::Result<_>>()?;
        // Both lists are sorted by attempted_at; the oldest attempts of the two go first.
        due.extend(expired);
        due.sort();
        let max = i64::from(policy.max_attempts.max(1));
        for (_, id, attempts, expired) in due {
            if ids.len() == limit {
                break;
            }
            if attempts >= max {
                give_up_job(tx, id, attempts, expired)?;
            } else {
                ids.push(id);
            }
        }
    }

    // Read each job's row, then update it guarded by the version just read. No RETURNING: SQLite
    // runs RETURNING through an ephemeral table, a B-tree opened and closed per statement.
    let mut read = tx.prepare_cached(
        r#"SELECT o.website_id, o.attempt_count, o.version, o.attempted_at, o.next_attempt_at,
                  w.domain, w.category
           FROM website_category_classification_outbox o JOIN website w ON w.id = o.website_id
           WHERE o.id = :id"#,
    )?;
    let mut claim = tx.prepare_cached(
        r#"UPDATE website_category_classification_outbox
           SET status = 'PROCESSING', attempt_count = attempt_count + 1,
               attempted_at = :now, lease_until = :lease_until, worker_id = :worker,
               version = version + 1
           WHERE id = :id AND version = :version"#,
    )?;
    let lease_until = now.plus(policy.processing_timeout);
    let mut jobs = Vec::with_capacity(ids.len());
    for id in ids {
        let job = read.query_row(named_params! { ":id": id }, |r| {
            Ok(ClaimedJob {
                id,
                website_id: r.get("website_id")?,
                domain: r.get("domain")?,
                existing_category: r.get("category")?,
                attempt_count: r.get::<_, i64>("attempt_count")? + 1,
                version: r.get::<_, i64>("version")? + 1,
                previous_attempted_at: r.get("attempted_at")?,
                previous_next_attempt_at: r.get("next_attempt_at")?,
            })
        })?;
        // Inside this BEGIN IMMEDIATE transaction nobody else can have changed the row.
        let updated = claim.execute(named_params! {
            ":id": id, ":now": now, ":version": job.version - 1,
            ":lease_until": lease_until, ":worker": policy.worker,
        })?;
        if updated != 1 {
            return Err(Error::Conflict(format!(
                "outbox job {id} changed during its claim"
            )));
        }
        jobs.push(job);
    }
    Ok(jobs)
}

/// Ends a due job that has used all its attempts: `FAILED`. A job whose lease expired (`expired`)
/// was last held by a worker that died; its message says so. A PENDING job keeps its last error
/// (it can only be here if `max_attempts` was lowered since it failed).
fn give_up_job(tx: &Transaction<'_>, id: OutboxId, attempts: i64, expired: bool) -> Result<()> {
    let message = expired.then(|| {
        format!(
            "the workers classifying it kept dying (crashed, were killed or lost their lease before \
             finishing); gave up after {attempts} attempts. Retry it once the worker runs steadily"
        )
    });
    tx.prepare_cached(
        r#"UPDATE website_category_classification_outbox
           SET status = 'FAILED', last_error_message = coalesce(:message, last_error_message),
               next_attempt_at = NULL, lease_until = NULL, worker_id = NULL, version = version + 1
           WHERE id = :id"#,
    )?
    .execute(named_params! { ":id": id, ":message": message })?;
    tracing::warn!(job = %id, attempts, "job FAILED: its attempts were used up before it could be claimed again");
    Ok(())
}

/// Marks `job` COMPLETED and, if the website has no category yet or only a provisional built-in
/// one, sets it (never over the user's or an AI's); both only if the job is still at the version
/// read at claim. The category's confidence is the source's default (`high` for the user,
/// `medium` otherwise); the worker writes the classifier's own through
/// [`crate::provisional::complete_with_verdict`].
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

/// Gives a claimed job back untouched, as if it had never been claimed: `PENDING`, its previous
/// `attempt_count`, `attempted_at` and `next_attempt_at`. For failures that are not the job's
/// fault (offline, rate limited, bad credentials): they must not burn attempts.
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
        Ok(FailedJob {
            id: r.get("id")?,
            website_id: r.get("website_id")?,
            domain: r.get("domain")?,
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

/// Puts a FAILED (or waiting PENDING) job back at the front of the queue: `PENDING`,
/// `attempt_count` 0, `attempted_at` NULL. A job in flight or already done is refused.
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
        None => {
            tx.prepare_cached(
                r#"INSERT INTO website_category_classification_outbox
                       (id, website_id, status, attempt_count, attempted_at, created_at, version)
                   VALUES (:id, :w, 'PENDING', 0, NULL, :now, 0)"#,
            )?
            .execute(named_params! { ":id": OutboxId::new(), ":w": website_id, ":now": now })?;
            Ok(())
        }
    }
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
