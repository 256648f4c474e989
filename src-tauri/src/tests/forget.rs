//! The forgetting, blocking, favicon and search-index commands: happy paths and bad input.

use serde_json::{json, Value};
use sitetrail::{Error, NewVisit};

use super::{visit, visit_ago, TestApp};

fn rows(page: &Value) -> Vec<Value> {
    page["rows"].as_array().unwrap().clone()
}

#[test]
fn forget_visits_deletes_the_rows_and_refuses_bad_ids() {
    let t = TestApp::start(|s| {
        visit_ago(s, "keep.example", "Keep", 3);
        visit_ago(s, "gone.example", "Gone", 2);
        visit_ago(s, "gone.example", "Gone again", 1);
    });
    let page = t.ok("list_history", json!({"query": {}}));
    let gone: Vec<String> = rows(&page)
        .iter()
        .filter(|r| r["domain"] == "gone.example")
        .map(|r| r["visit_id"].as_str().unwrap().to_owned())
        .collect();
    let report = t.ok("forget_visits", json!({"ids": gone}));
    assert_eq!(
        (report["visits"].as_u64(), report["websites"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(report["complete"], true);
    let left = rows(&t.ok("list_history", json!({"query": {}})));
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["domain"], "keep.example");
    assert_eq!(t.err_kind("forget_visits", json!({"ids": []})), "invalid_input");
    assert_eq!(
        t.err_kind("forget_visits", json!({"ids": ["nope"]})),
        "invalid_input"
    );
}

#[test]
fn forget_website_can_block_and_the_list_can_be_changed() {
    let t = TestApp::start(|s| {
        visit(s, "tracker.example", "Tracker");
        visit(s, "fine.example", "Fine");
    });
    let report = t.ok(
        "forget_website",
        json!({"domain": "tracker.example", "block": true}),
    );
    assert_eq!(report["blocked"], "tracker.example");
    assert_eq!(report["visits"], 1);
    let store = t.store();
    let refused = store.record_visit(&NewVisit {
        url: "https://ads.tracker.example/",
        title: None,
        visited_at: store.now(),
        source: "test",
        source_visit_id: None,
    });
    assert!(matches!(refused, Err(Error::Blocked { .. })));
    let list = t.ok("list_blocked", json!({}));
    assert_eq!(list[0]["domain"], "tracker.example");
    let r = t.ok("block_domain", json!({"domain": "WWW.Other.Example"}));
    assert_eq!(
        (r["domain"].as_str(), r["changed"].as_bool()),
        (Some("other.example"), Some(true))
    );
    let r = t.ok("unblock_domain", json!({"domain": "tracker.example"}));
    assert_eq!(r["changed"], true);
    assert_eq!(t.ok("list_blocked", json!({})).as_array().unwrap().len(), 1);
    assert_eq!(
        t.err_kind(
            "forget_website",
            json!({"domain": "unknown.example", "block": false})
        ),
        "not_found"
    );
    assert_eq!(
        t.err_kind("forget_website", json!({"domain": "", "block": false})),
        "invalid_input"
    );
    assert_eq!(
        t.err_kind("block_domain", json!({"domain": "bad domain"})),
        "invalid_input"
    );
    assert_eq!(
        t.err_kind("block_domain", json!({"domain": "x".repeat(300)})),
        "invalid_input"
    );
}

#[test]
fn forget_recent_forgets_the_last_hour_and_refuses_other_periods() {
    let t = TestApp::start(|s| {
        visit_ago(s, "old.example", "Two hours ago", 120);
        visit_ago(s, "recent.example", "Ten minutes ago", 10);
    });
    let report = t.ok("forget_recent", json!({"period": "hour"}));
    assert_eq!(report["visits"], 1);
    let left = rows(&t.ok("list_history", json!({"query": {}})));
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["domain"], "old.example");
    assert_eq!(
        t.err_kind("forget_recent", json!({"period": "week"})),
        "invalid_input"
    );
    let report = t.ok("forget_recent", json!({"period": "all"}));
    assert_eq!(report["visits"], 1);
    assert!(rows(&t.ok("list_history", json!({"query": {}}))).is_empty());
}

#[test]
fn favicons_come_as_data_urls_and_the_index_status_is_reported() {
    let t = TestApp::start(|s| {
        visit(s, "icon.example", "Has an icon");
        visit(s, "plain.example", "Has none");
        let site = s.website("icon.example").unwrap();
        let png = b"\x89PNG\r\n\x1a\n0000".to_vec();
        let now = s.now();
        s.write(None, |tx| {
            sitetrail::favicon::insert_favicon_in(tx, site.id, "image/png", &png, None, now)
        })
        .unwrap();
    });
    let icons = t.ok(
        "get_favicons",
        json!({"domains": ["icon.example", "plain.example"]}),
    );
    let url = icons["icon.example"].as_str().expect("an icon");
    assert!(url.starts_with("data:image/png;base64,iVBORw0KGgo"), "{url}");
    assert!(icons.get("plain.example").is_none());
    let many: Vec<String> = (0..501).map(|i| format!("d{i}.example")).collect();
    assert_eq!(
        t.err_kind("get_favicons", json!({"domains": many})),
        "invalid_input"
    );
    let status = t.ok("get_search_index", json!({}));
    assert_eq!(status["complete"], true);
    // Search goes through the index.
    let page = t.ok("list_history", json!({"query": {"search": "icon"}}));
    assert_eq!(rows(&page).len(), 1);
}

#[test]
fn an_upgraded_database_gets_its_search_index_built_at_start() {
    let t = TestApp::start(|s| {
        for i in 0..30 {
            visit_ago(
                s,
                &format!("site{i}.example"),
                &format!("Archived page {i}"),
                30 - i,
            );
        }
        // As a database from before the index: visits stored, the index empty, the backfill at
        // its start.
        s.with_conn(|c| {
            c.execute_batch(
                r#"INSERT INTO visit_fts (visit_fts) VALUES ('delete-all');
                   UPDATE search_state SET below = X'ffffffffffffffffffffffffffffffff', total = 30, done = 0;"#,
            )?;
            Ok(())
        })
        .unwrap();
    });
    let status = super::wait_for(std::time::Duration::from_secs(20), || {
        let s = t.ok("get_search_index", json!({}));
        (s["complete"] == true).then_some(s)
    });
    assert_eq!(status["done"], 30);
    let page = t.ok("list_history", json!({"query": {"search": "archived"}}));
    assert_eq!(rows(&page).len(), 30);
}
