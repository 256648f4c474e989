//! Which long-polls a push wakes (`hub/src/notify.rs`): only those it puts behind, in every hub
//! process (the push's NOTIFY carries the heads it moved), answered from those heads without
//! reading the index again; and a notification lost with the listening connection still wakes
//! the waits it should, once the connection is back.

use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::support::{connect, last_idx, long_poll, postgres, records, sample, Api, Hub};

/// A long-poll of `device` on `visits`, having seen `seen` of the others' records.
fn counter(text: &str, name: &str) -> f64 {
    sample(text, name).unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

/// Until no request of `hub` holds or waits for a database connection (its waits have read
/// what they read on their way in).
async fn wait_for_idle_pool(hub: &Hub) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = hub.metrics().await;
        let idle = |series| sample(&text, series) == Some(0.0);
        if idle("sitetrail_hub_pool_connections_in_use") && idle("sitetrail_hub_pool_waiting") {
            return text;
        }
        assert!(Instant::now() < deadline, "{text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_through_another_process_wakes_only_the_waits_it_puts_behind() {
    const WAITS: usize = 1_000;
    let pg = postgres::shared();
    let db = pg.create_database("wait_wakes");
    let waiting = Hub::start_with(
        &pg.url(&db),
        &[
            "--metrics-listen",
            "127.0.0.1:0",
            "--max-waits-per-account",
            "0",
            "--max-waits-per-address",
            "0",
            "--max-waits",
            "0",
            "--max-connections",
            "4096",
        ],
        &[],
    );
    let pushing = Hub::start(&pg.url(&db));
    let (api, pusher) = (Api::new(&waiting.url), Api::new(&pushing.url));
    let (account, laptop) = pusher.account_with_device().await;
    let (desktop, phone) = (Uuid::new_v4(), Uuid::new_v4());
    for device in [desktop, phone] {
        pusher.register(&account, device).await.expect(200);
    }
    pusher
        .push(&account, &records(laptop, "visits", 1, 2, 64))
        .await
        .expect(200);

    // On one process: 1,000 waits that the laptop's 3rd record leaves at the head (they have
    // seen 3: they wait for a 4th), and one it puts behind (the phone has seen 2).
    let ahead: Vec<_> = (0..WAITS)
        .map(|_| {
            let (api, account) = (api.clone(), account.clone());
            tokio::spawn(async move { long_poll(&api, &account, desktop, 3, 20_000).await })
        })
        .collect();
    let behind = {
        let (api, account) = (api.clone(), account.clone());
        tokio::spawn(async move { long_poll(&api, &account, phone, 2, 20_000).await })
    };
    waiting.wait_for_waits(WAITS + 1).await;
    let before = wait_for_idle_pool(&waiting).await;
    assert!(ahead.iter().all(|w| !w.is_finished()) && !behind.is_finished());

    // The 3rd record, through the other process: only the phone's wait answers.
    pusher
        .push(&account, &records(laptop, "visits", 3, 3, 64))
        .await
        .expect(200);
    let (answer, took) = behind.await.unwrap();
    assert_eq!(last_idx(answer.expect(200), laptop), Some(3));
    assert!(took < Duration::from_secs(15), "woken by the push: {took:?}");
    let after = waiting.metrics().await;
    let delta = |text: &str, name| counter(text, name) - counter(&before, name);
    assert_eq!(
        delta(&after, "sitetrail_hub_wait_wakeups_total"),
        1.0,
        "the push woke more than the one wait it put behind"
    );
    assert_eq!(sample(&after, "sitetrail_hub_waits_open"), Some(WAITS as f64));
    assert!(
        ahead.iter().all(|w| !w.is_finished()),
        "a wait at the head answered"
    );

    // The 4th puts the 1,000 behind: each is woken once and answers from the heads the push
    // notified, without reading the index again.
    pusher
        .push(&account, &records(laptop, "visits", 4, 4, 64))
        .await
        .expect(200);
    for w in ahead {
        let (answer, took) = w.await.unwrap();
        assert_eq!(last_idx(answer.expect(200), laptop), Some(4));
        assert!(took < Duration::from_secs(19), "woken by the push: {took:?}");
    }
    let after = waiting.metrics().await;
    assert_eq!(
        delta(&after, "sitetrail_hub_wait_wakeups_total"),
        1.0 + WAITS as f64
    );
    assert_eq!(
        delta(&after, "sitetrail_hub_index_reads_total"),
        0.0,
        "woken waits read the index again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_lost_with_the_listening_connection_still_wakes_the_wait() {
    let pg = postgres::shared();
    let db = pg.create_database("wait_lost");
    let url = pg.url(&db);
    let waiting = Hub::start_with(&url, &["--metrics-listen", "127.0.0.1:0"], &[]);
    let pushing = Hub::start(&url);
    let (api, pusher) = (Api::new(&waiting.url), Api::new(&pushing.url));
    let (account, laptop) = pusher.account_with_device().await;
    let desktop = Uuid::new_v4();
    pusher.register(&account, desktop).await.expect(200);
    pusher
        .push(&account, &records(laptop, "visits", 1, 1, 64))
        .await
        .expect(200);
    let waits = {
        let (api, account) = (api.clone(), account.clone());
        tokio::spawn(async move { long_poll(&api, &account, desktop, 1, 20_000).await })
    };
    waiting.wait_for_waits(1).await;

    // Both hubs' listening connections end (a restart of PostgreSQL's backend, a network cut);
    // the push commits before the waiting hub listens again (it waits a second first), so its
    // notification never reaches it.
    let admin = connect(&url).await;
    let ended = admin
        .execute(
            r#"SELECT pg_terminate_backend(pid) FROM pg_stat_activity
               WHERE query = $1 AND datname = current_database()"#,
            &[&format!("LISTEN {}", sitetrail_hub::notify::CHANNEL)],
        )
        .await
        .unwrap();
    assert_eq!(ended, 2, "one listening connection per hub");
    pusher
        .push(&account, &records(laptop, "visits", 2, 2, 64))
        .await
        .expect(200);
    // Listening again, the hub looks again: the wait answers with the 2nd record, not after its
    // 20 s with the index it knew.
    let (answer, took) = waits.await.unwrap();
    assert_eq!(last_idx(answer.expect(200), laptop), Some(2));
    assert!(took < Duration::from_secs(15), "{took:?}");
}
