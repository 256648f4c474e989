//! Local first (issue 11): every website gets a built-in category at once, whatever the remote
//! provider is doing; the AI replaces the provisional ones when it answers, never the user's; the
//! remote provider is not asked about certain answers; a job that fails for good keeps its
//! provisional category. Real SQLite files, a fake OpenAI-compatible server on 127.0.0.x.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use sitetrail::classify::builtin::Builtin;
use sitetrail::classify::privacy::{Exclusions, PrivacyRouter};
use sitetrail::classify::Classifier;
use sitetrail::websites::Reclassify;
use sitetrail::worker::state::PauseKind;
use sitetrail::worker::{RetryPolicy, Worker, WorkerConfig};
use sitetrail::{Category, Confidence, Store};

use crate::support::fake_ai::*;
use crate::support::{cli, run_ok, visit, TempDb};

const LONG: Duration = Duration::from_secs(20);

/// A provider that answers `category` (confidence 0.95) for every host it is asked about.
fn answer_all(category: &'static str) -> impl Fn(&Request) -> ResponseTemplate + Send + Sync {
    move |req: &Request| {
        let results: Vec<Value> = hosts_of(req)
            .iter()
            .map(|h| json!({"domain": h, "category": category, "confidence": 0.95}))
            .collect();
        ResponseTemplate::new(200).set_body_json(completion(&json!({ "results": results }).to_string()))
    }
}

/// `(category, source, confidence, rule)` of a website.
fn cat(store: &Store, domain: &str) -> (Option<String>, Option<String>, Option<Confidence>, Option<String>) {
    let w = store.website(domain).unwrap();
    (
        w.category.map(|c| c.id().to_owned()),
        w.category_source.map(|s| s.as_str().to_owned()),
        w.category_confidence,
        w.category_rule,
    )
}

fn source(store: &Store, domain: &str) -> Option<String> {
    store
        .website(domain)
        .unwrap()
        .category_source
        .map(|s| s.as_str().to_owned())
}

/// Every host the fake server was asked about.
async fn asked(server: &MockServer) -> BTreeSet<String> {
    hosts_asked(server).await.into_iter().collect()
}

/// An address on loopback that refuses connections now (and can be listened on later).
fn refusing_addr() -> std::net::SocketAddr {
    // 127.0.0.2 (still loopback), so that no other test's server, all on 127.0.0.1, takes it.
    let listener = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    addr
}

fn some(s: &str) -> Option<String> {
    Some(s.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provisional_categories_come_at_once_offline_and_the_ai_replaces_them_when_back() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://qzbank.example/");
    visit(&store, "https://quietsite.example/");
    let addr = refusing_addr();
    let handle = Worker::new(
        store.clone(),
        openai(&format!("http://{addr}/v1")),
        fast_config(5),
    )
    .unwrap()
    .spawn();

    // With the provider refusing connections, both websites get the built-in category.
    assert!(
        eventually(LONG, || source(&store, "qzbank.example").is_some()
            && source(&store, "quietsite.example").is_some())
        .await
    );
    assert_eq!(
        cat(&store, "qzbank.example"),
        (
            some("finance"),
            some("builtin"),
            Some(Confidence::Medium),
            some("word")
        )
    );
    let (guess, rule) = crate::support::builtin_answer("quietsite.example");
    assert_eq!(
        cat(&store, "quietsite.example"),
        (Some(guess), some("builtin"), Some(Confidence::Low), Some(rule))
    );
    assert!(
        eventually(LONG, || store.worker_state().unwrap().paused_kind
            == Some(PauseKind::Offline))
        .await,
        "the worker pauses: the provider is offline"
    );

    // A website first seen during the outage gets its category while the worker is paused.
    visit(&store, "https://qznews.example/");
    assert!(eventually(LONG, || source(&store, "qznews.example").is_some()).await);
    assert_eq!(
        store.worker_state().unwrap().paused_kind,
        Some(PauseKind::Offline),
        "the provisional category did not wait for the network"
    );
    assert_eq!(cat(&store, "qznews.example").0, some("news"));
    // Their jobs stay open for the AI, and the outage costs them nothing.
    assert_eq!(count_status(&store, "COMPLETED"), 0, "{:?}", jobs(&store));
    assert_eq!(count_status(&store, "FAILED"), 0, "{:?}", jobs(&store));

    // The provider comes back: its answers replace the provisional categories.
    let listener = std::net::TcpListener::bind(addr).expect("the port is free again");
    let server = MockServer::builder().listener(listener).start().await;
    Mock::given(method("POST"))
        .respond_with(answer_all("shopping"))
        .mount(&server)
        .await;
    assert!(
        eventually(LONG, || count_status(&store, "COMPLETED") == 3).await,
        "{:?}",
        jobs(&store)
    );
    for d in ["qzbank.example", "quietsite.example", "qznews.example"] {
        assert_eq!(
            cat(&store, d),
            (some("shopping"), some("ai"), Some(Confidence::High), None),
            "{d}: the AI's answer, with the model's confidence"
        );
    }
    handle.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_users_category_is_never_replaced_by_the_ai() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://qzbank.example/");
    visit(&store, "https://quietsite.example/");
    let addr = refusing_addr();
    let handle = Worker::new(
        store.clone(),
        openai(&format!("http://{addr}/v1")),
        fast_config(5),
    )
    .unwrap()
    .spawn();
    assert!(eventually(LONG, || source(&store, "qzbank.example").is_some()).await);
    // During the outage the user corrects the provisional category.
    store
        .set_user_category("qzbank.example", Category::Games)
        .unwrap();

    let listener = std::net::TcpListener::bind(addr).expect("the port is free again");
    let server = MockServer::builder().listener(listener).start().await;
    Mock::given(method("POST"))
        .respond_with(answer_all("shopping"))
        .mount(&server)
        .await;
    assert!(
        eventually(LONG, || source(&store, "quietsite.example").as_deref()
            == Some("ai"))
        .await,
        "the provider answered"
    );
    assert!(eventually(LONG, || count_status(&store, "COMPLETED") == 2).await);
    assert_eq!(
        cat(&store, "qzbank.example"),
        (some("games"), some("user"), Some(Confidence::High), some("user")),
        "the user's choice stays"
    );
    handle.shutdown().await.unwrap();

    // Even a job sent back to the AI cannot write over a category the user sets meanwhile.
    store
        .reclassify_with("quietsite.example", Reclassify { ai: true })
        .unwrap();
    store
        .set_user_category("quietsite.example", Category::News)
        .unwrap();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    Worker::new(
        store.clone(),
        openai(&format!("{}/v1", server.uri())),
        fast_config(5),
    )
    .unwrap()
    .run(rx, true)
    .await
    .unwrap();
    assert_eq!(cat(&store, "quietsite.example").0, some("news"));
    assert_eq!(cat(&store, "quietsite.example").1, some("user"));
}

/// A domain of the open table that is in education (from the university list), not in the map.
fn a_university_domain() -> String {
    sitetrail::classify::open_table::table()
        .iter()
        .find(|(d, c)| {
            *c == Category::Education
                && d.ends_with(".com")
                && sitetrail::classify::builtin::judge_domain(d).rule
                    == sitetrail::classify::builtin::Rule::OpenTable
        })
        .map(|(d, _)| d.to_owned())
        .expect("a university domain in the open table")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certain_answers_never_reach_the_remote_provider_unless_the_user_asks_for_the_ai() {
    let db = TempDb::new();
    let store = db.open();
    let university = a_university_domain();
    // The user's own category for a parent domain makes its subdomains certain.
    visit(&store, "https://userparent.example/");
    store
        .set_user_category("userparent.example", Category::Games)
        .unwrap();
    let certain = [
        "github.com".to_owned(),              // the bundled map
        "en.wikipedia.org".to_owned(),        // the bundled map, by a parent
        "someagency.gov".to_owned(),          // a government ending
        "cs.somewhere.ac.uk".to_owned(),      // a university ending
        university.clone(),                   // the open table's university list
        "docs.userparent.example".to_owned(), // the user's category for a parent
    ];
    let local = ["printer.local".to_owned(), "wiki.corp.example".to_owned()];
    let uncertain = ["qzbank.example".to_owned(), "quietsite.example".to_owned()];
    for d in certain.iter().chain(&local).chain(&uncertain) {
        visit(&store, &format!("https://{d}/"));
    }
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(answer_all("shopping"))
        .mount(&server)
        .await;
    let remote = openai(&format!("{}/v1", server.uri()));
    let exclusions = Exclusions::parse(&["*.corp.example"]).unwrap();
    let classifier: Arc<dyn Classifier> = Arc::new(PrivacyRouter::new(remote, Arc::new(Builtin), exclusions));
    let drain = |store: &Store| {
        let worker = Worker::new(store.clone(), classifier.clone(), fast_config(20)).unwrap();
        async move {
            let (_tx, rx) = tokio::sync::watch::channel(false);
            tokio::time::timeout(LONG, worker.run(rx, true))
                .await
                .expect("drains")
                .unwrap();
        }
    };
    drain(&store).await;

    assert_eq!(
        asked(&server).await,
        uncertain.iter().cloned().collect::<BTreeSet<_>>(),
        "only the uncertain websites were sent out"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1, "in one batch");
    for d in &certain {
        let (c, s, conf, _) = cat(&store, d);
        assert!(c.is_some(), "{d}");
        assert_eq!(conf, Some(Confidence::High), "{d}");
        assert_eq!(s.as_deref(), Some("builtin"), "{d}");
    }
    assert_eq!(cat(&store, "docs.userparent.example").0, some("games"));
    assert_eq!(cat(&store, &university).0, some("education"));
    for d in &local {
        assert_eq!(
            source(&store, d).as_deref(),
            Some("builtin"),
            "{d}: never sent, answered locally"
        );
    }
    for d in &uncertain {
        assert_eq!(source(&store, d).as_deref(), Some("ai"), "{d}");
    }
    // Answered locally means never claimed: no attempt was spent on them.
    for (domain, status, attempts) in jobs(&store) {
        assert_eq!(status, "COMPLETED", "{domain}");
        let remote = uncertain.contains(&domain);
        assert_eq!(attempts, i64::from(remote), "{domain}");
    }

    // "Classify again with the AI" asks the provider even about a certain website; a plain
    // reclassify does not.
    store
        .reclassify_with("github.com", Reclassify { ai: true })
        .unwrap();
    store.reclassify("en.wikipedia.org").unwrap();
    drain(&store).await;
    let now_asked = asked(&server).await;
    assert!(now_asked.contains("github.com"), "{now_asked:?}");
    assert!(!now_asked.contains("en.wikipedia.org"), "{now_asked:?}");
    assert_eq!(
        cat(&store, "github.com"),
        (some("shopping"), some("ai"), Some(Confidence::High), None)
    );
    assert_eq!(
        cat(&store, "en.wikipedia.org"),
        (
            some("search_reference"),
            some("builtin"),
            Some(Confidence::High),
            some("map")
        )
    );
    // The wish for the AI ends with a plain reclassify.
    store.reclassify("github.com").unwrap();
    let before = server.received_requests().await.unwrap().len();
    drain(&store).await;
    assert_eq!(server.received_requests().await.unwrap().len(), before);
    assert_eq!(cat(&store, "github.com").1, some("builtin"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_fails_for_good_keeps_its_provisional_category() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://qzbank.example/");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string("down for maintenance"))
        .mount(&server)
        .await;
    let config = WorkerConfig {
        max_attempts: 2,
        retry: RetryPolicy::fixed(Duration::from_millis(5)),
        ..fast_config(1)
    };
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let worker = Worker::new(store.clone(), openai(&format!("{}/v1", server.uri())), config).unwrap();
    tokio::time::timeout(LONG, worker.run(rx, true))
        .await
        .expect("the job fails for good in time")
        .unwrap();
    assert_eq!(jobs(&store), vec![("qzbank.example".into(), "FAILED".into(), 2)]);
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
    assert_eq!(
        cat(&store, "qzbank.example"),
        (
            some("finance"),
            some("builtin"),
            Some(Confidence::Medium),
            some("word")
        )
    );
    let failed = store.failed_jobs().unwrap();
    assert_eq!(failed[0].category.map(sitetrail::Category::id), Some("finance"));
    assert_eq!(
        failed[0].category_source.map(sitetrail::CategorySource::as_str),
        Some("builtin")
    );

    // The CLI says so.
    let text = run_ok(cli(&db.path).arg("failed"));
    assert!(
        text.contains("qzbank.example") && text.contains("keeps its provisional category Finance & banking"),
        "{text}"
    );
    let json: Value = serde_json::from_str(&run_ok(cli(&db.path).args(["failed", "--json"]))).unwrap();
    assert_eq!(json[0]["category"], "finance");
    assert_eq!(json[0]["category_source"], "builtin");
    assert_eq!(json[0]["category_confidence"], "medium");
    // Retry keeps the category until the AI answers.
    store.retry_all_failed().unwrap();
    assert_eq!(cat(&store, "qzbank.example").1, some("builtin"));
}

#[test]
fn the_builtin_provider_answers_everything_in_the_local_pass_without_claims() {
    let db = TempDb::new();
    let store = db.open();
    for i in 0..700 {
        visit(&store, &format!("https://site{i:03}.example/"));
    }
    visit(&store, "https://github.com/");
    // The default pace is one job a second; the local pass does 500 websites a transaction.
    run_ok(cli(&db.path).args(["worker", "--until-idle"]));
    let all = jobs(&store);
    assert_eq!(all.len(), 701);
    assert!(
        all.iter().all(|(_, s, a)| s == "COMPLETED" && *a == 0),
        "answered locally, never claimed"
    );
    let json: Value = serde_json::from_str(&run_ok(cli(&db.path).args(["websites", "--json"]))).unwrap();
    let gh = json
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["domain"] == "github.com")
        .unwrap()
        .clone();
    assert_eq!(gh["category"], "dev_tech");
    assert_eq!(gh["category_source"], "builtin");
    assert_eq!(gh["category_confidence"], "high");
    assert_eq!(gh["category_rule"], "map");
    assert!(json
        .as_array()
        .unwrap()
        .iter()
        .all(|w| w["category_confidence"].is_string()));
    let text = run_ok(cli(&db.path).args(["websites"]));
    let rows = crate::support::table_rows(&text);
    assert_eq!(
        rows[0],
        ["WEBSITE", "CATEGORY", "BY", "CONFIDENCE", "CLASSIFIED"],
        "{text}"
    );
    assert_eq!(
        crate::support::row_of(&rows, "github.com")[..4],
        ["github.com", "Development & technology", "built-in", "high"],
        "{text}"
    );

    // `reclassify --ai` records the wish for the AI; with no remote provider configured, the
    // built-in answer is all there is, and the job completes.
    let out = run_ok(cli(&db.path).args(["reclassify", "--ai", "github.com"]));
    assert!(
        out.contains("github.com queued to be classified again by the AI"),
        "{out}"
    );
    let requested = |store: &Store| -> i64 {
        store
            .with_conn(|c| {
                Ok(c.query_row(
                    "SELECT o.remote_requested FROM website_category_classification_outbox o
                     JOIN website w ON w.id = o.website_id WHERE w.domain = 'github.com'",
                    [],
                    |r| r.get(0),
                )?)
            })
            .unwrap()
    };
    assert_eq!(requested(&store), 1);
    assert_eq!(source(&store, "github.com"), None, "cleared");
    run_ok(cli(&db.path).args(["worker", "--until-idle"]));
    assert_eq!(cat(&store, "github.com").1, some("builtin"));
    run_ok(cli(&db.path).args(["reclassify", "github.com"]));
    assert_eq!(requested(&store), 0, "a plain reclassify asks for no AI");
}
