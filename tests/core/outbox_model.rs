//! A model-based test of the outbox (proptest): random sequences of claims, completions,
//! failures, releases, lease renewals, worker deaths, user retries, user categories, reclassify,
//! new visits and clock steps (forward and backward), across several workers, checked after every
//! step against a simple model:
//! - every website has exactly one job;
//! - no job is lost (a COMPLETED job's website has a category) or PROCESSING forever (once enough
//!   time passes, every job leaves PROCESSING, and a drain completes or fails every job);
//! - attempts never exceed `max_attempts`;
//! - a user's category is never overwritten;
//! - versions only grow.
//!
//! Three layers: the outbox functions stepped one at a time (many cases), real workers on threads
//! with the user acting beside them, and real CLI worker processes killed mid-run. The default
//! case counts keep the whole file to seconds; run more with e.g.
//! `PROPTEST_CASES=2000 cargo test --test integration core::outbox_model`.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;

use sitetrail::category::{Category, CategorySource};
use sitetrail::classify::builtin::Builtin;
use sitetrail::classify::WithLatency;
use sitetrail::ids::{OutboxId, WorkerId};
use sitetrail::outbox::{self, ClaimPolicy, ClaimedJob};
use sitetrail::store::StoreOptions;
use sitetrail::time::ManualClock;
use sitetrail::worker::{PanicsOn, RetryPolicy, Worker, WorkerConfig};
use sitetrail::{NewVisit, Store, Timestamp};

use crate::support::{cli, run_ok, wait_for, TempDb};

const MAX_ATTEMPTS: u32 = 3;
const LEASE: Duration = Duration::from_secs(60);
const LONGEST_RETRY: Duration = Duration::from_secs(600);
const SITES: usize = 5;
const WORKERS: usize = 3;
const CATEGORIES: [Category; 3] = [Category::News, Category::Shopping, Category::Games];

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn domain(site: usize) -> String {
    format!("site{site}.example")
}

#[derive(Clone, Debug)]
enum Op {
    Visit(usize),
    Claim {
        worker: usize,
        limit: usize,
    },
    Complete {
        worker: usize,
        pick: usize,
    },
    Fail {
        worker: usize,
        pick: usize,
        retry_secs: u64,
    },
    Release {
        worker: usize,
        pick: usize,
    },
    Renew(usize),
    Die(usize),
    RetryAll,
    Retry(usize),
    Categorize {
        site: usize,
        category: usize,
    },
    Reclassify(usize),
    Clock(i64),
}

fn op() -> impl Strategy<Value = Op> {
    let w = 0..WORKERS;
    prop_oneof![
        3 => (0..SITES).prop_map(Op::Visit),
        4 => (w.clone(), 1..4usize).prop_map(|(worker, limit)| Op::Claim { worker, limit }),
        3 => (w.clone(), 0..4usize).prop_map(|(worker, pick)| Op::Complete { worker, pick }),
        3 => (w.clone(), 0..4usize, 0..700u64).prop_map(|(worker, pick, retry_secs)| Op::Fail { worker, pick, retry_secs }),
        1 => (w.clone(), 0..4usize).prop_map(|(worker, pick)| Op::Release { worker, pick }),
        2 => w.clone().prop_map(Op::Renew),
        1 => w.prop_map(Op::Die),
        1 => Just(Op::RetryAll),
        1 => (0..SITES).prop_map(Op::Retry),
        2 => (0..SITES, 0..CATEGORIES.len()).prop_map(|(site, category)| Op::Categorize { site, category }),
        1 => (0..SITES).prop_map(Op::Reclassify),
        3 => prop_oneof![-7_200i64..7_200, -200_000i64..200_000].prop_map(Op::Clock),
    ]
}

/// What the test expects, beside what the database says.
#[derive(Default)]
struct Model {
    /// The user's category of each website that has one.
    user: HashMap<String, Category>,
    /// The highest version seen of each job and website.
    versions: HashMap<Vec<u8>, i64>,
}

/// Every outbox row with its website: (domain, status, attempts, job id, job version, website
/// version, category, category source).
type Row = (
    String,
    String,
    i64,
    Vec<u8>,
    i64,
    Vec<u8>,
    i64,
    Option<String>,
    Option<String>,
);

fn rows(store: &Store) -> Vec<Row> {
    store
        .with_conn(|c| {
            let mut stmt = c.prepare(
                "SELECT w.domain, o.status, o.attempt_count, o.id, o.version, w.id, w.version, w.category, w.category_source
                 FROM website w LEFT JOIN website_category_classification_outbox o ON o.website_id = w.id",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                    r.get::<_, Option<i64>>(2)?.unwrap_or(-1),
                    r.get::<_, Option<Vec<u8>>>(3)?.unwrap_or_default(),
                    r.get::<_, Option<i64>>(4)?.unwrap_or(-1),
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                ))
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<Row>>>()?)
        })
        .expect("read the outbox")
}

/// The model's checks, after every step.
fn check(store: &Store, model: &mut Model, step: &str) -> Result<(), TestCaseError> {
    let rows = rows(store);
    let jobs: i64 = store
        .with_conn(|c| {
            Ok(c.query_row(
                "SELECT count(*) FROM website_category_classification_outbox",
                [],
                |r| r.get(0),
            )?)
        })
        .unwrap();
    prop_assert_eq!(
        jobs as usize,
        rows.len(),
        "{}: a job without a website, or two for one",
        step
    );
    for (domain, status, attempts, job_id, job_version, site_id, site_version, category, source) in &rows {
        prop_assert!(!status.is_empty(), "{}: {} has no job", step, domain);
        prop_assert!(
            *attempts <= i64::from(MAX_ATTEMPTS),
            "{}: {} has {} attempts",
            step,
            domain,
            attempts
        );
        if status == "COMPLETED" {
            prop_assert!(
                category.is_some(),
                "{}: {} is COMPLETED without a category (lost)",
                step,
                domain
            );
        }
        if let Some(c) = model.user.get(domain) {
            prop_assert_eq!(
                category.as_deref(),
                Some(c.id()),
                "{}: {}'s user category was overwritten",
                step,
                domain
            );
            prop_assert_eq!(source.as_deref(), Some("user"), "{}: {}", step, domain);
        }
        for (id, v) in [(job_id, job_version), (site_id, site_version)] {
            let seen = model.versions.entry(id.clone()).or_insert(*v);
            prop_assert!(
                *v >= *seen,
                "{}: {}'s version went back from {} to {}",
                step,
                domain,
                seen,
                v
            );
            *seen = *v;
        }
    }
    Ok(())
}

fn policy(limit: usize, worker: WorkerId) -> ClaimPolicy {
    ClaimPolicy {
        limit,
        processing_timeout: LEASE,
        max_attempts: MAX_ATTEMPTS,
        longest_retry_delay: LONGEST_RETRY,
        worker: Some(worker),
    }
}

fn record(store: &Store, site: usize) {
    store
        .record_visit(&NewVisit {
            url: &format!("https://{}/", domain(site)),
            title: None,
            visited_at: Timestamp::now(),
            source: "model",
            source_visit_id: None,
        })
        .expect("record visit");
}

fn apply(
    store: &Store,
    clock: &ManualClock,
    held: &mut [Vec<ClaimedJob>],
    ids: &[WorkerId],
    model: &mut Model,
    op: &Op,
) {
    let now = store.now();
    let take =
        |held: &mut Vec<ClaimedJob>, pick: usize| (!held.is_empty()).then(|| held.remove(pick % held.len()));
    match *op {
        Op::Visit(site) => record(store, site),
        Op::Claim { worker, limit } => {
            let got = store
                .write(None, |tx| outbox::claim_jobs(tx, now, policy(limit, ids[worker])))
                .expect("claim");
            held[worker].extend(got);
        }
        Op::Complete { worker, pick } => {
            if let Some(job) = take(&mut held[worker], pick) {
                store
                    .write(None, |tx| {
                        outbox::complete_job(tx, &job, Some((Category::Other, CategorySource::Ai)), now)
                    })
                    .expect("complete");
            }
        }
        Op::Fail {
            worker,
            pick,
            retry_secs,
        } => {
            if let Some(job) = take(&mut held[worker], pick) {
                let retry_at = now.plus(Duration::from_secs(retry_secs).min(LONGEST_RETRY));
                store
                    .write(None, |tx| {
                        outbox::fail_job(tx, &job, "model failure", MAX_ATTEMPTS, now, retry_at)
                    })
                    .expect("fail");
            }
        }
        Op::Release { worker, pick } => {
            if let Some(job) = take(&mut held[worker], pick) {
                store
                    .write(None, |tx| outbox::release_job(tx, &job))
                    .expect("release");
            }
        }
        Op::Renew(worker) => {
            let jobs = held[worker].clone();
            let lost = store
                .write(None, |tx| outbox::renew_leases(tx, &jobs, now.plus(LEASE)))
                .expect("renew");
            held[worker].retain(|j| !lost.contains(&j.id));
        }
        Op::Die(worker) => held[worker].clear(),
        Op::RetryAll => {
            store.retry_all_failed().expect("retry all");
        }
        Op::Retry(site) => {
            if let Some(id) = job_id(store, site) {
                // Refused for a job in flight or done: that is the contract, not a failure.
                let _ = store.retry_jobs(&[id]);
            }
        }
        Op::Categorize { site, category } => {
            if store
                .set_user_category(&domain(site), CATEGORIES[category])
                .is_ok()
            {
                model.user.insert(domain(site), CATEGORIES[category]);
            }
        }
        Op::Reclassify(site) => {
            if store.reclassify(&domain(site)).is_ok() {
                model.user.remove(&domain(site));
            }
        }
        Op::Clock(secs) => {
            let d = Duration::from_secs(secs.unsigned_abs());
            clock.set(if secs >= 0 { now.plus(d) } else { now.minus(d) });
        }
    }
}

fn job_id(store: &Store, site: usize) -> Option<OutboxId> {
    store
        .with_conn(|c| {
            Ok(c.query_row(
                "SELECT o.id FROM website_category_classification_outbox o JOIN website w ON w.id = o.website_id
                 WHERE w.domain = ?1",
                [domain(site)],
                |r| r.get(0),
            )
            .ok())
        })
        .unwrap()
}

/// Lets time pass and has a fresh worker take everything: every job must end COMPLETED or FAILED.
fn drain(store: &Store, clock: &ManualClock, model: &mut Model) -> Result<(), TestCaseError> {
    let drainer = WorkerId::new();
    for round in 0..(4 * SITES * MAX_ATTEMPTS as usize) {
        // Past every lease and retry time, including ones written before the clock was moved
        // back (a lease taken at t and a clock set back by more than the longest retry would
        // otherwise still be running: [Visit(0), Claim, Clock(-602)]).
        let base = store.now().max(latest_stored_time(store));
        clock.set(base.plus(LEASE + LONGEST_RETRY + Duration::from_secs(1)));
        let now = store.now();
        let processing = rows(store).iter().filter(|r| r.1 == "PROCESSING").count();
        let got = store
            .write(None, |tx| outbox::claim_jobs(tx, now, policy(SITES, drainer)))
            .expect("claim");
        // Once the leases ran out, every PROCESSING job was taken (or ended FAILED).
        prop_assert!(
            rows(store).iter().filter(|r| r.1 == "PROCESSING").count() <= got.len(),
            "round {}: {} jobs stayed PROCESSING past their lease",
            round,
            processing
        );
        if got.is_empty() {
            break;
        }
        for job in &got {
            let verdict = job
                .existing_category
                .is_none()
                .then_some((Category::Other, CategorySource::Ai));
            store
                .write(None, |tx| outbox::complete_job(tx, job, verdict, now))
                .expect("complete");
        }
        check(store, model, "drain")?;
    }
    for r in rows(store) {
        prop_assert!(r.1 == "COMPLETED" || r.1 == "FAILED", "{} ended {}", r.0, r.1);
    }
    Ok(())
}

/// The latest time stored on any job (attempt, retry, lease).
fn latest_stored_time(store: &Store) -> Timestamp {
    store
        .with_conn(|c| {
            Ok(c.query_row(
                "SELECT max(max(coalesce(attempted_at, 0), coalesce(next_attempt_at, 0),
                                coalesce(lease_until, 0)))
                 FROM website_category_classification_outbox",
                [],
                |r| r.get::<_, Option<i64>>(0),
            )?)
        })
        .unwrap()
        .map_or(Timestamp(0), Timestamp)
}

fn manual_store(db: &TempDb, start: Timestamp) -> (Store, ManualClock) {
    let clock = ManualClock::new(start);
    let store = Store::open_with(
        &db.path,
        StoreOptions {
            clock: Arc::new(clock.clone()),
            ..StoreOptions::default()
        },
    )
    .expect("open store");
    (store, clock)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(48), ..ProptestConfig::default() })]

    #[test]
    fn the_outbox_keeps_its_promises_under_any_sequence_of_operations(ops in prop::collection::vec(op(), 1..60)) {
        let db = TempDb::new();
        let (store, clock) = manual_store(&db, Timestamp::now());
        let ids: Vec<WorkerId> = (0..WORKERS).map(|_| WorkerId::new()).collect();
        let mut held: Vec<Vec<ClaimedJob>> = vec![Vec::new(); WORKERS];
        let mut model = Model::default();
        for (i, op) in ops.iter().enumerate() {
            apply(&store, &clock, &mut held, &ids, &mut model, op);
            check(&store, &mut model, &format!("step {i} {op:?}"))?;
        }
        drain(&store, &clock, &mut model)?;
    }
}

/// A sequence proptest found once: a job claimed, then the clock set back by more than the
/// longest retry. Its lease is still running when the drain starts; the drain must wait it out.
#[test]
fn a_lease_taken_before_the_clock_moved_back_is_waited_out_and_the_job_drained() {
    let db = TempDb::new();
    let (store, clock) = manual_store(&db, Timestamp::now());
    let ids: Vec<WorkerId> = (0..WORKERS).map(|_| WorkerId::new()).collect();
    let mut held: Vec<Vec<ClaimedJob>> = vec![Vec::new(); WORKERS];
    let mut model = Model::default();
    let ops = [Op::Visit(0), Op::Claim { worker: 0, limit: 1 }, Op::Clock(-602)];
    for (i, op) in ops.iter().enumerate() {
        apply(&store, &clock, &mut held, &ids, &mut model, op);
        check(&store, &mut model, &format!("step {i} {op:?}")).unwrap();
    }
    drain(&store, &clock, &mut model).unwrap();
}

/// What the user does while real workers run.
#[derive(Clone, Debug)]
enum UserOp {
    Visit(usize),
    Categorize(usize, usize),
    Reclassify(usize),
    RetryAll,
    Clock(i64),
    KillWorker,
}

fn user_op() -> impl Strategy<Value = UserOp> {
    prop_oneof![
        4 => (0..SITES * 2).prop_map(UserOp::Visit),
        2 => (0..SITES * 2, 0..CATEGORIES.len()).prop_map(|(s, c)| UserOp::Categorize(s, c)),
        1 => (0..SITES * 2).prop_map(UserOp::Reclassify),
        1 => Just(UserOp::RetryAll),
        2 => prop_oneof![-3_600i64..3_600, -100_000i64..100_000].prop_map(UserOp::Clock),
        1 => Just(UserOp::KillWorker),
    ]
}

fn thread_worker(store: &Store) -> Worker {
    // A slow built-in classifier that crashes on one site: the supervisor must cope.
    let slow = Arc::new(WithLatency::new(Arc::new(Builtin), Duration::from_millis(2)));
    let classifier = Arc::new(PanicsOn::new(slow, domain(SITES)));
    let config = WorkerConfig {
        fixed_delay: Duration::from_millis(1),
        retry: RetryPolicy::fixed(Duration::from_millis(5)),
        processing_timeout: Duration::from_millis(300),
        max_attempts: MAX_ATTEMPTS,
        batch_size: 2,
        pause_poll: Duration::from_millis(5),
        crash_backoff_first: Duration::from_millis(2),
        crash_backoff_max: Duration::from_millis(10),
        ..WorkerConfig::default()
    };
    Worker::new(store.clone(), classifier, config).expect("worker")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(6), ..ProptestConfig::default() })]

    #[test]
    fn real_workers_on_threads_keep_the_promises_while_the_user_acts(ops in prop::collection::vec(user_op(), 1..25)) {
        let db = TempDb::new();
        let (store, clock) = manual_store(&db, Timestamp::now());
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(3).enable_all().build().unwrap();
        let mut model = Model::default();
        let mut tasks: Vec<tokio::task::JoinHandle<sitetrail::Result<()>>> = Vec::new();
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        for _ in 0..WORKERS {
            tasks.push(rt.spawn(thread_worker(&store).run(stop_rx.clone(), false)));
        }
        for (i, op) in ops.iter().enumerate() {
            match *op {
                UserOp::Visit(site) => record(&store, site),
                UserOp::Categorize(site, c) => {
                    if store.set_user_category(&domain(site), CATEGORIES[c]).is_ok() {
                        model.user.insert(domain(site), CATEGORIES[c]);
                    }
                }
                UserOp::Reclassify(site) => {
                    if store.reclassify(&domain(site)).is_ok() {
                        model.user.remove(&domain(site));
                    }
                }
                UserOp::RetryAll => { store.retry_all_failed().unwrap(); }
                UserOp::Clock(secs) => {
                    let d = Duration::from_secs(secs.unsigned_abs());
                    let now = store.now();
                    clock.set(if secs >= 0 { now.plus(d) } else { now.minus(d) });
                }
                UserOp::KillWorker => {
                    // A worker dies where it stands (its jobs keep their lease), and a new one starts.
                    if let Some(t) = tasks.pop() { t.abort(); }
                    tasks.push(rt.spawn(thread_worker(&store).run(stop_rx.clone(), false)));
                }
            }
            check(&store, &mut model, &format!("step {i} {op:?}"))?;
            std::thread::sleep(Duration::from_millis(3));
        }
        let _ = stop.send(true);
        for t in tasks {
            let _ = rt.block_on(t);
        }
        // Whatever the dead workers left is reclaimed once time passes; then a worker drains all,
        // the clock moving a second every poll so that leases run out and retries come due.
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let drain = rt.spawn(thread_worker(&store).run(rx, true));
        let drained = wait_for(Duration::from_secs(30), || {
            clock.advance(Duration::from_secs(1));
            drain.is_finished()
        });
        prop_assert!(drained, "the drain did not finish: {:?}", rows(&store));
        rt.block_on(drain).unwrap().unwrap();
        check(&store, &mut model, "drained")?;
        for r in rows(&store) {
            prop_assert!(r.1 == "COMPLETED" || r.1 == "FAILED", "{} ended {}", r.0, r.1);
        }
        let crashed = rows(&store).into_iter().find(|r| r.0 == domain(SITES));
        if let Some(r) = crashed {
            if !model.user.contains_key(&r.0) && r.1 == "FAILED" {
                prop_assert_eq!(r.2, i64::from(MAX_ATTEMPTS), "the crashing site used its attempts");
            }
        }
    }
}

#[test]
fn real_worker_processes_killed_mid_run_keep_the_promises() {
    let db = TempDb::new();
    let store = db.open();
    let mut model = Model::default();
    let sites = 12;
    let spawn = || {
        cli(&db.path)
            .args([
                "worker",
                "--fixed-delay-ms",
                "1",
                "--simulate-latency-ms",
                "20",
                "--processing-timeout-ms",
                "300",
                "--max-attempts",
                "3",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut workers: Vec<std::process::Child> = (0..3).map(|_| spawn()).collect();
    let mut rng = fastrand::Rng::with_seed(8);
    for step in 0..30 {
        let site = rng.usize(0..sites);
        match rng.u8(0..10) {
            0..=4 => {
                run_ok(cli(&db.path).args(["visit", &format!("https://{}/", domain(site))]));
            }
            5 | 6 => {
                let c = CATEGORIES[rng.usize(0..CATEGORIES.len())];
                if cli(&db.path)
                    .args(["categorize", &domain(site), c.id()])
                    .output()
                    .unwrap()
                    .status
                    .success()
                {
                    model.user.insert(domain(site), c);
                }
            }
            7 => {
                if cli(&db.path)
                    .args(["reclassify", &domain(site)])
                    .output()
                    .unwrap()
                    .status
                    .success()
                {
                    model.user.remove(&domain(site));
                }
            }
            8 => {
                run_ok(cli(&db.path).args(["retry", "--all-failed"]));
            }
            _ => {
                // kill -9 a worker (mid-job if it holds one) and start another.
                let mut w = workers.remove(rng.usize(0..workers.len()));
                w.kill().unwrap();
                w.wait().unwrap();
                workers.push(spawn());
            }
        }
        check(&store, &mut model, &format!("process step {step}")).unwrap();
    }
    for mut w in workers {
        w.kill().unwrap();
        w.wait().unwrap();
    }
    // Every job a killed worker held is reclaimed after its lease; a last worker drains them all.
    run_ok(cli(&db.path).args([
        "worker",
        "--until-idle",
        "--fixed-delay-ms",
        "1",
        "--processing-timeout-ms",
        "300",
        "--max-attempts",
        "3",
    ]));
    check(&store, &mut model, "drained").unwrap();
    for r in rows(&store) {
        assert!(r.1 == "COMPLETED" || r.1 == "FAILED", "{} ended {}", r.0, r.1);
        assert!(r.2 <= 3, "{} has {} attempts", r.0, r.2);
    }
}

/// A job's place in the claim's order of due jobs: its last attempt, then its id.
type DueKey = (i64, Vec<u8>);

/// The jobs due again now (a retry whose time has come, a lease that has run out), each with its
/// key.
fn due_jobs(store: &Store, now: Timestamp) -> Vec<DueKey> {
    store
        .with_conn(|c| {
            let mut stmt = c.prepare(
                "SELECT attempted_at, id FROM website_category_classification_outbox
                 WHERE (status = 'PENDING' AND attempted_at IS NOT NULL
                        AND coalesce(next_attempt_at, attempted_at) <= ?1)
                    OR (status = 'PROCESSING' AND lease_until <= ?1)",
            )?;
            let rows = stmt.query_map([now.as_micros()], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<DueKey>>>()?)
        })
        .unwrap()
}

/// The unfinished jobs (PENDING or PROCESSING) attempted no later than `key`, `key`'s own
/// included: the only jobs a claim can take as the oldest due job before it.
fn ahead_of(store: &Store, key: &DueKey) -> usize {
    store
        .with_conn(|c| {
            Ok(c.query_row(
                "SELECT count(*) FROM website_category_classification_outbox
                 WHERE status IN ('PENDING', 'PROCESSING') AND attempted_at IS NOT NULL
                   AND (attempted_at < ?1 OR (attempted_at = ?1 AND id <= ?2))",
                rusqlite::params![key.0, key.1],
                |r| r.get::<_, i64>(0),
            )?)
        })
        .unwrap() as usize
}

/// True while job `id` still waits with the attempt it had when it came due.
fn is_still_due(store: &Store, id: &[u8], attempted: i64) -> bool {
    store
        .with_conn(|c| {
            Ok(c.query_row(
                "SELECT count(*) FROM website_category_classification_outbox
                 WHERE id = ?1 AND status IN ('PENDING', 'PROCESSING') AND attempted_at = ?2",
                rusqlite::params![id, attempted],
                |r| r.get::<_, i64>(0),
            )?)
        })
        .unwrap()
        == 1
}

fn never_attempted(store: &Store) -> usize {
    store
        .with_conn(|c| {
            Ok(c.query_row(
                "SELECT count(*) FROM website_category_classification_outbox
                 WHERE status = 'PENDING' AND attempted_at IS NULL",
                [],
                |r| r.get::<_, i64>(0),
            )?)
        })
        .unwrap() as usize
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(12), ..ProptestConfig::default() })]

    /// A live browsing session: every tick more new websites arrive than a claim takes, so new
    /// work never runs out, while claimed jobs are completed, fail (retry due later) or are left
    /// by a worker that died (lease runs out). The bound: a job due when a claim runs is taken
    /// (claimed, or FAILED at its last attempt) within as many claims as there are unfinished
    /// jobs attempted no later than it, counted then. Every claim takes the oldest due job, and a
    /// claimed job's new attempt time puts it behind, so each of those takes at most one claim.
    /// New work still comes first: a claim of `limit` takes at least `limit - 1` new jobs while
    /// that many wait.
    #[test]
    fn under_a_steady_stream_of_new_websites_every_due_job_is_taken_within_its_bound(
        limit in 1..4usize,
        extra in 1..4usize,
        seed in any::<u64>(),
    ) {
        let db = TempDb::new();
        let (store, clock) = manual_store(&db, Timestamp::now());
        let worker = WorkerId::new();
        let mut rng = fastrand::Rng::with_seed(seed);
        let tick = Duration::from_secs(10);
        // Each due job, the claim by which it must have been taken.
        let mut deadlines: HashMap<Vec<u8>, (DueKey, usize)> = HashMap::new();
        let mut site = 0;
        let mut took_due = 0;
        for claim in 0..80usize {
            clock.advance(tick);
            let now = store.now();
            for _ in 0..limit + extra {
                store
                    .record_visit(&NewVisit {
                        url: &format!("https://new{site}.example/"),
                        title: None,
                        visited_at: now,
                        source: "model",
                        source_visit_id: None,
                    })
                    .expect("record visit");
                site += 1;
            }
            for key in due_jobs(&store, now) {
                let ahead = ahead_of(&store, &key);
                deadlines.entry(key.1.clone()).or_insert((key, claim + ahead));
            }
            let waiting_new = never_attempted(&store);
            let got = store
                .write(None, |tx| outbox::claim_jobs(tx, now, policy(limit, worker)))
                .expect("claim");
            let new = got.iter().filter(|j| j.previous_attempted_at.is_none()).count();
            prop_assert!(
                new + 1 >= limit.min(waiting_new + 1),
                "claim {}: {} new jobs of {} while {} waited", claim, new, limit, waiting_new
            );
            took_due += got.len() - new;
            // A due job is taken once its attempt time moved on or it ended FAILED.
            let still: Vec<(Vec<u8>, usize)> = deadlines
                .iter()
                .filter(|(id, ((attempted, _), _))| is_still_due(&store, id, *attempted))
                .map(|(id, (_, by))| (id.clone(), *by))
                .collect();
            deadlines.retain(|id, _| still.iter().any(|(s, _)| s == id));
            for (id, by) in &still {
                prop_assert!(
                    claim < *by,
                    "claim {}: a due job that had to be taken by claim {} still waits ({:?})", claim, by, id
                );
            }
            for job in got {
                let store = &store;
                match rng.u8(0..10) {
                    0..=4 => {
                        store
                            .write(None, |tx| {
                                outbox::complete_job(tx, &job, Some((Category::Other, CategorySource::Ai)), now)
                            })
                            .expect("complete");
                    }
                    5..=7 => {
                        let retry_at = now.plus(Duration::from_secs(rng.u64(0..120)));
                        store
                            .write(None, |tx| outbox::fail_job(tx, &job, "model failure", MAX_ATTEMPTS, now, retry_at))
                            .expect("fail");
                    }
                    // The worker dies holding the job: its lease runs out.
                    _ => {}
                }
            }
        }
        prop_assert!(took_due > 0, "the scenario never had a due job to take");
    }
}
