//! Reminders of limits and goals through a fake notification service on a private D-Bus session
//! bus (the real `sitetrail` CLI, the real D-Bus): none before they are turned on, none in quiet
//! hours, the right words once a limit is reached or its warning point passed, and never twice,
//! even with two processes checking at once (the app and the daemon).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dbus::channel::MatchingReceiver;
use dbus::message::MatchRule;

use sitetrail::limits::{Kind, Period, Target};
use sitetrail::Category;

use crate::support::dbus::PrivateBus;
use crate::support::{cli, measured_visit, run_ok, TempDb};

/// `org.freedesktop.Notifications` on `address`, recording (title, body) of every notification.
struct FakeNotifications {
    seen: Arc<Mutex<Vec<(String, String)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeNotifications {
    fn start(address: &str) -> FakeNotifications {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let (address, seen2, stop2) = (address.to_owned(), seen.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut channel = dbus::channel::Channel::open_private(&address).unwrap();
            channel.register().unwrap();
            let conn: dbus::blocking::Connection = channel.into();
            conn.request_name("org.freedesktop.Notifications", false, true, false)
                .unwrap();
            conn.start_receive(
                MatchRule::new_method_call(),
                Box::new(move |msg, conn| {
                    use dbus::channel::Sender;
                    let reply = match msg.member().as_deref() {
                        Some("Notify") => {
                            let (_app, _replaces, _icon, title, body): (String, u32, String, String, String) =
                                msg.read5().unwrap();
                            seen2.lock().unwrap().push((title, body));
                            msg.method_return().append1(1_u32)
                        }
                        Some("GetServerInformation") => msg
                            .method_return()
                            .append2("fake", "sitetrail")
                            .append2("1", "1.2"),
                        Some("GetCapabilities") => msg.method_return().append1(vec!["body".to_owned()]),
                        _ => msg.method_return(),
                    };
                    let _ = conn.send(reply);
                    true
                }),
            );
            ready_tx.send(()).unwrap();
            while !stop2.load(Ordering::Relaxed) {
                conn.process(Duration::from_millis(50)).unwrap();
            }
        });
        ready.recv_timeout(Duration::from_secs(10)).unwrap();
        FakeNotifications {
            seen,
            stop,
            thread: Some(thread),
        }
    }

    fn seen(&self) -> Vec<(String, String)> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for FakeNotifications {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn reminders_are_shown_once_each_after_opt_in_outside_quiet_hours_with_the_right_words() {
    let bus = PrivateBus::start();
    let fake = FakeNotifications::start(&bus.address);
    let db = TempDb::new();
    {
        let store = sitetrail::Store::open(&db.path).unwrap();
        measured_visit(
            &store,
            "https://chat.example/room",
            31 * 60_000,
            Duration::from_secs(60),
        );
        store.set_user_category("chat.example", Category::Social).unwrap();
        store
            .set_limit(&Target::Category(Category::Social), Period::Day, Kind::Max, 30)
            .unwrap();
        measured_visit(
            &store,
            "https://video.example/watch",
            50 * 60_000,
            Duration::from_secs(60),
        );
        store
            .set_limit(
                &Target::Domain("video.example".into()),
                Period::Day,
                Kind::Max,
                60,
            )
            .unwrap();
    }
    let check = || {
        run_ok(cli(&db.path).env("DBUS_SESSION_BUS_ADDRESS", &bus.address).args([
            "limits",
            "reminders",
            "--check",
        ]))
    };
    // Off until turned on.
    check();
    assert_eq!(fake.seen(), Vec::<(String, String)>::new());
    // On, with a warning at 80 %, but in quiet hours now.
    let now = chrono::Local::now();
    let quiet = format!(
        "{}-{}",
        (now - chrono::Duration::hours(1)).format("%H:%M"),
        (now + chrono::Duration::hours(1)).format("%H:%M")
    );
    run_ok(cli(&db.path).args(["limits", "reminders", "on", "--warn", "80", "--quiet", &quiet]));
    check();
    assert!(
        fake.seen().is_empty(),
        "a reminder in quiet hours: {:?}",
        fake.seen()
    );
    // Out of quiet hours: the limit reached and the other's warning, each once, even with two
    // processes checking at once.
    run_ok(cli(&db.path).args(["limits", "reminders", "--quiet", "none"]));
    std::thread::scope(|s| {
        let a = s.spawn(check);
        let b = s.spawn(check);
        a.join().unwrap();
        b.join().unwrap();
    });
    check();
    let mut seen = fake.seen();
    seen.sort();
    assert_eq!(
        seen,
        [
            (
                "80 % of your limit: video.example".to_owned(),
                "50 min today of 1 h 00 min a day, on all your devices.".to_owned()
            ),
            (
                "Limit reached: Social networks".to_owned(),
                "31 min today; your limit is 30 min a day, on all your devices.".to_owned()
            ),
        ]
    );
    let json: serde_json::Value =
        serde_json::from_str(&run_ok(cli(&db.path).args(["limits", "reminders", "--json"]))).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"enabled": true, "warn_percent": 80, "quiet": null})
    );
}
