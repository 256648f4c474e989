//! Each command's happy path and its error for bad input.

use std::time::Duration;

use serde_json::{json, Value};

use super::{seed_failed, visit, visit_ago, wait_for, TestApp};

#[test]
fn get_queue_counts_jobs_and_visits() {
    let t = TestApp::start(|s| {
        seed_failed(s, "broken.example", "boom");
        visit(s, "github.com", "GitHub");
        visit(s, "github.com", "GitHub again");
    });
    let q = t.ok("get_queue", json!({}));
    let s = &q["queue"];
    let total = ["pending", "processing", "completed", "failed"]
        .iter()
        .map(|k| s[k].as_i64().unwrap())
        .sum::<i64>();
    assert_eq!(total, 2, "two websites, two jobs: {q}");
    assert_eq!(s["failed"], 1);
    assert_eq!(q["visits"], 3);
    // The worker starts on the runtime, off the UI thread: its provider shows once it runs.
    wait_for(Duration::from_secs(10), || {
        (t.ok("get_queue", json!({}))["provider"] == "builtin").then_some(())
    });
    // Wrong argument type for a command that takes none is ignored by tauri; a bad command name is not.
    let err = t.invoke("get_queue_nope", json!({})).unwrap_err();
    assert!(err.to_string().contains("get_queue_nope"), "{err}");
}

#[test]
fn get_queue_shows_the_workers_crashes() {
    let t = TestApp::start(|_| {});
    assert!(t.ok("get_queue", json!({}))["crash"].is_null(), "no crash yet");
    // A worker (here or in another process) crashed and its supervisor recorded it.
    t.store()
        .record_worker_crash("the worker crashed: index out of bounds")
        .unwrap();
    let q = t.ok("get_queue", json!({}));
    assert_eq!(q["crash"]["count"], 1, "{q}");
    assert!(q["crash"]["message"]
        .as_str()
        .unwrap()
        .contains("index out of bounds"));
    assert!(q["crash"]["at"].is_string(), "{q}");
}

#[test]
fn get_summary_counts_visits_per_category_and_top_sites() {
    let t = TestApp::start(|s| {
        visit(s, "github.com", "a");
        visit(s, "github.com", "b");
        visit(s, "news.example.org", "c");
    });
    let sum = t.ok("get_summary", json!({}));
    let total: i64 = sum["categories_7d"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["visits"].as_i64().unwrap())
        .sum();
    assert_eq!(total, 3, "{sum}");
    assert_eq!(sum["top_websites"][0]["domain"], "github.com");
    assert_eq!(sum["top_websites"][0]["visits"], 2);
}

#[test]
fn list_categories_and_app_info() {
    let t = TestApp::start(|_| {});
    let cats = t.ok("list_categories", json!({}));
    assert_eq!(cats.as_array().unwrap().len(), sitetrail::Category::ALL.len());
    assert_eq!(cats[0]["id"], "search_reference");
    let info = t.ok("get_app_info", json!({}));
    assert_eq!(info["db_path"], t.paths.db.display().to_string());
}

fn domains(page: &Value) -> Vec<String> {
    page["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["domain"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn list_history_pages_searches_and_filters() {
    let t = TestApp::start(|s| {
        for i in 0..5 {
            visit_ago(s, &format!("site{i}.example"), &format!("Page {i}"), 10 - i);
        }
        visit_ago(s, "github.com", "Rust repo", 1);
    });
    let first = t.ok("list_history", json!({"query": {"limit": 4}}));
    assert_eq!(domains(&first)[0], "github.com", "newest first");
    assert_eq!(domains(&first).len(), 4);
    let cursor = first["next_cursor"].as_str().expect("more pages").to_string();
    let second = t.ok("list_history", json!({"query": {"limit": 4, "before": cursor}}));
    assert_eq!(domains(&second), ["site1.example", "site0.example"]);
    assert!(second["next_cursor"].is_null());

    let found = t.ok("list_history", json!({"query": {"search": "rust"}}));
    assert_eq!(domains(&found), ["github.com"]);

    // github.com gets a category from the built-in rules; filter on it once it has.
    let me = t.ok(
        "set_category",
        json!({"domain": "site3.example", "category": "games"}),
    );
    assert_eq!(me["category_source"], "user");
    let games = t.ok("list_history", json!({"query": {"category": "games"}}));
    assert_eq!(domains(&games), ["site3.example"]);

    let future = t.ok("list_history", json!({"query": {"from": "2999-01-01T00:00:00Z"}}));
    assert!(domains(&future).is_empty());
}

#[test]
fn list_history_refuses_bad_queries() {
    let t = TestApp::start(|_| {});
    for bad in [
        json!({"limit": 0}),
        json!({"limit": 501}),
        json!({"category": "weather"}),
        json!({"from": "yesterday"}),
        json!({"from": "2026-02-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"}),
        json!({"before": "not-a-cursor"}),
        json!({"search": "x".repeat(201)}),
    ] {
        assert_eq!(
            t.err_kind("list_history", json!({ "query": bad })),
            "invalid_input",
            "{bad}"
        );
    }
    // Unknown fields and missing arguments are refused by deserialization.
    assert!(t
        .invoke("list_history", json!({"query": {"limit": 5, "colour": 1}}))
        .is_err());
    assert!(t.invoke("list_history", json!({})).is_err());
}

#[test]
fn set_category_and_reclassify() {
    let t = TestApp::start(|s| visit(s, "shop.example", "Shop"));
    let w = t.ok(
        "set_category",
        json!({"domain": "SHOP.example", "category": "shopping"}),
    );
    assert_eq!(w["category"], "shopping");
    assert_eq!(w["category_source"], "user");
    let w = t.ok("reclassify_website", json!({"domain": "shop.example"}));
    assert!(w["category"].is_null());
    // The worker classifies it again with the built-in rules.
    let cat = wait_for(Duration::from_secs(15), || {
        let w = t.store().website("shop.example").ok()?;
        w.category.map(|c| (c, w.category_source))
    });
    assert_eq!(cat.1, Some(sitetrail::CategorySource::Builtin), "{cat:?}");

    assert_eq!(
        t.err_kind(
            "set_category",
            json!({"domain": "shop.example", "category": "nope"})
        ),
        "invalid_input"
    );
    assert_eq!(
        t.err_kind(
            "set_category",
            json!({"domain": "unknown.example", "category": "news"})
        ),
        "not_found"
    );
    assert_eq!(
        t.err_kind("reclassify_website", json!({"domain": "not a domain"})),
        "invalid_input"
    );
}

#[test]
fn failed_jobs_retry_one_and_the_worker_classifies_it() {
    let t = TestApp::start(|s| {
        seed_failed(s, "github.com", "HTTP 503 from the provider");
        seed_failed(s, "en.wikipedia.org", "timed out");
    });
    let failed = t.ok("list_failed_jobs", json!({}));
    let jobs = failed.as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    let gh = jobs.iter().find(|j| j["domain"] == "github.com").unwrap();
    assert_eq!(gh["last_error_message"], "HTTP 503 from the provider");
    assert_eq!(gh["attempt_count"], 1);
    let id = gh["id"].as_str().unwrap().to_string();

    assert_eq!(t.ok("retry_jobs", json!({"ids": [id]})), 1);
    let job = wait_for(Duration::from_secs(15), || {
        let v = t.ok("get_jobs", json!({"ids": [id]}));
        (v[0]["status"] == "COMPLETED").then(|| v[0].clone())
    });
    assert_eq!(job["category"], "dev_tech", "{job}");
    let left = t.ok("list_failed_jobs", json!({}));
    assert_eq!(left.as_array().unwrap().len(), 1, "the other one is still FAILED");

    assert_eq!(t.err_kind("retry_jobs", json!({"ids": []})), "invalid_input");
    assert_eq!(t.err_kind("retry_jobs", json!({"ids": ["12"]})), "invalid_input");
    let unknown = sitetrail::ids::OutboxId::new().to_string();
    assert_eq!(t.err_kind("retry_jobs", json!({"ids": [unknown]})), "not_found");
    // A job already done cannot be "retried".
    assert_eq!(t.err_kind("retry_jobs", json!({"ids": [id]})), "conflict");
}

#[test]
fn retry_all_failed_requeues_every_failed_job() {
    let t = TestApp::start(|s| {
        seed_failed(s, "a.example", "x");
        seed_failed(s, "b.example", "y");
    });
    assert_eq!(t.ok("retry_all_failed", json!({})), 2);
    wait_for(Duration::from_secs(15), || {
        let q = t.ok("get_queue", json!({}));
        (q["queue"]["completed"] == 2).then_some(())
    });
    assert_eq!(t.ok("retry_all_failed", json!({})), 0, "nothing left to retry");
}

#[test]
fn get_jobs_refuses_bad_ids() {
    let t = TestApp::start(|_| {});
    assert_eq!(t.err_kind("get_jobs", json!({"ids": []})), "invalid_input");
    let many: Vec<String> = (0..1001)
        .map(|_| sitetrail::ids::OutboxId::new().to_string())
        .collect();
    assert_eq!(t.err_kind("get_jobs", json!({ "ids": many })), "invalid_input");
    let unknown = sitetrail::ids::OutboxId::new().to_string();
    assert_eq!(t.err_kind("get_jobs", json!({"ids": [unknown]})), "not_found");
}

#[test]
fn export_writes_where_the_dialog_says_and_cancel_writes_nothing() {
    let t = TestApp::start(|s| {
        visit(s, "github.com", "GitHub");
        visit(s, "news.example.org", "News");
    });
    let target = t.dir.path().join("out.csv");
    *t.save_to.lock().unwrap() = Some(target.clone());
    let done = t.ok("export_data", json!({"kind": "history", "format": "csv"}));
    assert_eq!(done["rows"], 2);
    let text = std::fs::read_to_string(&target).unwrap();
    assert!(text.lines().count() == 3 && text.contains("github.com"), "{text}");
    assert_eq!(t.asked.lock().unwrap()[0].file_name, "sitetrail-history.csv");

    let json_target = t.dir.path().join("cats.json");
    *t.save_to.lock().unwrap() = Some(json_target.clone());
    let done = t.ok("export_data", json!({"kind": "categories", "format": "json"}));
    assert_eq!(done["rows"], 2);
    let parsed: Value = serde_json::from_str(&std::fs::read_to_string(&json_target).unwrap()).unwrap();
    assert_eq!(parsed.as_array().unwrap().len(), 2);

    *t.save_to.lock().unwrap() = None;
    assert_eq!(
        t.ok("export_data", json!({"kind": "history", "format": "json"})),
        Value::Null,
        "cancelled"
    );
    assert_eq!(
        t.err_kind("export_data", json!({"kind": "passwords", "format": "csv"})),
        "invalid_input"
    );
    assert_eq!(
        t.err_kind("export_data", json!({"kind": "history", "format": "xlsx"})),
        "invalid_input"
    );
    assert_eq!(
        t.asked.lock().unwrap().len(),
        3,
        "bad input never opens the dialog"
    );
}

/// The capability file is enforced: the UI may listen to events but not, say, close windows.
#[test]
fn capabilities_grant_only_what_the_ui_uses() {
    let t = TestApp::start(|_| {});
    let err = t
        .invoke("plugin:window|close", json!({"label": "main"}))
        .unwrap_err();
    assert!(err.to_string().contains("not allowed"), "{err}");
    let err = t
        .invoke("plugin:dialog|save", json!({"options": {}}))
        .unwrap_err();
    assert!(
        err.to_string().contains("not allowed") || err.to_string().contains("not found"),
        "{err}"
    );
}
