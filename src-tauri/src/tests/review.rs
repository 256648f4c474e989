//! The review view's commands, "classify again with the AI", and the About section's open data.

use std::time::Duration;

use serde_json::json;

use super::{seed_failed, visit, wait_for, TestApp};

fn seeded() -> TestApp {
    TestApp::start(|s| {
        for _ in 0..3 {
            visit(s, "qzbank.example", "Bank");
        }
        visit(s, "quietsite.example", "Quiet");
        visit(s, "github.com", "GitHub");
    })
}

/// Waits until the app's worker gave every website its built-in category.
fn judged(t: &TestApp) {
    wait_for(Duration::from_secs(15), || {
        let sites = t.store().websites(&Default::default()).ok()?;
        sites
            .iter()
            .all(|w| w.category_confidence.is_some())
            .then_some(())
    });
}

#[test]
fn list_review_shows_uncertain_websites_most_visited_first() {
    let t = seeded();
    judged(&t);
    let list = t.ok("list_review", json!({}));
    let rows = list.as_array().unwrap();
    let order: Vec<(&str, i64, &str)> = rows
        .iter()
        .map(|r| {
            (
                r["domain"].as_str().unwrap(),
                r["visits"].as_i64().unwrap(),
                r["category_confidence"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [("qzbank.example", 3, "medium"), ("quietsite.example", 1, "low")],
        "github.com is certain and not on the list"
    );
    let low = t.ok(
        "list_review",
        json!({"query": {"confidence": "low", "limit": 10}}),
    );
    assert_eq!(low.as_array().unwrap().len(), 1);
    for bad in [
        json!({"query": {"limit": 0}}),
        json!({"query": {"limit": 5000}}),
        json!({"query": {"confidence": "high"}}),
        json!({"query": {"confidence": "sure"}}),
    ] {
        assert_eq!(t.err_kind("list_review", bad.clone()), "invalid_input", "{bad}");
    }
    // Unknown fields are refused by deserialization.
    assert!(t
        .invoke("list_review", json!({"query": {"limit": 5, "sort": "domain"}}))
        .is_err());
}

#[test]
fn confirm_category_makes_the_shown_category_the_users() {
    let t = seeded();
    judged(&t);
    let w = t.ok(
        "confirm_category",
        json!({"domain": "qzbank.example", "category": "finance"}),
    );
    assert_eq!(w["category_source"], "user");
    assert_eq!(w["category_confidence"], "high");
    let left = t.ok("list_review", json!({}));
    assert_eq!(left.as_array().unwrap().len(), 1);
    // The list showed another category than the website has now: refused, nothing changed.
    assert_eq!(
        t.err_kind(
            "confirm_category",
            json!({"domain": "quietsite.example", "category": "news"})
        ),
        "conflict"
    );
    assert_eq!(
        t.store()
            .website("quietsite.example")
            .unwrap()
            .category_source
            .map(sitetrail::CategorySource::as_str),
        Some("builtin")
    );
    assert_eq!(
        t.err_kind(
            "confirm_category",
            json!({"domain": "quietsite.example", "category": "weather"})
        ),
        "invalid_input"
    );
    assert_eq!(
        t.err_kind(
            "confirm_category",
            json!({"domain": "nowhere.example", "category": "news"})
        ),
        "not_found"
    );
}

#[test]
fn reclassify_with_the_ai_is_recorded_and_plain_reclassify_is_unchanged() {
    let t = seeded();
    judged(&t);
    let w = t.ok("reclassify_website", json!({"domain": "github.com", "ai": true}));
    assert!(w["category"].is_null());
    let requested = |t: &TestApp| -> i64 {
        t.store()
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
    assert_eq!(requested(&t), 1);
    // The built-in provider is all this app has: the built-in category comes back.
    wait_for(Duration::from_secs(15), || {
        t.store().website("github.com").ok()?.category
    });
    t.ok("reclassify_website", json!({"domain": "github.com"}));
    assert_eq!(requested(&t), 0);
}

#[test]
fn failed_jobs_carry_the_category_the_website_keeps() {
    let t = TestApp::start(|s| seed_failed(s, "qzbank.example", "HTTP 503"));
    let row = wait_for(Duration::from_secs(15), || {
        let failed = t.ok("list_failed_jobs", json!({}));
        let row = failed[0].clone();
        row["category"].is_string().then_some(row)
    });
    assert_eq!(row["category"], "finance");
    assert_eq!(row["category_source"], "builtin");
    assert_eq!(row["category_confidence"], "medium");
}

#[test]
fn app_info_names_the_open_data_and_its_licence() {
    let t = TestApp::start(|_| {});
    let info = t.ok("get_app_info", json!({}));
    let data = &info["open_data"][0];
    assert_eq!(data["entries"], 140_334);
    let attribution = data["attribution"].as_str().unwrap();
    assert!(attribution.contains("CC BY-SA 4.0"), "{attribution}");
    assert!(
        attribution.contains("Université Toulouse 1 Capitole"),
        "{attribution}"
    );
    assert!(attribution.contains("Hipo"), "{attribution}");
    // The learned classifier's word list and weights, each with its licence and sources.
    let words = &info["open_data"][1];
    assert_eq!(words["entries"], 59_288);
    assert!(words["attribution"].as_str().unwrap().contains("wordfreq"));
    let weights = &info["open_data"][2];
    let attribution = weights["attribution"].as_str().unwrap();
    assert!(
        attribution.contains("CC BY-SA 4.0") && attribution.contains("UT1"),
        "{attribution}"
    );
}
