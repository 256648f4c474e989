//! The outbox state machine: claim order, retry delay, max attempts, timeouts, version guards,
//! and the claim's query plan.

use std::time::Duration;

use sitetrail::category::{Category, CategorySource};
use sitetrail::outbox::{self, ClaimPolicy, ClaimedJob, FailOutcome, WriteOutcome};
use sitetrail::{Store, Timestamp};

use crate::support::{exec, visit, TempDb};

const T0: Timestamp = Timestamp(1_800_000_000_000_000);
const TIMEOUT: Duration = Duration::from_secs(60);

fn policy(limit: usize) -> ClaimPolicy {
    ClaimPolicy {
        limit,
        processing_timeout: TIMEOUT,
        ..ClaimPolicy::default()
    }
}

fn claim_at(store: &Store, now: Timestamp) -> Option<ClaimedJob> {
    store
        .write(None, |tx| outbox::claim_jobs(tx, now, policy(1)))
        .unwrap()
        .pop()
}

fn fail_at(store: &Store, job: &ClaimedJob, now: Timestamp, retry_in: Duration, max: u32) -> FailOutcome {
    store
        .write(None, |tx| {
            outbox::fail_job(tx, job, "boom", max, now, now.plus(retry_in))
        })
        .unwrap()
}

fn complete(store: &Store, job: &ClaimedJob, now: Timestamp) -> WriteOutcome {
    store
        .write(None, |tx| {
            outbox::complete_job(tx, job, Some((Category::News, CategorySource::Ai)), now)
        })
        .unwrap()
}

/// The domains of one claim of up to `limit` jobs at `now`, in the claim's order.
fn claim_domains(store: &Store, now: Timestamp, limit: usize) -> Vec<String> {
    store
        .write(None, |tx| outbox::claim_jobs(tx, now, policy(limit)))
        .unwrap()
        .into_iter()
        .map(|j| j.domain)
        .collect()
}

fn seeded(domains: &[&str]) -> (TempDb, Store) {
    let db = TempDb::new();
    let store = db.open();
    for d in domains {
        visit(&store, &format!("https://{d}/"));
    }
    (db, store)
}

#[test]
fn never_attempted_jobs_come_first_oldest_first_but_a_due_job_always_gets_a_slot() {
    let (_db, store) = seeded(&["a.example", "b.example", "c.example", "d.example"]);
    let a = claim_at(&store, T0).unwrap();
    assert_eq!(a.domain, "a.example");
    assert_eq!((a.attempt_count, a.previous_attempted_at), (1, None));
    assert_eq!(
        fail_at(&store, &a, T0, Duration::ZERO, 5),
        FailOutcome::WillRetry(T0)
    );
    // a is due again at once; b, c and d were never attempted. A claim of two takes the oldest
    // new job and keeps its other slot for a, not for c.
    let later = T0.plus(Duration::from_secs(1));
    let two = claim_domains(&store, later, 2);
    assert_eq!(two, ["b.example", "a.example"]);
    // With nothing due, every slot is new work's, oldest first.
    let two = claim_domains(&store, later, 2);
    assert_eq!(two, ["c.example", "d.example"]);
}

#[test]
fn a_claim_of_one_takes_the_due_job_before_new_ones() {
    let (_db, store) = seeded(&["a.example", "b.example"]);
    let a = claim_at(&store, T0).unwrap();
    fail_at(&store, &a, T0, Duration::ZERO, 5);
    let later = T0.plus(Duration::from_secs(1));
    let again = claim_at(&store, later).unwrap();
    assert_eq!((again.domain.as_str(), again.attempt_count), ("a.example", 2));
    assert_eq!(claim_at(&store, later).unwrap().domain, "b.example");
}

#[test]
fn the_retry_delay_is_honoured() {
    let (_db, store) = seeded(&["a.example"]);
    let a = claim_at(&store, T0).unwrap();
    fail_at(&store, &a, T0, Duration::from_secs(30), 5);
    assert_eq!(
        claim_at(&store, T0.plus(Duration::from_secs(29))),
        None,
        "claimed before its retry delay"
    );
    let a2 = claim_at(&store, T0.plus(Duration::from_secs(30))).unwrap();
    assert_eq!(a2.attempt_count, 2);
}

#[test]
fn among_retries_the_oldest_attempt_goes_first() {
    let (_db, store) = seeded(&["a.example", "b.example"]);
    let a = claim_at(&store, T0).unwrap();
    let b = claim_at(&store, T0).unwrap();
    // b fails first, a later: b's attempt is older, so b is retried first.
    fail_at(&store, &b, T0.plus(Duration::from_secs(1)), Duration::ZERO, 5);
    fail_at(&store, &a, T0.plus(Duration::from_secs(2)), Duration::ZERO, 5);
    let next = T0.plus(Duration::from_secs(3));
    assert_eq!(claim_at(&store, next).unwrap().domain, "b.example");
    assert_eq!(claim_at(&store, next).unwrap().domain, "a.example");
}

#[test]
fn max_attempts_leaves_the_job_failed_with_its_last_error_and_retry_resets_it() {
    let (_db, store) = seeded(&["a.example"]);
    let mut now = T0;
    for attempt in 1..=3 {
        let job = claim_at(&store, now).unwrap();
        assert_eq!(job.attempt_count, attempt);
        let message = format!("error number {attempt} {}", "x".repeat(2000));
        let out = store
            .write(None, |tx| outbox::fail_job(tx, &job, &message, 3, now, now))
            .unwrap();
        assert_eq!(
            out == FailOutcome::Failed,
            attempt == 3,
            "attempt {attempt}: {out:?}"
        );
        now = now.plus(Duration::from_secs(1));
    }
    assert_eq!(
        claim_at(&store, now.plus(Duration::from_secs(3600))),
        None,
        "FAILED jobs are never claimed"
    );
    let failed = store.failed_jobs().unwrap();
    assert_eq!(failed.len(), 1);
    let msg = failed[0].last_error_message.as_deref().unwrap();
    assert!(msg.starts_with("error number 3"), "{msg}");
    assert_eq!(msg.chars().count(), outbox::MAX_ERROR_CHARS);
    assert_eq!(failed[0].attempt_count, 3);

    store.retry_jobs(&[failed[0].id]).unwrap();
    let job = store.job(failed[0].id).unwrap();
    assert_eq!(
        (job.attempt_count, job.attempted_at, job.last_error_message),
        (0, None, None)
    );
    assert_eq!(claim_at(&store, now).unwrap().attempt_count, 1);
}

#[test]
fn a_processing_job_is_reclaimed_after_the_timeout_only() {
    let (_db, store) = seeded(&["a.example"]);
    let first = claim_at(&store, T0).unwrap();
    assert_eq!(
        claim_at(&store, T0.plus(TIMEOUT - Duration::from_millis(1))),
        None
    );
    let second = claim_at(&store, T0.plus(TIMEOUT)).unwrap();
    assert_eq!(second.id, first.id);
    assert_eq!(second.attempt_count, 2);
    assert!(second.version > first.version);
}

fn renew(store: &Store, job: &ClaimedJob, until: Timestamp) -> Vec<sitetrail::ids::OutboxId> {
    store
        .write(None, |tx| {
            outbox::renew_leases(tx, std::slice::from_ref(job), until)
        })
        .unwrap()
}

#[test]
fn a_renewed_lease_is_not_reclaimed_and_an_expired_one_is() {
    let (_db, store) = seeded(&["a.example"]);
    let first = claim_at(&store, T0).unwrap();
    // The live worker renews before its lease runs out, again and again.
    for k in 1..=5u32 {
        let at = T0.plus(TIMEOUT / 2 * k);
        assert!(renew(&store, &first, at.plus(TIMEOUT)).is_empty(), "renewal {k}");
        assert_eq!(
            claim_at(&store, at.plus(TIMEOUT / 4)),
            None,
            "reclaimed from a live worker"
        );
    }
    // It stops renewing (it died): one lease after its last renewal, the job is taken over.
    let last = T0.plus(TIMEOUT / 2 * 5).plus(TIMEOUT);
    assert_eq!(claim_at(&store, last.minus(Duration::from_millis(1))), None);
    let second = claim_at(&store, last).unwrap();
    assert_eq!((second.id, second.attempt_count), (first.id, 2));
    // The dead worker's renewal no longer holds anything: the job moved on.
    assert_eq!(renew(&store, &first, last.plus(TIMEOUT)), [first.id]);
    assert_eq!(complete(&store, &first, last), WriteOutcome::Stale);
    assert_eq!(complete(&store, &second, last), WriteOutcome::Applied);
}

#[test]
fn a_lease_renewed_a_moment_after_the_claimers_now_is_not_taken_for_a_clock_jump() {
    let (_db, store) = seeded(&["a.example"]);
    let first = claim_at(&store, T0).unwrap();
    // Another worker read "now" a moment before this renewal committed.
    let renewed_at = T0.plus(Duration::from_secs(2));
    assert!(renew(&store, &first, renewed_at.plus(TIMEOUT)).is_empty());
    assert_eq!(
        claim_at(&store, renewed_at.minus(Duration::from_millis(500))),
        None
    );
}

#[test]
fn a_reclaim_at_max_attempts_ends_the_job_failed_saying_its_workers_kept_dying() {
    let (_db, store) = seeded(&["a.example"]);
    let p = ClaimPolicy {
        max_attempts: 2,
        ..policy(1)
    };
    let claim = |now| store.write(None, |tx| outbox::claim_jobs(tx, now, p)).unwrap();
    assert_eq!(claim(T0)[0].attempt_count, 1);
    assert_eq!(claim(T0.plus(TIMEOUT))[0].attempt_count, 2);
    assert!(claim(T0.plus(TIMEOUT * 2)).is_empty(), "no third attempt");
    let failed = store.failed_jobs().unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].attempt_count, 2);
    assert!(failed[0]
        .last_error_message
        .as_deref()
        .unwrap()
        .contains("kept dying"));
}

#[test]
fn stored_times_from_a_clock_that_was_ahead_do_not_hold_jobs() {
    let (_db, store) = seeded(&["a.example", "b.example"]);
    let ahead = T0.plus(Duration::from_secs(86_400));
    let p = ClaimPolicy {
        longest_retry_delay: Duration::from_secs(600),
        ..policy(1)
    };
    let claim = |now| {
        store
            .write(None, |tx| outbox::claim_jobs(tx, now, p))
            .unwrap()
            .pop()
    };
    // While the clock is a day ahead, a fails (retry in 10 min) and b's worker dies.
    let a = claim(ahead).unwrap();
    fail_at(&store, &a, ahead, Duration::from_secs(600), 5);
    let b = claim(ahead).unwrap();
    assert_eq!(b.domain, "b.example");
    // The clock is corrected: both are due now, not in a day.
    let mut got = vec![claim(T0).unwrap().domain, claim(T0).unwrap().domain];
    got.sort();
    assert_eq!(got, ["a.example", "b.example"]);
    // A retry within the policy's longest delay is still honoured.
    let (_db2, store2) = seeded(&["c.example"]);
    let claim2 = |now| {
        store2
            .write(None, |tx| outbox::claim_jobs(tx, now, p))
            .unwrap()
            .pop()
    };
    let c = claim2(T0).unwrap();
    fail_at(&store2, &c, T0, Duration::from_secs(600), 5);
    assert_eq!(claim2(T0.plus(Duration::from_secs(599))), None);
    assert!(claim2(T0.plus(Duration::from_secs(600))).is_some());
}

#[test]
fn a_job_claimed_before_leases_existed_expires_after_the_processing_timeout() {
    let (_db, store) = seeded(&["a.example"]);
    let first = claim_at(&store, T0).unwrap();
    // What a claim by an older Sitetrail leaves: no lease.
    exec(
        &store,
        "UPDATE website_category_classification_outbox SET lease_until = NULL, worker_id = NULL",
    );
    assert_eq!(
        claim_at(&store, T0.plus(TIMEOUT - Duration::from_millis(1))),
        None
    );
    let again = claim_at(&store, T0.plus(TIMEOUT)).unwrap();
    assert_eq!((again.id, again.attempt_count), (first.id, 2));
}

#[test]
fn a_stale_workers_late_result_is_rejected_by_version() {
    let (_db, store) = seeded(&["a.example"]);
    let stale = claim_at(&store, T0).unwrap();
    let fresh = claim_at(&store, T0.plus(TIMEOUT)).unwrap();
    assert_eq!(complete(&store, &stale, T0.plus(TIMEOUT)), WriteOutcome::Stale);
    assert_eq!(
        store.website("a.example").unwrap().category,
        None,
        "the stale write must not land"
    );
    assert_eq!(fail_at(&store, &stale, T0, Duration::ZERO, 1), FailOutcome::Stale);
    assert_eq!(complete(&store, &fresh, T0.plus(TIMEOUT)), WriteOutcome::Applied);
    let site = store.website("a.example").unwrap();
    assert_eq!(
        (
            site.category.map(sitetrail::Category::id),
            site.category_source.map(sitetrail::CategorySource::as_str)
        ),
        (Some("news"), Some("ai"))
    );
    // And once COMPLETED, nothing writes it again.
    assert_eq!(complete(&store, &fresh, T0.plus(TIMEOUT)), WriteOutcome::Stale);
}

#[test]
fn a_users_category_is_never_overwritten_by_a_job_in_flight() {
    let (_db, store) = seeded(&["a.example"]);
    let job = claim_at(&store, T0).unwrap();
    store.set_user_category("a.example", Category::Shopping).unwrap();
    assert_eq!(complete(&store, &job, T0), WriteOutcome::Stale);
    let site = store.website("a.example").unwrap();
    assert_eq!(
        (
            site.category.map(sitetrail::Category::id),
            site.category_source.map(sitetrail::CategorySource::as_str)
        ),
        (Some("shopping"), Some("user"))
    );
    assert_eq!(store.queue_status().unwrap().completed, 1);
}

#[test]
fn a_job_claimed_after_the_user_categorised_carries_the_existing_category() {
    let (_db, store) = seeded(&["a.example"]);
    // The user categorises, then sends it back to be classified while a category is set by hand.
    store.set_user_category("a.example", Category::Games).unwrap();
    exec(
        &store,
        "UPDATE website_category_classification_outbox SET status = 'PENDING', version = version + 1",
    );
    let job = claim_at(&store, T0).unwrap();
    assert_eq!(job.existing_category.map(sitetrail::Category::id), Some("games"));
}

#[test]
fn giving_a_job_back_restores_it_as_never_attempted() {
    let (_db, store) = seeded(&["a.example"]);
    let job = claim_at(&store, T0).unwrap();
    assert_eq!(
        store.write(None, |tx| outbox::release_job(tx, &job)).unwrap(),
        WriteOutcome::Applied
    );
    let view = store.job(job.id).unwrap();
    assert_eq!((view.attempt_count, view.attempted_at), (0, None));
    assert_eq!(claim_at(&store, T0).unwrap().attempt_count, 1);
}

#[test]
fn retry_refuses_unknown_and_in_flight_jobs() {
    let (_db, store) = seeded(&["a.example"]);
    let job = claim_at(&store, T0).unwrap();
    let unknown = sitetrail::ids::OutboxId::new();
    let err = store.retry_jobs(&[unknown]).unwrap_err();
    assert!(
        err.to_string().contains(&unknown.to_string()) && err.to_string().contains("not found"),
        "{err}"
    );
    let err = store.retry_jobs(&[job.id]).unwrap_err();
    assert!(err.to_string().contains("PROCESSING"), "{err}");
}

#[test]
fn reclassify_clears_the_category_and_requeues() {
    let (_db, store) = seeded(&["a.example"]);
    let job = claim_at(&store, T0).unwrap();
    complete(&store, &job, T0);
    let site = store.reclassify("A.example").unwrap();
    assert_eq!(site.category, None);
    let again = claim_at(&store, T0).unwrap();
    assert_eq!(
        (again.id, again.attempt_count, again.existing_category),
        (job.id, 1, None)
    );
}

#[test]
fn status_counts_every_state() {
    let (_db, store) = seeded(&["a.example", "b.example", "c.example", "d.example"]);
    let a = claim_at(&store, T0).unwrap();
    complete(&store, &a, T0);
    let b = claim_at(&store, T0).unwrap();
    fail_at(&store, &b, T0, Duration::ZERO, 1);
    let _c = claim_at(&store, T0).unwrap();
    let s = store.queue_status().unwrap();
    assert_eq!((s.pending, s.processing, s.completed, s.failed), (1, 1, 1, 1));
    assert!(s.oldest_pending_age_ms.is_some());
}

/// The claim queries must be served by the live-jobs index at any table size: no table scan, no
/// temporary B-tree for the ORDER BY.
#[test]
fn the_claim_never_scans_or_sorts() {
    let (_db, store) = seeded(&["a.example"]);
    let plans = store
        .with_conn(|c| {
            let mut out = Vec::new();
            for sql in outbox::CLAIM_QUERIES {
                let explain = format!("EXPLAIN QUERY PLAN {sql}");
                let mut stmt = c.prepare(&explain)?;
                let n = stmt.parameter_count();
                let params: Vec<i64> = vec![0; n];
                let rows = stmt
                    .query_map(rusqlite::params_from_iter(params), |r| {
                        r.get::<_, String>("detail")
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                out.push(rows.join(" | "));
            }
            Ok(out)
        })
        .unwrap();
    assert_eq!(plans.len(), 3);
    let renew = store
        .with_conn(|c| {
            let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {}", outbox::RENEW_SQL))?;
            let rows = stmt
                .query_map(rusqlite::params![0, 0, 0], |r| r.get::<_, String>("detail"))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows.join(" | "))
        })
        .unwrap();
    assert!(
        renew.contains("USING PRIMARY KEY") && !renew.contains("SCAN"),
        "a lease renewal finds its row by primary key: {renew}"
    );
    for plan in &plans {
        assert!(
            plan.contains("SEARCH website_category_classification_outbox USING"),
            "claim does not search: {plan}"
        );
        assert!(
            plan.contains("outbox_live_idx"),
            "claim does not use the live index: {plan}"
        );
        assert!(!plan.contains("SCAN"), "claim scans: {plan}");
        assert!(!plan.contains("TEMP B-TREE"), "claim sorts: {plan}");
    }
}

#[test]
fn claims_from_two_transactions_never_overlap() {
    // Two stores on one file (two processes' pools), four threads; in each round all four claim
    // at the same moment (a barrier), each claim its own BEGIN IMMEDIATE transaction, so every
    // round is a race for the lock. 20 rounds of 4 claims of 3 take more than the 200 jobs:
    // every job is claimed exactly once.
    let domains: Vec<String> = (0..200).map(|i| format!("site{i}.example")).collect();
    let names: Vec<&str> = domains.iter().map(String::as_str).collect();
    let (db, first) = seeded(&names);
    let second = db.open();
    let stores = [first.clone(), second.clone(), first, second];
    let round = std::sync::Barrier::new(stores.len());
    let claimed: Vec<Vec<String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = stores
            .iter()
            .map(|store| {
                let round = &round;
                scope.spawn(move || {
                    let mut mine = Vec::new();
                    for _ in 0..20 {
                        round.wait();
                        let got = store
                            .write(None, |tx| outbox::claim_jobs(tx, T0, policy(3)))
                            .unwrap();
                        mine.extend(got.into_iter().map(|j| j.id.to_string()));
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let all: Vec<&String> = claimed.iter().flatten().collect();
    let distinct: std::collections::HashSet<&String> = all.iter().copied().collect();
    assert_eq!(all.len(), 200, "every job claimed");
    assert_eq!(distinct.len(), all.len(), "no job claimed twice");
    assert!(
        claimed.iter().all(|c| !c.is_empty()),
        "every thread claimed some jobs: {:?}",
        claimed.iter().map(Vec::len).collect::<Vec<_>>()
    );
}
