//! Engine benchmark: prints the figures issue 2 asks for, measured in one run so they can be
//! compared as ratios.
//!
//! (a) trivial write transactions per second with the store's pragmas (the floor any design pays)
//!     and the same announcing three kinds of change: what the change counters (`store_changes`,
//!     bumped in the transaction) cost a write
//! (b) `record_visit` per second (and, in the same rounds, on a database without the search index:
//!     what the index costs a live visit)
//! (c) claim + complete per second through the worker, no-op classifier, zero delay
//! (d) the cost of one claim with 1,000 and with 1,000,000 outbox rows (mostly COMPLETED)
//!
//! (a), (b) and (c) run in alternating rounds and each round's ratio is taken, so that load from
//! other processes on the machine hits all three alike; the figures are medians over the rounds.
//!
//! Run: `cargo bench --bench engine` (`-- --quick` for a smaller run; `-- b` to run (a)+(b) only).

// A benchmark is a tool run by hand: it may panic on a broken setup and prints its figures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_possible_truncation
)]
#![allow(unsafe_code)]

#[path = "support/no_index.rs"]
mod no_index;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rusqlite::TransactionBehavior;
use sitetrail::category::{Category, CategorySource};
use sitetrail::classify::{Classifier, ClassifyError, DomainOutcome, Verdict};
use sitetrail::ids::VisitId;
use sitetrail::outbox::{self, ClaimPolicy};
use sitetrail::worker::{RetryPolicy, Worker, WorkerConfig};
use sitetrail::{Change, Changes, NewVisit, Store, Timestamp};

struct Noop;

#[async_trait]
impl Classifier for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    async fn classify(&self, domains: &[String]) -> Result<Vec<DomainOutcome>, ClassifyError> {
        Ok(domains
            .iter()
            .map(|_| {
                Ok(Verdict {
                    category: Category::Other,
                    source: CategorySource::Ai,
                    confidence: sitetrail::Confidence::Medium,
                })
            })
            .collect())
    }
}

fn fresh_store(dir: &tempfile::TempDir, name: &str) -> Store {
    Store::open(dir.path().join(name)).expect("open")
}

/// A store with the table (a) writes to.
fn write_store(dir: &tempfile::TempDir, name: &str) -> Store {
    let store = fresh_store(dir, name);
    store
        .with_conn(|c| {
            c.execute_batch(
                "CREATE TABLE bench_write (id BLOB PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID",
            )?;
            Ok(())
        })
        .unwrap();
    store
}

/// (a): one tiny row per `BEGIN IMMEDIATE` transaction, through the same pool and pragmas,
/// announcing `changes` ((a'): the three kinds a new website's visit announces, so the
/// transaction also bumps their counters in `store_changes`).
fn trivial_write(store: &Store, i: usize, changes: Changes) {
    store
        .write(changes, |tx| {
            tx.prepare_cached("INSERT INTO bench_write (id, n) VALUES (?1, ?2)")?
                .execute(rusqlite::params![VisitId::new(), i as i64])?;
            Ok(())
        })
        .unwrap();
}

/// (b): one live visit; one in ten is to a domain not seen before.
fn record_visit(store: &Store, i: usize) {
    let host = if i % 10 == 0 { i } else { i % 997 };
    let url = format!("https://www.host{host}.example.com/articles/{i}?ref=feed");
    store
        .record_visit(&NewVisit {
            url: &url,
            title: Some("An article about something"),
            visited_at: Timestamp::now(),
            source: "bench",
            source_visit_id: None,
        })
        .unwrap();
}

fn seed_jobs(store: &Store, first: usize, jobs: usize) {
    for i in first..first + jobs {
        store
            .record_visit(&NewVisit {
                url: &format!("https://job{i}.example/"),
                title: None,
                visited_at: Timestamp::now(),
                source: "bench",
                source_visit_id: None,
            })
            .unwrap();
    }
}

/// CPU time used by this process so far (all threads), in seconds.
fn cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; the clock id is a constant.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Claims one job and completes it: the worker's two transactions, without the runtime.
fn claim_and_complete(store: &Store) {
    let policy = ClaimPolicy {
        limit: 1,
        processing_timeout: Duration::from_secs(300),
        ..ClaimPolicy::default()
    };
    let now = store.now();
    let jobs = store
        .write(None, |tx| outbox::claim_jobs(tx, now, policy))
        .unwrap();
    assert_eq!(jobs.len(), 1);
    let verdict = Some((Category::Other, CategorySource::Ai));
    let done = store
        .write(None, |tx| outbox::complete_job(tx, &jobs[0], verdict, now))
        .unwrap();
    assert_eq!(done, outbox::WriteOutcome::Applied);
}

/// Runs `ops` calls of `f`; returns (operations per wall-clock second, per CPU second).
fn rate(ops: usize, mut f: impl FnMut(usize)) -> (f64, f64) {
    let (start, cpu) = (Instant::now(), cpu_seconds());
    for i in 0..ops {
        f(i);
    }
    (
        ops as f64 / start.elapsed().as_secs_f64(),
        ops as f64 / (cpu_seconds() - cpu),
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Fills the outbox with `rows` jobs: 1% PENDING (never attempted), the rest COMPLETED.
fn build_outbox(store: &Store, rows: usize) {
    store
        .with_conn(|c| {
            c.execute_batch(&format!(
                r#"BEGIN;
                   WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {rows})
                   INSERT INTO website (id, domain, created_at, version)
                   SELECT randomblob(16), 'site' || i || '.example', 1000 + i, 0 FROM n;
                   INSERT INTO website_category_classification_outbox
                       (id, website_id, status, attempt_count, attempted_at, created_at, version)
                   SELECT randomblob(16), id,
                          CASE WHEN created_at % 100 = 0 THEN 'PENDING' ELSE 'COMPLETED' END,
                          CASE WHEN created_at % 100 = 0 THEN 0 ELSE 1 END,
                          CASE WHEN created_at % 100 = 0 THEN NULL ELSE created_at END,
                          created_at, 0
                   FROM website;
                   COMMIT;
                   ANALYZE;"#
            ))?;
            Ok(())
        })
        .unwrap();
}

/// Mean time of one claim transaction (BEGIN IMMEDIATE, claim one job, ROLLBACK so the state
/// stays the same for the next round).
fn time_claim(store: &Store, rounds: usize) -> Duration {
    let policy = ClaimPolicy {
        limit: 1,
        processing_timeout: Duration::from_secs(300),
        ..ClaimPolicy::default()
    };
    let mut conn = store.conn().unwrap();
    let now = Timestamp::now();
    let start = Instant::now();
    for _ in 0..rounds {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        let jobs = outbox::claim_jobs(&tx, now, policy).unwrap();
        assert_eq!(jobs.len(), 1);
        tx.rollback().unwrap();
    }
    start.elapsed() / rounds as u32
}

/// Turns every PENDING job into an attempted one that is due, so the claim takes the retry path.
fn make_pending_retries(store: &Store) {
    store
        .with_conn(|c| {
            c.execute(
                "UPDATE website_category_classification_outbox
                 SET attempted_at = created_at, next_attempt_at = created_at, attempt_count = 1
                 WHERE status = 'PENDING'",
                [],
            )?;
            Ok(())
        })
        .unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let quick = args.iter().any(|a| a == "--quick");
    // `-- b` style filtering: the sections named run alone (for profiling); (a) always runs.
    let only: Vec<&str> = args.iter().filter(|a| a.len() == 1).map(String::as_str).collect();
    let want = |s: &str| only.is_empty() || only.contains(&s);
    let scale = if quick { 10 } else { 1 };
    let dir = tempfile::tempdir().unwrap();
    println!("engine benchmark ({} run)", if quick { "quick" } else { "full" });

    let rounds = 9;
    let ops = 2_000 / scale;
    let c_ops = ops / 2;
    let store_a = write_store(&dir, "a.db");
    let store_a2 = write_store(&dir, "a2.db");
    let store_b = fresh_store(&dir, "b.db");
    let store_b0 = fresh_store(&dir, "b0.db");
    no_index::drop_search_index(&store_b0).unwrap();
    let store_c = fresh_store(&dir, "c.db");
    if want("c") {
        seed_jobs(&store_c, 0, rounds * c_ops);
    }
    let config = WorkerConfig {
        fixed_delay: Duration::ZERO,
        retry: RetryPolicy::fixed(Duration::ZERO),
        ..WorkerConfig::default()
    };
    let store_w = fresh_store(&dir, "w.db");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (mut rw, mut cpu_w) = (vec![], vec![]);
    let (mut ra, mut rb, mut rc, mut ratio_b, mut ratio_c) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut cpu_b, mut cpu_c) = (vec![], vec![]);
    let (mut rb0, mut index_ratio, mut index_cpu_ratio) = (vec![], vec![], vec![]);
    let (mut ra2, mut counter_ratio, mut counter_cpu_ratio) = (vec![], vec![], vec![]);
    for round in 0..rounds {
        let a = rate(ops, |i| trivial_write(&store_a, round * ops + i, Changes::NONE));
        let a2 = rate(ops, |i| {
            trivial_write(
                &store_a2,
                round * ops + i,
                Change::Visits | Change::Websites | Change::Outbox,
            );
        });
        ra2.push(a2.0);
        counter_ratio.push(a2.0 / a.0);
        counter_cpu_ratio.push(a2.1 / a.1);
        let b = if want("b") {
            rate(ops, |i| record_visit(&store_b, round * ops + i))
        } else {
            (0.0, 0.0)
        };
        if want("b") {
            let b0 = rate(ops, |i| record_visit(&store_b0, round * ops + i));
            rb0.push(b0.0);
            index_ratio.push(b.0 / b0.0);
            index_cpu_ratio.push(b.1 / b0.1);
        }
        let c = if want("c") {
            // The worker's two transactions per job, called directly.
            rate(c_ops, |_| claim_and_complete(&store_c))
        } else {
            (0.0, 0.0)
        };
        if want("c") {
            // The same through the worker's loop (tokio, blocking-pool hops), draining c_ops jobs.
            seed_jobs(&store_w, round * c_ops, c_ops);
            let w = Worker::new(store_w.clone(), Arc::new(Noop), config.clone()).unwrap();
            let (_stop, stop_rx) = tokio::sync::watch::channel(false);
            let mut w = Some(w);
            let r = rate(1, |_| {
                rt.block_on(w.take().unwrap().run(stop_rx.clone(), true)).unwrap();
            });
            rw.push((r.0 * c_ops as f64) / a.0);
            cpu_w.push((r.1 * c_ops as f64) / a.1);
        }
        ra.push(a.0);
        rb.push(b.0);
        rc.push(c.0);
        ratio_b.push(b.0 / a.0);
        ratio_c.push(c.0 / a.0);
        cpu_b.push(b.1 / a.1);
        cpu_c.push(c.1 / a.1);
    }
    drop(rt);
    println!("{rounds} alternating rounds of {ops} (a), {ops} (b) and {c_ops} (c) operations; medians:");
    println!("(a) trivial write transactions: {:>8.0} /s", median(ra));
    println!(
        "    announcing three kinds (their change counters bumped): {:>8.0} /s = {:.0}% of (a) (per CPU second {:.0}%)",
        median(ra2),
        100.0 * median(counter_ratio),
        100.0 * median(counter_cpu_ratio)
    );
    if want("b") {
        println!(
        "(b) record_visit:               {:>8.0} /s   = {:.0}% of (a)  (target >= 70%); per CPU second {:.0}% of (a)",
        median(rb),
        100.0 * median(ratio_b),
        100.0 * median(cpu_b)
    );
        println!(
            "    record_visit without the search index: {:>8.0} /s; with it = {:.0}% of without (per CPU second {:.0}%)",
            median(rb0),
            100.0 * median(index_ratio),
            100.0 * median(index_cpu_ratio)
        );
    }
    if want("c") {
        println!(
        "(c) claim + complete:           {:>8.0} /s   = {:.0}% of (a)  (target >= 40%); per CPU second {:.0}% of (a)",
        median(rc),
        100.0 * median(ratio_c),
        100.0 * median(cpu_c)
    );
        println!(
            "    the same through Worker::run:            = {:.0}% of (a); per CPU second {:.0}% of (a)",
            100.0 * median(rw),
            100.0 * median(cpu_w)
        );
    }
    if !want("d") {
        return;
    }

    let big = if quick { 100_000 } else { 1_000_000 };
    let small_store = fresh_store(&dir, "d1.db");
    build_outbox(&small_store, 1_000);
    let big_store = fresh_store(&dir, "d2.db");
    let build = Instant::now();
    build_outbox(&big_store, big);
    println!(
        "    (built the {big}-row outbox in {:.1} s)",
        build.elapsed().as_secs_f64()
    );
    let claims = 2_000 / scale;
    let fresh_small = time_claim(&small_store, claims);
    let fresh_big = time_claim(&big_store, claims);
    make_pending_retries(&small_store);
    make_pending_retries(&big_store);
    let retry_small = time_claim(&small_store, claims);
    let retry_big = time_claim(&big_store, claims);
    let ratio = fresh_big.as_secs_f64() / fresh_small.as_secs_f64();
    let retry_ratio = retry_big.as_secs_f64() / retry_small.as_secs_f64();
    println!(
        "(d) one claim, never-attempted job: {:>6.1} us at 1,000 rows, {:>6.1} us at {big} rows = {ratio:.2}x  (target <= 1.5x)",
        fresh_small.as_secs_f64() * 1e6,
        fresh_big.as_secs_f64() * 1e6
    );
    println!(
        "    one claim, due retry:           {:>6.1} us at 1,000 rows, {:>6.1} us at {big} rows = {retry_ratio:.2}x",
        retry_small.as_secs_f64() * 1e6,
        retry_big.as_secs_f64() * 1e6
    );
}
