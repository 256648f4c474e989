//! The review list (issue 11): websites whose category is not certain, most visited first, with
//! "right" (the category becomes the user's) and a category picker; in the library and the CLI.

use serde_json::Value;

use sitetrail::review::ReviewQuery;
use sitetrail::{Category, Confidence, Error, Store};

use crate::support::{cli, exec, run_ok, visit, TempDb};

/// Visits `domain` `n` times.
fn visits(store: &Store, domain: &str, n: usize) {
    for i in 0..n {
        visit(store, &format!("https://{domain}/page{i}"));
    }
}

fn domains(store: &Store, q: &ReviewQuery) -> Vec<String> {
    store.review(q).unwrap().into_iter().map(|i| i.domain).collect()
}

/// A history with every kind of category, judged by the real worker (built-in provider).
fn seeded() -> (TempDb, Store) {
    let db = TempDb::new();
    let store = db.open();
    visits(&store, "quietsite.example", 5); // other, low
    visits(&store, "qzbank.example", 5); // finance, medium (a word)
    visits(&store, "byai.example", 10); // made an AI answer below: medium
    visits(&store, "mine.example", 20); // the user's: not on the list
    visits(&store, "github.com", 30); // the bundled map: certain, not on the list
    visits(&store, "rare.example", 1); // other, low
    run_ok(cli(&db.path).args(["worker", "--until-idle"]));
    store.set_user_category("mine.example", Category::Games).unwrap();
    exec(
        &store,
        "UPDATE website SET category = 'news', category_source = 'ai', category_confidence = 'medium',
                category_rule = NULL WHERE domain = 'byai.example'",
    );
    (db, store)
}

#[test]
fn the_review_list_is_the_uncertain_websites_most_visited_first() {
    let (_db, store) = seeded();
    let items = store.review(&ReviewQuery::default()).unwrap();
    let order: Vec<(&str, i64, Confidence)> = items
        .iter()
        .map(|i| (i.domain.as_str(), i.visits, i.category_confidence))
        .collect();
    assert_eq!(
        order,
        vec![
            ("byai.example", 10, Confidence::Medium),
            // Equal visits: the less certain first.
            ("quietsite.example", 5, Confidence::Low),
            ("qzbank.example", 5, Confidence::Medium),
            ("rare.example", 1, Confidence::Low),
        ]
    );
    assert_eq!(items[2].category, Category::Finance);
    assert_eq!(items[2].category_source, sitetrail::CategorySource::Builtin);
    assert_eq!(items[2].category_rule.as_deref(), Some("word"));
    assert!(
        items.iter().all(|i| !i.waiting_for_ai),
        "the built-in provider answered all"
    );

    let low = ReviewQuery {
        confidence: Some(Confidence::Low),
        ..ReviewQuery::default()
    };
    assert_eq!(domains(&store, &low), ["quietsite.example", "rare.example"]);
    let two = ReviewQuery {
        limit: 2,
        ..ReviewQuery::default()
    };
    assert_eq!(domains(&store, &two), ["byai.example", "quietsite.example"]);
    for bad in [
        ReviewQuery {
            limit: 0,
            ..ReviewQuery::default()
        },
        ReviewQuery {
            confidence: Some(Confidence::High),
            ..ReviewQuery::default()
        },
    ] {
        assert!(matches!(store.review(&bad), Err(Error::InvalidInput(_))));
    }

    // A provisional category the AI has still to answer is marked so.
    exec(
        &store,
        "UPDATE website_category_classification_outbox SET status = 'PENDING'
         WHERE website_id = (SELECT id FROM website WHERE domain = 'rare.example')",
    );
    let rare = store
        .review(&ReviewQuery::default())
        .unwrap()
        .into_iter()
        .find(|i| i.domain == "rare.example")
        .unwrap();
    assert!(rare.waiting_for_ai);
}

#[test]
fn right_makes_the_category_the_users_and_the_picker_sets_another() {
    let (_db, store) = seeded();
    // "Right" on what the list showed.
    let w = store
        .confirm_category("qzbank.example", Some(Category::Finance))
        .unwrap();
    assert_eq!(
        (
            w.category.map(sitetrail::Category::id),
            w.category_source.map(sitetrail::CategorySource::as_str),
            w.category_confidence
        ),
        (Some("finance"), Some("user"), Some(Confidence::High))
    );
    // The picker: the user's own choice.
    store
        .set_user_category("quietsite.example", Category::News)
        .unwrap();
    assert_eq!(
        domains(&store, &ReviewQuery::default()),
        ["byai.example", "rare.example"],
        "both left the list"
    );
    // A category that changed since the list was read is not confirmed blindly.
    let err = store
        .confirm_category("byai.example", Some(Category::Shopping))
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    assert!(err.to_string().contains("is now news"), "{err}");
    assert_eq!(
        store
            .website("byai.example")
            .unwrap()
            .category_source
            .map(sitetrail::CategorySource::as_str),
        Some("ai")
    );
    // Nothing to confirm without a category; an unknown website is named.
    store.reclassify("rare.example").unwrap();
    assert!(matches!(
        store.confirm_category("rare.example", None),
        Err(Error::Conflict(_))
    ));
    assert!(matches!(
        store.confirm_category("nowhere.example", None),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn the_review_command_lists_and_confirms() {
    let (db, store) = seeded();
    let json: Value = serde_json::from_str(&run_ok(cli(&db.path).args(["review", "--json"]))).unwrap();
    let list = json.as_array().unwrap();
    assert_eq!(list.len(), 4);
    assert_eq!(list[0]["domain"], "byai.example");
    assert_eq!(list[0]["visits"], 10);
    assert_eq!(list[0]["category_confidence"], "medium");
    assert_eq!(list[1]["category_confidence"], "low");
    let text = run_ok(cli(&db.path).args(["review", "--confidence", "low", "--limit", "1"]));
    let rows = crate::support::table_rows(&text);
    assert_eq!(rows.len(), 2, "a header and one row: {text}");
    let (guess, _) = crate::support::builtin_answer("quietsite.example");
    let guess_name = guess.parse::<sitetrail::Category>().unwrap().name();
    assert_eq!(
        rows[1][..5],
        ["quietsite.example", guess_name, "built-in", "low", "5"],
        "{text}"
    );

    let out = run_ok(cli(&db.path).args(["review", "--confirm", "quietsite.example", "--expect", &guess]));
    assert!(
        out.contains(&format!("quietsite.example is now {guess}")),
        "{out}"
    );
    assert_eq!(
        store
            .website("quietsite.example")
            .unwrap()
            .category_source
            .map(sitetrail::CategorySource::as_str),
        Some("user")
    );
    // A stale expectation, or one unknown domain among several: nothing is confirmed.
    for args in [
        vec!["review", "--confirm", "qzbank.example", "--expect", "news"],
        vec!["review", "--confirm", "qzbank.example", "nowhere.example"],
    ] {
        let out = cli(&db.path).args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        assert!(!String::from_utf8_lossy(&out.stderr).is_empty());
        assert_eq!(
            store
                .website("qzbank.example")
                .unwrap()
                .category_source
                .map(sitetrail::CategorySource::as_str),
            Some("builtin"),
            "{args:?}"
        );
    }
    let bad = cli(&db.path).args(["review", "--limit", "0"]).output().unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--limit"));
}
