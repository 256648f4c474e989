//! Capture commands: linking browsers (in the test's own home directory), the time summary and
//! the time of history rows.

use std::time::Duration;

use serde_json::{json, Value};
use sitetrail::{NewVisit, Store};

use super::TestApp;

/// A stand-in `sitetrail` command (linking only checks that it exists).
fn fake_cli(dir: &std::path::Path) -> std::path::PathBuf {
    let cli = dir.join("bin/sitetrail");
    std::fs::create_dir_all(cli.parent().unwrap()).unwrap();
    std::fs::write(&cli, b"#!/bin/sh\n").unwrap();
    cli
}

fn link_of<'a>(view: &'a Value, browser: &str) -> &'a Value {
    view["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["browser"] == browser)
        .unwrap()
}

#[test]
fn browsers_link_to_the_apps_database_and_unlink() {
    let cli_dir = tempfile::tempdir().unwrap();
    let cli = fake_cli(cli_dir.path());
    let t = TestApp::start_with(|_| {}, |p| p.cli = Some(cli.clone()));
    let home = t.paths.home.clone().unwrap();
    let v = t.ok("get_browser_links", json!({}));
    assert_eq!(v["links"].as_array().unwrap().len(), 6);
    assert_eq!(v["problem"], Value::Null);
    assert_eq!(v["extension_id"], "moioghcmhlpjcbgjdgkcoipanbaniimb");
    assert!(v["extension_dir"].as_str().unwrap().ends_with("extension"), "{v}");
    // The Firefox package, where `scripts/firefox-extension` has built it (null otherwise).
    assert_eq!(
        v["firefox_package"].as_str().map(std::path::PathBuf::from),
        sitetrail::capture::link::firefox_package(),
        "{v}"
    );
    assert_eq!(link_of(&v, "chromium")["linked"], false);

    assert_eq!(
        (
            &link_of(&v, "chromium")["can_link"],
            &link_of(&v, "chromium")["scope"]
        ),
        (&json!(true), &json!("none"))
    );
    let v = t.ok("link_browser", json!({"browser": "chromium"}));
    let chromium = link_of(&v, "chromium");
    assert_eq!(chromium["linked"], true);
    assert_eq!(chromium["this_db"], true);
    assert_eq!(
        (&chromium["scope"], &chromium["can_unlink"]),
        (&json!("user"), &json!(true))
    );
    let manifest = home.join(".config/chromium/NativeMessagingHosts/app.sitetrail.host.json");
    assert_eq!(chromium["manifest"], manifest.display().to_string());
    let launcher =
        std::fs::read_to_string(home.join(".config/chromium/NativeMessagingHosts/sitetrail-native-host.sh"))
            .unwrap();
    assert!(
        launcher.contains(&cli.display().to_string()) && launcher.contains(&t.paths.db.display().to_string()),
        "{launcher}"
    );
    assert_eq!(link_of(&v, "chrome")["linked"], false, "only the one asked for");
    // Linked is not recording: nothing is claimed until the extension has talked to this database.
    assert_eq!(chromium["heard_at"], Value::Null, "{v}");
    t.store()
        .record_extension_contact("chromium", Some("0.1.0"))
        .unwrap();
    let v = t.ok("get_browser_links", json!({}));
    assert!(link_of(&v, "chromium")["heard_at"].is_string(), "{v}");
    assert_eq!(link_of(&v, "chromium")["recording"], true, "{v}");
    assert_eq!(link_of(&v, "chromium")["extension_version"], "0.1.0");
    assert_eq!(link_of(&v, "chrome")["heard_at"], Value::Null);

    let v = t.ok("unlink_browser", json!({"browser": "chromium"}));
    assert_eq!(link_of(&v, "chromium")["linked"], false);
    assert!(!manifest.exists());
    assert_eq!(
        t.err_kind("link_browser", json!({"browser": "netscape"})),
        "invalid_input"
    );
}

#[test]
fn the_packages_system_wide_link_is_linked_and_link_is_offered_only_where_it_changes_something() {
    let cli_dir = tempfile::tempdir().unwrap();
    let cli = fake_cli(cli_dir.path());
    let t = TestApp::start_with(|_| {}, |p| p.cli = Some(cli.clone()));
    let system = t.paths.system_root.clone().unwrap();
    // The package's links under the test's system root, running a `sitetrail` that is there.
    sitetrail::capture::system_link::write_system_links(
        &system,
        std::path::Path::new("/usr/bin/sitetrail"),
        std::path::Path::new("/usr/lib/sitetrail/native-host"),
    )
    .unwrap();
    std::fs::create_dir_all(system.join("usr/bin")).unwrap();
    std::fs::write(system.join("usr/bin/sitetrail"), b"").unwrap();

    let v = t.ok("get_browser_links", json!({}));
    for l in v["links"].as_array().unwrap() {
        assert_eq!(
            (&l["linked"], &l["scope"]),
            (&json!(true), &json!("system")),
            "{l}"
        );
        assert_eq!(
            l["this_db"], true,
            "the package's link writes to the user's default database"
        );
        // Neither button would change anything: the package's link serves this database and is
        // not the user's to remove.
        assert_eq!(
            (&l["can_link"], &l["can_unlink"]),
            (&json!(false), &json!(false)),
            "{l}"
        );
        assert_eq!(l["recording"], false, "no contact yet: {l}");
    }
    t.store()
        .record_extension_contact("firefox", Some("0.1.0"))
        .unwrap();
    let v = t.ok("get_browser_links", json!({}));
    assert_eq!(link_of(&v, "firefox")["recording"], true, "{v}");
    assert_eq!(link_of(&v, "chromium")["recording"], false);

    // A broken system-wide link: Link is offered, and the user's own link then comes first.
    std::fs::remove_file(system.join("usr/bin/sitetrail")).unwrap();
    let v = t.ok("get_browser_links", json!({}));
    let chromium = link_of(&v, "chromium");
    assert!(chromium["problem"].is_string(), "{chromium}");
    assert_eq!(
        (&chromium["can_link"], &chromium["recording"]),
        (&json!(true), &json!(false))
    );
    let v = t.ok("link_browser", json!({"browser": "chromium"}));
    let chromium = link_of(&v, "chromium");
    assert_eq!(
        (&chromium["scope"], &chromium["problem"]),
        (&json!("user"), &Value::Null),
        "{chromium}"
    );
    assert_eq!(
        (&chromium["can_link"], &chromium["can_unlink"]),
        (&json!(false), &json!(true))
    );
    assert!(chromium["system_manifest"].is_string(), "{chromium}");
}

#[test]
fn without_the_sitetrail_command_linking_is_refused_and_explained() {
    let t = TestApp::start(|_| {});
    let v = t.ok("get_browser_links", json!({}));
    assert!(
        v["problem"].as_str().unwrap().contains("sitetrail command"),
        "{v}"
    );
    assert_eq!(
        t.err_kind("link_browser", json!({"browser": "chrome"})),
        "unavailable"
    );
    assert!(
        !t.paths.home.clone().unwrap().join(".config").exists(),
        "nothing written"
    );
}

fn timed(store: &Store, domain: &str, minutes_ago: u64, active_ms: Option<i64>) -> String {
    let rec = store
        .record_visit(&NewVisit {
            url: &format!("https://{domain}/"),
            title: None,
            visited_at: store.now().minus(Duration::from_secs(minutes_ago * 60)),
            source: "extension:chromium",
            source_visit_id: Some(&format!("{domain}-{minutes_ago}")),
        })
        .unwrap();
    let id = rec.visit_id.unwrap();
    if let Some(ms) = active_ms {
        store
            .write(None, |tx| {
                sitetrail::time_spent::set_active_ms_in(tx, id, ms, store.now())
            })
            .unwrap();
    }
    id.to_string()
}

#[test]
fn the_time_summary_lists_thirty_days_with_empty_ones_and_the_top_websites_by_time() {
    let t = TestApp::start(|s| {
        timed(s, "reading.test", 1, Some(90_000));
        timed(s, "reading.test", 2, Some(30_000));
        timed(s, "glance.test", 3, Some(5_000));
        timed(s, "untimed.test", 4, None);
        timed(s, "old.test", 60 * 24 * 45, Some(999_000)); // 45 days ago: outside the window
    });
    let v = t.ok("get_time_summary", json!({}));
    let days = v["days"].as_array().unwrap();
    assert_eq!(days.len(), 30);
    let recorded: Vec<&Value> = days
        .iter()
        .filter(|d| d["total"]["visits"].as_i64().unwrap() > 0)
        .collect();
    // Four visits in the last minutes: one day, or two if midnight just passed.
    let visits: i64 = recorded
        .iter()
        .map(|d| d["total"]["visits"].as_i64().unwrap())
        .sum();
    let active: i64 = recorded
        .iter()
        .map(|d| d["total"]["active_ms"].as_i64().unwrap())
        .sum();
    assert_eq!((visits, active), (4, 125_000));
    assert!(
        days.iter().filter(|d| d["total"]["visits"] == 0).count() >= 28,
        "empty days are listed as such"
    );
    let top: Vec<(&str, i64)> = v["top_websites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["key"].as_str().unwrap(), w["active_ms"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        top,
        [("reading.test", 120_000), ("glance.test", 5_000)],
        "no time, no place"
    );
}

#[test]
fn history_rows_get_their_times_and_bad_ids_are_refused() {
    let mut ids = Vec::new();
    let t = TestApp::start(|s| {
        ids.push(timed(s, "a.test", 1, Some(42_000)));
        ids.push(timed(s, "b.test", 2, None));
    });
    let v = t.ok("get_visit_times", json!({"ids": ids}));
    assert_eq!(
        v,
        json!([{"visit_id": ids[0], "active_ms": 42000, "estimated_ms": null}])
    );
    assert_eq!(t.ok("get_visit_times", json!({"ids": []})), json!([]));
    assert_eq!(
        t.err_kind("get_visit_times", json!({"ids": ["nope"]})),
        "invalid_input"
    );
}

#[test]
fn the_period_overview_sums_the_last_seven_days_and_the_website_page_shows_one_site() {
    let t = TestApp::start(|s| {
        timed(s, "reading.test", 1, Some(90_000));
        timed(s, "reading.test", 2, Some(30_000));
        timed(s, "glance.test", 3, Some(5_000));
        timed(s, "untimed.test", 4, None);
        timed(s, "old.test", 60 * 24 * 20, Some(999_000)); // 20 days ago: the period before
    });
    // Seven days ending today (by the store's clock): the four recent visits.
    let first = t.store().recent_period(7).unwrap().first.to_string();
    let v = t.ok("get_period_overview", json!({"first": first, "days": 7}));
    assert_eq!(v["total"]["active_ms"], 125_000, "{v}");
    assert_eq!(v["total"]["visits"], 4);
    assert_eq!(v["per_day"].as_array().unwrap().len(), 7);
    let by_time: Vec<&str> = v["top_by_time"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["domain"].as_str().unwrap())
        .collect();
    assert_eq!(by_time, ["reading.test", "glance.test"], "no time, no place");
    assert_eq!(v["top_by_visits"].as_array().unwrap().len(), 3);
    // The week before has nothing; three weeks back has old.test.
    assert_eq!(v["previous"]["visits"], 0);
    let three_weeks = t.store().recent_period(21).unwrap().first.to_string();
    let v = t.ok(
        "get_period_overview",
        json!({"first": first, "days": 7, "compareFirst": three_weeks}),
    );
    assert_eq!(v["previous"]["active_ms"], 999_000, "{v}");
    assert_eq!(
        t.err_kind("get_period_overview", json!({"first": "30/11/2026", "days": 7})),
        "invalid_input"
    );
    assert_eq!(
        t.err_kind("get_period_overview", json!({"first": first, "days": 0})),
        "invalid_input"
    );

    let today = t.store().today().to_string();
    let line = t.ok("get_timeline", json!({"day": today}));
    assert!(line["visits"].as_array().unwrap().len() <= 4, "{line}");

    let page = t.ok("get_website_page", json!({"domain": "reading.test"}));
    assert_eq!(page["website"]["domain"], "reading.test");
    assert_eq!(page["days"].as_array().unwrap().len(), 30);
    let total: i64 = page["days"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["active_ms"].as_i64().unwrap())
        .sum();
    assert_eq!(total, 120_000);
    assert_eq!(page["visits"].as_array().unwrap().len(), 2);
    assert_eq!(
        t.err_kind("get_website_page", json!({"domain": "absent.test"})),
        "not_found"
    );
}
