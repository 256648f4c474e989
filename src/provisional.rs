//! Local-first classification in the database: built-in categories written at once, with their
//! confidence, and the outbox rules that decide which websites still wait for a remote provider.
//!
//! A website's category goes through these states (the job's own states are in [`crate::outbox`]):
//!
//! ```text
//!  new website ──local pass──► builtin (provisional) ──remote answer──► ai
//!  (no category)      │               │ (job open: PENDING/PROCESSING/FAILED)
//!                     │               └── job FAILED for good: stays builtin
//!                     └── certain, or no remote provider for it ──► builtin (final, job COMPLETED)
//!  any state ──user──► user (final; never written over)
//! ```
//!
//! Invariants kept here:
//! - a classifier's answer is written only where the website has no category or a `builtin`
//!   one: never over the user's, never over the AI's;
//! - a built-in answer for a website without a category is written only while it still has none
//!   (a guarded write), so the local pass and a remote answer can race safely;
//! - a job is completed from `PENDING` only at the version just read, and never from
//!   `PROCESSING` (a worker is on it) or `FAILED` (the user retries it);
//! - the websites the local pass has to judge are found through `website_unjudged_idx` (no
//!   category, or a category without a confidence), so a pass costs the same at any history size
//!   (a test checks `EXPLAIN QUERY PLAN`);
//! - the user's categories are read again only when `user_categories_version` moved, which
//!   triggers bump in the transaction of every change to them (migration 0007).

use rusqlite::{named_params, Connection, OptionalExtension, Transaction};

use crate::category::{Category, CategorySource};
use crate::classify::builtin::{self, Judgement, RuleOptions};
use crate::classify::user_rules::UserCategories;
use crate::classify::Verdict;
use crate::confidence::Confidence;
use crate::error::Result;
use crate::ids::{OutboxId, WebsiteId};
use crate::outbox::{self, ClaimPolicy, ClaimedJob, JobStatus, WriteOutcome};
use crate::sync_log;
use crate::time::Timestamp;
use crate::title_judging;

/// Most websites one local pass judges (one short transaction).
pub const LOCAL_BATCH: usize = 500;

/// The local pass's read: websites without a category or without a confidence, oldest first,
/// with their job.
pub const UNJUDGED_SQL: &str = r#"SELECT w.id, w.domain, w.category, w.category_source,
           o.id AS job_id, o.status, o.version AS job_version, o.remote_requested
    FROM website w INDEXED BY website_unjudged_idx
    LEFT JOIN website_category_classification_outbox o ON o.website_id = w.id
    WHERE (w.category IS NULL OR w.category_confidence IS NULL)
    ORDER BY w.created_at"#;

/// A website the local pass has to judge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unjudged {
    /// The website.
    pub website_id: WebsiteId,
    /// Its domain.
    pub domain: String,
    /// Its category, if it has one without a confidence (an older row).
    pub category: Option<Category>,
    /// Who set that category.
    pub category_source: Option<CategorySource>,
    /// Its job, if it has one.
    pub job: Option<JobRef>,
}

/// A website's job as the local pass read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRef {
    /// The outbox row.
    pub id: OutboxId,
    /// Its state.
    pub status: JobStatus,
    /// Its version when read.
    pub version: i64,
    /// The user asked for the AI's answer.
    pub remote_requested: bool,
}

/// The current value of the user-categories counter.
pub fn get_user_categories_version(conn: &Connection) -> Result<i64> {
    Ok(conn
        .prepare_cached(r#"SELECT version FROM user_categories_version WHERE id = 1"#)?
        .query_row([], |r| r.get("version"))?)
}

/// Up to `limit` websites to judge, oldest first.
pub fn list_unjudged(conn: &Connection, limit: usize) -> Result<Vec<Unjudged>> {
    let mut stmt = conn.prepare_cached(UNJUDGED_SQL)?;
    let rows = stmt.query_map([], |r| {
        let job_id: Option<OutboxId> = r.get("job_id")?;
        let job = match job_id {
            Some(id) => Some(JobRef {
                id,
                status: r.get("status")?,
                version: r.get("job_version")?,
                remote_requested: r.get::<_, i64>("remote_requested")? != 0,
            }),
            None => None,
        };
        Ok(Unjudged {
            website_id: r.get("id")?,
            domain: r.get("domain")?,
            category: r.get("category")?,
            category_source: r.get("category_source")?,
            job,
        })
    })?;
    Ok(rows.take(limit.max(1)).collect::<rusqlite::Result<_>>()?)
}

/// Does the website still need a remote provider's answer? Only if the classifier would send it
/// out, and the built-in answer is not certain or the user asked for the AI.
pub fn needs_remote(asks_remote: bool, judgement: &Judgement, remote_requested: bool) -> bool {
    asks_remote && (remote_requested || !judgement.is_certain())
}

/// Writes the built-in `judgement` for a website that has no category; nothing if it has one by
/// now. True if written.
pub fn write_provisional(
    tx: &Transaction<'_>,
    website_id: WebsiteId,
    judgement: &Judgement,
    now: Timestamp,
) -> Result<bool> {
    let n = tx
        .prepare_cached(
            r#"UPDATE website
               SET category = :category, category_source = 'builtin', category_confidence = :confidence,
                   category_rule = :rule, classified_at = :now, version = version + 1
               WHERE id = :id AND category IS NULL"#,
        )?
        .execute(named_params! {
            ":id": website_id, ":category": judgement.category.id(), ":confidence": judgement.confidence,
            ":rule": judgement.rule.as_str(), ":now": now,
        })?;
    // An answer no list gave may be judged again from the site's page titles.
    if n == 1 && title_judging::is_candidate(judgement) {
        title_judging::insert_candidate(tx, website_id)?;
    }
    Ok(n == 1)
}

/// Writes a classifier's category (`builtin` or `ai`) where the website has none or a `builtin`
/// one: never over the user's or an AI's. True if written.
pub fn write_classifier_category(
    tx: &Transaction<'_>,
    website_id: WebsiteId,
    category: Category,
    source: CategorySource,
    confidence: Confidence,
    rule: Option<&str>,
    now: Timestamp,
) -> Result<bool> {
    let n = tx
        .prepare_cached(
            r#"UPDATE website
               SET category = :category, category_source = :source, category_confidence = :confidence,
                   category_rule = :rule, classified_at = :now, version = version + 1
               WHERE id = :id AND :source <> 'user'
                 AND (category IS NULL OR category_source = 'builtin')"#,
        )?
        .execute(named_params! {
            ":id": website_id, ":category": category.id(), ":source": source.as_str(),
            ":confidence": confidence, ":rule": rule, ":now": now,
        })?;
    Ok(n == 1)
}

/// Gives an older category that has no confidence its band: the user's are high, an AI's medium;
/// an older built-in one is judged again with the current rules (`judgement`). True if written.
fn write_missing_confidence(
    tx: &Transaction<'_>,
    site: &Unjudged,
    judgement: &Judgement,
    now: Timestamp,
) -> Result<bool> {
    let (confidence, rule) = match site.category_source {
        Some(CategorySource::User) => (Confidence::High, Some("user")),
        Some(CategorySource::Ai) => (Confidence::Medium, None),
        _ => {
            return write_classifier_category(
                tx,
                site.website_id,
                judgement.category,
                CategorySource::Builtin,
                judgement.confidence,
                Some(judgement.rule.as_str()),
                now,
            )
        }
    };
    let n = tx
        .prepare_cached(
            r#"UPDATE website SET category_confidence = :confidence, category_rule = :rule, version = version + 1
               WHERE id = :id AND category IS NOT NULL AND category_confidence IS NULL"#,
        )?
        .execute(named_params! { ":id": site.website_id, ":confidence": confidence, ":rule": rule })?;
    Ok(n == 1)
}

/// Marks a `PENDING` job `COMPLETED` because no remote provider needs to see it, guarded by the
/// version read. A job being worked on, failed or done is left alone.
pub fn complete_pending_job(tx: &Transaction<'_>, job: &JobRef) -> Result<WriteOutcome> {
    let n = tx
        .prepare_cached(
            r#"UPDATE website_category_classification_outbox
               SET status = 'COMPLETED', last_error_message = NULL, next_attempt_at = NULL,
                   version = version + 1
               WHERE id = :id AND version = :version AND status = 'PENDING'"#,
        )?
        .execute(named_params! { ":id": job.id, ":version": job.version })?;
    Ok(if n == 1 {
        WriteOutcome::Applied
    } else {
        WriteOutcome::Stale
    })
}

/// What one local pass wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PassOutcome {
    /// Websites that got a category or a confidence.
    pub judged: usize,
    /// Jobs completed because no remote provider needs to see them.
    pub completed: usize,
    /// Websites left waiting for a remote provider, with their provisional category.
    pub provisional: usize,
    /// Websites judged again from their pages' titles (`title_judging`).
    pub retitled: usize,
}

/// One website of a local pass with its judgement, computed before the transaction.
#[derive(Clone, Debug)]
pub struct Judged {
    /// The website and its job.
    pub site: Unjudged,
    /// The built-in answer.
    pub judgement: Judgement,
    /// Whether the classifier in use would send the domain out.
    pub asks_remote: bool,
}

/// Writes a local pass's judgements in the caller's transaction: a category (or the missing
/// confidence) for each website, and for each whose job is `PENDING` and needs no remote
/// provider, the job `COMPLETED`.
pub fn apply_pass(tx: &Transaction<'_>, judged: &[Judged], now: Timestamp) -> Result<PassOutcome> {
    let mut out = PassOutcome::default();
    for j in judged {
        let wrote = match j.site.category {
            None => write_provisional(tx, j.site.website_id, &j.judgement, now)?,
            Some(_) => write_missing_confidence(tx, &j.site, &j.judgement, now)?,
        };
        if !wrote {
            continue;
        }
        out.judged += 1;
        let Some(job) = &j.site.job else { continue };
        let builtin_only = matches!(j.site.category_source, None | Some(CategorySource::Builtin));
        let wait = builtin_only && needs_remote(j.asks_remote, &j.judgement, job.remote_requested);
        match job.status {
            JobStatus::Completed => {}
            _ if wait => out.provisional += 1,
            JobStatus::Pending if complete_pending_job(tx, job)? == WriteOutcome::Applied => {
                out.completed += 1;
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Claims jobs like [`outbox::claim_jobs`], and decides in the same transaction which of them
/// need the remote provider. For a website that has no category or a `builtin` one, the rules
/// judge it with the user's categories as they are now (`user`): if the classifier would not send
/// it out, or the answer is certain and the user did not ask for the AI, the answer is written as
/// final and the job is returned with `existing_category` set (the worker completes it without a
/// call); otherwise the website keeps (or gets) a provisional category and the job is returned
/// with `existing_category` `None`, for the classifier. A website with the user's or an AI's
/// category is returned as claimed (completed without a call).
pub fn claim_jobs_local_first(
    tx: &Transaction<'_>,
    now: Timestamp,
    policy: ClaimPolicy,
    user: &UserCategories,
    asks_remote: &dyn Fn(&str) -> bool,
) -> Result<Vec<ClaimedJob>> {
    let mut jobs = outbox::claim_jobs(tx, now, policy)?;
    let mut read = tx.prepare_cached(
        r#"SELECT w.category_source, o.remote_requested
           FROM website_category_classification_outbox o JOIN website w ON w.id = o.website_id
           WHERE o.id = :id"#,
    )?;
    for job in &mut jobs {
        let (source, remote_requested): (Option<CategorySource>, i64) = read
            .query_row(named_params! { ":id": job.id }, |r| {
                Ok((r.get("category_source")?, r.get("remote_requested")?))
            })
            .optional()?
            .unwrap_or((None, 0));
        if matches!(source, Some(CategorySource::User | CategorySource::Ai)) {
            continue;
        }
        let judgement = builtin::judge(&job.domain, Some(user), RuleOptions::default());
        if needs_remote(asks_remote(&job.domain), &judgement, remote_requested != 0) {
            if source.is_none() {
                write_provisional(tx, job.website_id, &judgement, now)?;
            }
            job.existing_category = None;
        } else {
            write_classifier_category(
                tx,
                job.website_id,
                judgement.category,
                CategorySource::Builtin,
                judgement.confidence,
                Some(judgement.rule.as_str()),
                now,
            )?;
            job.existing_category = Some(judgement.category);
        }
    }
    Ok(jobs)
}

/// Completes a claimed job with a classifier's verdict: the job `COMPLETED` (guarded by its
/// version) and the category written where the website has none or a `builtin` one.
pub fn complete_with_verdict(
    tx: &Transaction<'_>,
    job: &ClaimedJob,
    verdict: &Verdict,
    now: Timestamp,
) -> Result<WriteOutcome> {
    let outcome = outbox::complete_job(tx, job, None, now)?;
    if outcome == WriteOutcome::Applied {
        write_classifier_category(
            tx,
            job.website_id,
            verdict.category,
            verdict.source,
            verdict.confidence,
            None,
            now,
        )?;
        if verdict.source == CategorySource::Ai {
            queue_ai_category_in(tx, job.website_id, verdict.category)?;
        }
    }
    Ok(outcome)
}

/// Queues the AI's `category` of the website `website_id` for sync (its answer, for every
/// device), in the transaction that wrote it.
fn queue_ai_category_in(tx: &Transaction<'_>, website_id: WebsiteId, category: Category) -> Result<()> {
    if sync_log::local::is_applying() {
        return Ok(());
    }
    let domain: Option<String> = tx
        .prepare_cached(r#"SELECT domain FROM website WHERE id = :w"#)?
        .query_row(named_params! { ":w": website_id }, |r| r.get("domain"))
        .optional()?;
    let Some(domain) = domain else {
        return Ok(());
    };
    sync_log::local::queue_register_in(
        tx,
        &sync_log::local::ai_key(&domain),
        Some(category.id()),
        &sync_log::ops::Op::Category {
            domain,
            category: category.id().to_owned(),
            source: CategorySource::Ai.as_str().to_owned(),
        },
    )
}

/// Records whether the user asked the AI to classify `website_id` (set by `reclassify --ai`,
/// cleared by a plain `reclassify`).
pub fn set_remote_requested(tx: &Transaction<'_>, website_id: WebsiteId, requested: bool) -> Result<()> {
    tx.prepare_cached(
        r#"UPDATE website_category_classification_outbox SET remote_requested = :r WHERE website_id = :w"#,
    )?
    .execute(named_params! { ":w": website_id, ":r": i64::from(requested) })?;
    Ok(())
}
