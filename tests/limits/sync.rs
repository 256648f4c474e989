//! Limits and goals on two devices through a real hub (PostgreSQL and the hub's process): a limit
//! set on one device (before and after it linked) reaches the other, the time spent on either
//! counts toward it on both, and a removal wins over an edit made later on a device that had not
//! seen it, while adding it again afterwards wins over the removal.

use std::time::Duration;

use sitetrail::limits::{Kind, Period, Target};
use sitetrail::{Category, Change};

use crate::support::measured_visit;
use crate::support::sync::{converge, Device, TestHub};

/// A visit to `url` a few seconds ago with `active_ms` measured, on `d`.
fn spend(d: &Device, url: &str, active_ms: i64) {
    measured_visit(&d.store, url, active_ms, Duration::from_secs(2));
}

/// (target, period, kind, minutes) of every limit on `d`.
fn limits(d: &Device) -> Vec<(String, &'static str, &'static str, u32)> {
    d.store
        .limits()
        .unwrap()
        .into_iter()
        .map(|l| (l.target, l.period.as_str(), l.kind.as_str(), l.minutes))
        .collect()
}

fn active_ms(d: &Device, target: &str) -> (i64, &'static str) {
    let p = d
        .store
        .limit_progress()
        .unwrap()
        .into_iter()
        .find(|p| p.limit.target == target)
        .unwrap();
    (p.active_ms, p.state.as_str())
}

#[test]
fn a_limit_set_on_one_device_holds_on_the_other_and_counts_both_devices_time() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let social = Target::Category(Category::Social);
    // Set before the device was linked: sent when it links.
    a.store.set_limit(&social, Period::Day, Kind::Max, 30).unwrap();
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    let mut heard = b.store.subscribe();
    let video = Target::Domain("video.example".into());
    a.store.set_limit(&video, Period::Week, Kind::Min, 90).unwrap();
    converge(&[&a, &b]);
    // The sync that brought it told b's subscribers that limits changed: the app's screens redraw.
    assert!(
        std::iter::from_fn(|| heard.try_recv().ok()).any(|c| c == Change::Limits),
        "b's pull did not announce the limit it brought"
    );
    assert_eq!(
        limits(&b),
        [
            ("social".to_owned(), "day", "max", 30),
            ("video.example".to_owned(), "week", "min", 90)
        ]
    );
    assert_eq!(limits(&a), limits(&b));

    // Time on each device counts toward the limit on both.
    spend(&b, "https://chat.example/room", 20 * 60_000);
    b.store
        .set_user_category("chat.example", Category::Social)
        .unwrap();
    spend(&b, "https://m.video.example/v", 50 * 60_000);
    converge(&[&a, &b]);
    spend(&a, "https://chat.example/other", 15 * 60_000);
    spend(&a, "https://video.example/w", 45 * 60_000);
    converge(&[&a, &b]);
    for d in [&a, &b] {
        assert_eq!(
            active_ms(d, "social"),
            (35 * 60_000, "over"),
            "20 min on b, 15 on a"
        );
        assert_eq!(active_ms(d, "video.example"), (95 * 60_000, "met"));
    }
}

#[test]
fn a_removal_wins_over_a_later_edit_that_had_not_seen_it_and_a_new_limit_wins_over_the_removal() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    let site = Target::Domain("news.example".into());
    a.store.set_limit(&site, Period::Day, Kind::Max, 30).unwrap();
    converge(&[&a, &b]);
    assert_eq!(limits(&b), [("news.example".to_owned(), "day", "max", 30)]);

    // a removes it; then b, not synced since, changes it: b's change is the later by the clock,
    // but the removal wins on both.
    assert_eq!(a.store.remove_limits(&site, None).unwrap().len(), 1);
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert!(!b.store.set_limit(&site, Period::Day, Kind::Max, 45).unwrap());
    converge(&[&b, &a]);
    assert_eq!(limits(&a), []);
    assert_eq!(limits(&b), []);

    // Set again after the removal was seen: a new limit, which wins, on both.
    assert!(b.store.set_limit(&site, Period::Day, Kind::Max, 20).unwrap());
    converge(&[&a, &b]);
    assert_eq!(limits(&a), [("news.example".to_owned(), "day", "max", 20)]);
    assert_eq!(limits(&a), limits(&b));

    // An edit after that, on either device: the last writer wins.
    a.store.set_limit(&site, Period::Day, Kind::Max, 25).unwrap();
    converge(&[&a, &b]);
    assert_eq!(limits(&b), [("news.example".to_owned(), "day", "max", 25)]);
}

#[test]
fn a_limit_from_another_device_that_names_nothing_valid_is_dropped_and_changes_nothing() {
    use sitetrail::sync::apply::apply_in;
    use sitetrail::sync_log::ops::{Op, Stamped};

    let db = crate::support::TempDb::new();
    let store = db.open();
    let op = |target_type: &str, target: &str, period: &str, kind: &str, minutes: Option<u32>| Stamped {
        hlc: 1 << 40,
        op: Op::Limit {
            target_type: target_type.into(),
            target: target.into(),
            period: period.into(),
            kind: kind.into(),
            minutes,
            created: None,
        },
    };
    let bad = [
        op("category", "weather", "day", "max", Some(30)),
        op("domain", "WWW.Example.com", "day", "max", Some(30)),
        op("domain", "a..b", "day", "max", Some(30)),
        op("url", "example.com", "day", "max", Some(30)),
        op("domain", "example.com", "month", "max", Some(30)),
        op("domain", "example.com", "day", "most", Some(30)),
        op("domain", "example.com", "day", "max", Some(24 * 60 + 1)),
        op("domain", "example.com", "day", "min", Some(0)),
    ];
    let good = op("domain", "example.com", "week", "max", Some(24 * 60 + 1));
    let device = uuid::Uuid::now_v7();
    let applied = store
        .write(None, |tx| {
            let mut ops = bad.to_vec();
            ops.push(good.clone());
            apply_in(tx, device, &ops, store.now())
        })
        .unwrap();
    assert_eq!((applied.dropped, applied.ops), (bad.len() as u64, 1));
    let all = store.limits().unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(
        (all[0].target.as_str(), all[0].minutes),
        ("example.com", 24 * 60 + 1)
    );
}

/// What `d` holds back now: the focus session's targets and end, if one is running.
fn focus_on(d: &Device) -> Option<(Vec<String>, i64)> {
    d.store.focus().unwrap().map(|f| (f.block_keys(), f.ends_at.0))
}

#[test]
fn a_focus_started_on_one_device_holds_on_the_other_until_one_stops_it_and_a_device_that_links_later_gets_it()
{
    let hub = TestHub::start();
    let (a, b, c) = (Device::new(), Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    let started = a
        .store
        .start_focus(
            50,
            vec![
                Target::Category(Category::Social),
                Target::Domain("video.example".into()),
            ],
        )
        .unwrap();
    converge(&[&a, &b]);
    let expected = Some((
        vec!["category:social".to_owned(), "domain:video.example".to_owned()],
        started.ends_at.0,
    ));
    assert_eq!(focus_on(&b), expected, "the session holds on the other device");
    // The browser on b holds its sites back: the native host's answer comes from b's database
    // (no social website recorded there yet; the domain holds).
    let holds = b.store.holds().unwrap();
    assert_eq!(
        holds.focus.map(|f| f.domains),
        Some(vec!["video.example".to_owned()])
    );
    // A device that links while it runs gets it.
    c.join(&hub, "c", &key);
    converge(&[&a, &b, &c]);
    assert_eq!(focus_on(&c), expected);
    // Stopped on b: stopped everywhere.
    assert!(b.store.stop_focus().unwrap().is_some());
    converge(&[&a, &b, &c]);
    for d in [&a, &b, &c] {
        assert_eq!(focus_on(d), None);
    }
}

/// A device that joins again sends its limits with the clocks they hold: a change made elsewhere
/// while it was away (a removal, an edit) is newer and stays; one it made while away is newer and
/// wins.
#[test]
fn a_limit_sent_again_at_a_join_keeps_its_clock_and_loses_to_a_newer_change() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    let (news, video) = (
        Target::Domain("news.example".into()),
        Target::Domain("video.example".into()),
    );
    a.store.set_limit(&news, Period::Day, Kind::Max, 30).unwrap();
    a.store.set_limit(&video, Period::Day, Kind::Max, 60).unwrap();
    converge(&[&a, &b]);
    assert_eq!(limits(&b).len(), 2);
    // A leaves; meanwhile B removes one limit and edits the other.
    a.leave(false).unwrap();
    b.store.remove_limits(&news, None).unwrap();
    b.store.set_limit(&video, Period::Day, Kind::Max, 45).unwrap();
    b.sync();
    // A, away, sets a goal of its own.
    let docs = Target::Domain("docs.example".into());
    a.store.set_limit(&docs, Period::Week, Kind::Min, 120).unwrap();
    a.join(&hub, "a", &key);
    converge(&[&a, &b]);
    let expected = [
        ("docs.example".to_owned(), "week", "min", 120),
        ("video.example".to_owned(), "day", "max", 45),
    ];
    assert_eq!(
        limits(&b),
        expected,
        "B's newer changes stay, A's new goal arrives"
    );
    assert_eq!(limits(&a), expected);
}
