//! Quotas per account (`sitetrail-hub serve --quota-*`): a write past one is refused 507
//! `quota_exceeded` naming the quota and the account's own figures, and stores nothing; every
//! write's answer carries the usage and the limit; `GET /v1/quota` gives them all; the counts stay
//! exact with concurrent pushes through two hub processes; new accounts per hour are capped over
//! every address. And a real device at its quota: it says so, keeps its records, loses nothing,
//! and pushes them once there is room.

use serde_json::{json, Value};
use uuid::Uuid;

use crate::support::{postgres, records, token, Account, Api, Hub, Setup};

/// A new database and a hub over it with `flags`.
fn setup_with(hint: &str, flags: &[&str]) -> Setup {
    let pg = postgres::shared();
    let db = pg.create_database(hint);
    let hub = Hub::start_with(&pg.url(&db), flags, &[]);
    let api = Api::new(&hub.url);
    Setup { pg, db, hub, api }
}

#[track_caller]
fn quota_refused(answer: &crate::support::Answer, quota: &str, used: u64, limit: u64, wanted: u64) {
    assert_eq!(
        (answer.status, answer.code()),
        (507, "quota_exceeded"),
        "{:?}",
        answer.body
    );
    assert_eq!(
        answer.body["quota"],
        json!({"quota": quota, "used": used, "limit": limit, "wanted": wanted}),
    );
    let flag = format!("--quota-{}", quota.replace('_', "-"));
    assert!(
        answer.message().contains("quota for this account is full") && answer.message().contains(&flag),
        "{}",
        answer.message()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_past_the_bytes_or_records_quota_stores_nothing_and_says_so() {
    let s = setup_with("quota_push", &["--quota-bytes", "10KiB", "--quota-records", "5"]);
    let (account, device) = s.api.account_with_device().await;
    let stored = s.api.push(&account, &records(device, "ops", 1, 3, 3000)).await;
    assert!(stored.expect(200).is_object() && stored.all_acknowledged());
    assert_eq!(stored.header("x-sitetrail-quota-bytes"), "9000/10240");
    assert_eq!(stored.header("x-sitetrail-quota-records"), "3/5");

    // 9000 + 3000 > 10240: refused whole, nothing stored.
    let refused = s.api.push(&account, &records(device, "ops", 4, 5, 1500)).await;
    quota_refused(&refused, "bytes", 9000, 10240, 3000);
    assert!(
        refused.message().contains("8.8 of 10.0 KiB"),
        "{}",
        refused.message()
    );
    assert_eq!(
        s.pg.psql(&s.db, "SELECT count(*), sum(octet_length(payload)) FROM record"),
        "3|9000"
    );
    // A smaller push still fits.
    let again = s.api.push(&account, &records(device, "ops", 4, 4, 1000)).await;
    assert!(again.all_acknowledged());
    assert_eq!(again.header("x-sitetrail-quota-bytes"), "10000/10240");
    let records_full = s.api.push(&account, &records(device, "ops", 5, 6, 10)).await;
    quota_refused(&records_full, "records", 4, 5, 2);

    let quota = s.api.get("/v1/quota", Some(&account)).await;
    assert_eq!(
        quota.expect(200),
        &json!({
            "bytes": {"used": 10000, "limit": 10240},
            "records": {"used": 4, "limit": 5},
            "devices": {"used": 1, "limit": 256},
            "claim_jobs": {"used": 0, "limit": 200000},
            "leases": {"used": 0, "limit": 1000},
        })
    );
    assert_eq!(quota.header("x-sitetrail-quota-bytes"), "10000/10240");
    s.api.get("/v1/quota", None).await.expect(401);

    // Another account has its own quota, and is told nothing of this one's.
    let (other, other_device) = s.api.account_with_device().await;
    let fresh = s.api.push(&other, &records(other_device, "ops", 1, 1, 100)).await;
    assert_eq!(fresh.header("x-sitetrail-quota-bytes"), "100/10240");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_pushes_through_two_hubs_never_pass_the_quota_and_the_counts_stay_true() {
    let s = setup_with("quota_race", &["--quota-bytes", "20000", "--quota-records", "0"]);
    let second = Hub::start_with(
        &s.pg.url(&s.db),
        &["--quota-bytes", "20000", "--quota-records", "0"],
        &[],
    );
    let apis = [s.api.clone(), Api::new(&second.url)];
    let account = Account::random();
    s.api.create_account(&account).await.expect(201);
    let devices: Vec<Uuid> = (0..6).map(|_| Uuid::new_v4()).collect();
    for d in &devices {
        s.api.register(&account, *d).await.expect(200);
    }
    // Six devices push 3 records of 1000 bytes, twice over: 36,000 bytes asked for, room for six
    // pushes (18,000); a device refused once stops.
    let mut tasks = Vec::new();
    for (i, d) in devices.iter().enumerate() {
        let (api, account, d) = (apis[i % 2].clone(), account.clone(), *d);
        tasks.push(tokio::spawn(async move {
            let mut refused = 0;
            for round in 0..2 {
                let answer = api
                    .push(&account, &records(d, "ops", round * 3 + 1, round * 3 + 3, 1000))
                    .await;
                match answer.status {
                    200 => assert!(answer.all_acknowledged()),
                    507 => {
                        refused += 1;
                        break;
                    }
                    other => panic!("{other}: {:?}", answer.body),
                }
            }
            refused
        }));
    }
    let mut refused = 0;
    for t in tasks {
        refused += t.await.unwrap();
    }
    let stored: u64 =
        s.pg.psql(
            &s.db,
            "SELECT coalesce(sum(octet_length(payload)), 0) FROM record",
        )
        .parse()
        .unwrap();
    assert_eq!(stored, 18000);
    assert!(refused >= 1, "{refused}");
    assert_eq!(
        s.pg.psql(&s.db, "SELECT bytes_stored, records_stored FROM account"),
        format!("{stored}|{}", stored / 1000),
        "the counters are the records' true sums"
    );
    // No limit on records: the header says so.
    let quota = apis[1].get("/v1/quota", Some(&account)).await;
    assert_eq!(quota.expect(200)["records"]["limit"], Value::Null);
    assert_eq!(
        quota.header("x-sitetrail-quota-records"),
        format!("{}/none", stored / 1000)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_that_left_count_against_the_devices_quota() {
    let s = setup_with("quota_devices", &["--quota-devices", "3"]);
    let (account, first) = s.api.account_with_device().await;
    let second = Uuid::new_v4();
    let registered = s.api.register(&account, second).await;
    assert_eq!(registered.header("x-sitetrail-quota-devices"), "2/3");
    let left = s.api.leave(&account, second).await;
    left.expect(204);
    assert_eq!(
        left.header("x-sitetrail-quota-devices"),
        "2/3",
        "a device that left still counts"
    );
    s.api.register(&account, Uuid::new_v4()).await.expect(200);
    let refused = s.api.register(&account, Uuid::new_v4()).await;
    quota_refused(&refused, "devices", 3, 3, 1);
    assert_eq!(s.pg.psql(&s.db, "SELECT count(*) FROM device"), "3");
    // A device already registered is only touched: no quota needed.
    let touched = s.api.register(&account, first).await;
    assert_eq!(touched.expect(200)["device_id"], json!(first));
    assert_eq!(touched.header("x-sitetrail-quota-devices"), "3/3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_jobs_and_live_leases_have_their_quotas() {
    let s = setup_with(
        "quota_claims",
        &["--quota-claim-jobs", "4", "--quota-leases", "2"],
    );
    let (account, device) = s.api.account_with_device().await;
    let (a, b, c) = (token(), token(), token());
    let granted = s
        .api
        .claim(
            &account,
            device,
            60_000,
            &[(a.clone(), false), (b.clone(), false)],
        )
        .await;
    assert_eq!(granted.expect(200)["claims"][1]["state"], "granted");
    assert_eq!(granted.header("x-sitetrail-quota-claim-jobs"), "2/4");
    assert_eq!(granted.header("x-sitetrail-quota-leases"), "2/2");
    // A third lease would pass the quota: refused, and its job not created.
    let refused = s.api.claim(&account, device, 60_000, &[(c.clone(), false)]).await;
    quota_refused(&refused, "leases", 2, 2, 1);
    assert_eq!(s.pg.psql(&s.db, "SELECT count(*) FROM claim_job"), "2");
    // Renewing a lease this device holds adds none.
    let renewed = s.api.claim(&account, device, 60_000, &[(a.clone(), false)]).await;
    assert_eq!(renewed.expect(200)["claims"][0]["state"], "granted");
    // Completing one gives its lease back.
    let claim_id = granted.body["claims"][0]["claim_id"].as_str().unwrap().to_owned();
    let settled = s.api.settle(&account, device, "complete", &[(a, claim_id)]).await;
    assert_eq!(settled.expect(200)["settled"], 1);
    assert_eq!(settled.header("x-sitetrail-quota-leases"), "1/2");
    let granted = s.api.claim(&account, device, 60_000, &[(c, false)]).await;
    assert_eq!(granted.expect(200)["claims"][0]["state"], "granted");
    // Jobs: 3 of 4; two new ones would be 5.
    let refused = s
        .api
        .claim(&account, device, 60_000, &[(token(), false), (token(), false)])
        .await;
    quota_refused(&refused, "claim_jobs", 3, 4, 2);
    assert_eq!(
        s.pg.psql(&s.db, "SELECT count(*), max(claim_jobs) FROM claim_job, account"),
        "3|3"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_accounts_per_hour_are_capped_over_every_address() {
    let s = setup_with(
        "quota_hourly",
        &[
            "--max-new-accounts-per-hour",
            "3",
            "--real-ip-header",
            "x-forwarded-for",
        ],
    );
    let http = reqwest::Client::new();
    let create = |address: String| {
        let account = Account::random();
        http.post(format!("{}/v1/accounts", s.hub.url))
            .header("x-forwarded-for", address)
            .json(&json!({"account_id": account.id, "login": account.login}))
            .send()
    };
    for i in 0..3 {
        assert_eq!(create(format!("198.51.100.{i}")).await.unwrap().status(), 201);
    }
    let refused = create("203.0.113.9".into()).await.unwrap();
    assert_eq!(refused.status(), 429);
    let wait: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((3000..=3600).contains(&wait), "{wait}");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "too_many_requests");
    assert!(body["message"]
        .as_str()
        .unwrap()
        .contains("--max-new-accounts-per-hour"));
    assert_eq!(s.pg.psql(&s.db, "SELECT count(*) FROM account"), "3");
    // The address log keeps an hour of creations, and no account id.
    assert_eq!(s.pg.psql(&s.db, "SELECT count(*) FROM account_creation"), "3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_hubs_accounts_get_their_counters_when_it_is_migrated() {
    let pg = postgres::shared();
    let db = pg.create_database("quota_migrate");
    // The schema as version 1 left it, with an account's records and jobs.
    pg.psql(&db, include_str!("../migrations/0001_hub.sql"));
    pg.psql(
        &db,
        r"CREATE TABLE sitetrail_hub_migrations (version bigint PRIMARY KEY, name text NOT NULL,
                                                 applied_at timestamptz NOT NULL DEFAULT now());
          INSERT INTO sitetrail_hub_migrations (version, name) VALUES (1, 'hub');
          INSERT INTO account VALUES ('00000000-0000-4000-8000-000000000001', sha256('x'));
          INSERT INTO device (account_id, device_id) VALUES ('00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002');
          INSERT INTO record (account_id, device_id, series, idx, record_id, payload)
            SELECT '00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002', 'ops', i,
                   md5(i::text)::uuid, convert_to(repeat('z', 10 * i), 'UTF8')
            FROM generate_series(1, 4) i;
          INSERT INTO claim_job (account_id, token) VALUES ('00000000-0000-4000-8000-000000000001', sha256('t'));",
    );
    let hub = Hub::start(&pg.url(&db));
    assert_eq!(
        pg.psql(
            &db,
            "SELECT bytes_stored, records_stored, claim_jobs FROM account"
        ),
        "100|4|1"
    );
    drop(hub);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_after_a_quota_refusal_are_paced_and_other_accounts_are_not() {
    use std::time::{Duration, Instant};
    let s = setup_with("quota_pace", &["--quota-bytes", "10KiB"]);
    let (a, dev) = s.api.account_with_device().await;
    s.api
        .push(&a, &records(dev, "visits", 1, 9, 1000))
        .await
        .expect(200);
    let past = records(dev, "visits", 10, 12, 1000);
    s.api.push(&a, &past).await.expect(507);
    // Pushed again and again at once (as a client that ignores the refusal would): each waits
    // for the account's slot before its body is read.
    let started = Instant::now();
    for _ in 0..4 {
        s.api.push(&a, &past).await.expect(507);
    }
    let took = started.elapsed();
    let pace = Duration::from_secs(1) / sitetrail_hub::pace::REFUSED_PUSHES_PER_SECOND;
    assert!(took >= pace * 3, "4 refused pushes in {took:?}");
    // Another account is not paced.
    let (b, b_dev) = s.api.account_with_device().await;
    let started = Instant::now();
    s.api
        .push(&b, &records(b_dev, "visits", 1, 1, 100))
        .await
        .expect(200);
    assert!(
        started.elapsed() < pace,
        "another account waited {:?}",
        started.elapsed()
    );
}
