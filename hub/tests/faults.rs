//! Faults: PostgreSQL stopped under load (503, then recovery without a restart), the hub killed
//! with SIGKILL in the middle of a push, and two hub processes over one database.

use std::collections::HashSet;
use std::time::Duration;

use sitetrail_sync_wire::Record;
use tokio::io::AsyncWriteExt;
use uuid::Uuid;

use crate::support::{connect, records, setup, wait_healthy, Api, Hub, Postgres};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stopped_is_503_and_the_hub_recovers_by_itself() {
    let pg = Postgres::start();
    let db = pg.create_database("outage");
    let hub = Hub::start(&pg.url(&db));
    let api = Api::new(&hub.url);
    let (account, device) = api.account_with_device().await;
    api.push(&account, &records(device, "visits", 1, 5, 100))
        .await
        .expect(200);

    // A device keeps pushing while PostgreSQL goes away: every answer is 200 or 503, and a
    // refused batch is sent again as it was (a device's records keep their ids).
    // Told once the pusher's first batch is stored: PostgreSQL stops under load, not before it.
    let (pushing, mut pushed) = tokio::sync::watch::channel(false);
    let pusher = {
        let (api, account) = (api.clone(), account.clone());
        tokio::spawn(async move {
            let mut sent: Vec<Record> = Vec::new();
            let mut statuses = Vec::new();
            let mut batch = records(device, "visits", 6, 10, 2_000);
            for _ in 0..40 {
                let answer = api.push(&account, &batch).await;
                statuses.push(answer.status);
                if answer.status == 200 {
                    assert!(answer.all_acknowledged(), "{:?}", answer.body);
                    sent.extend(batch);
                    pushing.send_replace(true);
                    let next = sent.last().unwrap().idx + 1;
                    batch = records(device, "visits", next, next + 4, 2_000);
                }
                // The pace of a device pushing (the load PostgreSQL stops under), not a wait.
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            sent.extend(batch);
            (sent, statuses)
        })
    };
    tokio::time::timeout(Duration::from_secs(30), pushed.wait_for(|p| *p))
        .await
        .expect("the pusher's first batch is stored within 30 s")
        .unwrap();
    pg.stop();
    let health = api.get("/v1/health", None).await;
    assert_eq!(
        (health.status, health.code()),
        (503, "unavailable"),
        "{:?}",
        health.body
    );
    let index = api.index(&account).await;
    assert_eq!((index.status, index.code()), (503, "unavailable"));
    let (sent, statuses) = pusher.await.unwrap();
    assert!(statuses.iter().all(|s| *s == 200 || *s == 503), "{statuses:?}");
    assert!(statuses.contains(&503), "{statuses:?}");

    pg.start_again();
    wait_healthy(&api, Duration::from_secs(30)).await;
    assert!(
        hub.log().contains("PostgreSQL is unreachable") && hub.log().contains("answers again"),
        "{}",
        hub.log()
    );
    // Everything pushed again: what was stored before the outage is acknowledged, the rest stored.
    for chunk in sent.chunks(100) {
        let answer = api.push(&account, chunk).await;
        assert!(answer.all_acknowledged(), "{:?}", answer.body);
    }
    let last = 5 + sent.len();
    assert_eq!(
        pg.psql(&db, "SELECT count(*), count(DISTINCT idx), max(idx) FROM record"),
        format!("{last}|{last}|{last}")
    );
    let page = api.page(&account, device, "visits", 5, Some(1)).await;
    assert_eq!(
        page.expect(200)["records"][0]["record_id"],
        sent[0].record_id.to_string()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_killed_in_the_middle_of_a_push_stores_each_record_once_when_it_is_repeated() {
    let mut s = setup("killed");
    let (account, device) = s.api.account_with_device().await;
    s.api
        .push(&account, &records(device, "visits", 1, 10, 100))
        .await
        .expect(200);
    let url = s.pg.url(&s.db);

    // Killed while the body is on its way.
    let batch = records(device, "visits", 11, 210, 40 * 1024);
    let body = serde_json::to_vec(&serde_json::json!({ "records": batch })).unwrap();
    let address = s.hub.url.strip_prefix("http://").unwrap().to_owned();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /v1/records HTTP/1.1\r\nhost: x\r\nauthorization: {}\r\ncontent-length: {}\r\n\r\n",
        account.header(),
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body[..body.len() / 2]).await.unwrap();
    s.hub.kill();
    drop(stream);
    let hub = Hub::start(&url);
    let api = Api::new(&hub.url);
    assert_eq!(s.pg.psql(&s.db, "SELECT count(*) FROM record"), "10");

    // Killed in its transaction, after the records were inserted, while it waits for the
    // series head that this test holds locked.
    let holder = connect(&url).await;
    holder.batch_execute("BEGIN").await.unwrap();
    holder
        .execute(
            "SELECT 1 FROM series_head WHERE account_id = $1 AND device_id = $2 FOR UPDATE",
            &[&account.id, &device],
        )
        .await
        .unwrap();
    let push = {
        let (api, account, batch) = (api.clone(), account.clone(), batch.clone());
        tokio::spawn(async move { api.try_push(&account, &batch).await })
    };
    let watcher = connect(&url).await;
    let mut blocked = false;
    for _ in 0..1000 {
        let row = watcher
            .query_one(
                r#"SELECT count(*) AS n FROM pg_stat_activity
                   WHERE application_name = 'sitetrail-hub' AND wait_event_type = 'Lock'
                     AND query LIKE '%series_head%'"#,
                &[],
            )
            .await
            .unwrap();
        if row.get::<_, i64>("n") > 0 {
            blocked = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(blocked, "the push did not reach the series head");
    drop(hub);
    assert!(push.await.unwrap().is_err(), "a killed hub gave an answer");
    holder.batch_execute("ROLLBACK").await.unwrap();

    let hub = Hub::start(&url);
    let api = Api::new(&hub.url);
    assert_eq!(
        s.pg.psql(&s.db, "SELECT count(*) FROM record"),
        "10",
        "nothing of the killed push was committed"
    );
    let answer = api.push(&account, &batch).await;
    assert_eq!(answer.statuses(), vec!["stored"; batch.len()]);
    let again = api.push(&account, &batch).await;
    assert_eq!(again.statuses(), vec!["duplicate"; batch.len()]);
    assert_eq!(
        s.pg.psql(
            &s.db,
            "SELECT count(*), count(DISTINCT idx), count(DISTINCT record_id) FROM record"
        ),
        "210|210|210"
    );
    let ids: HashSet<String> =
        s.pg.psql(&s.db, "SELECT record_id FROM record WHERE idx > 10")
            .lines()
            .map(str::to_owned)
            .collect();
    assert_eq!(
        ids,
        batch
            .iter()
            .map(|r| r.record_id.to_string())
            .collect::<HashSet<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hub_processes_serve_one_account_consistently() {
    let s = setup("twohubs");
    let other = Hub::start(&s.pg.url(&s.db));
    let (one, two) = (s.api.clone(), Api::new(&other.url));
    let (account, a) = one.account_with_device().await;
    let b = Uuid::new_v4();
    two.register(&account, b).await.expect(200);

    // A device talks to whichever process the balancer picks: its series stays contiguous.
    let mut next = 1;
    for round in 0..10 {
        let api = if round % 2 == 0 { &one } else { &two };
        let answer = api
            .push(&account, &records(a, "visits", next, next + 9, 500))
            .await;
        assert_eq!(answer.statuses(), ["stored"; 10]);
        next += 10;
    }
    // The same push to both at once: each record stored once, acknowledged by both.
    let batch = records(b, "visits", 1, 50, 500);
    let (x, y) = tokio::join!(one.push(&account, &batch), two.push(&account, &batch));
    for (i, (p, q)) in x.statuses().iter().zip(y.statuses()).enumerate() {
        let mut pair = [p.as_str(), q.as_str()];
        pair.sort_unstable();
        assert_eq!(pair, ["duplicate", "stored"], "record {i}");
    }
    assert_eq!(
        s.pg.psql(
            &s.db,
            "SELECT count(*), count(DISTINCT (device_id, idx)) FROM record"
        ),
        "150|150"
    );
    let (i1, i2) = (one.index(&account).await, two.index(&account).await);
    assert_eq!(i1.expect(200), i2.expect(200));
    let (p1, p2) = (
        one.page(&account, a, "visits", 40, Some(30)).await,
        two.page(&account, a, "visits", 40, Some(30)).await,
    );
    assert_eq!(p1.expect(200), p2.expect(200));
    // Claims asked of two processes at once: still one grant per token.
    crate::claims::race(&one, &two, &account, a, b, 8).await;
}
