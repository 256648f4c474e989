//! Sync between devices through a real hub on a real PostgreSQL: convergence, deletions that
//! win, a wrong key, an unreachable hub, what the hub can see, tampering, and the CLI.

use std::io::Write;
use std::process::Stdio;

use sitetrail::{Category, ErrorKind};

use crate::support::cli;
use crate::support::sync::{converge, t, time_to_arrive, Device, Syncing, TestHub};

fn same_state(a: &Device, b: &Device) {
    assert_eq!(a.visits(), b.visits(), "visits");
    assert_eq!(a.times(), b.times(), "times");
    assert_eq!(a.blocked(), b.blocked(), "blocked");
    let users = |d: &Device| {
        d.websites()
            .into_iter()
            .filter(|w| w.2.as_deref() == Some("user"))
            .collect::<Vec<_>>()
    };
    assert_eq!(users(a), users(b), "the user's categories");
    let domains = |d: &Device| d.websites().into_iter().map(|w| w.0).collect::<Vec<_>>();
    assert_eq!(domains(a), domains(b), "websites");
}

#[test]
fn two_devices_converge_on_visits_times_titles_categories_and_blocking_in_any_order() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    // A had a history before sync was set up: it is sent too.
    let old = a.visit_at("https://before.example/old", "Before the link", 10);
    let key = a.setup(&hub, "laptop");
    b.join(&hub, "desktop", &key);
    let v1 = a.visit_at("https://news.example/one", "Sourdough bread", 100);
    a.store
        .write(Some(sitetrail::Change::Visits), |tx| {
            sitetrail::time_spent::set_active_ms_in(tx, v1, 42_000, a.store.now())
        })
        .unwrap();
    b.visit_at("https://shop.example/cart", "Cart", 200);
    b.store
        .set_user_category("shop.example", Category::Shopping)
        .unwrap();
    a.store.block_domain("ads.example").unwrap();
    // B syncs first, then A, then B again: the order does not matter.
    b.sync();
    a.sync();
    b.sync();
    same_state(&a, &b);
    assert_eq!(b.visits().len(), 3);
    assert!(
        b.visits().iter().any(|v| v.0 == old.0.simple().to_string()),
        "the history from before the link"
    );
    assert_eq!(b.search("sourdough"), 1, "the search index follows synced visits");
    assert_eq!(
        a.store.website("shop.example").unwrap().category,
        Some(Category::Shopping)
    );
    assert_eq!(b.blocked(), vec!["ads.example".to_owned()]);
    // A title that changes later, and more active time, follow.
    a.store
        .write(Some(sitetrail::Change::Visits), |tx| {
            sitetrail::visits::update_title_in(tx, v1, Some("Sourdough bread, day 2"))?;
            sitetrail::time_spent::set_active_ms_in(tx, v1, 90_000, a.store.now())
        })
        .unwrap();
    // Both change the same category: the later change wins everywhere.
    a.store.set_user_category("shop.example", Category::News).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    b.store
        .set_user_category("shop.example", Category::Finance)
        .unwrap();
    a.store.unblock_domain("ads.example").unwrap();
    converge(&[&a, &b]);
    same_state(&a, &b);
    assert_eq!(
        a.store.website("shop.example").unwrap().category,
        Some(Category::Finance)
    );
    assert!(b
        .visits()
        .iter()
        .any(|v| v.2.as_deref() == Some("Sourdough bread, day 2")));
    assert!(b.times().iter().any(|t| t.1 == Some(90_000)));
    assert!(b.blocked().is_empty());
    // A second sync with nothing new moves nothing.
    let r = a.sync();
    assert_eq!((r.pushed, r.pulled, r.pending), (0, 0, 0));
    // Device names: each knows the other's.
    let s = b.store.with_conn(sitetrail::sync::engine::status).unwrap();
    let mut names: Vec<_> = s.devices.iter().filter_map(|d| d.name.clone()).collect();
    names.sort();
    assert_eq!(names, vec!["desktop".to_owned(), "laptop".to_owned()]);
}

#[test]
fn forgetting_reaches_every_device_and_wins_over_visits_made_offline_before_it() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    a.visit_at("https://secret.example/1", "secret one", 100);
    let keep = a.visit_at("https://keep.example/", "keep", 110);
    let gone = a.visit_at("https://keep.example/gone", "gone by id", 120);
    converge(&[&a, &b]);
    assert_eq!(b.visits().len(), 3);

    // B is offline for a while and records, before A's forgetting (by the clock), a visit to the
    // website A forgets and one inside the range A forgets.
    b.visit_at("https://secret.example/2", "secret two", 130);
    b.visit_at("https://other.example/in-range", "in the range", 1_500);

    a.store
        .forget_website("secret.example", false, &Default::default(), &mut |_| {})
        .unwrap();
    a.store
        .forget_range(t(1_000), t(2_000), &Default::default(), &mut |_| {})
        .unwrap();
    a.store.forget_visits(&[gone]).unwrap();
    a.sync();
    b.sync();
    a.sync();
    converge(&[&a, &b]);
    same_state(&a, &b);
    for d in [&a, &b] {
        let urls: Vec<String> = d.visits().into_iter().map(|v| v.1).collect();
        assert_eq!(
            urls,
            vec!["https://keep.example/".to_owned()],
            "only what was not forgotten"
        );
        assert!(
            d.store.website("secret.example").is_err(),
            "the forgotten website is gone"
        );
        assert_eq!(d.search("secret"), 0);
    }
    assert_eq!(a.visits()[0].0, keep.0.simple().to_string());

    // A new device joins later: the hub still holds the records of the forgotten visits (as
    // ciphertext), yet nothing forgotten comes back.
    let c = Device::new();
    c.join(&hub, "c", &key);
    converge(&[&c]);
    same_state(&a, &c);
    // A visit in the forgotten range, recorded anywhere later, is refused as on one device.
    assert!(c
        .store
        .record_visit(&sitetrail::NewVisit {
            url: "https://late.example/",
            title: None,
            visited_at: t(1_200),
            source: "extension",
            source_visit_id: None,
        })
        .is_err());
    // A visit of the forgotten website made after the forgetting is a new visit: kept.
    let now = sitetrail::Timestamp::now();
    b.store
        .record_visit(&sitetrail::NewVisit {
            url: "https://secret.example/again",
            title: None,
            visited_at: now,
            source: "extension",
            source_visit_id: None,
        })
        .unwrap();
    converge(&[&a, &b, &c]);
    same_state(&a, &b);
    same_state(&a, &c);
    assert!(a.visits().iter().any(|v| v.1 == "https://secret.example/again"));
}

#[test]
fn a_wrong_recovery_key_is_needs_user_and_writes_nothing() {
    let hub = TestHub::start();
    let a = Device::new();
    let _key = a.setup(&hub, "a");
    let other = sitetrail::sync::crypto::AccountSecret::generate().recovery_key();
    let b = Device::new();
    let e = b
        .try_join(&hub, &other)
        .expect_err("another account's key does not open this one");
    assert_eq!(e.kind(), ErrorKind::NeedsUser);
    assert!(e.to_string().contains("does not open an account"), "{e}");
    assert!(b
        .store
        .with_conn(sitetrail::sync::engine::get_link)
        .unwrap()
        .is_none());
    assert!(!b.key_dir.exists() || std::fs::read_dir(&b.key_dir).unwrap().next().is_none());
    let e = b.try_join(&hub, "not a key at all").expect_err("garbage");
    assert_eq!(e.kind(), ErrorKind::NeedsUser);
    assert!(!e.to_string().contains("garbage"));
}

#[test]
fn an_unreachable_hub_is_offline_and_costs_nothing() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    let url = hub.url.clone();
    drop(hub);
    a.visit_at("https://waits.example/", "waits", 10);
    let e = a.try_sync().expect_err("the hub is gone");
    assert_eq!(e.kind(), ErrorKind::Offline, "{e}");
    let s = a.store.with_conn(sitetrail::sync::engine::status).unwrap();
    assert!(s.pending >= 1, "the change waits");
    assert!(s.link.unwrap().last_error.unwrap().contains(&url));
    // Sealed records survive a failed push unchanged: the next one sends them.
    let before = a.pending_records();
    let _ = a.try_sync();
    assert_eq!(a.pending_records(), before);
}

#[test]
fn the_hub_sees_no_url_title_or_domain_and_tampering_is_detected_not_applied() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "laptop-name");
    b.join(&hub, "desktop-name", &key);
    a.visit_at(
        "https://very-private-site.example/path-secret",
        "Diagnosis results",
        10,
    );
    a.store
        .set_user_category("very-private-site.example", Category::Health)
        .unwrap();
    a.sync();
    let dump = String::from_utf8_lossy(&hub.dump()).to_string();
    for needle in [
        "very-private-site",
        "path-secret",
        "Diagnosis",
        "laptop-name",
        "health",
    ] {
        assert!(!dump.contains(needle), "the hub's database holds {needle:?}");
    }
    // Change one byte of the stored ciphertext: B refuses the record, applies nothing of it,
    // and says so (the sync itself goes on: issue 27).
    hub.psql("UPDATE record SET payload = overlay(payload placing '\\xff'::bytea from 30 for 1)");
    let r = b.sync();
    assert!(r.unreadable >= 1, "{r:?}");
    assert_eq!(r.unreadable, r.pulled, "{r:?}");
    assert!(b.visits().is_empty());
    let s = b.store.with_conn(sitetrail::sync::engine::status).unwrap();
    assert_eq!(s.unreadable.count, r.unreadable);
    assert!(s
        .unreadable
        .records
        .iter()
        .all(|u| u.reason == sitetrail::sync::unreadable::Reason::DoesNotOpen));
    // Another account's token reads nothing of this one.
    let c = Device::new();
    c.setup(&hub, "stranger");
    assert_eq!(c.sync().pulled, 0);
    assert!(c.visits().is_empty());
}

#[test]
fn the_cli_sets_up_joins_syncs_and_reports_with_its_exit_codes() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let json = |d: &Device, args: &[&str], stdin: Option<&str>| -> (i32, serde_json::Value, String) {
        let mut cmd = cli(&d.db);
        cmd.arg("--settings").arg(d.settings()).arg("sync").args(args);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut input = child.stdin.take().unwrap();
        if let Some(s) = stdin {
            input.write_all(s.as_bytes()).unwrap();
        }
        drop(input);
        let out = child.wait_with_output().unwrap();
        let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
        (
            out.status.code().unwrap(),
            v,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, setup, err) = json(
        &a,
        &["setup", "--hub", &hub.url, "--device-name", "alpha", "--json"],
        None,
    );
    assert_eq!(code, 0, "{err}");
    for k in ["account_id", "device_id", "recovery_key"] {
        assert!(setup[k].is_string(), "setup --json has {k}: {setup}");
    }
    let key = setup["recovery_key"].as_str().unwrap().to_owned();
    // The key file is owner-only, and the database never holds the key.
    let files: Vec<_> = std::fs::read_dir(&a.key_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let db_bytes = std::fs::read(&a.db).unwrap();
    let secret_hex = std::fs::read_to_string(&files[0]).unwrap();
    assert!(!String::from_utf8_lossy(&db_bytes).contains(secret_hex.trim()));

    let (code, _, err) = json(
        &b,
        &["join", "--hub", &hub.url, "--json"],
        Some("wrong words here\n"),
    );
    assert_eq!(code, 7, "a key that is no key is needs_user: {err}");
    let (code, joined, err) = json(
        &b,
        &["join", "--hub", &hub.url, "--device-name", "beta", "--json"],
        Some(&format!("{key}\n")),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(joined["account_id"], setup["account_id"]);
    assert!(joined["device_id"].is_string());
    assert!(!err.contains(&key) && !err.contains(key.split(' ').next().unwrap_or("-")));

    a.visit_at("https://cli.example/", "From the CLI test", 5);
    let (code, now, err) = json(&a, &["now", "--json"], None);
    assert_eq!(code, 0, "{err}");
    for k in ["pushed", "pulled", "pending"] {
        assert!(now[k].is_u64(), "now --json has {k}: {now}");
    }
    assert!(now["pushed"].as_u64().unwrap() >= 1);
    let (code, now, _) = json(&b, &["now", "--json"], None);
    assert_eq!(code, 0);
    assert!(now["pulled"].as_u64().unwrap() >= 1);
    assert_eq!(b.visits().len(), 1);
    let (code, status, _) = json(&b, &["status", "--json"], None);
    assert_eq!(code, 0);
    for k in [
        "hub",
        "account_id",
        "device_id",
        "device_name",
        "last_sync_at",
        "pending",
        "devices",
    ] {
        assert!(status.get(k).is_some(), "status --json has {k}: {status}");
    }
    assert_eq!(status["device_name"], "beta");
    assert_eq!(
        status["key_store"], "file",
        "SITETRAIL_SYNC_KEYRING=off keeps the key in its file"
    );
    assert_eq!(status["devices"].as_array().unwrap().len(), 2);
    let (code, devices, _) = json(&b, &["devices", "--json"], None);
    assert_eq!(code, 0);
    assert_eq!(devices["devices"].as_array().unwrap().len(), 2);

    // The hub goes away: `now` is offline (exit 6), and the change waits.
    drop(hub);
    a.visit_at("https://later.example/", "later", 6);
    let (code, _, err) = json(&a, &["now", "--json"], None);
    assert_eq!(code, 6, "{err}");
    let (code, _, err) = json(&a, &["leave", "--json"], None);
    assert_eq!(code, 6, "leaving needs the hub unless forced: {err}");
    let (code, left, err) = json(&a, &["leave", "--force", "--json"], None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(left["left"], true);
    assert!(
        std::fs::read_dir(&a.key_dir).unwrap().next().is_none(),
        "the key file is deleted"
    );
    assert_eq!(a.visits().len(), 2, "the history stays");
}

#[test]
fn history_and_time_say_which_device_recorded_each_visit() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "laptop");
    b.join(&hub, "desktop", &key);
    let va = a.visit_at("https://a.example/", "on the laptop", 10);
    a.store
        .write(Some(sitetrail::Change::Visits), |tx| {
            sitetrail::time_spent::set_active_ms_in(tx, va, 60_000, a.store.now())
        })
        .unwrap();
    b.visit_at("https://b.example/", "on the desktop", 20);
    converge(&[&a, &b]);
    let history = |d: &Device, extra: &[&str]| -> serde_json::Value {
        let out = crate::support::run_ok(
            cli(&d.db)
                .args(["history", "--json", "--since", "2026-01-01"])
                .args(extra),
        );
        serde_json::from_str(&out).unwrap()
    };
    let all = history(&b, &[]);
    let devices: Vec<(&str, &str)> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["domain"].as_str().unwrap(), r["device"].as_str().unwrap()))
        .collect();
    assert_eq!(devices, vec![("b.example", "desktop"), ("a.example", "laptop")]);
    let laptop = history(&b, &["--device", "laptop"]);
    assert_eq!(laptop.as_array().unwrap().len(), 1);
    assert_eq!(laptop[0]["domain"], "a.example");
    let searched = history(&a, &["--search", "desktop", "--device", "desktop"]);
    assert_eq!(searched.as_array().unwrap().len(), 1);
    assert_eq!(
        history(&a, &["--search", "desktop", "--device", "laptop"])
            .as_array()
            .unwrap()
            .len(),
        0
    );
    let out = crate::support::run_ok(cli(&a.db).args([
        "time",
        "--by",
        "device",
        "--json",
        "--since",
        "2026-01-01",
    ]));
    let rows: serde_json::Value = serde_json::from_str(&out).unwrap();
    let by: Vec<(&str, i64, i64)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["device"].as_str().unwrap(),
                r["active_ms"].as_i64().unwrap(),
                r["visits"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(by, vec![("laptop", 60_000, 1), ("desktop", 0, 1)]);
    // Without sync there is no device name.
    let lone = Device::new();
    lone.visit_at("https://c.example/", "alone", 30);
    assert!(history(&lone, &[])[0]["device"].is_null());
}

#[test]
fn a_website_forgotten_before_a_device_joined_is_forgotten_everywhere_when_it_joins() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    a.visit_at("https://secret.example/before", "seen before the forgetting", 100);
    a.visit_at("https://keep.example/", "keep", 110);
    a.sync();
    // B, not linked yet, forgot the website: its tombstone keeps only the domain's hash.
    b.visit_at("https://secret.example/b", "on b", 120);
    // Clocks are in milliseconds: the forgetting comes after A's visit, and before the next.
    std::thread::sleep(std::time::Duration::from_millis(5));
    b.store
        .forget_website("secret.example", false, &Default::default(), &mut |_| {})
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    a.visit_at(
        "https://secret.example/after",
        "recorded after the forgetting",
        130,
    );
    a.sync();
    b.join(&hub, "b", &key);
    converge(&[&a, &b]);
    same_state(&a, &b);
    for d in [&a, &b] {
        let urls: Vec<String> = d.visits().into_iter().map(|v| v.1).collect();
        assert!(
            !urls.iter().any(|u| u.ends_with("/before") || u.ends_with("/b")),
            "{urls:?}"
        );
        assert!(
            urls.contains(&"https://secret.example/after".to_owned()),
            "{urls:?}"
        );
        assert!(urls.contains(&"https://keep.example/".to_owned()), "{urls:?}");
    }
    // The hub never saw the domain: the record carries its hash, sealed like every record.
    assert!(!String::from_utf8_lossy(&hub.dump()).contains("secret.example"));
}

#[test]
fn a_visit_reaches_the_other_device_in_seconds_by_the_long_poll_not_the_interval() {
    use sitetrail::sync::background::Pace;
    use std::time::Duration;

    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "laptop");
    b.join(&hub, "desktop", &key);
    a.sync();
    b.sync();
    // The periodic sync would take ten minutes: only the long-poll can bring the visit sooner.
    let pace = Pace {
        interval: Duration::from_secs(600),
        debounce: Duration::from_millis(100),
        ..Pace::default()
    };
    assert!(pace.long_poll.is_some(), "the default pace long-polls");
    let syncing = Syncing::start(&[&a, &b], pace);
    // Both background syncs have made their first sync and are waiting on the hub.
    hub.wait_for_waiting(2, Duration::from_secs(30));
    for (from, to, url) in [
        (&a, &b, "https://long-poll.example/one"),
        (&b, &a, "https://long-poll.example/two"),
    ] {
        // Well under the interval (600 s): the long-poll brought it.
        time_to_arrive(from, to, url, Duration::from_secs(30));
    }
    syncing.stop();
    assert_eq!(a.visits(), b.visits());
}

/// The exclusions (hosts never sent to a remote provider) are the user's on every device: one
/// made before the link, one added and one removed after it reach the other device, and that
/// device's worker, whose own settings exclude nothing, keeps them from its provider.
#[test]
fn exclusions_reach_every_device_and_keep_their_hosts_from_its_provider() {
    use std::time::Duration;

    use crate::support::fake_ai::{fast_config, hosts_asked, mount_openai_ok, openai};

    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    a.store.exclude_host("clinic.example").unwrap();
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    a.store.exclude_host("*.Bank.example").unwrap();
    a.store.exclude_host("gone.example").unwrap();
    converge(&[&a, &b]);
    a.store.include_host("gone.example").unwrap();
    converge(&[&a, &b]);
    assert_eq!(b.exclusions(), ["*.bank.example", "clinic.example"]);
    assert_eq!(a.exclusions(), b.exclusions());
    for d in [
        "online.bank.example",
        "clinic.example",
        "gone.example",
        "kwertyzop.net",
    ] {
        b.visit_at(&format!("https://{d}/"), "", 500);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let asked = rt.block_on(async {
        let server = wiremock::MockServer::start().await;
        mount_openai_ok(&server).await;
        let base = format!("{}/v1", server.uri());
        let (_stop_tx, stop) = tokio::sync::watch::channel(false);
        let worker = sitetrail::worker::Worker::new(b.store.clone(), openai(&base), fast_config(4)).unwrap();
        tokio::time::timeout(Duration::from_secs(60), worker.run(stop, true))
            .await
            .expect("the worker settles every job")
            .unwrap();
        hosts_asked(&server).await
    });
    assert_eq!(
        asked,
        ["gone.example", "kwertyzop.net"],
        "the hosts excluded on the other device never reached this one's provider"
    );
    // A removal made on the other device reaches the first as well (last writer wins).
    b.store.include_host("clinic.example").unwrap();
    converge(&[&a, &b]);
    assert_eq!(a.exclusions(), ["*.bank.example"]);
}

/// A TCP relay on 127.0.0.1 to `target` that counts the connections it accepted.
fn counting_relay(target: String) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::net::{TcpListener, TcpStream};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let accepted = std::sync::Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            count.fetch_add(1, Ordering::SeqCst);
            let Ok(server) = TcpStream::connect(&target) else {
                continue;
            };
            for (mut from, mut to) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Write);
                });
            }
        }
    });
    (url, accepted)
}

/// The long-poll keeps its HTTP client, and so its connection, from one wait to the next: a
/// device waits every 25 s, and a new connection (a TLS handshake, behind a proxy) for each wait
/// would be most of what a hub of many devices does.
#[test]
fn the_long_poll_keeps_one_connection_from_wait_to_wait() {
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "laptop");
    b.join(&hub, "desktop", &key);
    let (relay, accepted) = counting_relay(hub.url.trim_start_matches("http://").to_owned());
    a.set_hub_url(&relay);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut waiter = sitetrail::sync::engine::Waiter::new();
    let unlinked = Device::new();
    assert_eq!(
        rt.block_on(waiter.wait(&unlinked.store, &unlinked.key_dir, Duration::from_secs(20)))
            .unwrap(),
        None,
        "a device that is not linked does not wait"
    );
    for _ in 0..5 {
        let w = rt
            .block_on(waiter.wait(&a.store, &a.key_dir, Duration::from_millis(100)))
            .unwrap()
            .expect("the device is linked");
        assert!(!w.more, "nothing new from the other device");
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "five waits over one connection"
    );
}
