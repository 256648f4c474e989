//! The never-record list: refused by every path that records (record_visit, the CLI, imports),
//! never sent to a classifier, and reversible.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use sitetrail::category::{Category, CategorySource};
use sitetrail::classify::{Classifier, ClassifyError, DomainOutcome, Verdict};
use sitetrail::forget::ForgetOptions;
use sitetrail::import::Browser;
use sitetrail::worker::{RetryPolicy, Worker, WorkerConfig};
use sitetrail::{Error, Store};
use tokio::sync::watch;

use crate::support::import::{copy_fixture, import, visits_per_website};
use crate::support::{cli, count, run_ok, try_visit, visit, TempDb};

/// Remembers every domain it is asked about.
#[derive(Default)]
struct Recorder(Mutex<HashSet<String>>);

#[async_trait]
impl Classifier for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }

    async fn classify(&self, domains: &[String]) -> Result<Vec<DomainOutcome>, ClassifyError> {
        self.0.lock().unwrap().extend(domains.iter().cloned());
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

async fn drain(store: &Store, classifier: Arc<Recorder>) {
    let config = WorkerConfig {
        fixed_delay: Duration::ZERO,
        retry: RetryPolicy::fixed(Duration::ZERO),
        ..WorkerConfig::default()
    };
    let worker = Worker::new(store.clone(), classifier, config).unwrap();
    let (_tx, rx) = watch::channel(false);
    tokio::time::timeout(Duration::from_secs(20), worker.run(rx, true))
        .await
        .expect("worker drains in time")
        .unwrap();
}

fn live_jobs(store: &Store, domain: &str) -> i64 {
    store
        .with_conn(|c| {
            Ok(c.query_row(
                r#"SELECT count(*) FROM website_category_classification_outbox o
                   JOIN website w ON w.id = o.website_id
                   WHERE w.domain = ?1 AND o.status <> 'COMPLETED'"#,
                [domain],
                |r| r.get(0),
            )?)
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_domain_is_refused_everywhere_and_never_reaches_a_classifier() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://tracker.example/a");
    visit(&store, "https://mail.tracker.example/inbox");
    visit(&store, "https://fine.example/");
    assert_eq!(live_jobs(&store, "mail.tracker.example"), 1);

    // Forget the website and block it (and its subdomains).
    let report = store
        .forget_website("tracker.example", true, &ForgetOptions::default(), &mut |_| {})
        .unwrap();
    assert_eq!(report.blocked.as_deref(), Some("tracker.example"));
    assert_eq!((report.visits, report.websites), (1, 1));
    // The subdomain keeps its history but its job is settled: nobody will classify it.
    assert_eq!(live_jobs(&store, "mail.tracker.example"), 0);
    assert!(store.website("mail.tracker.example").is_ok());

    for url in [
        "https://tracker.example/again",
        "https://WWW.TRACKER.EXAMPLE/x",
        "https://deep.sub.tracker.example/",
    ] {
        match try_visit(&store, url) {
            Err(Error::Blocked { blocked, .. }) => assert_eq!(blocked, "tracker.example"),
            other => panic!("{url} was not refused: {other:?}"),
        }
    }
    try_visit(&store, "https://nottracker.example/").expect("a different domain");
    assert!(matches!(
        store.reclassify("mail.tracker.example"),
        Err(Error::Blocked { .. })
    ));

    let seen = Arc::new(Recorder::default());
    drain(&store, seen.clone()).await;
    let seen = seen.0.lock().unwrap().clone();
    assert!(
        seen.contains("fine.example") && seen.contains("nottracker.example"),
        "{seen:?}"
    );
    assert!(
        !seen
            .iter()
            .any(|d| d.ends_with("tracker.example") && d != "nottracker.example"),
        "a blocked domain reached the classifier: {seen:?}"
    );

    // The CLI's `visit` refuses it with exit code 1 and says why.
    let out = cli(&db.path)
        .args(["visit", "https://tracker.example/cli"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tracker.example is blocked"), "{err}");
    assert_eq!(count(&store, "visit"), 3, "mail, fine, nottracker");
}

#[test]
fn imports_skip_blocked_domains() {
    let db = TempDb::new();
    let store = db.open();
    store.block_domain("news.example.com").unwrap();
    store.block_domain("example.org").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    let report = import(&store, Browser::Chrome, &history).unwrap();
    // From the fixture (tests/import/fixtures.rs): news.example.com 4, mail.example.org 1,
    // shop.example.org 2.
    assert_eq!(report.skipped.blocked, 7);
    assert_eq!(report.imported, 18 - 7);
    let sites: Vec<String> = visits_per_website(&store).into_iter().map(|(d, _)| d).collect();
    assert!(
        !sites
            .iter()
            .any(|d| d.ends_with("example.org") || d == "news.example.com"),
        "{sites:?}"
    );
}

#[test]
fn unblocking_records_and_classifies_the_domain_again() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://later.example/");
    assert!(store.block_domain("later.example").unwrap());
    assert!(
        !store.block_domain("LATER.example").unwrap(),
        "already on the list"
    );
    assert_eq!(live_jobs(&store, "later.example"), 0);
    assert_eq!(store.blocked_domains().unwrap()[0].domain, "later.example");
    assert!(store.unblock_domain("later.example").unwrap());
    assert!(!store.unblock_domain("later.example").unwrap());
    assert_eq!(live_jobs(&store, "later.example"), 1, "queued again");
    visit(&store, "https://later.example/again");

    // The CLI: add, list, remove.
    run_ok(cli(&db.path).args(["blocked", "add", "ads.example"]));
    let list = run_ok(cli(&db.path).args(["blocked", "--json"]));
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list[0]["domain"], "ads.example");
    assert!(try_visit(&store, "https://x.ads.example/").is_err());
    run_ok(cli(&db.path).args(["blocked", "remove", "ads.example"]));
    assert!(run_ok(cli(&db.path).args(["blocked"])).contains("no blocked domains"));
    try_visit(&store, "https://x.ads.example/").expect("recorded again");
}

/// The browser extension's host goes through `record_visit_in`: a blocked domain or a forgotten
/// time is rejected alone (the extension drops it) and does not hold up the rest of its batch.
#[test]
fn the_capture_host_drops_blocked_and_forgotten_visits_and_stores_the_rest() {
    use sitetrail::capture::events::store_events;
    let db = TempDb::new();
    let store = db.open();
    store.block_domain("tracker.example").unwrap();
    let now_ms = store.now().as_micros() / 1000;
    let forgotten_at = store.now().minus(Duration::from_secs(600));
    store
        .forget_range(
            forgotten_at.minus(Duration::from_secs(60)),
            forgotten_at.plus(Duration::from_secs(60)),
            &ForgetOptions::default(),
            &mut |_| {},
        )
        .unwrap();
    let ev = |id: &str, url: &str, at_ms: i64| serde_json::json!({"id": id, "kind": "visit", "url": url, "title": "A page", "at": at_ms});
    let outcome = store_events(
        &store,
        "extension:chromium",
        &[
            ev("e1", "https://ads.tracker.example/pixel", now_ms),
            ev("e2", "https://fine.example/", now_ms),
            ev(
                "e3",
                "https://fine.example/queued",
                forgotten_at.as_micros() / 1000,
            ),
        ],
    )
    .unwrap();
    assert_eq!(outcome.stored, ["e2"], "{outcome:?}");
    let rejected: Vec<&str> = outcome
        .rejected
        .iter()
        .map(|r| r.id.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(rejected, ["e1", "e3"]);
    assert!(outcome.rejected[0].reason.contains("blocked"), "{outcome:?}");
    assert!(outcome.rejected[1].reason.contains("forget"), "{outcome:?}");
    assert_eq!(count(&store, "visit"), 1);
}

#[test]
fn a_block_pattern_blocks_what_it_says_or_is_refused() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://old.wild.test/");
    // `*.wild.test` is the exclusion list's way to write "wild.test and everything under it".
    let out = run_ok(cli(&db.path).args(["blocked", "add", "*.wild.test"]));
    assert!(out.contains("wild.test and its subdomains are blocked"), "{out}");
    for url in ["https://wild.test/", "https://a.b.wild.test/x"] {
        assert!(
            matches!(try_visit(&store, url), Err(Error::Blocked { .. })),
            "{url}"
        );
    }
    assert_eq!(
        live_jobs(&store, "old.wild.test"),
        0,
        "its recorded subdomain is settled"
    );
    // Patterns that could match nothing are refused, and nothing is added.
    for bad in ["a..b", "a*.test", "*.", "*.*.test", "wild.*"] {
        let out = cli(&db.path).args(["blocked", "add", bad]).output().unwrap();
        assert!(!out.status.success(), "{bad} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.is_empty() && !err.contains("panicked"), "{bad}: {err}");
    }
    let list: Vec<String> = store
        .blocked_domains()
        .unwrap()
        .into_iter()
        .map(|b| b.domain)
        .collect();
    assert_eq!(list, ["wild.test"]);
    run_ok(cli(&db.path).args(["blocked", "remove", "*.wild.test"]));
    assert!(try_visit(&store, "https://wild.test/").is_ok());
}

#[test]
fn an_ipv4_mapped_ipv6_host_is_its_ipv4_host_for_blocking_exclusions_and_forgetting() {
    let db = TempDb::new();
    let store = db.open();
    let mapped = visit(&store, "http://[::ffff:127.0.0.1]:8080/a");
    assert_eq!(mapped.domain, "127.0.0.1");
    store.block_domain("127.0.0.1").unwrap();
    assert!(matches!(
        try_visit(&store, "http://[::ffff:7f00:1]/b"),
        Err(Error::Blocked { .. })
    ));
    store.unblock_domain("[::ffff:127.0.0.1]").unwrap();
    assert!(
        store.blocked_domains().unwrap().is_empty(),
        "one host: unblocked by either form"
    );
    let ex = sitetrail::classify::privacy::Exclusions::parse(&["127.0.0.1"]).unwrap();
    assert!(ex.matches("[::ffff:127.0.0.1]"));
    // Forgetting the website by either form forgets the visits of both.
    visit(&store, "http://127.0.0.1/c");
    run_ok(cli(&db.path).args(["forget", "website", "[::ffff:127.0.0.1]", "--yes"]));
    assert_eq!(count(&store, "visit"), 0);
}

#[test]
fn a_wildcard_entry_stored_by_an_older_version_blocks_what_it_said_after_the_upgrade() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://a.legacy.test/");
    // What `blocked add '*.legacy.test'` stored before patterns were parsed, with the migration
    // that mends it not yet run.
    crate::support::exec(
        &store,
        "INSERT INTO blocked_domain (domain, blocked_at) VALUES ('*.legacy.test', 1), ('a*.bad.test', 1);
         DELETE FROM schema_migrations WHERE name = 'block_patterns';",
    );
    drop(store);
    let store = db.open();
    let list: Vec<String> = store
        .blocked_domains()
        .unwrap()
        .into_iter()
        .map(|b| b.domain)
        .collect();
    assert_eq!(list, ["legacy.test"]);
    assert!(matches!(
        try_visit(&store, "https://b.legacy.test/"),
        Err(Error::Blocked { .. })
    ));
    assert_eq!(live_jobs(&store, "a.legacy.test"), 0);
}
