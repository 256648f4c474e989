//! Time spent: measured active time from the extension, estimates from imported Chromium
//! durations (capped), nothing invented for Firefox; sums per website, category and calendar day;
//! `sitetrail time`.

use chrono::{FixedOffset, NaiveDate};
use rusqlite::params;
use serde_json::Value;

use sitetrail::import::Browser;
use sitetrail::time_spent::{self, GroupBy, TimeQuery, TimeRow, MAX_ESTIMATE_MS};
use sitetrail::{Category, NewVisit, Store, Timestamp};

use crate::support::import::{
    add_chromium_visit, copy_fixture, import, CHROMIUM_EPOCH_OFFSET, CHROMIUM_LINK,
};
use crate::support::{cli, count, run_ok, TempDb};

fn at(s: &str) -> Timestamp {
    Timestamp::parse_rfc3339(s).unwrap()
}

/// Records a visit to `url` at `when` with `active_ms` measured (if given).
fn timed_visit(store: &Store, url: &str, when: &str, active_ms: Option<i64>) {
    let rec = store
        .record_visit(&NewVisit {
            url,
            title: None,
            visited_at: at(when),
            source: "extension:chromium",
            source_visit_id: Some(&format!("{url}@{when}")),
        })
        .unwrap();
    if let Some(ms) = active_ms {
        let id = rec.visit_id.unwrap();
        store
            .write(None, |tx| time_spent::set_active_ms_in(tx, id, ms, store.now()))
            .unwrap();
    }
}

/// A week of browsing in a known shape.
fn week(store: &Store) {
    timed_visit(
        store,
        "https://news.test/a",
        "2026-11-23T08:00:00Z",
        Some(120_000),
    );
    timed_visit(store, "https://news.test/b", "2026-11-23T09:00:00Z", Some(30_000));
    timed_visit(store, "https://shop.test/", "2026-11-23T23:30:00Z", Some(5_000));
    timed_visit(store, "https://shop.test/x", "2026-11-25T12:00:00Z", None);
    timed_visit(store, "https://code.test/", "2026-11-25T13:00:00Z", Some(600_000));
    store.set_user_category("news.test", Category::News).unwrap();
    store.set_user_category("code.test", Category::DevTech).unwrap();
}

fn row(key: &str, active: i64, estimated: i64, visits: i64, measured: i64, est_visits: i64) -> TimeRow {
    TimeRow {
        key: key.into(),
        active_ms: active,
        estimated_ms: estimated,
        visits,
        measured_visits: measured,
        estimated_visits: est_visits,
        device: None,
    }
}

#[test]
fn time_is_summed_per_website_category_and_calendar_day() {
    let db = TempDb::new();
    let store = db.open();
    week(&store);
    let all = |by| TimeQuery {
        since: None,
        until: None,
        by,
    };
    let utc = chrono::Utc;
    assert_eq!(
        store.time_spent(&all(GroupBy::Website), &utc).unwrap(),
        vec![
            row("code.test", 600_000, 0, 1, 1, 0),
            row("news.test", 150_000, 0, 2, 2, 0),
            row("shop.test", 5_000, 0, 2, 1, 0),
        ]
    );
    assert_eq!(
        store.time_spent(&all(GroupBy::Category), &utc).unwrap(),
        vec![
            row("dev_tech", 600_000, 0, 1, 1, 0),
            row("news", 150_000, 0, 2, 2, 0),
            row("uncategorized", 5_000, 0, 2, 1, 0),
        ]
    );
    assert_eq!(
        store.time_spent(&all(GroupBy::Day), &utc).unwrap(),
        vec![
            row("2026-11-23", 155_000, 0, 3, 3, 0),
            row("2026-11-25", 600_000, 0, 2, 1, 0)
        ]
    );
    // Two hours east the late shop visit falls on the 24th.
    let east = FixedOffset::east_opt(7200).unwrap();
    let days: Vec<String> = store
        .time_spent(&all(GroupBy::Day), &east)
        .unwrap()
        .into_iter()
        .map(|r| r.key)
        .collect();
    assert_eq!(days, ["2026-11-23", "2026-11-24", "2026-11-25"]);
    // since is inclusive, until exclusive.
    let q = TimeQuery {
        since: Some(at("2026-11-23T09:00:00Z")),
        until: Some(at("2026-11-25T13:00:00Z")),
        by: GroupBy::Website,
    };
    let keys: Vec<(String, i64)> = store
        .time_spent(&q, &utc)
        .unwrap()
        .into_iter()
        .map(|r| (r.key, r.visits))
        .collect();
    assert_eq!(keys, [("news.test".to_string(), 1), ("shop.test".to_string(), 2)]);
}

#[test]
fn every_day_of_a_window_is_listed_and_an_empty_day_has_no_visits() {
    let db = TempDb::new();
    let store = db.open();
    week(&store);
    let first = NaiveDate::from_ymd_opt(2026, 11, 22).unwrap();
    let days = store.time_by_day(first, 7, &chrono::Utc).unwrap();
    let shape: Vec<(&str, i64, i64)> = days
        .iter()
        .map(|d| (d.day.as_str(), d.total.visits, d.total.active_ms))
        .collect();
    assert_eq!(
        shape,
        [
            ("2026-11-22", 0, 0),
            ("2026-11-23", 3, 155_000),
            ("2026-11-24", 0, 0),
            ("2026-11-25", 2, 600_000),
            ("2026-11-26", 0, 0),
            ("2026-11-27", 0, 0),
            ("2026-11-28", 0, 0)
        ]
    );
    let cats: Vec<(&str, i64)> = days[3]
        .categories
        .iter()
        .map(|c| (c.key.as_str(), c.active_ms))
        .collect();
    assert_eq!(cats, [("dev_tech", 600_000), ("uncategorized", 0)]);
    assert!(days[0].categories.is_empty());
    assert!(store.time_by_day(first, 0, &chrono::Utc).is_err());
    assert!(store.time_by_day(first, 367, &chrono::Utc).is_err());
}

#[test]
fn imported_chromium_durations_are_capped_estimates_and_firefox_has_none() {
    let db = TempDb::new();
    let store = db.open();
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    // A tab left open for two hours: counted as at most MAX_ESTIMATE_MS.
    let conn = rusqlite::Connection::open(&history).unwrap();
    let t = at("2026-11-29T10:00:00Z").as_micros() + CHROMIUM_EPOCH_OFFSET;
    let id = add_chromium_visit(&conn, "https://left-open.test/", "Left open", t, CHROMIUM_LINK);
    conn.execute(
        "UPDATE visits SET visit_duration = ?1 WHERE id = ?2",
        params![2i64 * 3600 * 1_000_000, id],
    )
    .unwrap();
    drop(conn);
    import(&store, Browser::Chrome, &history).unwrap();
    let rows = store
        .time_spent(
            &TimeQuery {
                since: None,
                until: None,
                by: GroupBy::Website,
            },
            &chrono::Utc,
        )
        .unwrap();
    let get = |k: &str| rows.iter().find(|r| r.key == k).unwrap().clone();
    assert_eq!(
        get("left-open.test"),
        row("left-open.test", 0, MAX_ESTIMATE_MS, 1, 0, 1)
    );
    // From the fixture (sqlite3: visit_duration of news.example.com's kept visits, in µs:
    // 56955, 35002, 66685; its fourth visit has none).
    assert_eq!(
        get("news.example.com"),
        row("news.example.com", 0, 56 + 35 + 66, 4, 0, 3)
    );
    assert_eq!(
        count(&store, "visit_time"),
        18,
        "17 fixture visits with a duration, plus ours"
    );

    let ff = TempDb::new();
    let ff_store = ff.open();
    let places = copy_fixture("firefox-places.sqlite", dir.path(), "places.sqlite");
    import(&ff_store, Browser::Firefox, &places).unwrap();
    assert_eq!(
        count(&ff_store, "visit_time"),
        0,
        "Firefox keeps no durations: unknown, not zero"
    );
    let rows = ff_store
        .time_spent(
            &TimeQuery {
                since: None,
                until: None,
                by: GroupBy::Day,
            },
            &chrono::Utc,
        )
        .unwrap();
    assert!(rows
        .iter()
        .all(|r| r.measured_visits == 0 && r.estimated_visits == 0 && r.visits > 0));
}

#[test]
fn a_measured_time_wins_over_an_estimate_and_never_goes_down() {
    let db = TempDb::new();
    let store = db.open();
    let rec = store
        .record_visit(&NewVisit {
            url: "https://a.test/",
            title: None,
            visited_at: at("2026-11-29T10:00:00Z"),
            source: "test",
            source_visit_id: None,
        })
        .unwrap();
    let id = rec.visit_id.unwrap();
    let now = store.now();
    store
        .write(None, |tx| {
            time_spent::set_estimated_ms_in(tx, id, 50_000, now)?;
            time_spent::set_active_ms_in(tx, id, 7_000, now)?;
            time_spent::set_active_ms_in(tx, id, 3_000, now)
        })
        .unwrap();
    let rows = store
        .time_spent(
            &TimeQuery {
                since: None,
                until: None,
                by: GroupBy::Website,
            },
            &chrono::Utc,
        )
        .unwrap();
    assert_eq!(rows, vec![row("a.test", 7_000, 0, 1, 1, 0)]);
    let times = store.visit_times(&[id]).unwrap();
    assert_eq!(
        (times[0].active_ms, times[0].estimated_ms),
        (Some(7_000), Some(50_000))
    );
    let err = store
        .write(None, |tx| time_spent::set_active_ms_in(tx, id, -1, now))
        .unwrap_err();
    assert!(err.to_string().contains("-1"), "{err}");
}

#[test]
fn the_time_command_prints_rows_with_their_keys() {
    let db = TempDb::new();
    week(&db.open());
    let json: Vec<Value> = serde_json::from_str(&run_ok(cli(&db.path).env("TZ", "UTC").args([
        "time",
        "--by",
        "category",
        "--json",
        "--since",
        "2026-11-23T00:00:00Z",
    ])))
    .unwrap();
    assert_eq!(json.len(), 3);
    assert_eq!(
        json[0],
        serde_json::json!({"key": "dev_tech", "active_ms": 600000, "estimated_ms": 0, "visits": 1,
                           "measured_visits": 1, "estimated_visits": 0, "device": null})
    );
    let text = run_ok(cli(&db.path).env("TZ", "UTC").args(["time", "--by", "day"]));
    let rows = crate::support::table_rows(&text);
    assert_eq!(
        rows[0],
        ["DAY", "TIME", "ACTIVE", "ESTIMATED", "VISITS", "SHARE"],
        "{text}"
    );
    // Monday 23 November, said the way the CLI says days (the year only when it is not this one).
    let monday = chrono::NaiveDate::from_ymd_opt(2026, 11, 23).unwrap();
    let today = chrono::Utc::now().date_naive();
    let label = if monday == today {
        "today".to_owned()
    } else if Some(monday) == today.pred_opt() {
        "yesterday".to_owned()
    } else if chrono::Datelike::year(&today) == 2026 {
        "Mon 23 Nov".to_owned()
    } else {
        "Mon 23 Nov 2026".to_owned()
    };
    // 2 min 35 s measured on three visits, 155 of the week's 755 s (21%): to the nearest minute,
    // as the app says it (tests/fixtures/durations.json).
    assert_eq!(
        rows[1],
        [label.as_str(), "3 min", "3 min", "-", "3", "21%"],
        "{text}"
    );
    assert_eq!(
        rows.last().unwrap(),
        &["total", "13 min", "13 min", "-", "5", "100%"],
        "{text}"
    );
    let default = run_ok(cli(&db.path).args(["time"]));
    assert_eq!(
        crate::support::table_rows(&default)[1][0],
        "code.test",
        "{default}"
    );

    for bad in [
        vec!["time", "--since", "tomorrow"],
        vec![
            "time",
            "--since",
            "2026-11-25T00:00:00Z",
            "--until",
            "2026-11-24T00:00:00Z",
        ],
        vec!["time", "--by", "week"],
    ] {
        let out = cli(&db.path).args(&bad).output().unwrap();
        assert!(!out.status.success(), "{bad:?}");
        assert!(!out.stderr.is_empty());
    }
    let empty = TempDb::new();
    assert!(run_ok(cli(&empty.path).args(["time"])).contains("no visits"));
}

/// Imports a Chromium history whose visits on 4 and 5 October (UTC) have durations (estimates),
/// then measures 3 minutes on the 30th: the "177 h until 3 min were measured" in small.
fn imported_days_and_three_measured_minutes(store: &Store) {
    let dir = tempfile::tempdir().unwrap();
    let history = copy_fixture("chromium-History", dir.path(), "History");
    let conn = rusqlite::Connection::open(&history).unwrap();
    let visits = [
        ("https://docs.test/a", "2026-10-04T09:00:00Z", 10),
        ("https://docs.test/b", "2026-10-04T10:00:00Z", 10),
        ("https://video.test/", "2026-10-04T11:00:00Z", 10),
        ("https://docs.test/c", "2026-10-05T09:00:00Z", 10),
        ("https://video.test/x", "2026-10-05T10:00:00Z", 10),
    ];
    for (url, when, minutes) in visits {
        let t = at(when).as_micros() + CHROMIUM_EPOCH_OFFSET;
        let id = add_chromium_visit(&conn, url, "Imported", t, CHROMIUM_LINK);
        conn.execute(
            "UPDATE visits SET visit_duration = ?1 WHERE id = ?2",
            params![minutes * 60 * 1_000_000i64, id],
        )
        .unwrap();
    }
    drop(conn);
    import(store, Browser::Chrome, &history).unwrap();
    timed_visit(
        store,
        "https://docs.test/measured",
        "2026-10-05T12:00:00Z",
        Some(180_000),
    );
    store.set_user_category("docs.test", Category::DevTech).unwrap();
    store
        .set_user_category("video.test", Category::VideoStreaming)
        .unwrap();
}

#[test]
fn a_periods_headline_is_measured_and_estimated_time_together_and_every_list_agrees() {
    use time_spent::headline::{Basis, Comparison};
    use time_spent::period::{get_overview, Period};
    let db = TempDb::new();
    let store = db.open();
    imported_days_and_three_measured_minutes(&store);
    let day = |s| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
    let monday = Period::new(day("2026-10-05"), 1).unwrap();
    let sunday = Period::new(day("2026-10-04"), 1).unwrap();
    let o = store
        .with_conn(|c| get_overview(c, monday, sunday, 10, &chrono::Utc))
        .unwrap();
    let h = o.headline;
    // 20 min estimated and 3 min measured: 23 min, never the 3 measured minutes alone.
    assert_eq!(h.basis, Basis::Time);
    assert_eq!(h.value, 23 * 60_000);
    assert!(h.approximate);
    assert_eq!(
        (h.measured_ms, h.estimated_ms, h.estimated_percent),
        (180_000, 1_200_000, 87)
    );
    // Against an estimated day before: time against time, Sunday marked approximate.
    assert_eq!(
        h.comparison,
        Comparison::Change {
            previous: 30 * 60_000,
            previous_approximate: true,
            change: -7 * 60_000
        }
    );
    // Every list on the screen is on the same basis: its figures add up to the headline.
    let sum = |rows: &mut dyn Iterator<Item = i64>| rows.sum::<i64>();
    assert_eq!(sum(&mut o.categories.iter().map(|r| h.basis.value(r))), h.value);
    assert_eq!(
        sum(&mut o.per_day.iter().map(|d| h.basis.value(&d.total))),
        h.value
    );
    assert_eq!(
        sum(&mut o.top_by_time.iter().map(|w| h.basis.value(&w.time))),
        h.value
    );
    // docs.test: 10 min estimated and 3 min measured, first, and still approximate.
    assert_eq!(o.top_by_time[0].domain, "docs.test");
    assert_eq!(o.top_by_time[0].time.total_ms(), 13 * 60_000);
    assert!(time_spent::headline::is_approximate(&o.top_by_time[0].time));

    // The two days together: 53 min, whatever share was measured.
    let both = Period::new(day("2026-10-04"), 2).unwrap();
    let o = store
        .with_conn(|c| get_overview(c, both, both.previous().unwrap(), 10, &chrono::Utc))
        .unwrap();
    assert_eq!(o.headline.value, 53 * 60_000);
    assert_eq!(o.headline.comparison, Comparison::NothingBefore);

    // `sitetrail time` says the same total, marked and explained.
    let out = cli(&db.path)
        .env("TZ", "UTC")
        .args([
            "time",
            "--by",
            "category",
            "--since",
            "2026-10-05T00:00:00Z",
            "--until",
            "2026-10-06T00:00:00Z",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let rows = crate::support::table_rows(&text);
    assert_eq!(
        rows[0],
        ["CATEGORY", "TIME", "ACTIVE", "ESTIMATED", "VISITS", "SHARE"],
        "{text}"
    );
    assert_eq!(
        rows[1],
        [
            "Development & technology",
            "≈ 13 min",
            "3 min",
            "≈ 10 min",
            "2",
            "57%"
        ],
        "{text}"
    );
    assert_eq!(
        rows.last().unwrap(),
        &["total", "≈ 23 min", "3 min", "≈ 20 min", "3", "100%"],
        "{text}"
    );
    let note = String::from_utf8_lossy(&out.stderr);
    assert!(
        note.contains("20 min of the total (87%) is estimated from imported history")
            && note.contains("3 min measured"),
        "{note}"
    );
}
