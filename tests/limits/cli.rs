//! Limits and goals through the CLI as a process on a real database: `limits`, `limits add`,
//! `limits remove` and their `--json`, bad durations and unknown targets refused with nothing
//! stored, progress counted from measured active time only, and `report --week` in its three
//! formats. Run with `TZ=UTC`, so "today" and "this week" are UTC's.

use std::collections::BTreeSet;

use chrono::Datelike;
use serde_json::Value;

use sitetrail::time_spent;
use sitetrail::{Category, NewVisit, Store, Timestamp};

use crate::support::{cli, run_ok, TempDb};

fn limits(db: &TempDb) -> std::process::Command {
    let mut c = cli(&db.path);
    c.env("TZ", "UTC").arg("limits");
    c
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Runs `cmd`, expects it to fail with `code`; returns stderr.
fn fails(cmd: &mut std::process::Command, code: i32) -> String {
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "{cmd:?}: {stderr}");
    stderr
}

/// A visit to `url` `ago_s` seconds ago with measured `active_ms` and/or an `estimated_ms`.
fn timed(store: &Store, url: &str, ago_s: i64, active_ms: Option<i64>, estimated_ms: Option<i64>) {
    let at = Timestamp(Timestamp::now().0 - ago_s * 1_000_000);
    let rec = store
        .record_visit(&NewVisit {
            url,
            title: None,
            visited_at: at,
            source: "extension:chromium",
            source_visit_id: Some(&format!("{url}@{ago_s}")),
        })
        .unwrap();
    let id = rec.visit_id.unwrap();
    store
        .write(None, |tx| {
            if let Some(ms) = active_ms {
                time_spent::set_active_ms_in(tx, id, ms, store.now())?;
            }
            if let Some(ms) = estimated_ms {
                time_spent::set_estimated_ms_in(tx, id, ms, store.now())?;
            }
            Ok(())
        })
        .unwrap();
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

fn set(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|k| (*k).to_owned()).collect()
}

/// The keys of `limits --json`, as docs/limits.md lists them: a contract for scripts.
const LIMIT_KEYS: &[&str] = &[
    "target_type",
    "target",
    "target_name",
    "kind",
    "period",
    "minutes",
    "limit_ms",
    "active_ms",
    "state",
    "period_first_day",
    "period_last_day",
    "created_at",
    "updated_at",
];

#[test]
fn limits_are_added_listed_changed_and_removed_with_their_json() {
    let db = TempDb::new();
    db.open();
    let out = run_ok(limits(&db).args(["add", "Social networks", "--max", "30m"]));
    assert!(
        out.contains("new limit: at most 30 min of Social networks a day"),
        "{out}"
    );
    assert!(
        out.contains("estimated time of imported history is not counted"),
        "{out}"
    );
    let added = json_of(&run_ok(limits(&db).args([
        "add",
        "https://www.YouTube.com/watch?v=1",
        "--min",
        "1h 30min",
        "--per",
        "week",
        "--json",
    ])));
    assert_eq!(keys(&added), set(LIMIT_KEYS));
    assert_eq!(added["target_type"], "domain");
    assert_eq!(added["target"], "youtube.com", "stored as the domain it names");
    assert_eq!(added["kind"], "min");
    assert_eq!(added["period"], "week");
    assert_eq!(added["minutes"], 90);
    assert_eq!(added["limit_ms"], 90 * 60_000);
    assert_eq!(added["state"], "not_yet");
    // Setting one again changes it.
    let out = run_ok(limits(&db).args(["add", "social", "--max", "1:15"]));
    assert!(out.contains("changed limit: at most 1 h 15 min"), "{out}");

    let list = json_of(&run_ok(limits(&db).arg("--json")));
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    for l in list {
        assert_eq!(keys(l), set(LIMIT_KEYS));
    }
    assert_eq!(list[0]["target"], "social");
    assert_eq!(list[0]["minutes"], 75);
    assert_eq!(list[0]["state"], "kept");
    assert_eq!(list[0]["target_name"], "Social networks");
    let today = chrono::Utc::now().date_naive();
    let monday = today - chrono::Days::new(u64::from(today.weekday().num_days_from_monday()));
    assert_eq!(list[0]["period_first_day"], today.to_string());
    assert_eq!(list[1]["period_first_day"], monday.to_string());
    assert_eq!(
        list[1]["period_last_day"],
        (monday + chrono::Days::new(6)).to_string()
    );

    let text = run_ok(&mut limits(&db));
    assert!(
        text.contains("Social networks") && text.contains("at most 1 h 15 min"),
        "{text}"
    );
    assert!(
        text.contains("youtube.com") && text.contains("at least 1 h 30 min"),
        "{text}"
    );

    let removed = json_of(&run_ok(limits(&db).args(["remove", "YOUTUBE.com", "--json"])));
    assert_eq!(removed["removed"].as_array().unwrap().len(), 1);
    assert_eq!(removed["removed"][0]["target"], "youtube.com");
    // Only the period asked for is removed.
    fails(limits(&db).args(["remove", "social", "--per", "week"]), 3);
    let out = run_ok(limits(&db).args(["remove", "social", "--per", "day"]));
    assert!(
        out.contains("removed: at most 1 h 15 min of Social networks a day"),
        "{out}"
    );
    assert_eq!(json_of(&run_ok(limits(&db).arg("--json"))), Value::Array(vec![]));
    let err = fails(limits(&db).args(["remove", "social"]), 3);
    assert!(err.contains("not found"), "{err}");
}

#[test]
fn bad_durations_and_unknown_targets_are_refused_clearly_and_store_nothing() {
    let db = TempDb::new();
    db.open();
    for (args, says) in [
        (
            vec!["add", "social", "--max", "90"],
            "90m for minutes or 90h for hours",
        ),
        (vec!["add", "social", "--max", "45s"], "whole minutes"),
        (vec!["add", "social", "--max", "soon"], "is not a duration"),
        (vec!["add", "social", "--max", "25h"], "a day has 24 hours"),
        (vec!["add", "social", "--min", "0m"], "a goal of 0 minutes"),
        (
            vec!["add", "socail", "--max", "30m"],
            "did you mean social (Social networks)?",
        ),
        (vec!["add", "shoping", "--max", "30m"], "did you mean shopping"),
        (
            vec!["add", "qqqqzz", "--max", "30m"],
            "\"qqqqzz\" is not a category",
        ),
        (vec!["add", "qqqqzz", "--max", "30m"], "or a domain with a dot"),
        (vec!["add", "bad..example", "--max", "30m"], "not a valid domain"),
        (vec!["remove", "socail"], "did you mean social"),
    ] {
        let err = fails(limits(&db).args(&args), 2);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // Both kinds at once, or neither, is a usage error.
    fails(
        limits(&db).args(["add", "social", "--max", "1h", "--min", "2h"]),
        2,
    );
    fails(limits(&db).args(["add", "social"]), 2);
    assert_eq!(json_of(&run_ok(limits(&db).arg("--json"))), Value::Array(vec![]));
    // A week holds more than a day.
    run_ok(limits(&db).args(["add", "social", "--max", "25h", "--per", "week"]));
}

#[test]
fn progress_counts_measured_active_time_of_the_target_only() {
    let db = TempDb::new();
    let store = db.open();
    timed(&store, "https://social.example/a", 5, Some(20 * 60_000), None);
    timed(&store, "https://m.social.example/b", 4, Some(15 * 60_000), None);
    // An imported visit with only an estimate counts nothing; one with both counts its
    // measured time.
    timed(&store, "https://social.example/c", 3, None, Some(9 * 60_000));
    timed(
        &store,
        "https://social.example/d",
        2,
        Some(60_000),
        Some(9 * 60_000),
    );
    timed(&store, "https://other.example/", 1, Some(50 * 60_000), None);
    // Eight days ago: last week, not today or this week.
    timed(
        &store,
        "https://social.example/old",
        8 * 86_400,
        Some(99 * 60_000),
        None,
    );
    store
        .set_user_category("social.example", Category::Social)
        .unwrap();
    store
        .set_user_category("m.social.example", Category::Social)
        .unwrap();
    store.set_user_category("other.example", Category::News).unwrap();

    run_ok(limits(&db).args(["add", "social", "--max", "30m"]));
    run_ok(limits(&db).args(["add", "social.example", "--min", "40m", "--per", "week"]));
    run_ok(limits(&db).args(["add", "news", "--min", "50m"]));
    let list = json_of(&run_ok(limits(&db).arg("--json")));
    let of = |target: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|l| l["target"] == target)
            .unwrap()
            .clone()
    };
    let social = of("social");
    assert_eq!(
        social["active_ms"],
        36 * 60_000,
        "20 + 15 + 1 measured minutes; no estimate"
    );
    assert_eq!(social["state"], "over");
    let site = of("social.example");
    assert_eq!(site["active_ms"], 36 * 60_000, "the domain and its subdomain");
    assert_eq!(site["state"], "not_yet");
    let news = of("news");
    assert_eq!(news["active_ms"], 50 * 60_000);
    assert_eq!(news["state"], "met");
    let text = run_ok(&mut limits(&db));
    let social_row = text.lines().find(|l| l.starts_with("Social networks")).unwrap();
    assert!(
        social_row.contains("36 min") && social_row.contains("over"),
        "{text}"
    );
}

#[test]
fn the_weekly_report_in_text_markdown_and_json() {
    let db = TempDb::new();
    let store = db.open();
    timed(&store, "https://social.example/", 2, Some(40 * 60_000), None);
    timed(&store, "https://social.example/e", 1, None, Some(10 * 60_000));
    timed(
        &store,
        "https://social.example/old",
        7 * 86_400,
        Some(10 * 60_000),
        None,
    );
    timed(
        &store,
        "https://code.example/old",
        7 * 86_400 + 60,
        Some(65 * 60_000),
        None,
    );
    store
        .set_user_category("social.example", Category::Social)
        .unwrap();
    store
        .set_user_category("code.example", Category::DevTech)
        .unwrap();
    run_ok(limits(&db).args(["add", "social", "--max", "30m"]));
    run_ok(limits(&db).args(["add", "dev_tech", "--min", "2h", "--per", "week"]));
    // The daily limit was set a week ago: every day of this week so far is counted.
    crate::support::exec(
        &store,
        "UPDATE time_limit SET created_at = created_at - 8 * 86400 * 1000000 WHERE period = 'day'",
    );
    let days_so_far = chrono::Utc::now().weekday().num_days_from_monday() as usize + 1;
    let report = |format: &str| {
        let mut c = cli(&db.path);
        c.env("TZ", "UTC").args(["report", "--week", "--format", format]);
        run_ok(&mut c)
    };

    let j = json_of(&report("json"));
    assert_eq!(
        keys(&j),
        set(&[
            "week_first_day",
            "week_last_day",
            "today",
            "previous_week_first_day",
            "counted",
            "categories",
            "limits"
        ])
    );
    assert_eq!(j["counted"], "active_ms");
    let cats = j["categories"].as_array().unwrap();
    assert_eq!(
        keys(&cats[0]),
        set(&["category", "name", "this_week_ms", "last_week_ms"])
    );
    assert_eq!(cats[0]["category"], "social", "most time this week first");
    assert_eq!(
        cats[0]["this_week_ms"],
        40 * 60_000,
        "the estimate is not counted"
    );
    assert_eq!(cats[0]["last_week_ms"], 10 * 60_000);
    assert_eq!(cats[1]["category"], "dev_tech");
    assert_eq!(cats[1]["this_week_ms"], 0);
    assert_eq!(cats[1]["last_week_ms"], 65 * 60_000);
    let lims = j["limits"].as_array().unwrap();
    let daily = lims.iter().find(|l| l["period"] == "day").unwrap();
    let mut want = set(LIMIT_KEYS);
    for k in [
        "limit_ms",
        "active_ms",
        "state",
        "period_first_day",
        "period_last_day",
    ] {
        want.remove(k);
    }
    want.extend(set(&["periods", "kept"]));
    assert_eq!(keys(daily), want);
    let periods = daily["periods"].as_array().unwrap();
    assert_eq!(periods.len(), days_so_far, "one per day of this week so far");
    assert_eq!(
        keys(&periods[0]),
        set(&["first_day", "last_day", "active_ms", "state"])
    );
    assert_eq!(periods.last().unwrap()["state"], "over", "today: 40 min of 30");
    assert_eq!(periods.last().unwrap()["active_ms"], 40 * 60_000);
    assert_eq!(daily["kept"], days_so_far as u64 - 1);
    let weekly = lims.iter().find(|l| l["period"] == "week").unwrap();
    assert_eq!(weekly["periods"].as_array().unwrap().len(), 1);
    assert_eq!(weekly["periods"][0]["state"], "not_yet");
    assert_eq!(weekly["kept"], 0);

    let text = report("text");
    assert!(text.starts_with("Week of "), "{text}");
    let social = text.lines().find(|l| l.starts_with("Social networks")).unwrap();
    assert!(
        social.contains("40 min") && social.contains("10 min") && social.contains("+30 min"),
        "{text}"
    );
    let code = text
        .lines()
        .find(|l| l.starts_with("Development & technology"))
        .unwrap();
    assert!(code.contains("-1 h 05 min"), "{text}");
    let kept = format!("{} of {days_so_far} day", days_so_far - 1);
    assert!(
        text.contains(&kept) && text.contains("at most 30 min a day"),
        "{text}"
    );

    let md = report("markdown");
    assert!(md.starts_with("# Week of "), "{md}");
    assert!(
        md.contains("estimated time of imported history is not counted"),
        "{md}"
    );
    assert!(
        md.contains("| Social networks | 40 min | 10 min | +30 min |"),
        "{md}"
    );
    assert!(
        md.contains("| Development & technology | 0 s | 1 h 05 min | -1 h 05 min |"),
        "{md}"
    );
    assert!(md.contains("## Limits and goals"), "{md}");
    assert!(
        md.contains(&format!("| Social networks | at most 30 min a day | {kept}")),
        "{md}"
    );

    // The report needs its period.
    let mut c = cli(&db.path);
    let err = fails(c.arg("report"), 2);
    assert!(err.contains("--week"), "{err}");
}
