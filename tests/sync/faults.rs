//! Sync under faults: a hub answering garbage, a truncated body or a 5xx; PostgreSQL stopped
//! during a sync; a device killed with SIGKILL in the middle of applying. Each ends with nothing
//! lost, nothing twice, and a clear status.

use std::time::Duration;

use sitetrail::ErrorKind;

use crate::support::cli;
use crate::support::raw_http::{Behaviour, RawServer};
use crate::support::sync::{postgres::Postgres, Device, TestHub};

#[test]
fn a_hub_answering_garbage_a_truncated_body_or_a_5xx_loses_nothing() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    a.visit_at("https://kept.example/", "kept", 10);
    let real = hub.url.clone();
    // Each server reads the whole request before it answers, never resets the connection and says
    // it closes it, so every request of a sync (the index, then the push) sees exactly the answer:
    // a reset while the request was still arriving, or a push sent on the kept-alive connection the
    // server had just closed, is another failure ("the connection failed"), and the push's error
    // is the one a sync reports first (1 run in 15 under load before).
    let servers = tokio::runtime::Runtime::new().unwrap();
    let raw_server = |answer: &'static str| {
        let server = servers.block_on(RawServer::start(move |_| Behaviour::Raw(answer)));
        format!("http://{}", server.addr)
    };
    let cases = [
        (
            raw_server("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot json!"),
            ErrorKind::ProviderFailed,
            "not the sync API",
        ),
        (
            raw_server("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n{\"results\": ["),
            ErrorKind::Offline,
            "closed the connection",
        ),
        (
            raw_server("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 11\r\nConnection: close\r\n\r\nbad gateway"),
            ErrorKind::Offline,
            "unavailable",
        ),
        (raw_server("garbage that is not HTTP\r\n\r\n"), ErrorKind::Offline, "cannot be reached"),
    ];
    for (url, kind, words) in cases {
        a.set_hub_url(&url);
        let e = a.try_sync().expect_err("a broken hub");
        assert_eq!(e.kind(), kind, "{url}: {e}");
        assert!(e.to_string().contains(words), "{e}");
        let status = a.store.with_conn(sitetrail::sync::engine::status).unwrap();
        assert!(status.pending >= 1, "the change still waits");
        assert!(status.link.unwrap().last_error.is_some());
    }
    a.set_hub_url(&real);
    let r = a.sync();
    assert!(r.pushed >= 1);
    assert_eq!(r.pending, 0);
    b.sync();
    assert_eq!(b.visits().len(), 1, "the visit arrives once");
    assert!(a
        .store
        .with_conn(sitetrail::sync::engine::status)
        .unwrap()
        .link
        .unwrap()
        .last_error
        .is_none());
}

#[test]
fn postgres_stopped_during_a_sync_is_offline_and_the_next_sync_sends_everything_once() {
    let pg = Postgres::start();
    let hub = TestHub::start_on(&pg);
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    for i in 0..50 {
        a.visit_at(&format!("https://site{i}.example/"), "x", i);
    }
    pg.stop();
    let e = a.try_sync().expect_err("PostgreSQL is down");
    assert_eq!(e.kind(), ErrorKind::Offline, "{e}");
    assert!(
        a.store
            .with_conn(sitetrail::sync::engine::status)
            .unwrap()
            .pending
            >= 50
    );
    pg.start_again();
    // The hub recovers by itself (its pool reconnects).
    let mut pushed = None;
    for _ in 0..50 {
        match a.try_sync() {
            Ok(r) => {
                pushed = Some(r);
                break;
            }
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Offline, "{e}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
    assert_eq!(pushed.expect("the hub came back").pending, 0);
    b.sync();
    assert_eq!(b.visits().len(), 50, "every visit, once");
    assert_eq!(b.visits(), a.visits());
}

#[test]
fn a_device_killed_while_applying_resumes_with_nothing_lost_or_twice() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    // Enough history for the pull to take a while.
    let n = 12_000;
    a.store
        .write(Some(sitetrail::Change::Visits), |tx| {
            for i in 0..n {
                let url = format!("https://bulk{}.example/{i}", i % 300);
                sitetrail::visits::record_visit_in(
                    tx,
                    &sitetrail::NewVisit {
                        url: &url,
                        title: Some("bulk"),
                        visited_at: crate::support::sync::t(i),
                        source: "test",
                        source_visit_id: None,
                    },
                    a.store.now(),
                )?;
            }
            Ok(())
        })
        .unwrap();
    a.sync();
    // B pulls with the CLI, and is killed part way through applying: as soon as its first
    // transaction of visits is committed, whatever the machine's speed.
    let applied = || -> i64 {
        b.store
            .with_conn(|c| Ok(c.query_row("SELECT count(*) FROM visit", [], |r| r.get(0))?))
            .unwrap()
    };
    let mut killed = false;
    for _ in 0..5 {
        let before = applied();
        let mut child = cli(&b.db)
            .arg("--settings")
            .arg(b.settings())
            .args(["sync", "now"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        crate::support::wait_for(Duration::from_secs(60), || {
            applied() > before || child.try_wait().unwrap().is_some()
        });
        let _ = child.kill();
        let _ = child.wait();
        let now = applied();
        if now > 0 && now < n {
            killed = true;
            break;
        }
    }
    assert!(killed, "the CLI was killed with part of the history applied");
    let partial = b.visits().len();
    assert!(partial < usize::try_from(n).unwrap());
    // What was applied is whole records: the next sync applies the rest once.
    b.sync();
    assert_eq!(b.visits().len(), usize::try_from(n).unwrap());
    assert_eq!(b.visits(), a.visits());
    assert_eq!(
        b.search("bulk"),
        500.min(usize::try_from(n).unwrap()),
        "the search index follows"
    );
}
