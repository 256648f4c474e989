//! Claiming: the one short `BEGIN IMMEDIATE` transaction in which a worker takes due jobs and
//! their leases.

use std::time::Duration;

use rusqlite::{named_params, Transaction};

use super::CLOCK_SLACK;
use crate::category::Category;
use crate::error::{Error, Result};
use crate::ids::{OutboxId, WebsiteId, WorkerId};
use crate::time::Timestamp;

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

/// The claim's read queries, for plan checks (`EXPLAIN QUERY PLAN` must show a search of
/// `outbox_live_idx`, no table scan and no sort). `INDEXED BY` pins the index: without statistics
/// on a young file the planner could choose another plan and sort.
pub const CLAIM_QUERIES: [&str; 3] = [CLAIM_FRESH_SQL, CLAIM_RETRY_SQL, CLAIM_EXPIRED_SQL];

/// Claims up to `policy.limit` jobs in the caller's `BEGIN IMMEDIATE` transaction. New work comes
/// first, but never starves old work: the claim reads the jobs that are due again, oldest
/// `attempted_at` first (`PENDING` jobs whose retry time has come and `PROCESSING` jobs whose
/// lease expired), keeps one slot for the oldest of them, fills the other slots with
/// never-attempted `PENDING` jobs (oldest `created_at` first), and gives any slot left over to the
/// next due jobs. So a steady stream of new websites cannot hold a due job back: every claim takes
/// the oldest due job, and a job due now is taken within as many claims as there are unfinished
/// jobs attempted no later than it (a claimed job's new attempt time puts it behind). With a
/// limit of 1, that one slot goes to the due job. Each claimed job gets a lease of
/// `policy.processing_timeout` held by `policy.worker`. A due job that has already used
/// `policy.max_attempts` attempts ends `FAILED` instead (see [`give_up_job`]); it takes no slot.
#[tracing::instrument(level = "debug", skip_all, fields(limit = policy.limit))]
pub fn claim_jobs(tx: &Transaction<'_>, now: Timestamp, policy: ClaimPolicy) -> Result<Vec<ClaimedJob>> {
    // No `LIMIT :n` in the SQL: a bound LIMIT makes SQLite re-prepare the statement on every run
    // (its planner looks at the value). The rows come lazily in index order, so taking the first
    // `limit` of them reads no more than a LIMIT would.
    let limit = policy.limit.max(1);
    let due = claim_due(tx, now, policy, limit)?;
    // One slot is old work's whenever any is due; the rest are new work's first.
    let reserved = usize::from(!due.is_empty());
    let mut ids: Vec<OutboxId> = tx
        .prepare_cached(CLAIM_FRESH_SQL)?
        .query_map([], |r| r.get("id"))?
        .take(limit - reserved)
        .collect::<rusqlite::Result<_>>()?;
    let room = limit - ids.len();
    ids.extend(due.into_iter().take(room));

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

/// The oldest due jobs, up to `limit`, oldest `attempted_at` first: `PENDING` jobs whose retry
/// time has come and `PROCESSING` jobs whose lease expired. Those of them that have used all
/// their attempts end `FAILED` on the way ([`give_up_job`]) and are not returned.
fn claim_due(
    tx: &Transaction<'_>,
    now: Timestamp,
    policy: ClaimPolicy,
    limit: usize,
) -> Result<Vec<OutboxId>> {
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
        .take(limit)
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
        .take(limit)
        .collect::<rusqlite::Result<_>>()?;
    // Both lists are sorted by attempted_at; the oldest attempts of the two go first.
    due.extend(expired);
    due.sort();
    let max = i64::from(policy.max_attempts.max(1));
    let mut ids = Vec::with_capacity(limit);
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
    Ok(ids)
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
