//! The long-poll (`GET /v1/index/wait`): it answers at once when another device has stored more
//! than the asker has seen, waits otherwise, is woken by a push through another hub process
//! (PostgreSQL's NOTIFY), holds no request turn while it waits, and ends with the hub.

use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::support::{last_idx, long_poll as wait, records, setup, Api, Hub};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_is_woken_by_a_push_through_another_hub_process() {
    let s = setup("long_poll");
    // Its metrics say when a long-poll waits (`sitetrail_hub_waits_open`).
    let other = Hub::start_with(&s.pg.url(&s.db), &["--metrics-listen", "127.0.0.1:0"], &[]);
    let other_api = Api::new(&other.url);
    let (account, laptop) = s.api.account_with_device().await;
    let desktop = Uuid::new_v4();
    s.api.register(&account, desktop).await.expect(200);
    s.api
        .push(&account, &records(laptop, "visits", 1, 2, 64))
        .await
        .expect(200);

    // Behind what is stored: answered at once, with the index.
    let (answer, took) = wait(&other_api, &account, desktop, 0, 20_000).await;
    assert_eq!(last_idx(answer.expect(200), laptop), Some(2));
    assert!(took < Duration::from_secs(10), "{took:?}");

    // Up to date: it waits, until the laptop pushes through the other hub process.
    let waiting = {
        let (api, account) = (other_api.clone(), account.clone());
        tokio::spawn(async move { wait(&api, &account, desktop, 2, 20_000).await })
    };
    other.wait_for_waits(1).await;
    assert!(!waiting.is_finished(), "a wait with nothing new answered early");
    let pushed = Instant::now();
    s.api
        .push(&account, &records(laptop, "visits", 3, 3, 64))
        .await
        .expect(200);
    let (answer, _) = waiting.await.unwrap();
    let woken_after = pushed.elapsed();
    assert_eq!(last_idx(answer.expect(200), laptop), Some(3));
    assert!(
        woken_after < Duration::from_secs(10),
        "the push did not wake the wait (answered after {woken_after:?}, the wait was 20 s)"
    );

    // A device's own records do not count: the laptop has nothing to pull, so it waits it out.
    let (answer, took) = wait(&s.api, &account, laptop, 0, 1_000).await;
    assert_eq!(last_idx(answer.expect(200), laptop), Some(3));
    assert!(took >= Duration::from_millis(900), "{took:?}");

    // Another account's push does not wake this account's wait.
    let (stranger, stranger_device) = s.api.account_with_device().await;
    let waiting = {
        let (api, account) = (other_api.clone(), account.clone());
        tokio::spawn(async move { wait(&api, &account, desktop, 3, 1_500).await })
    };
    other.wait_for_waits(1).await;
    s.api
        .push(&stranger, &records(stranger_device, "visits", 1, 1, 64))
        .await
        .expect(200);
    let (answer, took) = waiting.await.unwrap();
    assert!(took >= Duration::from_millis(1_400), "{took:?}");
    assert!(
        last_idx(answer.expect(200), stranger_device).is_none(),
        "another account's series in this account's index"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_is_checked_and_needs_a_login() {
    let s = setup("long_poll_checked");
    let (account, device) = s.api.account_with_device().await;
    let (answer, _) = wait(&s.api, &account, device, 0, 30_001).await;
    answer.expect(400);
    assert!(answer.message().contains("MAX_WAIT_MS"), "{}", answer.message());
    for query in [
        "",
        "?series=visits",
        "?series=Bad%20Name&seen=1",
        "?series=visits&seen=-1",
    ] {
        let answer = s
            .api
            .send(
                reqwest::Method::GET,
                &format!("/v1/index/wait{query}"),
                Some(&account),
                Some(device),
                None,
            )
            .await;
        answer.expect(400);
    }
    let answer = s
        .api
        .send(
            reqwest::Method::GET,
            "/v1/index/wait?series=visits&seen=0&wait_ms=0",
            None,
            Some(device),
            None,
        )
        .await;
    answer.expect(401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_long_polls_hold_no_request_turn_and_end_with_the_hub() {
    let s = setup("long_poll_turns");
    let hub = Hub::start_with(
        &s.pg.url(&s.db),
        &["--max-requests", "1", "--metrics-listen", "127.0.0.1:0"],
        &[],
    );
    let api = Api::new(&hub.url);
    let (account, laptop) = s.api.account_with_device().await;
    let desktop = Uuid::new_v4();
    s.api.register(&account, desktop).await.expect(200);
    let waits: Vec<_> = (0..3)
        .map(|_| {
            let (api, account) = (api.clone(), account.clone());
            tokio::spawn(async move { wait(&api, &account, desktop, 0, 30_000).await })
        })
        .collect();
    hub.wait_for_waits(3).await;
    assert!(waits.iter().all(|w| !w.is_finished()));
    // One request turn, three waits: other requests are still answered.
    let index = tokio::time::timeout(Duration::from_secs(10), api.index(&account))
        .await
        .expect("a request is answered while long-polls wait");
    index.expect(200);
    // The hub stops (SIGTERM): the waits answer now, not after their 30 s.
    let stopped = Instant::now();
    std::process::Command::new("kill")
        .args(["-TERM", &hub.pid().to_string()])
        .status()
        .unwrap();
    for w in waits {
        let (answer, _) = w.await.unwrap();
        answer.expect(200);
    }
    assert!(
        stopped.elapsed() < Duration::from_secs(10),
        "the waits held the shutdown for {:?}",
        stopped.elapsed()
    );
    let _ = laptop;
}
