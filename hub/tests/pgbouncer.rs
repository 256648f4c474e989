//! Behind PgBouncer in transaction mode, as the hub is usually deployed for many accounts: two
//! hub processes whose `--database-url` is PgBouncer (few server connections, shared by both)
//! and whose `--direct-database-url` reaches PostgreSQL itself (the LISTEN connection and the
//! migrations need a session of their own). Everything still works: pushes, pulls, claims with
//! `SKIP LOCKED`, long-polls woken across the two processes, quotas, under concurrent requests.

use std::time::{Duration, Instant};

use serde_json::Value;
use uuid::Uuid;

use crate::support::pgbouncer::PgBouncer;
use crate::support::{postgres, records, Account, Api, Hub};

/// A long-poll of `device` for the `visits` series: (answer body, how long it took).
async fn wait(api: &Api, account: &Account, device: Uuid, seen: u64) -> (Value, Duration) {
    let (answer, took) = crate::support::long_poll(api, account, device, seen, 20_000).await;
    (answer.expect(200).clone(), took)
}

fn last_idx(index: &Value, device: Uuid) -> Option<u64> {
    index["series"]
        .as_array()?
        .iter()
        .find(|h| h["device_id"].as_str() == Some(&device.to_string()))?["last_idx"]
        .as_u64()
}

/// One device's life through alternating hubs: account, device, pushes, index, pages.
async fn busy_device(apis: [Api; 2], n: usize) {
    let api = &apis[n % 2];
    let (account, device) = api.account_with_device().await;
    for batch in 0..5u64 {
        let answer = apis[(batch % 2) as usize]
            .push(
                &account,
                &records(device, "visits", batch * 3 + 1, batch * 3 + 3, 200),
            )
            .await;
        assert!(answer.expect(200) != &Value::Null && answer.all_acknowledged());
        let index = apis[((batch + 1) % 2) as usize].index(&account).await;
        assert_eq!(last_idx(index.expect(200), device), Some(batch * 3 + 3));
    }
    let page = apis[(n + 1) % 2].page(&account, device, "visits", 0, None).await;
    assert_eq!(page.expect(200)["records"].as_array().unwrap().len(), 15);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hubs_behind_pgbouncer_in_transaction_mode_push_pull_claim_wait_and_keep_quotas() {
    let pg = postgres::shared();
    let db = pg.create_database("pgbouncer");
    // Two server connections for two hubs of eight pooled connections each: every statement of
    // a hub may land on a server connection another client used last.
    let bouncer = PgBouncer::start(pg, &db, 2, true);
    let direct = pg.url(&db);
    let env = [("SITETRAIL_HUB_DIRECT_DATABASE_URL", direct.as_str())];
    let flags = ["--pool-size", "8", "--quota-records", "40"];
    let hubs = [
        Hub::start_with(&bouncer.url(&db), &flags, &env),
        Hub::start_with(&bouncer.url(&db), &flags, &env),
    ];
    let apis = [Api::new(&hubs[0].url), Api::new(&hubs[1].url)];

    // Many requests at once through both hubs (8 accounts: 9 with the one below is within the
    // accounts per address and minute): every one answered right.
    let tasks: Vec<_> = (0..8)
        .map(|n| tokio::spawn(busy_device(apis.clone(), n)))
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(pg.psql(&db, "SELECT count(*) FROM record"), "120");

    // A long-poll on one hub is woken by a push through the other.
    let (account, laptop) = apis[0].account_with_device().await;
    let desktop = Uuid::new_v4();
    apis[1].register(&account, desktop).await.expect(200);
    apis[0]
        .push(&account, &records(laptop, "visits", 1, 2, 64))
        .await
        .expect(200);
    let (index, _) = wait(&apis[1], &account, desktop, 0).await;
    assert_eq!(last_idx(&index, laptop), Some(2));
    let waiting = {
        let (api, account) = (apis[1].clone(), account.clone());
        tokio::spawn(async move { wait(&api, &account, desktop, 2).await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "a wait with nothing new answered early");
    let pushed = Instant::now();
    apis[0]
        .push(&account, &records(laptop, "visits", 3, 3, 64))
        .await
        .expect(200);
    let (index, _) = waiting.await.unwrap();
    assert_eq!(last_idx(&index, laptop), Some(3));
    assert!(
        pushed.elapsed() < Duration::from_secs(10),
        "the push through the other hub did not wake the wait ({:?}; the wait was 20 s)",
        pushed.elapsed()
    );
    // Each hub listens on a connection straight to PostgreSQL, not through PgBouncer.
    assert_eq!(
        pg.psql(
            &db,
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'sitetrail-hub' \
             AND query ILIKE 'LISTEN%'"
        ),
        "2"
    );

    // Claims: the same tokens asked for through both hubs at once go to one device each.
    crate::claims::race(&apis[0], &apis[1], &account, laptop, desktop, 5).await;
    assert_eq!(
        pg.psql(&db, "SELECT count(*), max(attempts) FROM claim_job"),
        "150|1"
    );

    // Quotas: 3 records stored, 37 more fit, 38 do not.
    let full = apis[1]
        .push(&account, &records(laptop, "visits", 4, 41, 10))
        .await;
    assert_eq!(
        (full.status, full.code()),
        (507, "quota_exceeded"),
        "{:?}",
        full.body
    );
    assert_eq!(
        full.body["quota"],
        serde_json::json!({"quota": "records", "used": 3, "limit": 40, "wanted": 38})
    );
    let fits = apis[0]
        .push(&account, &records(laptop, "visits", 4, 40, 10))
        .await;
    assert!(fits.expect(200) != &Value::Null && fits.all_acknowledged());
    assert_eq!(fits.header("x-sitetrail-quota-records"), "40/40");

    // The other routes: the account's quotas and devices, a device leaving, the account deleted
    // (its statements run inside its transaction), after which its login opens nothing.
    let quota = apis[1].get("/v1/quota", Some(&account)).await;
    assert_eq!(quota.expect(200)["records"]["used"], 40);
    let devices = apis[0].get("/v1/devices", Some(&account)).await;
    assert_eq!(devices.expect(200)["devices"].as_array().unwrap().len(), 2);
    apis[1].leave(&account, desktop).await.expect(204);
    apis[0]
        .send(reqwest::Method::DELETE, "/v1/account", Some(&account), None, None)
        .await
        .expect(204);
    apis[1].index(&account).await.expect(401);
    assert_eq!(
        pg.psql(
            &db,
            &format!("SELECT count(*) FROM record WHERE account_id = '{}'", account.id)
        ),
        "0"
    );

    for hub in &hubs {
        let log = hub.log();
        assert!(log.contains("statement_timeout=20s"), "{log}");
        assert!(!log.contains("database error"), "{log}");
        assert!(!log.contains("ERROR"), "{log}");
    }
    // Every request went through PgBouncer: it logged the hubs' logins.
    assert!(bouncer.log().contains("login attempt"), "{}", bouncer.log());
}

/// Without a statement timeout from PgBouncer the hub says so at start (it cannot send one
/// itself through the pool); the operator's commands and `migrate` go straight to PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_behind_pgbouncer_without_a_statement_timeout_says_so() {
    let pg = postgres::shared();
    let db = pg.create_database("pgbouncer_timeout");
    let bouncer = PgBouncer::start(pg, &db, 1, false);
    let direct = pg.url(&db);
    let env = [("SITETRAIL_HUB_DIRECT_DATABASE_URL", direct.as_str())];
    let hub = Hub::start_with(&bouncer.url(&db), &[], &env);
    let api = Api::new(&hub.url);
    let (account, _) = api.account_with_device().await;
    let log = hub.log();
    assert!(
        log.contains("no statement_timeout behind the transaction pool"),
        "{log}"
    );

    let pooled = bouncer.url(&db);
    let args = ["--database-url", pooled.as_str(), "--startup-wait", "0"];
    let (code, _, stderr) = crate::support::run_hub(&[&["migrate"][..], &args].concat(), &env);
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) =
        crate::support::run_hub(&[&["accounts", "list", "--json"][..], &args].concat(), &env);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains(&account.id.to_string()), "{stdout}");
    // Without the direct URL, the LISTEN connection would go through PgBouncer, where it hears
    // nothing; the hub's settings at connect are refused there, and the error says what to do.
    let (code, _, stderr) = crate::support::run_hub(&[&["migrate"][..], &args].concat(), &[]);
    assert_ne!(code, 0);
    assert!(stderr.contains("--direct-database-url"), "{stderr}");
}
