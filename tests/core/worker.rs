//! The worker in-process: draining, counting classifier calls, failures, graceful shutdown.
//!
//! Time is paused in these tests (tokio's clock, which the store's clock follows: a lease, a
//! delay, a grace period or a slow call passes in no real time), except where a real lock must
//! time out.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use sitetrail::category::{Category, CategorySource};
use sitetrail::classify::{Classifier, ClassifyError, DomainOutcome, Verdict};
use sitetrail::worker::{RetryPolicy, Worker, WorkerConfig};
use sitetrail::Store;
use tokio::sync::watch;

use crate::support::{exec, visit, wait_for, TempDb};

/// Counts calls per domain; answers `category`, fails with `error`, or hangs.
#[derive(Default)]
struct Fake {
    calls: Mutex<HashMap<String, usize>>,
    error: Option<ClassifyError>,
    hang: bool,
}

impl Fake {
    fn calls(&self, domain: &str) -> usize {
        self.calls.lock().unwrap().get(domain).copied().unwrap_or(0)
    }
}

#[async_trait]
impl Classifier for Fake {
    fn name(&self) -> &str {
        "fake"
    }

    async fn classify(&self, domains: &[String]) -> Result<Vec<DomainOutcome>, ClassifyError> {
        for d in domains {
            *self.calls.lock().unwrap().entry(d.clone()).or_default() += 1;
        }
        if self.hang {
            std::future::pending::<()>().await;
        }
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        Ok(domains
            .iter()
            .map(|d| {
                if d.starts_with("bad.") {
                    Err(format!("no category for {d}"))
                } else {
                    Ok(Verdict {
                        category: Category::News,
                        source: CategorySource::Ai,
                        confidence: sitetrail::Confidence::Medium,
                    })
                }
            })
            .collect())
    }
}

fn config() -> WorkerConfig {
    WorkerConfig {
        fixed_delay: Duration::ZERO,
        retry: RetryPolicy::fixed(Duration::ZERO),
        max_attempts: 3,
        ..WorkerConfig::default()
    }
}

async fn drain(store: &Store, fake: Arc<Fake>, config: WorkerConfig) {
    let worker = Worker::new(store.clone(), fake, config).unwrap();
    let (_tx, rx) = watch::channel(false);
    tokio::time::timeout(Duration::from_secs(20), worker.run(rx, true))
        .await
        .expect("worker drains in time")
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_worker_classifies_every_website_once() {
    let db = TempDb::new();
    let store = db.open_on_tokio_clock();
    for i in 0..20 {
        visit(&store, &format!("https://site{i}.example/"));
    }
    let fake = Arc::new(Fake::default());
    drain(&store, fake.clone(), config()).await;
    for i in 0..20 {
        assert_eq!(fake.calls(&format!("site{i}.example")), 1);
        let w = store.website(&format!("site{i}.example")).unwrap();
        assert_eq!(
            (
                w.category.map(sitetrail::Category::id),
                w.category_source.map(sitetrail::CategorySource::as_str)
            ),
            (Some("news"), Some("ai"))
        );
    }
    let s = store.queue_status().unwrap();
    assert_eq!((s.pending, s.processing, s.completed, s.failed), (0, 0, 20, 0));
}

#[tokio::test(start_paused = true)]
async fn a_website_with_a_category_is_completed_without_a_classifier_call() {
    let db = TempDb::new();
    let store = db.open_on_tokio_clock();
    visit(&store, "https://mine.example/");
    visit(&store, "https://other.example/");
    store.set_user_category("mine.example", Category::Games).unwrap();
    // Put the settled job back in the queue, as if the user had categorised while it waited.
    exec(
        &store,
        "UPDATE website_category_classification_outbox SET status = 'PENDING', version = version + 1",
    );
    let fake = Arc::new(Fake::default());
    drain(&store, fake.clone(), config()).await;
    assert_eq!(fake.calls("mine.example"), 0);
    assert_eq!(fake.calls("other.example"), 1);
    assert_eq!(
        store
            .website("mine.example")
            .unwrap()
            .category
            .map(sitetrail::Category::id),
        Some("games")
    );
    assert_eq!(store.queue_status().unwrap().completed, 2);
}

#[tokio::test(start_paused = true)]
async fn a_failing_job_is_failed_after_max_attempts_with_its_last_error_others_complete() {
    let db = TempDb::new();
    let store = db.open_on_tokio_clock();
    visit(&store, "https://bad.example/");
    visit(&store, "https://good.example/");
    let fake = Arc::new(Fake::default());
    drain(
        &store,
        fake.clone(),
        WorkerConfig {
            batch_size: 2,
            ..config()
        },
    )
    .await;
    assert_eq!(fake.calls("bad.example"), 3, "tried max_attempts times");
    assert_eq!(fake.calls("good.example"), 1);
    let failed = store.failed_jobs().unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].domain, "bad.example");
    assert_eq!(failed[0].attempt_count, 3);
    assert_eq!(
        failed[0].last_error_message.as_deref(),
        Some("no category for bad.example")
    );
}

#[tokio::test(start_paused = true)]
async fn a_transient_batch_failure_costs_an_attempt() {
    let db = TempDb::new();
    let store = db.open_on_tokio_clock();
    visit(&store, "https://a.example/");
    let fake = Arc::new(Fake {
        error: Some(ClassifyError::Transient("HTTP 503".into())),
        ..Fake::default()
    });
    drain(&store, fake.clone(), config()).await;
    let failed = store.failed_jobs().unwrap();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].attempt_count, 3);
    assert_eq!(failed[0].last_error_message.as_deref(), Some("HTTP 503"));
}

#[tokio::test(start_paused = true)]
async fn shutdown_gives_a_hung_job_back_without_costing_an_attempt() {
    let db = TempDb::new();
    let store = db.open_on_tokio_clock();
    visit(&store, "https://slow.example/");
    let fake = Arc::new(Fake {
        hang: true,
        ..Fake::default()
    });
    let worker = Worker::new(
        store.clone(),
        fake.clone(),
        WorkerConfig {
            shutdown_grace: Duration::from_millis(50),
            ..config()
        },
    )
    .unwrap();
    let handle = worker.spawn();
    let s2 = store.clone();
    let processing = tokio::task::spawn_blocking(move || {
        wait_for(Duration::from_secs(10), || {
            s2.queue_status().unwrap().processing == 1
        })
    })
    .await
    .unwrap();
    assert!(processing, "the job was never claimed");
    tokio::time::timeout(Duration::from_secs(5), handle.shutdown())
        .await
        .expect("shutdown ends")
        .unwrap();
    let s = store.queue_status().unwrap();
    assert_eq!((s.pending, s.processing), (1, 0));
    // The website kept its provisional built-in category; the job waits for the provider.
    let pending = store.website("slow.example").unwrap();
    assert_eq!(
        (
            pending.category.map(sitetrail::Category::id),
            pending.category_source.map(sitetrail::CategorySource::as_str)
        ),
        (
            Some(crate::support::builtin_answer("slow.example").0.as_str()),
            Some("builtin")
        )
    );
    let attempts: i64 = store
        .with_conn(|c| {
            Ok(c.query_row(
                "SELECT attempt_count FROM website_category_classification_outbox",
                [],
                |r| r.get(0),
            )?)
        })
        .unwrap();
    assert_eq!(attempts, 0);
}

#[tokio::test(start_paused = true)]
async fn shutdown_lets_a_quick_job_in_flight_finish() {
    let db = TempDb::new();
    let store = db.open_on_tokio_clock();
    visit(&store, "https://quick.example/");
    let slow: Arc<dyn Classifier> = Arc::new(sitetrail::classify::WithLatency::new(
        Arc::new(Fake::default()),
        Duration::from_millis(300),
    ));
    let worker = Worker::new(
        store.clone(),
        slow,
        WorkerConfig {
            shutdown_grace: Duration::from_secs(5),
            ..config()
        },
    )
    .unwrap();
    let handle = worker.spawn();
    let s2 = store.clone();
    assert!(
        tokio::task::spawn_blocking(move || wait_for(Duration::from_secs(10), || s2
            .queue_status()
            .unwrap()
            .processing
            == 1))
        .await
        .unwrap()
    );
    handle.shutdown().await.unwrap();
    assert_eq!(
        store.queue_status().unwrap().completed,
        1,
        "the job in flight finished"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_error_is_logged_and_retried_and_never_ends_the_worker() {
    let db = TempDb::new();
    let options = sitetrail::StoreOptions {
        busy_timeout: Duration::from_millis(50),
        ..sitetrail::StoreOptions::default()
    };
    let store = Store::open_with(&db.path, options).unwrap();
    visit(&store, "https://locked.example/");
    // Another connection holds the write lock: every claim fails with "database is busy".
    let locker = rusqlite::Connection::open(&db.path).unwrap();
    locker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let fake = Arc::new(Fake::default());
    let worker = Worker::new(store.clone(), fake.clone(), config()).unwrap();
    let (_stop, stop_rx) = watch::channel(false);
    let run = tokio::spawn(worker.run(stop_rx, true));
    // What is tested is that nothing happens: no event says "the worker tried and carried on",
    // so the worker gets a window of several of its retries (busy after 50 ms each).
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(!run.is_finished(), "a busy database ended the worker");
    assert_eq!(
        fake.calls("locked.example"),
        0,
        "nothing can be claimed while the lock is held"
    );
    locker.execute_batch("COMMIT").unwrap();
    let result = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("the worker drains the queue once the lock is free")
        .unwrap();
    result.unwrap();
    assert_eq!(fake.calls("locked.example"), 1);
    assert!(store.website("locked.example").unwrap().category.is_some());
}
