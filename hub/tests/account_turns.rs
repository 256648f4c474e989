//! Turns per account (`--max-requests-per-account`): one account's requests in flight cannot take
//! every database connection (or every request turn) the other accounts need. Found by the load
//! bench (`hub/benches/load.rs`): an account asking for long-polls past their cap in a loop
//! made every other account's requests queue behind its own.

use std::time::Duration;

use crate::support::{connect, postgres, records, Api, Hub};

/// Starts a hub with 4 database connections and `per_account` turns per account.
fn hub(db: &str, per_account: &str) -> Hub {
    let pg = postgres::shared();
    Hub::start_with(
        &pg.url(db),
        &["--pool-size", "4", "--max-requests-per-account", per_account],
        &[],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_accounts_stuck_requests_leave_connections_for_the_others() {
    let pg = postgres::shared();
    let db = pg.create_database("account_turns");
    let hub = hub(&db, "2");
    let api = Api::new(&hub.url);
    let (abuser, device) = api.account_with_device().await;
    let (other, _) = api.account_with_device().await;

    // Behind the hub's back, a transaction holds the abuser's device row: each of its pushes
    // waits for it inside PostgreSQL, holding a connection of the pool.
    let mut direct = connect(&pg.url(&db)).await;
    let tx = direct.transaction().await.unwrap();
    tx.execute("SELECT 1 FROM device WHERE device_id = $1 FOR UPDATE", &[&device])
        .await
        .unwrap();
    // Eight pushes at once (one series each, so the order they end in does not matter).
    let pushes: Vec<_> = (1..=8)
        .map(|i| {
            let (api, abuser) = (api.clone(), abuser.clone());
            let series = format!("s{i}");
            tokio::spawn(async move { api.push(&abuser, &records(device, &series, 1, 1, 100)).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(
        pushes.iter().all(|p| !p.is_finished()),
        "the pushes wait for the row"
    );

    // Another account's requests and the health check are answered meanwhile: the abuser holds
    // two connections (its two turns), not all four.
    let index = tokio::time::timeout(Duration::from_secs(5), api.index(&other))
        .await
        .expect("another account's request is answered while one account's requests are stuck");
    index.expect(200);
    let health = tokio::time::timeout(Duration::from_secs(5), api.get("/v1/health", None))
        .await
        .expect("the health check is answered while one account's requests are stuck");
    health.expect(200);

    // Its pushes were held, not refused: once the row is free, every one is stored.
    tx.rollback().await.unwrap();
    for push in pushes {
        let answer = tokio::time::timeout(Duration::from_secs(20), push)
            .await
            .expect("the held pushes go on")
            .unwrap();
        answer.expect(200);
        assert_eq!(answer.statuses(), ["stored"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_long_poll_gives_its_accounts_turn_back() {
    let pg = postgres::shared();
    let db = pg.create_database("account_turns_wait");
    let hub = Hub::start_with(&pg.url(&db), &["--max-requests-per-account", "1"], &[]);
    let api = Api::new(&hub.url);
    let (account, device) = api.account_with_device().await;
    // Three waits of the account, on the account's one turn.
    let waits: Vec<_> = (0..3)
        .map(|_| {
            let (api, account) = (api.clone(), account.clone());
            tokio::spawn(async move {
                api.send(
                    reqwest::Method::GET,
                    "/v1/index/wait?series=visits&seen=0&wait_ms=20000",
                    Some(&account),
                    Some(device),
                    None,
                )
                .await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(waits.iter().all(|w| !w.is_finished()), "the waits wait");
    // The account's other requests still get its turn, and a push wakes the waits.
    let other = uuid::Uuid::new_v4();
    let registered = tokio::time::timeout(Duration::from_secs(5), api.register(&account, other))
        .await
        .expect("the account's turn is free while its long-polls wait");
    registered.expect(200);
    let pushed = tokio::time::timeout(
        Duration::from_secs(5),
        api.push(&account, &records(other, "visits", 1, 1, 100)),
    )
    .await
    .expect("the account's turn is free while its long-polls wait");
    assert_eq!(pushed.statuses(), ["stored"]);
    for wait in waits {
        let answer = tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .expect("the push wakes the waits")
            .unwrap();
        answer.expect(200);
    }
}
