//! The sync clock is bounded (issue 27): a device whose clock says 9999 and one whose clock says
//! 1970 share an account with one whose clock is right; every device converges on the same
//! state, what a person changes after seeing a value wins over it on every device whatever the
//! clocks, a forgetting removes what its device saw, and no device's clock is dragged more than
//! a day past its own wall clock.

use sitetrail::sync_log::conflict;
use sitetrail::Category;

use crate::support::sync::{converge, offset_to, Device, TestHub};

fn category(d: &Device, domain: &str) -> Option<String> {
    d.websites().into_iter().find(|w| w.0 == domain).and_then(|w| w.1)
}

fn urls_of(d: &Device, domain: &str) -> Vec<String> {
    let mut u: Vec<String> = d
        .visits()
        .into_iter()
        .map(|v| v.1)
        .filter(|u| u.contains(domain))
        .collect();
    u.sort();
    u
}

/// The device's sync clock, in wall milliseconds.
fn clock_ms(d: &Device) -> i64 {
    let hlc: i64 = d
        .store
        .with_conn(|c| Ok(c.query_row("SELECT hlc FROM sync_link", [], |r| r.get(0))?))
        .unwrap();
    conflict::wall_of_stamp(hlc)
}

fn wall_ms(d: &Device) -> i64 {
    d.store.now().as_micros() / 1000
}

#[test]
fn devices_at_the_years_9999_and_1970_converge_and_drag_no_clock() {
    let hub = TestHub::start();
    let right = Device::new();
    let future = Device::with_clock(offset_to("9999-06-01T00:00:00Z"));
    let past = Device::with_clock(offset_to("1970-01-02T00:00:00Z"));
    let key = right.setup(&hub, "right");
    future.join(&hub, "future", &key);
    past.join(&hub, "past", &key);
    let all = [&right, &future, &past];

    // Concurrent changes: the device furthest ahead wins, on every device.
    future.visit_at("https://x.example/f", "f", 1);
    future
        .store
        .set_user_category("x.example", Category::News)
        .unwrap();
    past.visit_at("https://x.example/p", "p", 2);
    past.store
        .set_user_category("x.example", Category::Shopping)
        .unwrap();
    right.visit_at("https://x.example/r", "r", 3);
    converge(&all);
    for d in all {
        assert_eq!(category(d, "x.example").as_deref(), Some("news"));
        assert_eq!(urls_of(d, "x.example").len(), 3);
    }

    // No clock was dragged to 9999 (or ~4200): each is within a day of its own wall clock.
    for d in [&right, &past] {
        assert!(
            clock_ms(d) <= wall_ms(d) + conflict::FUTURE_BOUND_MS + 1,
            "a clock {} ms past its wall {}",
            clock_ms(d),
            wall_ms(d)
        );
    }

    // The device at 1970, having seen "news", changes it: its change wins everywhere.
    past.store
        .set_user_category("x.example", Category::DevTech)
        .unwrap();
    converge(&all);
    for d in all {
        assert_eq!(
            category(d, "x.example").as_deref(),
            Some("dev_tech"),
            "on every device"
        );
    }
    // And the device at 9999 changes it again after seeing that: it wins too.
    future
        .store
        .set_user_category("x.example", Category::Shopping)
        .unwrap();
    converge(&all);
    for d in all {
        assert_eq!(category(d, "x.example").as_deref(), Some("shopping"));
    }

    // The device at 1970 forgets a website whose visits the device at 9999 recorded: they go
    // everywhere.
    future.visit_at("https://z.example/1", "z", 4);
    right.visit_at("https://z.example/2", "z", 5);
    converge(&all);
    assert_eq!(urls_of(&past, "z.example").len(), 2);
    past.store
        .forget_website("z.example", false, &Default::default(), &mut |_| {})
        .unwrap();
    converge(&all);
    for d in all {
        assert!(urls_of(d, "z.example").is_empty(), "forgotten everywhere");
    }

    // The device at 9999 forgets a website; the device at 1970 then records a visit to it:
    // the visit stays, everywhere.
    right.visit_at("https://w.example/old", "w", 6);
    converge(&all);
    future
        .store
        .forget_website("w.example", false, &Default::default(), &mut |_| {})
        .unwrap();
    converge(&all);
    past.visit_at("https://w.example/new", "w", 7);
    converge(&all);
    for d in all {
        assert_eq!(urls_of(d, "w.example"), ["https://w.example/new"]);
    }

    // Everything else is the same everywhere too.
    let first = (right.visits(), right.websites(), right.blocked());
    for d in [&future, &past] {
        assert_eq!((d.visits(), d.websites(), d.blocked()), first);
    }
}
