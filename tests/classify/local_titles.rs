//! Titles on the device (issue 20): the local pass judges a website's built-in category again from
//! its pages' titles once it has a few titled visits, and again when many more have come; never a
//! user's or an AI's category; the titles never reach a remote provider; `classify --title`.
//! Real SQLite files, the real local pass, a fake OpenAI-compatible server on 127.0.0.1.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use sitetrail::classify::builtin::Builtin;
use sitetrail::title_judging;
use sitetrail::visits::NewVisit;
use sitetrail::worker::{LocalFirst, Worker};
use sitetrail::{Store, Timestamp};

use crate::support::fake_ai::*;
use crate::support::{cli, exec, run_ok, TempDb};

/// A name no list knows and that says nothing by itself.
const SITE: &str = "qzxwv.example";

/// Titles a person reads on a casino site, in English and German.
const CASINO_TITLES: [&str; 3] = [
    "Online Casino Bonus – Slots and Roulette",
    "Poker Bonus ohne Einzahlung",
    "Casino Jackpot: Slots spielen",
];

fn titled_visit(store: &Store, domain: &str, path: &str, title: &str) {
    store
        .record_visit(&NewVisit {
            url: &format!("https://{domain}/{path}"),
            title: Some(title),
            visited_at: Timestamp::now(),
            source: "test",
            source_visit_id: None,
        })
        .unwrap();
}

/// `(category, source, rule)` of a website.
fn cat(store: &Store, domain: &str) -> (String, String, String) {
    let w = store.website(domain).unwrap();
    (
        w.category.map(|c| c.id().to_owned()).unwrap_or_default(),
        w.category_source
            .map(|s| s.as_str().to_owned())
            .unwrap_or_default(),
        w.category_rule.unwrap_or_default(),
    )
}

fn website_id(store: &Store, domain: &str) -> sitetrail::ids::WebsiteId {
    store.website(domain).unwrap().id
}

fn state(store: &Store, domain: &str) -> Option<(i64, i64)> {
    let id = website_id(store, domain);
    store.with_conn(|c| title_judging::get_state(c, id)).unwrap()
}

#[test]
fn the_local_pass_judges_again_from_titles_at_a_few_and_at_many_titled_visits() {
    let db = TempDb::new();
    let store = db.open();
    let local = LocalFirst::new(Arc::new(Builtin));
    titled_visit(&store, SITE, "", CASINO_TITLES[0]);
    local.pass(&store).unwrap();
    let (_, source, rule) = cat(&store, SITE);
    assert_eq!(
        (source.as_str(), rule.as_str()),
        ("builtin", "model"),
        "judged by its name first"
    );
    let by_name = cat(&store, SITE).0;
    assert_ne!(by_name, "gambling", "the name alone does not say casino");
    // New on the list, due at once: one titled visit is not yet enough to judge by.
    assert_eq!(state(&store, SITE), Some((0, 0)));
    assert_eq!(local.title_pass(&store).unwrap(), 0);
    assert_eq!(cat(&store, SITE).0, by_name);
    assert_eq!(state(&store, SITE), Some((1, title_judging::FIRST_JUDGING)));

    // A visit without a title does not count; two more titled ones make three.
    crate::support::visit(&store, &format!("https://{SITE}/untitled"));
    assert_eq!(state(&store, SITE), Some((1, 3)));
    titled_visit(&store, SITE, "poker", CASINO_TITLES[1]);
    titled_visit(&store, SITE, "slots", CASINO_TITLES[2]);
    assert_eq!(state(&store, SITE), Some((3, 3)), "counted by the visit triggers");
    assert_eq!(local.title_pass(&store).unwrap(), 1);
    let (category, source, rule) = cat(&store, SITE);
    assert_eq!(
        (category.as_str(), source.as_str(), rule.as_str()),
        ("gambling", "builtin", "model_titles")
    );
    let w = store.website(SITE).unwrap();
    assert_ne!(
        w.category_confidence,
        Some(sitetrail::Confidence::High),
        "titles are never certain"
    );
    assert_eq!(state(&store, SITE), Some((3, title_judging::SECOND_JUDGING)));
    // Nothing due: the pass does nothing.
    assert_eq!(local.title_pass(&store).unwrap(), 0);

    // Many more: judged again, for the last time (the row goes).
    for i in 0..27 {
        titled_visit(&store, SITE, &format!("game/{i}"), "Slots Casino Roulette Bonus");
    }
    assert_eq!(state(&store, SITE), Some((30, 30)));
    local.title_pass(&store).unwrap();
    assert_eq!(state(&store, SITE), None);
    assert_eq!(cat(&store, SITE).0, "gambling");
    // The title pass also runs in the worker's own local pass.
    let again = "zqxvw.example";
    for t in CASINO_TITLES {
        titled_visit(&store, again, "", t);
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let out = rt.block_on(Arc::new(LocalFirst::new(Arc::new(Builtin))).pass_async(&store));
    assert_eq!((out.judged, out.retitled), (1, 1), "{out:?}");
    assert_eq!(
        cat(&store, again).0,
        "gambling",
        "an imported site with its titles is judged at once"
    );
}

/// A Chromium history file in `dir` holding `visits` (`(url, title)`, `""` for no title), a second
/// apart; called again with more, it appends them after the ones already there.
fn chromium_history(dir: &std::path::Path, visits: &[(String, &str)]) -> std::path::PathBuf {
    use crate::support::import::{add_chromium_visit, copy_fixture, CHROMIUM_EPOCH_OFFSET, CHROMIUM_LINK};
    let path = dir.join("History");
    if !path.exists() {
        copy_fixture("chromium-History", dir, "History");
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("DELETE FROM visits; DELETE FROM urls;")
            .unwrap();
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    let had: i64 = conn
        .query_row("SELECT count(*) FROM visits", [], |r| r.get(0))
        .unwrap();
    let start = CHROMIUM_EPOCH_OFFSET + Timestamp::now().as_micros() - 3_600_000_000;
    for (i, (url, title)) in visits.iter().enumerate() {
        let at = start + (had + i as i64) * 1_000_000;
        add_chromium_visit(&conn, url, title, at, CHROMIUM_LINK);
    }
    path
}

#[test]
fn an_import_counts_its_titled_visits_for_the_judging_as_recorded_visits_are_counted() {
    // The import counts a batch's titled visits per website in one statement (issue 31; a trigger
    // counted each visit before migration 0022): the same counts, capped at the judging's mark.
    use crate::support::import::import;
    let db = TempDb::new();
    let store = db.open();
    let local = LocalFirst::new(Arc::new(Builtin));
    let other = "zqxvw.example";
    for d in [SITE, other] {
        titled_visit(&store, d, "", CASINO_TITLES[0]);
    }
    local.pass(&store).unwrap();
    assert_eq!(local.title_pass(&store).unwrap(), 0);
    for d in [SITE, other] {
        assert_eq!(state(&store, d), Some((1, title_judging::FIRST_JUDGING)), "{d}");
    }
    let dir = tempfile::tempdir().unwrap();
    // Two websites in one batch: a titled visit each counts, an untitled one does not.
    let file = chromium_history(
        dir.path(),
        &[
            (format!("https://{SITE}/poker"), CASINO_TITLES[1]),
            (format!("https://{SITE}/untitled"), ""),
            (format!("https://{other}/a"), CASINO_TITLES[1]),
            (format!("https://{other}/b"), CASINO_TITLES[2]),
        ],
    );
    let report = import(&store, sitetrail::import::Browser::Chrome, &file).unwrap();
    assert_eq!(report.imported, 4, "{report:?}");
    assert_eq!(state(&store, SITE), Some((2, 3)));
    assert_eq!(state(&store, other), Some((3, 3)));
    // One website, more titled visits than it needs: counted up to the mark, no further.
    let more: Vec<(String, &str)> = (0..5)
        .map(|i| (format!("https://{SITE}/slots/{i}"), CASINO_TITLES[2]))
        .collect();
    let file = chromium_history(dir.path(), &more);
    let report = import(&store, sitetrail::import::Browser::Chrome, &file).unwrap();
    assert_eq!(report.imported, 5, "{report:?}");
    assert_eq!(state(&store, SITE), Some((3, 3)));
    assert_eq!(
        local.title_pass(&store).unwrap(),
        2,
        "both judged with their titles"
    );
    assert_eq!(cat(&store, SITE).0, "gambling");
}

#[test]
fn titles_never_replace_a_users_or_an_ais_category_or_a_lists_answer() {
    let db = TempDb::new();
    let store = db.open();
    let local = LocalFirst::new(Arc::new(Builtin));
    let (mine, ai, listed) = ("mine-qzxwv.example", "ai-qzxwv.example", "github.com");
    for d in [mine, ai, listed] {
        for t in CASINO_TITLES {
            titled_visit(&store, d, "", t);
        }
    }
    local.pass(&store).unwrap();
    // A list's answer is never on the title list.
    assert_eq!(cat(&store, listed).2, "map");
    assert_eq!(state(&store, listed), None);
    store.set_user_category(mine, sitetrail::Category::News).unwrap();
    exec(
        &store,
        &format!("UPDATE website SET category = 'travel_maps', category_source = 'ai', category_rule = NULL WHERE domain = '{ai}'"),
    );
    assert_eq!(local.title_pass(&store).unwrap(), 0);
    assert_eq!(cat(&store, mine), ("news".into(), "user".into(), "user".into()));
    assert_eq!(cat(&store, ai).0, "travel_maps");
    assert_eq!(cat(&store, ai).1, "ai");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn titles_stay_on_the_device_while_a_remote_provider_is_asked() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(|req: &Request| {
            let results: Vec<Value> = hosts_of(req)
                .iter()
                .map(|h| json!({"domain": h, "category": "games", "confidence": 0.5}))
                .collect();
            ResponseTemplate::new(200).set_body_json(completion(&json!({ "results": results }).to_string()))
        })
        .mount(&server)
        .await;
    let db = TempDb::new();
    let store = db.open();
    for t in CASINO_TITLES {
        titled_visit(&store, SITE, "secret-path-xyzzy", t);
    }
    let handle = Worker::new(
        store.clone(),
        openai(&format!("{}/v1", server.uri())),
        fast_config(5),
    )
    .unwrap()
    .spawn();
    assert!(eventually(Duration::from_secs(20), || cat(&store, SITE).1 == "ai").await);
    handle.shutdown().await.unwrap();
    let bodies: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.body).into_owned())
        .collect();
    assert!(!bodies.is_empty());
    for body in &bodies {
        assert!(body.contains(SITE), "{body}");
        for word in ["Casino", "Poker", "Einzahlung", "Jackpot", "xyzzy"] {
            assert!(!body.contains(word), "a title word left the machine: {body}");
        }
    }
    assert_eq!(
        cat(&store, SITE).0,
        "games",
        "the AI's answer stays: titles never replace it"
    );
}

#[test]
fn classify_takes_titles_for_the_builtin_provider_only() {
    let db = TempDb::new();
    let json = |extra: &[&str]| -> Value {
        let mut args = vec!["classify", "--provider", "builtin", "--json", SITE];
        args.extend_from_slice(extra);
        serde_json::from_str(&run_ok(cli(&db.path).args(&args))).unwrap()
    };
    let by_name = json(&[]);
    assert_ne!(by_name[0]["category"], "gambling", "{by_name}");
    let with = json(&["--title", CASINO_TITLES[0], "--title", CASINO_TITLES[1]]);
    assert_eq!(with[0]["category"], "gambling", "{with}");
    assert_eq!(with[0]["source"], "builtin");
    assert_ne!(with[0]["confidence"], "high");
    // A list's answer is not moved by titles.
    let listed: Value = serde_json::from_str(&run_ok(cli(&db.path).args([
        "classify",
        "--json",
        "github.com",
        "--title",
        CASINO_TITLES[0],
    ])))
    .unwrap();
    assert_eq!(listed[0]["category"], "dev_tech");
    // Titles never go to a remote provider: refused, exit code 2.
    let out = cli(&db.path)
        .args(["classify", "--provider", "ollama", SITE, "--title", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("built-in provider only"));
}
