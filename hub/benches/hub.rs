//! The hub's benchmarks (docs/BENCHMARKS.md, "Sync hub"): the real `sitetrail-hub` (release)
//! over a PostgreSQL cluster of its own with default durability, real HTTP on 127.0.0.1.
//!
//! ```text
//! cargo bench -p sitetrail-hub --bench hub              # ~2 minutes
//! cargo bench -p sitetrail-hub --bench hub -- --quick   # a quarter of the work
//! ```
//!
//! (a) a first sync's push: 2,000 records of 64 KiB from one device, in pushes of 120, against
//!     the same rows inserted directly (the same multi-row INSERT over one connection, no HTTP,
//!     JSON or base64): what the hub adds. Alternating, median of the rounds.
//! (b) 8 devices (8 accounts) pushing at once, 100 records of 2 KiB a push, against 1 and 3
//!     hub processes over the same PostgreSQL. Alternating, median of the rounds.
//! (c) claims: one device claiming and completing batches of 100 new tokens; 8 devices asking
//!     for the same 100 tokens at once (one grant each, the rest held).
//! (d) an idle hub: CPU over 10 s and resident memory, after start and after the load above;
//! (e) 500 long-polls waiting on one hub (CPU, memory) and the time one push through another
//! hub process takes to answer them all.
//! (f) 1,000 long-polls of one account waiting on one hub (each asking for more than will come,
//!     so no push puts one behind and none answers): 200 pushes of that account and 200
//!     other requests (another account's index, health) through the same hub, one at a time,
//!     against the same with no wait open, before and after (issue 29: within 2x of none).
//!
//! ```text
//! cargo bench -p sitetrail-hub --bench hub -- --waits-only                  # (f) alone
//! cargo bench -p sitetrail-hub --bench hub -- --waits-only --before PATH    # (f) alternating
//! ```
//!
//! `--before PATH` runs (f) in alternating rounds against a hub started from another build of
//! `sitetrail-hub` (the one before a change) and this one, over the same PostgreSQL, and prints
//! the median ratios of each.
//!
//! Request bodies are built before the clock starts; the client runs on the same 2 cores as the
//! hub and PostgreSQL, so absolute rates are a floor, and the ratios are the figures.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_possible_truncation
)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sitetrail_sync_wire::{authorization, Login, Payload, Record, Series, DEVICE_HEADER};
use support::{postgres, Hub};
use uuid::Uuid;

/// The flags of the bench's hubs. The scenarios go past these on purpose (500 devices and waits
/// of one account, thousands of live leases, accounts by the hundred); the byte and record quotas
/// stay on, so a push's cost includes its quota check. Each benchmark device creates its account
/// from an address of its own (the proxy header).
const HUB_FLAGS: &[&str] = &[
    "--real-ip-header",
    "x-forwarded-for",
    "--quota-devices",
    "0",
    "--quota-leases",
    "0",
    "--quota-claim-jobs",
    "0",
    "--max-new-accounts-per-hour",
    "0",
    "--max-waits-per-account",
    "0",
    "--max-waits-per-address",
    "0",
    "--max-waits",
    "0",
];

/// A hub from `binary` with its metrics on a port of its own, and that address ((f) waits for
/// its waits to register there).
fn start_metered(binary: &str, database_url: &str) -> (Hub, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let metrics = format!("127.0.0.1:{port}");
    let mut flags = HUB_FLAGS.to_vec();
    flags.extend(["--metrics-listen", &metrics]);
    let hub = Hub::start_binary(binary, database_url, &flags, &[("SITETRAIL_HUB_LOG", "warn")]);
    (hub, metrics)
}

fn start_hub(database_url: &str) -> Hub {
    Hub::start_with(database_url, HUB_FLAGS, &[("SITETRAIL_HUB_LOG", "warn")])
}

struct Device {
    account: Uuid,
    login: Login,
    device: Uuid,
}

impl Device {
    fn auth(&self) -> String {
        authorization(self.account, &self.login)
    }
}

fn random_bytes(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    fastrand::fill(&mut v);
    v
}

async fn new_device(http: &reqwest::Client, url: &str) -> Device {
    let mut login = [0u8; 32];
    fastrand::fill(&mut login);
    let d = Device {
        account: Uuid::new_v4(),
        login: Login::new(login),
        device: Uuid::new_v4(),
    };
    let created = http
        .post(format!("{url}/v1/accounts"))
        .header(
            "x-forwarded-for",
            format!(
                "10.{}.{}.{}",
                fastrand::u8(..),
                fastrand::u8(..),
                fastrand::u8(..)
            ),
        )
        .json(&json!({"account_id": d.account, "login": d.login}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let registered = http
        .put(format!("{url}/v1/devices/{}", d.device))
        .header("authorization", d.auth())
        .header(DEVICE_HEADER, d.device.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(registered.status(), 200);
    d
}

fn batches(device: Uuid, total: u64, per_push: u64, bytes: usize) -> Vec<Vec<Record>> {
    (0..total.div_ceil(per_push))
        .map(|b| {
            let from = b * per_push + 1;
            (from..=(from + per_push - 1).min(total))
                .map(|idx| Record {
                    record_id: Uuid::new_v4(),
                    device_id: device,
                    series: Series::new("visits").unwrap(),
                    idx,
                    payload: Payload(random_bytes(bytes)),
                })
                .collect()
        })
        .collect()
}

async fn push_all(http: &reqwest::Client, url: &str, device: &Device, bodies: &[Vec<u8>]) {
    for body in bodies {
        let answer = http
            .post(format!("{url}/v1/records"))
            .header("authorization", device.auth())
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        let answer: Value = answer.json().await.unwrap();
        assert!(answer["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "stored"));
    }
}

fn bodies(batches: &[Vec<Record>]) -> Vec<Vec<u8>> {
    batches
        .iter()
        .map(|b| serde_json::to_vec(&json!({ "records": b })).unwrap())
        .collect()
}

async fn direct_insert(client: &mut tokio_postgres::Client, account: Uuid, batches: &[Vec<Record>]) {
    for batch in batches {
        let tx = client.transaction().await.unwrap();
        let d: Vec<Uuid> = batch.iter().map(|r| r.device_id).collect();
        let s: Vec<&str> = batch.iter().map(|r| r.series.as_str()).collect();
        let i: Vec<i64> = batch.iter().map(|r| r.idx as i64).collect();
        let ids: Vec<Uuid> = batch.iter().map(|r| r.record_id).collect();
        let p: Vec<&[u8]> = batch.iter().map(|r| r.payload.0.as_slice()).collect();
        tx.execute(
            "INSERT INTO bench_record (account_id, device_id, series, idx, record_id, payload)
             SELECT $1, * FROM unnest($2::uuid[], $3::text[], $4::int8[], $5::uuid[], $6::bytea[])",
            &[&account, &d, &s, &i, &ids, &p],
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
    }
}

/// POSTs JSON as the device and reads the JSON answer.
async fn post_json(http: &reqwest::Client, url: &str, auth: &str, body: &Value) -> Value {
    http.post(url)
        .header("authorization", auth)
        .json(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A random token.
fn token() -> String {
    random_bytes(32).iter().map(|b| format!("{b:02x}")).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let pg = postgres::Postgres::start_durable();
    let db = pg.create_database("hubbench");
    let url = pg.url(&db);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(32)
        .build()
        .unwrap();
    let args: Vec<String> = std::env::args().collect();
    let before = args
        .iter()
        .position(|a| a == "--before")
        .map(|i| args.get(i + 1).expect("--before PATH").clone());
    if args.iter().any(|a| a == "--waits-only") {
        let n = if quick { 50 } else { 200 };
        match before {
            None => {
                let (hub, metrics) = start_metered(support::HUB, &url);
                waits_against_none(&http, &hub, &metrics, n).await;
            }
            Some(binary) => before_and_after(&http, &url, &binary, n, if quick { 1 } else { 3 }).await,
        }
        return;
    }
    let (first, metrics) = start_metered(support::HUB, &url);
    let hubs: Vec<Hub> = [first, start_hub(&url), start_hub(&url)].into();
    let (_, start_rss) = hubs[0].cpu_and_rss();
    println!(
        "hub bench: PostgreSQL 15 (fsync on), release hub, {}",
        if quick { "--quick" } else { "full run" }
    );

    // (d) before any load.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (cpu0, _) = hubs[0].cpu_and_rss();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let (cpu1, rss_idle_start) = hubs[0].cpu_and_rss();
    let idle_before = (cpu1 - cpu0).as_secs_f64() / 10.0 * 100.0;

    // (a) a first sync.
    let total = if quick { 500 } else { 2_000 };
    let rounds = if quick { 1 } else { 3 };
    let (mut hub_rates, mut direct_rates) = (Vec::new(), Vec::new());
    let (mut direct, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    direct
        .batch_execute(
            "CREATE TABLE bench_record (LIKE record INCLUDING ALL);
             ALTER TABLE bench_record ALTER COLUMN payload SET STORAGE EXTERNAL",
        )
        .await
        .unwrap();
    for round in 0..rounds {
        let device = new_device(&http, &hubs[0].url).await;
        let batch = batches(device.device, total, 120, 64 * 1024);
        let pushes = bodies(&batch);
        let started = Instant::now();
        push_all(&http, &hubs[0].url, &device, &pushes).await;
        let hub_rate = total as f64 / started.elapsed().as_secs_f64();
        let started = Instant::now();
        direct_insert(&mut direct, Uuid::new_v4(), &batch).await;
        let direct_rate = total as f64 / started.elapsed().as_secs_f64();
        println!(
            "  (a) round {round}: hub {hub_rate:.0} records/s, direct INSERT {direct_rate:.0} records/s"
        );
        hub_rates.push(hub_rate);
        direct_rates.push(direct_rate);
    }
    let (hub_rate, direct_rate) = (median(hub_rates), median(direct_rates));
    println!(
        "(a) first sync, {total} records of 64 KiB in pushes of 120: hub {hub_rate:.0} records/s ({:.0} MiB/s, {:.1} s for 2,000), direct INSERT {direct_rate:.0} records/s: hub = {:.2}x direct",
        hub_rate * 64.0 / 1024.0,
        2_000.0 / hub_rate,
        hub_rate / direct_rate
    );

    // (b) 8 devices at once against 1 and 3 hub processes.
    let pushes_per_device = if quick { 5 } else { 15 };
    let mut rates = [Vec::new(), Vec::new()];
    for round in 0..rounds * 2 {
        let processes = if round % 2 == 0 { 1 } else { 3 };
        let mut work = Vec::new();
        for i in 0..8 {
            let hub_url = hubs[i % processes].url.clone();
            let device = new_device(&http, &hub_url).await;
            let pushes = bodies(&batches(device.device, pushes_per_device * 100, 100, 2 * 1024));
            work.push((hub_url, device, pushes));
        }
        let started = Instant::now();
        let tasks: Vec<_> = work
            .into_iter()
            .map(|(hub_url, device, pushes)| {
                let http = http.clone();
                tokio::spawn(async move { push_all(&http, &hub_url, &device, &pushes).await })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let rate = (8 * pushes_per_device * 100) as f64 / started.elapsed().as_secs_f64();
        println!("  (b) round {round}: {processes} hub process(es): {rate:.0} records/s");
        rates[usize::from(processes == 3)].push(rate);
    }
    let (one, three) = (median(rates[0].clone()), median(rates[1].clone()));
    println!(
        "(b) 8 devices pushing at once (100 × 2 KiB a push): 1 hub {one:.0} records/s, 3 hubs {three:.0} records/s: 3 hubs = {:.2}x 1 hub",
        three / one
    );

    // (c) claims.
    let device = new_device(&http, &hubs[0].url).await;
    let batches_n = if quick { 10 } else { 40 };
    let started = Instant::now();
    for _ in 0..batches_n {
        let tokens: Vec<String> = (0..100).map(|_| token()).collect();
        let items: Vec<Value> = tokens.iter().map(|t| json!({"token": t})).collect();
        let body = json!({"device_id": device.device, "lease_ms": 60_000, "items": items});
        let granted = post_json(
            &http,
            &format!("{}/v1/claims", hubs[0].url),
            &device.auth(),
            &body,
        )
        .await;
        let claims: Vec<Value> = granted["claims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| json!({"token": c["token"], "claim_id": c["claim_id"]}))
            .collect();
        let body = json!({"device_id": device.device, "claims": claims});
        let settled = post_json(
            &http,
            &format!("{}/v1/claims/complete", hubs[0].url),
            &device.auth(),
            &body,
        )
        .await;
        assert_eq!(settled["settled"], 100);
    }
    let claim_rate = f64::from(batches_n * 100) / started.elapsed().as_secs_f64();
    // 8 devices of one account asking for the same tokens at once.
    let owner = new_device(&http, &hubs[0].url).await;
    let mut devices = vec![owner.device];
    for _ in 1..8 {
        let d = Uuid::new_v4();
        http.put(format!("{}/v1/devices/{d}", hubs[0].url))
            .header("authorization", owner.auth())
            .send()
            .await
            .unwrap();
        devices.push(d);
    }
    let contended_rounds = if quick { 5 } else { 20 };
    let started = Instant::now();
    for _ in 0..contended_rounds {
        let items: Vec<Value> = (0..100).map(|_| json!({"token": token()})).collect();
        let tasks: Vec<_> = devices
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let (http, url, auth) = (http.clone(), hubs[i % 3].url.clone(), owner.auth());
                let body = json!({"device_id": d, "lease_ms": 60_000, "items": items});
                tokio::spawn(async move {
                    let answer = post_json(&http, &format!("{url}/v1/claims"), &auth, &body).await;
                    answer["claims"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|c| c["state"] == "granted")
                        .count()
                })
            })
            .collect();
        let mut granted = 0;
        for t in tasks {
            granted += t.await.unwrap();
        }
        assert_eq!(granted, 100, "each token granted once");
    }
    let contended = f64::from(contended_rounds * 100 * 8) / started.elapsed().as_secs_f64();
    println!(
        "(c) claims: claim + complete {claim_rate:.0} tokens/s (batches of 100, one device); 8 devices asking for the same 100 tokens at once over 3 hubs: {contended:.0} answers/s, each token granted once"
    );

    // (d) after the load.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (cpu2, _) = hubs[0].cpu_and_rss();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let (cpu3, rss_after) = hubs[0].cpu_and_rss();
    let idle_after = (cpu3 - cpu2).as_secs_f64() / 10.0 * 100.0;
    println!(
        "(d) idle hub: CPU {idle_before:.2}% of a core after start, {idle_after:.2}% after the load (over 10 s each); RSS {start_rss} kB at start, {rss_idle_start} kB idle, {rss_after} kB after the load"
    );

    // (e) Long-polls: WAITS devices of one account wait on one hub; CPU and memory while they
    // wait, then one push of another device through another hub process wakes them all.
    const WAITS: usize = 500;
    let laptop = new_device(&http, &hubs[1].url).await;
    let mut desktops = Vec::with_capacity(WAITS);
    for _ in 0..WAITS {
        let d = Uuid::new_v4();
        let r = http
            .put(format!("{}/v1/devices/{d}", hubs[0].url))
            .header("authorization", laptop.auth())
            .header(DEVICE_HEADER, d.to_string())
            .send()
            .await
            .unwrap();
        // MAX_DEVICES_PER_ACCOUNT: the rest wait under a device id that is not registered,
        // which the long-poll allows (it only leaves the asker's own series out).
        assert!(r.status() == 200 || r.status() == 409, "{}", r.status());
        desktops.push(d);
    }
    let (_, rss_before_waits) = hubs[0].cpu_and_rss();
    let waiting = Arc::new(tokio::sync::Barrier::new(WAITS + 1));
    let mut tasks = Vec::with_capacity(WAITS);
    for d in desktops {
        let (http, url, auth, waiting) = (http.clone(), hubs[0].url.clone(), laptop.auth(), waiting.clone());
        tasks.push(tokio::spawn(async move {
            let sent = http
                .get(format!("{url}/v1/index/wait?series=visits&seen=0&wait_ms=30000"))
                .header("authorization", auth)
                .header(DEVICE_HEADER, d.to_string())
                .send();
            let (answer, _) = tokio::join!(sent, waiting.wait());
            let answer = answer.unwrap();
            assert_eq!(answer.status(), 200);
            Instant::now()
        }));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (cpu4, _) = hubs[0].cpu_and_rss();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (cpu5, rss_waiting) = hubs[0].cpu_and_rss();
    let waiting_cpu = (cpu5 - cpu4).as_secs_f64() / 5.0 * 100.0;
    waiting.wait().await;
    let pushed = Instant::now();
    let body = serde_json::to_vec(&json!({ "records": batches(laptop.device, 1, 1, 64)[0] })).unwrap();
    let r = http
        .post(format!("{}/v1/records", hubs[1].url))
        .header("authorization", laptop.auth())
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut last = pushed;
    for t in tasks {
        last = last.max(t.await.unwrap());
    }
    println!(
        "(e) {WAITS} long-polls waiting on one hub: CPU {waiting_cpu:.2}% of a core, RSS +{} kB ({:.1} kB a wait); one push through another hub process answered all {WAITS} in {:.0} ms",
        rss_waiting.saturating_sub(rss_before_waits),
        rss_waiting.saturating_sub(rss_before_waits) as f64 / WAITS as f64,
        (last - pushed).as_secs_f64() * 1000.0
    );

    waits_against_none(&http, &hubs[0], &metrics, if quick { 50 } else { 200 }).await;
}

/// Per request, one at a time: (median ms, 99th percentile ms, total s).
fn spread(mut ms: Vec<f64>) -> (f64, f64, f64) {
    let total = ms.iter().sum::<f64>() / 1000.0;
    ms.sort_by(f64::total_cmp);
    let p99 = ms[(ms.len() * 99 / 100).min(ms.len() - 1)];
    (median(ms), p99, total)
}

/// (f) `n` pushes of one account and `n` other requests through `hub`, one at a time: their
/// times in ms (pushes, another account's index, health).
async fn pushes_and_others(
    http: &reqwest::Client,
    hub: &Hub,
    pusher: &Device,
    next_idx: &mut u64,
    other: &Device,
    n: usize,
) -> [Vec<f64>; 3] {
    let bodies: Vec<Vec<u8>> = (0..n as u64)
        .map(|i| {
            let record = Record {
                record_id: Uuid::new_v4(),
                device_id: pusher.device,
                series: Series::new("visits").unwrap(),
                idx: *next_idx + i,
                payload: Payload(random_bytes(2048)),
            };
            serde_json::to_vec(&json!({ "records": [record] })).unwrap()
        })
        .collect();
    *next_idx += n as u64;
    let mut times: [Vec<f64>; 3] = Default::default();
    for body in bodies {
        let started = Instant::now();
        let r = http
            .post(format!("{}/v1/records", hub.url))
            .header("authorization", pusher.auth())
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r.bytes().await.unwrap();
        times[0].push(started.elapsed().as_secs_f64() * 1000.0);
        for (k, (path, auth)) in [("/v1/index", Some(other.auth())), ("/v1/health", None)]
            .into_iter()
            .enumerate()
        {
            let started = Instant::now();
            let mut request = http.get(format!("{}{path}", hub.url));
            if let Some(auth) = auth {
                request = request.header("authorization", auth);
            }
            let r = request.send().await.unwrap();
            assert_eq!(r.status(), 200);
            r.bytes().await.unwrap();
            times[k + 1].push(started.elapsed().as_secs_f64() * 1000.0);
        }
    }
    times
}

/// (f) in alternating rounds against a hub from `binary` ("before") and this build's ("after"):
/// the median over the rounds of each ratio (1,000 waits against none: p50 and total).
async fn before_and_after(http: &reqwest::Client, url: &str, binary: &str, n: usize, rounds: usize) {
    let hubs = [start_metered(binary, url), start_metered(support::HUB, url)];
    let mut ratios: [Vec<[[f64; 3]; 3]>; 2] = Default::default();
    for round in 0..rounds {
        for (k, (hub, metrics)) in hubs.iter().enumerate() {
            println!("(f) round {round}, {}:", ["before", "after"][k]);
            ratios[k].push(waits_against_none(http, hub, metrics, n).await);
        }
    }
    let names = ["push", "another account's index", "health"];
    for (k, label) in ["before", "after"].iter().enumerate() {
        for (j, name) in names.iter().enumerate() {
            let p50 = median(ratios[k].iter().map(|r| r[j][0]).collect());
            let total = median(ratios[k].iter().map(|r| r[j][1]).collect());
            let bracketed = median(ratios[k].iter().map(|r| r[j][2]).collect());
            println!(
                "(f) {label}, median of {rounds} rounds: {name} with 1,000 waits = {p50:.2}x the p50, {total:.2}x the total of none before; {bracketed:.2}x the p50 of none before and after (their mean)"
            );
        }
    }
}

/// (f) 1,000 waits of one account against none: what pushes and other requests cost meanwhile;
/// per kind of request (push, another account's index, health), the ratios with the waits to
/// without (p50 and total against the no-wait requests before; p50 against the mean of the p50s
/// before and after, which keeps a drift of the machine's load out of the ratio).
async fn waits_against_none(http: &reqwest::Client, hub: &Hub, metrics: &str, n: usize) -> [[f64; 3]; 3] {
    const WAITS: usize = 1_000;
    let pusher = new_device(http, &hub.url).await;
    let other = new_device(http, &hub.url).await;
    let mut next_idx = 1;
    // Warm the connections and the statements.
    pushes_and_others(http, hub, &pusher, &mut next_idx, &other, 20).await;
    let before = pushes_and_others(http, hub, &pusher, &mut next_idx, &other, n).await;

    // The waits ask for more than will come: every push wakes all of them, none answers.
    let opened = Arc::new(tokio::sync::Barrier::new(WAITS + 1));
    let mut waits = Vec::with_capacity(WAITS);
    // One client per wait's connection, so the measured requests never queue behind them.
    let waiting_http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    for _ in 0..WAITS {
        let (http, url, auth, opened) = (
            waiting_http.clone(),
            hub.url.clone(),
            pusher.auth(),
            opened.clone(),
        );
        waits.push(tokio::spawn(async move {
            let sent = http
                .get(format!(
                    "{url}/v1/index/wait?series=visits&seen=1000000000&wait_ms=30000"
                ))
                .header("authorization", auth)
                .header(DEVICE_HEADER, Uuid::new_v4().to_string())
                .send();
            let (answer, _) = tokio::join!(sent, opened.wait());
            let answer = answer.unwrap();
            assert_eq!(answer.status(), 200);
            answer.headers().get("retry-after").is_none()
        }));
    }
    opened.wait().await;
    // Until every wait is registered on the hub (a wait refused by a cap would answer at once)
    // and none holds or waits for a database connection: the measured requests do not run
    // beside the waits' logins and first reads.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = reqwest::get(format!("http://{metrics}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let at = |series| support::sample(&text, series);
        if at("sitetrail_hub_waits_open") == Some(WAITS as f64)
            && at("sitetrail_hub_pool_connections_in_use") == Some(0.0)
            && at("sitetrail_hub_pool_waiting") == Some(0.0)
        {
            break;
        }
        assert!(Instant::now() < deadline, "the waits did not register:\n{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let started = Instant::now();
    let during = pushes_and_others(http, hub, &pusher, &mut next_idx, &other, n).await;
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(25),
        "the measured requests must end while the waits are open ({took:?})"
    );
    let finished_early = waits.iter().filter(|w| w.is_finished()).count();
    let mut waited = 0;
    for w in waits {
        waited += usize::from(w.await.unwrap());
    }
    let after = pushes_and_others(http, hub, &pusher, &mut next_idx, &other, n).await;

    let names = ["push (1 record of 2 KiB)", "another account's index", "health"];
    let mut ratios = [[0.0; 3]; 3];
    for (k, name) in names.iter().enumerate() {
        let (none_p50, none_p99, none_total) = spread(before[k].clone());
        let (with_p50, with_p99, with_total) = spread(during[k].clone());
        let (after_p50, _, _) = spread(after[k].clone());
        println!(
            "(f) {n} x {name}: no wait p50 {none_p50:.2} ms p99 {none_p99:.2} ms ({none_total:.2} s); \
             {WAITS} waits of the pushing account p50 {with_p50:.2} ms p99 {with_p99:.2} ms ({with_total:.2} s): \
             {:.2}x the p50, {:.2}x the total; no wait again after: p50 {after_p50:.2} ms",
            with_p50 / none_p50,
            with_total / none_total,
        );
        ratios[k] = [
            with_p50 / none_p50,
            with_total / none_total,
            with_p50 / ((none_p50 + after_p50) / 2.0),
        ];
    }
    println!(
        "(f) {waited} of {WAITS} waits waited their whole time (none refused by a cap), {finished_early} had answered before the measured requests ended"
    );
    ratios
}
