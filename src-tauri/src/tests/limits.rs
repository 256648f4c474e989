//! Limits and goals, the weekly report, focus sessions and reminders from the app: each command's
//! answer on a real database, bad input refused with the library's words and nothing stored, and
//! the change event that makes every screen redraw when a limit changes elsewhere.

use std::time::Duration;

use serde_json::{json, Value};
use sitetrail::{Category, NewVisit, Store};

use super::{wait_for, TestApp};

/// Records a visit to `url` now with `active_ms` of measured active time (the extension's).
fn measured_visit(store: &Store, url: &str, active_ms: i64) {
    let rec = store
        .record_visit(&NewVisit {
            url,
            title: None,
            visited_at: store.now(),
            source: "extension",
            source_visit_id: None,
        })
        .unwrap();
    let id = rec.visit_id.unwrap();
    store
        .write(None, |tx| {
            sitetrail::time_spent::set_active_ms_in(tx, id, active_ms, store.now())
        })
        .unwrap();
}

fn limit<'a>(view: &'a Value, target: &str, kind: &str) -> &'a Value {
    view["limits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["target"] == target && l["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} on {target}: {view}"))
}

#[test]
fn a_limit_and_a_goal_set_from_the_app_show_their_progress_and_remove_one_at_a_time() {
    let t = TestApp::start(|s| {
        measured_visit(s, "https://www.youtube.com/watch", 40 * 60_000);
        measured_visit(s, "https://github.com/x", 20 * 60_000);
        s.set_user_category("github.com", Category::DevTech).unwrap();
    });
    // Durations as people write them, a website (its subdomains count) and a category id.
    t.ok(
        "set_limit",
        json!({"target": "youtube.com", "kind": "max", "period": "day", "duration": "30m"}),
    );
    t.ok(
        "set_limit",
        json!({"target": "dev_tech", "kind": "min", "period": "day", "duration": "1h 30min"}),
    );
    let v = t.ok(
        "set_limit",
        json!({"target": "youtube.com", "kind": "min", "period": "day", "duration": "0:10"}),
    );
    let yt = limit(&v, "youtube.com", "max");
    assert_eq!(yt["minutes"], 30);
    assert_eq!(yt["active_ms"], 40 * 60_000, "{yt}");
    assert_eq!(yt["state"], "over");
    let dev = limit(&v, "dev_tech", "min");
    assert_eq!(dev["minutes"], 90);
    assert_eq!(dev["active_ms"], 20 * 60_000);
    assert_eq!(dev["state"], "not_yet");
    assert_eq!(dev["target_name"], "Development & technology");
    assert_eq!(limit(&v, "youtube.com", "min")["state"], "met");
    assert_eq!(v["reminders_asked"], false, "not asked yet: {v}");
    // The same as the library's (the CLI's `limits --json`).
    let lib = serde_json::to_value(t.store().limit_progress().unwrap()).unwrap();
    assert_eq!(t.ok("list_limits", json!({}))["limits"], lib);

    // Removing one removes that one only: the goal of the same website and day stays.
    let v = t.ok(
        "remove_limit",
        json!({"target": "youtube.com", "kind": "max", "period": "day"}),
    );
    assert_eq!(v["limits"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!(limit(&v, "youtube.com", "min")["minutes"], 10);
}

#[test]
fn bad_limits_are_refused_with_clear_words_and_nothing_is_stored() {
    let t = TestApp::start(|_| {});
    let refused = |args: Value, says: &str| {
        let e = t.invoke("set_limit", args.clone()).expect_err("refused");
        assert_eq!(e["kind"], "invalid_input", "{args}: {e}");
        let m = e["message"].as_str().unwrap();
        assert!(m.contains(says), "{args}: {m:?} should say {says:?}");
    };
    let with = |target: &str, kind: &str, period: &str, duration: &str| json!({"target": target, "kind": kind, "period": period, "duration": duration});
    refused(with("social", "max", "day", "90"), "90m");
    refused(with("social", "max", "day", "soon"), "30m, 2h");
    refused(with("social", "max", "day", "25h"), "never be reached");
    refused(with("social", "min", "day", "0m"), "always met");
    refused(
        with("sociall", "max", "day", "30m"),
        "not a category id or a domain",
    );
    refused(with("", "max", "day", "30m"), "Choose a category");
    refused(with("social", "most", "day", "30m"), "max");
    refused(with("social", "max", "month", "30m"), "day or week");
    assert!(t.store().limits().unwrap().is_empty());
    assert_eq!(
        t.err_kind("get_week_report", json!({"day": "last tuesday"})),
        "invalid_input"
    );
}

#[test]
fn the_week_report_is_the_librarys_the_cli_prints() {
    let t = TestApp::start(|s| {
        measured_visit(s, "https://www.youtube.com/watch", 40 * 60_000);
        s.set_user_category("youtube.com", Category::VideoStreaming)
            .unwrap();
    });
    t.ok(
        "set_limit",
        json!({"target": "video_streaming", "kind": "max", "period": "day", "duration": "30m"}),
    );
    let r = t.ok("get_week_report", json!({}));
    assert_eq!(r, serde_json::to_value(t.store().week_report().unwrap()).unwrap());
    assert_eq!(r["categories"][0]["category"], "video_streaming", "{r}");
    assert_eq!(r["categories"][0]["this_week_ms"], 40 * 60_000);
    assert_eq!(
        r["limits"][0]["periods"].as_array().unwrap().len(),
        1,
        "set today: {r}"
    );
    assert_eq!(r["limits"][0]["kept"], 0);
    // This week asked by one of its days is this week so far; the week before is whole.
    let today = r["today"].as_str().unwrap();
    assert_eq!(t.ok("get_week_report", json!({"day": today})), r);
    let before = t.ok("get_week_report", json!({"day": r["previous_week_first_day"]}));
    assert_eq!(before["week_first_day"], r["previous_week_first_day"]);
    assert_eq!(
        before["categories"],
        json!([]),
        "nothing the week before: {before}"
    );
    assert_eq!(
        before["limits"][0]["periods"],
        json!([]),
        "set after that week: {before}"
    );
}

#[test]
fn a_focus_session_starts_shows_and_stops() {
    let t = TestApp::start(|_| {});
    assert_eq!(t.ok("get_focus", json!({}))["active"], false);
    let f = t.ok(
        "start_focus",
        json!({"duration": "50m", "blocks": ["social", "youtube.com"]}),
    );
    assert_eq!(f["active"], true, "{f}");
    let ms = f["remaining_ms"].as_i64().unwrap();
    assert!(ms > 49 * 60_000 && ms <= 50 * 60_000, "{f}");
    let names: Vec<&str> = f["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["target_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Social networks", "youtube.com"]);
    // What the browser is held to: the library's session.
    assert!(t.store().focus().unwrap().is_some());
    assert_eq!(t.ok("get_focus", json!({}))["active"], true);
    assert_eq!(t.ok("stop_focus", json!({}))["active"], false);
    assert!(t.store().focus().unwrap().is_none());

    for (args, says) in [
        (json!({"duration": "50", "blocks": ["social"]}), "50m"),
        (json!({"duration": "13h", "blocks": ["social"]}), "12 hours"),
        (json!({"duration": "50m", "blocks": []}), "at least one"),
        (
            json!({"duration": "50m", "blocks": ["nothing"]}),
            "not a category",
        ),
    ] {
        let e = t.invoke("start_focus", args.clone()).expect_err("refused");
        assert_eq!(e["kind"], "invalid_input", "{args}: {e}");
        assert!(e["message"].as_str().unwrap().contains(says), "{args}: {e}");
    }
    assert!(t.store().focus().unwrap().is_none(), "nothing started");
}

#[test]
fn reminders_are_off_and_unasked_until_answered_and_bad_settings_change_nothing() {
    let t = TestApp::start(|_| {});
    let r = t.ok("get_reminders", json!({}));
    assert_eq!(
        r,
        json!({"asked": false, "enabled": false, "warn_percent": null, "quiet": null})
    );
    let e = t
        .invoke("set_reminders", json!({"enabled": true, "quiet": "22-07"}))
        .expect_err("bad quiet hours");
    assert!(e["message"].as_str().unwrap().contains("22:00-07:00"), "{e}");
    assert_eq!(
        t.err_kind("set_reminders", json!({"enabled": true, "warnPercent": 100})),
        "invalid_input"
    );
    assert_eq!(
        t.store().stored_reminder_settings().unwrap(),
        None,
        "nothing stored"
    );
    // "Not now" is an answer: the question is not asked again, and reminders stay off.
    let r = t.ok("set_reminders", json!({"enabled": false}));
    assert_eq!(
        (r["asked"].clone(), r["enabled"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(t.ok("list_limits", json!({}))["reminders_asked"], true);
    let r = t.ok(
        "set_reminders",
        json!({"enabled": true, "warnPercent": 80, "quiet": "22:00-07:00"}),
    );
    assert_eq!(
        r,
        json!({"asked": true, "enabled": true, "warn_percent": 80, "quiet": "22:00-07:00"})
    );
    let saved = t.store().reminder_settings().unwrap();
    assert!(saved.enabled && saved.warn_percent == Some(80) && saved.quiet.is_some());
}

/// A limit set in another process (the CLI, the extension's popup, a sync) reaches the UI as a
/// change event that says limits changed: every screen that shows them redraws.
#[test]
fn a_limit_set_elsewhere_is_announced_to_the_ui() {
    let t = TestApp::start(|_| {});
    let seen = t.store_changes();
    let other = t.store();
    let target = sitetrail::limits::Target::Category(Category::Social);
    other
        .set_limit(
            &target,
            sitetrail::limits::Period::Day,
            sitetrail::limits::Kind::Max,
            30,
        )
        .unwrap();
    wait_for(Duration::from_secs(10), || {
        seen.lock()
            .unwrap()
            .iter()
            .any(|c| c["limits"] == true)
            .then_some(())
    });
}
