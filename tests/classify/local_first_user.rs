//! The user's categories as the worker sees them (issue 8 item 12), the counter that makes that
//! cheap, the local pass's index, and older databases whose categories have no confidence yet.

use std::process::Stdio;
use std::time::Duration;

use sitetrail::provisional::{self, get_user_categories_version};
use sitetrail::{Category, Confidence, Store};

use crate::support::{cli, exec, run_ok, visit, wait_for, TempDb};

const LONG: Duration = Duration::from_secs(30);

fn version(store: &Store) -> i64 {
    store.with_conn(get_user_categories_version).unwrap()
}

fn cat_of(store: &Store, domain: &str) -> (Option<String>, Option<String>, Option<String>) {
    let w = store.website(domain).unwrap();
    (
        w.category.map(|c| c.id().to_owned()),
        w.category_source.map(|s| s.as_str().to_owned()),
        w.category_rule,
    )
}

fn some(s: &str) -> Option<String> {
    Some(s.to_owned())
}

/// Through the real CLI worker: a category set while it runs reaches a subdomain it classifies
/// afterwards, and classifying again after the user's category was cleared does not bring back
/// the old choice labelled `builtin`.
#[test]
fn the_worker_sees_the_users_categories_as_they_are_at_each_tick() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://gadgets.example/");
    visit(&store, "https://toys.example/");
    // Set before the worker starts.
    run_ok(cli(&db.path).args(["categorize", "toys.example", "games"]));
    let mut worker = cli(&db.path)
        .args(["worker", "--fixed-delay-ms", "50"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_for(LONG, || store
        .website("gadgets.example")
        .unwrap()
        .category
        .is_some()));

    // Set while it runs: its subdomains follow (the rules alone say dev_tech for `docs.`).
    run_ok(cli(&db.path).args(["categorize", "gadgets.example", "shopping"]));
    run_ok(cli(&db.path).args(["visit", "https://docs.gadgets.example/manual"]));
    assert!(
        wait_for(LONG, || store
            .website("docs.gadgets.example")
            .unwrap()
            .category
            .is_some()),
        "the worker never classified the subdomain"
    );
    assert_eq!(
        cat_of(&store, "docs.gadgets.example"),
        (some("shopping"), some("builtin"), some("user"))
    );

    // Cleared while it runs: classifying again gives the rules' answer, not the old choice.
    run_ok(cli(&db.path).args(["reclassify", "toys.example"]));
    assert!(wait_for(LONG, || store
        .website("toys.example")
        .unwrap()
        .category
        .is_some()));
    assert_eq!(cat_of(&store, "toys.example"), {
        let (c, rule) = crate::support::builtin_answer("toys.example");
        (Some(c), some("builtin"), Some(rule))
    });
    // And the same site name under another ending follows the user too.
    run_ok(cli(&db.path).args(["visit", "https://gadgets.de/"]));
    assert!(wait_for(LONG, || store
        .website("gadgets.de")
        .unwrap()
        .category
        .is_some()));
    assert_eq!(
        cat_of(&store, "gadgets.de"),
        (some("shopping"), some("builtin"), some("user_name"))
    );
    worker.kill().unwrap();
    worker.wait().unwrap();
}

#[test]
fn the_counter_moves_with_every_change_to_a_users_category_and_only_then() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://a.example/");
    visit(&store, "https://b.example/");
    let v0 = version(&store);
    // Classifier writes and new visits do not move it.
    exec(
        &store,
        "UPDATE website SET category = 'news', category_source = 'builtin', category_confidence = 'low' WHERE domain = 'a.example'",
    );
    visit(&store, "https://c.example/");
    assert_eq!(version(&store), v0);
    store.set_user_category("a.example", Category::Games).unwrap();
    let v1 = version(&store);
    assert!(v1 > v0, "set");
    store.set_user_category("a.example", Category::News).unwrap();
    let v2 = version(&store);
    assert!(v2 > v1, "changed");
    store.reclassify("a.example").unwrap();
    let v3 = version(&store);
    assert!(v3 > v2, "cleared");
    store.reclassify("b.example").unwrap();
    assert_eq!(version(&store), v3, "b was not the user's");
    store.set_user_category("b.example", Category::Games).unwrap();
    let v4 = version(&store);
    exec(
        &store,
        "DELETE FROM visit WHERE website_id = (SELECT id FROM website WHERE domain = 'b.example');
         DELETE FROM website WHERE domain = 'b.example';",
    );
    assert!(version(&store) > v4, "deleted");
}

/// The local pass's read is served by its partial index: no scan, no sort, at any history size.
#[test]
fn the_local_pass_never_scans_or_sorts() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://a.example/");
    let plan = store
        .with_conn(|c| {
            let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {}", provisional::UNJUDGED_SQL))?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>("detail"))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows.join(" | "))
        })
        .unwrap();
    // The partial index holds only the websites still to judge: reading it whole is the point;
    // the website table itself is never scanned, and each job is found by its website.
    assert!(plan.contains("SCAN w USING INDEX website_unjudged_idx"), "{plan}");
    assert_eq!(plan.matches("SCAN").count(), 1, "{plan}");
    assert!(plan.contains("SEARCH o USING INDEX"), "{plan}");
    assert!(!plan.contains("TEMP B-TREE"), "{plan}");
    // After a pass the index is empty again: its size is the work left, not the history.
    let in_index = |store: &Store| -> i64 {
        store
            .with_conn(|c| {
                Ok(c.query_row(
                    "SELECT count(*) FROM website INDEXED BY website_unjudged_idx
                     WHERE (category IS NULL OR category_confidence IS NULL)",
                    [],
                    |r| r.get(0),
                )?)
            })
            .unwrap()
    };
    assert_eq!(in_index(&store), 1);
    run_ok(cli(&db.path).args(["worker", "--until-idle"]));
    assert_eq!(in_index(&store), 0);
}

/// A database from before migration 0007: categories without a confidence get one (the user's
/// high, an AI's medium, an older built-in one judged again) and nothing else changes.
#[test]
fn older_categories_get_their_confidence_from_the_local_pass() {
    let db = TempDb::new();
    let store = db.open();
    for d in ["mine.example", "byai.example", "github.com", "qzbank.example"] {
        visit(&store, &format!("https://{d}/"));
    }
    exec(
        &store,
        "UPDATE website SET category = 'games', category_source = 'user' WHERE domain = 'mine.example';
         UPDATE website SET category = 'news', category_source = 'ai' WHERE domain = 'byai.example';
         UPDATE website SET category = 'dev_tech', category_source = 'builtin' WHERE domain = 'github.com';
         UPDATE website SET category = 'other', category_source = 'builtin' WHERE domain = 'qzbank.example';
         UPDATE website_category_classification_outbox SET status = 'COMPLETED';",
    );
    run_ok(cli(&db.path).args(["worker", "--until-idle"]));
    let got = |d: &str| {
        let w = store.website(d).unwrap();
        (
            w.category.unwrap().id().to_owned(),
            w.category_source.unwrap().as_str().to_owned(),
            w.category_confidence,
        )
    };
    assert_eq!(
        got("mine.example"),
        ("games".into(), "user".into(), Some(Confidence::High))
    );
    assert_eq!(
        got("byai.example"),
        ("news".into(), "ai".into(), Some(Confidence::Medium))
    );
    assert_eq!(
        got("github.com"),
        ("dev_tech".into(), "builtin".into(), Some(Confidence::High))
    );
    assert_eq!(
        got("qzbank.example"),
        ("finance".into(), "builtin".into(), Some(Confidence::Medium)),
        "judged again with the current rules"
    );
}
