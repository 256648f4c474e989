//! Fair long-polls: at most so many waits per account, per client address and in all
//! (`--max-waits-per-account`, `--max-waits-per-address`, `--max-waits`); a wait past a cap is
//! answered at once with the index and `Retry-After`, so one account or address cannot hold the
//! connections others need; a real device that gets such an answer spends the wait before asking
//! again instead of asking in a loop.

use std::time::{Duration, Instant};

use sitetrail::sync::engine;
use uuid::Uuid;

use crate::support::{postgres, records, sample, Account, Api, Hub};
use crate::sync_support::Device;

/// A wait of `account` from `address` (through the proxy header): (status, Retry-After, time).
async fn wait(
    hub: &Hub,
    account: &Account,
    device: Uuid,
    address: &str,
    seen: u64,
) -> (u16, Option<String>, Duration) {
    let started = Instant::now();
    let answer = reqwest::Client::new()
        .get(format!(
            "{}/v1/index/wait?series=ops&seen={seen}&wait_ms=20000",
            hub.url
        ))
        .header("authorization", account.header())
        .header("x-sitetrail-device", device.to_string())
        .header("x-forwarded-for", address)
        .send()
        .await
        .unwrap();
    let retry = answer
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (answer.status().as_u16(), retry, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_past_a_cap_are_answered_at_once_and_the_others_still_wait() {
    let pg = postgres::shared();
    let db = pg.create_database("wait_caps");
    let hub = Hub::start_with(
        &pg.url(&db),
        &[
            "--real-ip-header",
            "x-forwarded-for",
            "--max-waits-per-account",
            "3",
            "--max-waits-per-address",
            "4",
            "--max-waits",
            "6",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
        &[],
    );
    let api = Api::new(&hub.url);
    let hub = std::sync::Arc::new(hub);
    let spawn_wait = |account: &Account, device: Uuid, address: &'static str, seen: u64| {
        let (hub, account) = (hub.clone(), account.clone());
        tokio::spawn(async move { wait(&hub, &account, device, address, seen).await })
    };

    // One account: three waits wait; the fourth is answered at once, with Retry-After.
    let (a, a_dev) = api.account_with_device().await;
    let held: Vec<_> = (0..3).map(|_| spawn_wait(&a, a_dev, "198.51.100.1", 0)).collect();
    hub.wait_for_waits(3).await;
    let (status, retry, took) = wait(&hub, &a, a_dev, "198.51.100.9", 0).await;
    assert_eq!((status, retry.as_deref()), (200, Some("20")));
    assert!(took < Duration::from_secs(5), "{took:?}");

    // One address: with the three above, one more wait from it (another account) waits, the
    // next is answered at once.
    let (b, b_dev) = api.account_with_device().await;
    let fourth = spawn_wait(&b, b_dev, "198.51.100.1", 0);
    hub.wait_for_waits(4).await;
    let (status, retry, took) = wait(&hub, &b, b_dev, "198.51.100.1", 0).await;
    assert_eq!((status, retry.as_deref()), (200, Some("20")), "{took:?}");

    // In all: 4 waiting; two more from elsewhere wait, the seventh is answered at once.
    let (c, c_dev) = api.account_with_device().await;
    let others = [
        spawn_wait(&c, c_dev, "203.0.113.1", 0),
        spawn_wait(&c, c_dev, "203.0.113.2", 0),
    ];
    hub.wait_for_waits(6).await;
    let (d, d_dev) = api.account_with_device().await;
    let (status, retry, took) = wait(&hub, &d, d_dev, "203.0.113.3", 0).await;
    assert_eq!((status, retry.as_deref()), (200, Some("20")), "{took:?}");

    // Those that wait are woken as before: a push of another device of the account.
    let a_other = Uuid::new_v4();
    api.register(&a, a_other).await.expect(200);
    assert!(api
        .push(&a, &records(a_other, "ops", 1, 1, 10))
        .await
        .all_acknowledged());
    for h in held {
        let (status, retry, took) = h.await.unwrap();
        assert_eq!((status, retry), (200, None));
        assert!(took < Duration::from_secs(15), "woken by the push: {took:?}");
    }
    // Their places are free again: the account waits once more (and is woken by a push).
    let again = spawn_wait(&a, a_dev, "192.0.2.50", 1);
    hub.wait_for_waits(4).await;
    assert!(!again.is_finished(), "a wait within the caps waits");
    assert!(api
        .push(&a, &records(a_other, "ops", 2, 2, 10))
        .await
        .all_acknowledged());
    assert_eq!(again.await.unwrap().0, 200);
    let c_dev2 = Uuid::new_v4();
    api.register(&c, c_dev2).await.expect(200);
    assert!(api
        .push(&c, &records(c_dev2, "ops", 1, 1, 10))
        .await
        .all_acknowledged());
    for h in others {
        assert_eq!(h.await.unwrap().1, None);
    }
    let b_dev2 = Uuid::new_v4();
    api.register(&b, b_dev2).await.expect(200);
    assert!(api
        .push(&b, &records(b_dev2, "ops", 1, 1, 10))
        .await
        .all_acknowledged());
    assert_eq!(fourth.await.unwrap().1, None);
}

#[test]
fn a_device_answered_at_once_spends_the_wait_before_asking_again() {
    let pg = postgres::shared();
    let db = pg.create_database("wait_caps_device");
    let hub = Hub::start_with(
        &pg.url(&db),
        &["--max-waits-per-account", "1", "--metrics-listen", "127.0.0.1:0"],
        &[],
    );
    let a = Device::new();
    a.setup_at(&hub.url, "a");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut waiter = engine::Waiter::new();
    // A first waiter takes the account's one place; a second one is past the cap.
    let first = {
        let store = a.store.clone();
        let keys = a.key_dir.clone();
        rt.spawn(async move {
            let mut w = engine::Waiter::new();
            w.wait(&store, &keys, Duration::from_secs(6)).await.map(|_| ())
        })
    };
    rt.block_on(hub.wait_for_waits(1));
    let started = Instant::now();
    let waited = rt.block_on(waiter.wait(&a.store, &a.key_dir, Duration::from_secs(2)));
    let took = started.elapsed();
    assert!(waited.is_ok(), "{waited:?}");
    assert!(
        took >= Duration::from_millis(1_800),
        "answered at once, the device still spends its wait: {took:?}"
    );
    rt.block_on(first).unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_waits_of_one_account_share_one_index_read_per_wake() {
    let pg = postgres::shared();
    let db = pg.create_database("wait_shared");
    let metrics_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let metrics = format!("127.0.0.1:{metrics_port}");
    let hub = Hub::start_with(
        &pg.url(&db),
        &[
            "--max-waits-per-account",
            "0",
            "--max-waits-per-address",
            "0",
            "--metrics-listen",
            &metrics,
        ],
        &[],
    );
    let api = Api::new(&hub.url);
    let reads = || async {
        let text = reqwest::get(format!("http://{metrics}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("sitetrail_hub_index_reads_total "))
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    let (account, laptop) = api.account_with_device().await;
    const WAITS: usize = 50;
    let hub = std::sync::Arc::new(hub);
    let tasks: Vec<_> = (0..WAITS)
        .map(|_| {
            let (hub, account) = (hub.clone(), account.clone());
            tokio::spawn(async move { wait(&hub, &account, Uuid::new_v4(), "192.0.2.1", 0).await })
        })
        .collect();
    // Every wait has read the index once on its way in (shared too, or not: that is before):
    // all of them wait, and none holds or asks for a connection.
    hub.wait_for_waits(WAITS).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = hub.metrics().await;
        let idle = |series| sample(&text, series) == Some(0.0);
        if idle("sitetrail_hub_pool_connections_in_use") && idle("sitetrail_hub_pool_waiting") {
            break;
        }
        assert!(Instant::now() < deadline, "{text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = reads().await;
    assert!(before > 0, "the waits read the index on their way in");
    assert!(api
        .push(&account, &records(laptop, "ops", 1, 1, 10))
        .await
        .all_acknowledged());
    for t in tasks {
        let (status, _, took) = t.await.unwrap();
        assert_eq!(status, 200);
        assert!(took < Duration::from_secs(15), "woken by the push: {took:?}");
    }
    let after = reads().await;
    // Not one read per wait: the push's heads are merged into the index the account's waits
    // share, so they answer without a read (`wait_wakes.rs` checks that it is none).
    assert!(
        after - before <= 3,
        "{} index reads for {WAITS} waits woken once",
        after - before
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_past_a_cap_asked_in_a_burst_are_answered_at_the_accounts_pace() {
    let pg = postgres::shared();
    let db = pg.create_database("wait_pace");
    let hub = Hub::start_with(
        &pg.url(&db),
        &[
            "--real-ip-header",
            "x-forwarded-for",
            "--max-waits-per-account",
            "1",
        ],
        &[],
    );
    let api = Api::new(&hub.url);
    let (a, a_dev) = api.account_with_device().await;
    let (b, b_dev) = api.account_with_device().await;
    let hub = std::sync::Arc::new(hub);
    let spawn_wait = |account: &Account, device: Uuid, address: String| {
        let (hub, account) = (hub.clone(), account.clone());
        tokio::spawn(async move { wait(&hub, &account, device, &address, 0).await })
    };
    let held = spawn_wait(&a, a_dev, "198.51.100.1".into());
    tokio::time::sleep(Duration::from_millis(400)).await;

    // 50 more of the account at once, from 50 addresses (as a client that ignores Retry-After
    // and asks again at once would): answered at the account's pace, not all at once.
    let started = Instant::now();
    let refused: Vec<_> = (0..50)
        .map(|i| spawn_wait(&a, a_dev, format!("203.0.113.{i}")))
        .collect();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let answered = refused.iter().filter(|r| r.is_finished()).count();
    assert!(
        (1..=20).contains(&answered),
        "{answered} of 50 answered in 1.5 s (the pace is {} a second)",
        sitetrail_hub::notify::REFUSALS_PER_SECOND
    );
    // Another account past its cap meanwhile is answered at once: the pace is per account.
    let other = spawn_wait(&b, b_dev, "192.0.2.7".into());
    tokio::time::sleep(Duration::from_millis(400)).await;
    let (status, retry, took) = spawn_wait(&b, b_dev, "192.0.2.8".into()).await.unwrap();
    assert_eq!((status, retry.as_deref()), (200, Some("20")));
    assert!(took < Duration::from_secs(3), "another account waited {took:?}");
    for r in refused {
        let (status, retry, _) = r.await.unwrap();
        assert_eq!((status, retry.as_deref()), (200, Some("20")));
    }
    assert!(
        started.elapsed() >= Duration::from_secs(4),
        "50 answers past the cap in {:?}",
        started.elapsed()
    );
    held.abort();
    other.abort();
}
