//! The load test of a hub run for others (issue 29; docs/BENCHMARKS.md, "Load: 1,000 devices"):
//! two `sitetrail-hub` processes (release) over one PostgreSQL cluster of their own (default
//! durability), 1,000 simulated devices in 100 accounts, and one abusive account, all on
//! 127.0.0.1.
//!
//! ```text
//! cargo bench -p sitetrail-hub --bench load              # about 4 minutes
//! cargo bench -p sitetrail-hub --bench load -- --quick   # under a minute (shorter windows)
//! cargo bench -p sitetrail-hub --bench load -- --without-account-turns   # --max-requests-per-account 0
//! cargo bench -p sitetrail-hub --bench load -- --hub-binary PATH   # hubs from another build (a "before")
//! ```
//!
//! The devices are simulated at the wire level (`hub/wire`'s shapes over real HTTP; payloads are
//! random bytes, which the hub never reads): each is two tokio tasks, one keeping a long-poll
//! open and pulling the other devices' new records when it answers, one pushing. Time is
//! compressed: a device pushes 3 records of 1 KiB every 10 s (jittered), where a real one pushes
//! a few records a minute. Each account's 10 devices come from one address (a household behind
//! one router, sent in `X-Forwarded-For`), 5 through each hub process. Two probes ask each hub's
//! `/v1/health` every 100 ms.
//!
//! Phases: (1) the 1,000 waits open and idle: the hubs' CPU and memory per 1,000 waits;
//! (2) quiet: the devices at work; (3) abuse: the same, plus one account pushing 8 MiB pushes
//! as fast as it can (two at a time), each refused for its byte quota, and holding 1,000
//! waits from 1,000 addresses, each asked again the moment it is answered (a client that ignores
//! `Retry-After`); (2) and (3) alternate, 20 s each, three rounds (one of 10 s each with
//! `--quick`), so the other work on the machine weighs on both alike; (4) saturation: every
//! device pushes 50 records a push back to back, waits and pulls still on.
//!
//! The hubs run with the default caps of waits per account (64) and per address (128), the
//! default 8 turns per account (`--max-requests-per-account`; `--without-account-turns` sets 0),
//! and
//! `--max-connections 4096` (each holds 500 device waits, up to 500 of the abuser's, and the
//! pushes' and probes' connections: the default 1,024 would leave the rest in the kernel's
//! backlog), `--quota-bytes 16MiB` (so the abuser reaches its quota in seconds, before the
//! phases: it is at its quota throughout the abuse phase). The simulator
//! runs on the same machine as the hubs and PostgreSQL: every figure is a floor, the ratios
//! between phases are the point, and the load average printed beside them says what else ran.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss
)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use sitetrail_sync_wire::{IndexResponse, PageResponse, PushResponse, DEVICE_HEADER};
use support::{postgres::Postgres, Account, Hub};
use uuid::Uuid;

/// The hubs' flags beyond the defaults (see the module's doc).
const HUB_FLAGS: &[&str] = &[
    "--real-ip-header",
    "x-forwarded-for",
    "--max-connections",
    "4096",
    "--quota-bytes",
    "16MiB",
];

/// How big and how long.
struct Scale {
    accounts: usize,
    devices_per_account: usize,
    /// The idle waits' measurement.
    idle: Duration,
    /// Each of the quiet and abuse phases.
    window: Duration,
    /// Rounds of (quiet, abuse).
    rounds: usize,
    saturation: Duration,
    push_every: Duration,
    records_per_push: usize,
    saturation_records: usize,
    record_bytes: usize,
    abusive_waits: usize,
    abusive_record_bytes: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Phase {
    Setup,
    Idle,
    Quiet,
    Abuse,
    /// Between two phases: the devices go on as in the quiet phase, nothing is reported.
    Settle,
    Saturation,
    Done,
}

const PHASES: [Phase; 7] = [
    Phase::Setup,
    Phase::Idle,
    Phase::Quiet,
    Phase::Abuse,
    Phase::Settle,
    Phase::Saturation,
    Phase::Done,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Push,
    Pull,
    Health,
    Wait,
}

const KINDS: [Kind; 3] = [Kind::Push, Kind::Pull, Kind::Health];

/// What the simulated devices share: the client, the hubs, the phase, the measurements.
struct Sim {
    http: reqwest::Client,
    hubs: Vec<String>,
    phase: AtomicUsize,
    /// (phase, kind) -> latencies in microseconds, of the well-behaved accounts' requests.
    latencies: Mutex<HashMap<(Phase, Kind), Vec<u32>>>,
    /// (phase, kind) -> failures (any answer but 2xx, a transport error, a wait refused by a cap).
    errors: Mutex<HashMap<(Phase, Kind), Vec<String>>>,
    /// Records the well-behaved devices stored, by phase.
    stored: [AtomicU64; PHASES.len()],
    /// Long-polls answered, by phase.
    waits_answered: [AtomicU64; PHASES.len()],
    /// The abuser: pushes stored, pushes refused for its quota, waits that waited, waits answered
    /// at once (past a cap), other answers.
    abuse: [AtomicU64; 5],
    /// A record's payload, as base64 (the same for every record: the hub never reads it).
    payload: String,
    abusive_payload: String,
}

impl Sim {
    fn phase(&self) -> Phase {
        PHASES[self.phase.load(Ordering::SeqCst)]
    }

    fn set_phase(&self, phase: Phase) {
        let i = PHASES.iter().position(|p| *p == phase).unwrap();
        self.phase.store(i, Ordering::SeqCst);
    }

    fn note(&self, phase: Phase, kind: Kind, started: Instant) {
        let us = started.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
        self.latencies
            .lock()
            .unwrap()
            .entry((phase, kind))
            .or_default()
            .push(us);
    }

    fn fail(&self, phase: Phase, kind: Kind, why: String) {
        self.errors
            .lock()
            .unwrap()
            .entry((phase, kind))
            .or_default()
            .push(why);
    }

    /// A push body: `n` records of `device` from `from`, every payload `payload`.
    fn push_body(device: Uuid, from: u64, n: usize, payload: &str) -> String {
        let records: Vec<String> = (from..from + n as u64)
            .map(|idx| {
                format!(
                    r#"{{"record_id":"{}","device_id":"{device}","series":"visits","idx":{idx},"payload":"{payload}"}}"#,
                    Uuid::now_v7()
                )
            })
            .collect();
        format!(r#"{{"records":[{}]}}"#, records.join(","))
    }
}

/// One simulated device of a well-behaved account.
#[derive(Clone)]
struct Device {
    account: Account,
    id: Uuid,
    hub: usize,
    /// Its account's address, as its router would show it.
    address: String,
}

impl Device {
    fn request(&self, sim: &Sim, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        sim.http
            .request(method, format!("{}{path}", sim.hubs[self.hub]))
            .header("authorization", self.account.header())
            .header(DEVICE_HEADER, self.id.to_string())
            .header("x-forwarded-for", &self.address)
    }
}

/// Sends a request and reads its whole answer: the body of a 2xx, else an error's words.
async fn answer(request: reqwest::RequestBuilder) -> Result<(reqwest::header::HeaderMap, Vec<u8>), String> {
    let response = request.send().await.map_err(|e| format!("transport: {e}"))?;
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.bytes().await.map_err(|e| format!("body: {e}"))?;
    if !status.is_success() {
        return Err(format!("{status}: {}", String::from_utf8_lossy(&body)));
    }
    Ok((headers, body.to_vec()))
}

/// Keeps a long-poll open; when it answers with more records of the others, pulls them.
async fn wait_loop(sim: Arc<Sim>, device: Device) {
    let mut pulled: HashMap<Uuid, u64> = HashMap::new();
    loop {
        let seen: u64 = pulled.values().sum();
        let request = device.request(
            &sim,
            reqwest::Method::GET,
            &format!("/v1/index/wait?series=visits&seen={seen}&wait_ms=30000"),
        );
        let (headers, body) = match answer(request).await {
            Ok(answer) => answer,
            Err(why) => {
                sim.fail(sim.phase(), Kind::Wait, why);
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let phase = sim.phase();
        sim.waits_answered[phase as usize].fetch_add(1, Ordering::Relaxed);
        if headers.contains_key("retry-after") {
            // A well-behaved device refused by a cap: a fairness failure. It spends the wait, as
            // a real device does.
            sim.fail(phase, Kind::Wait, "answered at once past a cap".into());
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
        let index: IndexResponse = serde_json::from_slice(&body).unwrap();
        for head in index.series {
            if head.device_id == device.id || head.series.as_str() != "visits" {
                continue;
            }
            loop {
                let after = pulled.get(&head.device_id).copied().unwrap_or(0);
                if after >= head.last_idx {
                    break;
                }
                let (phase, started) = (sim.phase(), Instant::now());
                let path = format!(
                    "/v1/records?device_id={}&series=visits&after={after}",
                    head.device_id
                );
                match answer(device.request(&sim, reqwest::Method::GET, &path)).await {
                    Ok((_, body)) => {
                        sim.note(phase, Kind::Pull, started);
                        let page: PageResponse = serde_json::from_slice(&body).unwrap();
                        let Some(last) = page.records.last() else { break };
                        pulled.insert(head.device_id, last.record.idx);
                    }
                    Err(why) => {
                        sim.fail(phase, Kind::Pull, why);
                        break;
                    }
                }
            }
        }
    }
}

/// Pushes every `push_every` (jittered) in the quiet and abuse phases, back to back at
/// saturation.
async fn push_loop(sim: Arc<Sim>, device: Device, scale: Arc<Scale>) {
    let mut next = 1u64;
    let period = scale.push_every.as_secs_f64();
    // The devices' first pushes spread over a period from the first phase's start.
    while matches!(sim.phase(), Phase::Setup | Phase::Idle) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    pause(&sim, Duration::from_secs_f64(fastrand::f64() * period)).await;
    loop {
        let phase = sim.phase();
        let n = match phase {
            Phase::Setup | Phase::Idle => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            Phase::Done => return,
            Phase::Saturation => scale.saturation_records,
            Phase::Quiet | Phase::Abuse | Phase::Settle => scale.records_per_push,
        };
        let body = Sim::push_body(device.id, next, n, &sim.payload);
        let started = Instant::now();
        let request = device
            .request(&sim, reqwest::Method::POST, "/v1/records")
            .header("content-type", "application/json")
            .body(body);
        match answer(request).await {
            Ok((_, body)) => {
                sim.note(phase, Kind::Push, started);
                let answer: PushResponse = serde_json::from_slice(&body).unwrap();
                if answer.results.iter().all(|r| r.status.is_acknowledged()) {
                    next += n as u64;
                    sim.stored[phase as usize].fetch_add(n as u64, Ordering::Relaxed);
                } else {
                    sim.fail(phase, Kind::Push, format!("not stored: {:?}", answer.results[0]));
                }
            }
            Err(why) => sim.fail(phase, Kind::Push, why),
        }
        if phase != Phase::Saturation {
            let jitter = 0.5 + fastrand::f64();
            pause(&sim, Duration::from_secs_f64(period * jitter)).await;
        }
    }
}

/// Sleeps `time`, or until saturation (or the end): so saturation starts at once, while the
/// other phases keep each device's pace.
async fn pause(sim: &Sim, time: Duration) {
    let end = Instant::now() + time;
    while !matches!(sim.phase(), Phase::Saturation | Phase::Done) {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        tokio::time::sleep(left.min(Duration::from_millis(250))).await;
    }
}

/// Asks a hub's health every 100 ms.
async fn health_loop(sim: Arc<Sim>, hub: usize) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tick.tick().await;
        let (phase, started) = (sim.phase(), Instant::now());
        match answer(sim.http.get(format!("{}/v1/health", sim.hubs[hub]))).await {
            Ok(_) => sim.note(phase, Kind::Health, started),
            Err(why) => sim.fail(phase, Kind::Health, why),
        }
    }
}

/// The abusive account's pushes: 200 records of `abusive_record_bytes` a push, one after the
/// other, through one hub, until the end of the abuse phase; refused ones are pushed again.
async fn abusive_pushes(sim: Arc<Sim>, device: Device, mut next: u64) {
    while sim.phase() == Phase::Abuse {
        let body = Sim::push_body(device.id, next, 200, &sim.abusive_payload);
        let request = device
            .request(&sim, reqwest::Method::POST, "/v1/records")
            .header("content-type", "application/json")
            .body(body);
        let response = request.send().await;
        let status = response.as_ref().map(reqwest::Response::status).ok();
        let _ = match response {
            Ok(r) => r.bytes().await.ok(),
            Err(_) => None,
        };
        let slot = match status.map(|s| s.as_u16()) {
            Some(200) => {
                next += 200;
                0
            }
            Some(507) => 1,
            _ => 4,
        };
        sim.abuse[slot].fetch_add(1, Ordering::Relaxed);
    }
}

/// One of the abuser's waits: asked again the moment it is answered, from an address of its own.
async fn abusive_wait(sim: Arc<Sim>, device: Device) {
    while sim.phase() == Phase::Abuse {
        let request = device.request(
            &sim,
            reqwest::Method::GET,
            "/v1/index/wait?series=visits&seen=1000000000&wait_ms=30000",
        );
        let slot = match answer(request).await {
            Ok((headers, _)) if headers.contains_key("retry-after") => 3,
            Ok(_) => 2,
            Err(_) => 4,
        };
        sim.abuse[slot].fetch_add(1, Ordering::Relaxed);
    }
}

/// A new account (from `address`) with `devices` registered devices, spread over the hubs.
async fn new_account(sim: Arc<Sim>, address: String, devices: usize) -> Vec<Device> {
    let account = Account::random();
    let created = sim
        .http
        .post(format!("{}/v1/accounts", sim.hubs[0]))
        .header("x-forwarded-for", &address)
        .json(&serde_json::json!({"account_id": account.id, "login": account.login}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let mut out = Vec::with_capacity(devices);
    for i in 0..devices {
        let device = Device {
            account: account.clone(),
            id: Uuid::new_v4(),
            hub: i % sim.hubs.len(),
            address: address.clone(),
        };
        let path = format!("/v1/devices/{}", device.id);
        answer(device.request(&sim, reqwest::Method::PUT, &path))
            .await
            .unwrap();
        out.push(device);
    }
    out
}

/// Raises the soft limit of open files to the hard one (the hubs inherit it): the simulator holds
/// a connection per wait, the abuser's included.
fn raise_open_files() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    getrlimit(Resource::RLIMIT_NOFILE).unwrap().0
}

/// CPU time of PostgreSQL: the server, its children that ended (counted in its own record) and
/// its live backends.
fn postgres_cpu(server: u32) -> Duration {
    let ticks = |stat: &str, fields: &[usize]| -> u64 {
        let after: Vec<&str> = stat
            .rsplit_once(')')
            .map_or("", |s| s.1)
            .split_whitespace()
            .collect();
        fields
            .iter()
            .filter_map(|&i| after.get(i)?.parse::<u64>().ok())
            .sum()
    };
    let mut total = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let after = stat.rsplit_once(')').map_or("", |s| s.1);
        // After the name: state, ppid, ...; utime and stime at 11 and 12, cutime and cstime at 13
        // and 14 (0-based).
        let ppid: u32 = after
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let pid: u32 = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        if pid == server {
            total += ticks(&stat, &[11, 12, 13, 14]);
        } else if ppid == server {
            total += ticks(&stat, &[11, 12]);
        }
    }
    Duration::from_millis(total * 10)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// CPU time so far and resident memory now.
struct Usage {
    /// The hubs' CPU, summed.
    hubs: Duration,
    /// The hubs' resident memory, summed (kB).
    rss: u64,
    /// The simulator's own CPU.
    sim: Duration,
    /// PostgreSQL's CPU.
    pg: Duration,
}

fn usage(hubs: &[Hub], pg: u32) -> Usage {
    let (mut cpu, mut rss) = (Duration::ZERO, 0);
    for hub in hubs {
        let (c, r) = hub.cpu_and_rss();
        cpu += c;
        rss += r;
    }
    Usage {
        hubs: cpu,
        rss,
        sim: support::cpu_and_rss(std::process::id()).0,
        pg: postgres_cpu(pg),
    }
}

fn percentile(sorted: &[u32], p: usize) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    f64::from(sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]) / 1000.0
}

/// How many latencies and errors each (phase, kind) holds so far.
fn marks(sim: &Sim) -> HashMap<(Phase, Kind), (usize, usize)> {
    let latencies = sim.latencies.lock().unwrap();
    let errors = sim.errors.lock().unwrap();
    let mut marks = HashMap::new();
    for phase in PHASES {
        for kind in [Kind::Push, Kind::Pull, Kind::Health, Kind::Wait] {
            let l = latencies.get(&(phase, kind)).map_or(0, Vec::len);
            let e = errors.get(&(phase, kind)).map_or(0, Vec::len);
            marks.insert((phase, kind), (l, e));
        }
    }
    marks
}

/// A phase's line per kind, over what was recorded since `since` (count, p50, p99, max in ms,
/// errors): the p99 of each kind.
fn report_phase(
    sim: &Sim,
    phase: Phase,
    since: &HashMap<(Phase, Kind), (usize, usize)>,
) -> HashMap<Kind, f64> {
    let mut p99s = HashMap::new();
    let latencies = sim.latencies.lock().unwrap();
    let errors = sim.errors.lock().unwrap();
    for kind in [Kind::Push, Kind::Pull, Kind::Health, Kind::Wait] {
        let (l, e) = since.get(&(phase, kind)).copied().unwrap_or((0, 0));
        let mut v = latencies
            .get(&(phase, kind))
            .map_or(Vec::new(), |v| v[l..].to_vec());
        v.sort_unstable();
        let failed = errors.get(&(phase, kind)).map_or(&[][..], |v| &v[e..]);
        if kind == Kind::Wait {
            if let Some(first) = failed.first() {
                println!("  Wait: errors {} (first: {first})", failed.len());
            }
            continue;
        }
        println!(
            "  {kind:?}: n {}, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms, errors {}{}",
            v.len(),
            percentile(&v, 50),
            percentile(&v, 99),
            v.last().map_or(f64::NAN, |m| f64::from(*m) / 1000.0),
            failed.len(),
            failed
                .first()
                .map(|f| format!(" (first: {f})"))
                .unwrap_or_default(),
        );
        p99s.insert(kind, percentile(&v, 99));
    }
    p99s
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = Arc::new(Scale {
        accounts: 100,
        devices_per_account: 10,
        idle: Duration::from_secs(if quick { 3 } else { 10 }),
        window: Duration::from_secs(if quick { 10 } else { 20 }),
        rounds: if quick { 1 } else { 3 },
        saturation: Duration::from_secs(if quick { 5 } else { 20 }),
        push_every: Duration::from_secs(10),
        records_per_push: 3,
        saturation_records: 50,
        record_bytes: 1024,
        abusive_waits: 1000,
        abusive_record_bytes: 40 * 1024,
    });
    let open_files = raise_open_files();
    let pg = Postgres::start_durable();
    let db = pg.create_database("hubload");
    let url = pg.url(&db);
    // `--without-account-turns`: no turns per account, as the hub was before this bench found
    // that one account could fill the queue every account shares (crate::turns).
    let without_turns = std::env::args().any(|a| a == "--without-account-turns");
    // `--hub-binary PATH`: the hubs from another build of `sitetrail-hub`, to compare a change.
    let args: Vec<String> = std::env::args().collect();
    let binary = args.iter().position(|a| a == "--hub-binary").map_or_else(
        || support::HUB.to_owned(),
        |i| args.get(i + 1).expect("--hub-binary PATH").clone(),
    );
    let mut flags = HUB_FLAGS.to_vec();
    if without_turns {
        flags.extend(["--max-requests-per-account", "0"]);
    }
    let hubs: Vec<Hub> = (0..2)
        .map(|_| Hub::start_binary(&binary, &url, &flags, &[("SITETRAIL_HUB_LOG", "warn")]))
        .collect();
    let b64 = |n: usize| base64::engine::general_purpose::STANDARD.encode(support::random_bytes(n));
    let sim = Arc::new(Sim {
        // Idle connections are dropped before the hub's header timeout (10 s) closes them, as a
        // device's client does; else a push can race the hub's close and fail on the way.
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(90))
            .pool_idle_timeout(Duration::from_secs(5))
            .build()
            .unwrap(),
        hubs: hubs.iter().map(|h| h.url.clone()).collect(),
        phase: AtomicUsize::new(0),
        latencies: Mutex::default(),
        errors: Mutex::default(),
        stored: Default::default(),
        waits_answered: Default::default(),
        abuse: Default::default(),
        payload: b64(scale.record_bytes),
        abusive_payload: b64(scale.abusive_record_bytes),
    });
    println!(
        "hub load test: {} accounts x {} devices, 2 release hubs over one PostgreSQL 15 (fsync on), open files {open_files}, {}{}",
        scale.accounts,
        scale.devices_per_account,
        if quick { "--quick" } else { "full run" },
        if without_turns { ", without turns per account" } else { "" }
    );

    // Setup: the accounts and their devices, ten accounts at a time.
    let started = Instant::now();
    let mut devices = Vec::new();
    for first in (0..scale.accounts).step_by(10) {
        let mut created = tokio::task::JoinSet::new();
        for a in first..(first + 10).min(scale.accounts) {
            let address = format!("10.0.{}.{}", a / 250, a % 250 + 1);
            created.spawn(new_account(sim.clone(), address, scale.devices_per_account));
        }
        while let Some(account) = created.join_next().await {
            devices.extend(account.unwrap());
        }
    }
    let abuser = new_account(sim.clone(), "10.255.255.254".into(), 2).await;
    // The abuser fills its byte quota before the phases: in the abuse phase it is at its quota.
    let filling = Instant::now();
    let mut next = 1;
    let filled = loop {
        let body = Sim::push_body(abuser[0].id, next, 200, &sim.abusive_payload);
        let request = abuser[0]
            .request(&sim, reqwest::Method::POST, "/v1/records")
            .header("content-type", "application/json")
            .body(body);
        let response = request.send().await.unwrap();
        match response.status().as_u16() {
            200 => next += 200,
            507 => break response.text().await.unwrap(),
            other => panic!("the abuser's push: {other}"),
        }
    };
    println!(
        "the abuser filled its quota in {:.1} s ({} pushes of 200 x {} KiB); then refused: {filled}",
        filling.elapsed().as_secs_f64(),
        (next - 1) / 200,
        scale.abusive_record_bytes / 1024
    );
    println!(
        "setup: {} accounts, {} devices in {:.1} s",
        scale.accounts + 1,
        devices.len() + 2,
        started.elapsed().as_secs_f64()
    );

    // (1) The waits open and idle.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let pg_pid = pg.pid();
    let Usage {
        hubs: cpu0,
        rss: rss0,
        ..
    } = usage(&hubs, pg_pid);
    tokio::time::sleep(scale.idle).await;
    let Usage {
        hubs: cpu1,
        rss: rss1,
        ..
    } = usage(&hubs, pg_pid);
    sim.set_phase(Phase::Idle);
    let mut tasks = tokio::task::JoinSet::new();
    for device in &devices {
        tasks.spawn(wait_loop(sim.clone(), device.clone()));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let cpu2 = usage(&hubs, pg_pid).hubs;
    tokio::time::sleep(scale.idle).await;
    let Usage {
        hubs: cpu3,
        rss: rss3,
        ..
    } = usage(&hubs, pg_pid);
    let per = |x: f64| x * 1000.0 / devices.len() as f64;
    println!(
        "(1) {} waits open on 2 hubs: CPU {:.2}% of a core without them, {:.2}% with them ({:.2}% per 1,000 waits); RSS {} kB -> {} kB ({:.0} kB per 1,000 waits, {:.1} kB a wait)",
        devices.len(),
        (cpu1 - cpu0).as_secs_f64() / scale.idle.as_secs_f64() * 100.0,
        (cpu3 - cpu2).as_secs_f64() / scale.idle.as_secs_f64() * 100.0,
        per((cpu3 - cpu2).saturating_sub(cpu1 - cpu0).as_secs_f64() / scale.idle.as_secs_f64() * 100.0),
        rss1.max(rss0),
        rss3,
        per(rss3.saturating_sub(rss1) as f64),
        rss3.saturating_sub(rss1) as f64 / devices.len() as f64,
    );

    // (2)-(5) The devices at work.
    for device in &devices {
        tasks.spawn(push_loop(sim.clone(), device.clone(), scale.clone()));
    }
    for hub in 0..2 {
        for _ in 0..2 {
            tasks.spawn(health_loop(sim.clone(), hub));
        }
    }
    // Quiet and abuse alternate, so that what else runs on the machine weighs on both alike.
    let mut phases = Vec::new();
    for _ in 0..scale.rounds {
        phases.extend([(Phase::Quiet, scale.window), (Phase::Abuse, scale.window)]);
    }
    phases.push((Phase::Saturation, scale.saturation));
    for (i, &(phase, window)) in phases.iter().enumerate() {
        let load_before = load_average();
        let before = usage(&hubs, pg_pid);
        let since = marks(&sim);
        let counted = |n: &[AtomicU64; PHASES.len()]| n[phase as usize].load(Ordering::Relaxed);
        let (stored_before, answered_before) = (counted(&sim.stored), counted(&sim.waits_answered));
        let abused_before: Vec<u64> = sim.abuse.iter().map(|n| n.load(Ordering::Relaxed)).collect();
        let started = Instant::now();
        sim.set_phase(phase);
        let mut abuse = tokio::task::JoinSet::new();
        if phase == Phase::Abuse {
            // Past what it stored: each push is new records, refused for the quota.
            abuse.spawn(abusive_pushes(sim.clone(), abuser[0].clone(), next));
            abuse.spawn(abusive_pushes(sim.clone(), abuser[1].clone(), 1));
            for i in 0..scale.abusive_waits {
                let mut device = abuser[i % 2].clone();
                device.address = format!("10.200.{}.{}", i / 250, i % 250 + 1);
                abuse.spawn(abusive_wait(sim.clone(), device));
            }
        }
        tokio::time::sleep(window).await;
        let took = started.elapsed();
        let after = usage(&hubs, pg_pid);
        // Between phases: the abuser stops asking; what it has in flight ends (its waits that
        // still wait are dropped after 5 s) before the next phase starts.
        sim.set_phase(if i + 1 < phases.len() {
            Phase::Settle
        } else {
            Phase::Done
        });
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            while abuse.join_next().await.is_some() {}
        })
        .await;
        abuse.abort_all();
        let stored = counted(&sim.stored) - stored_before;
        let cpu = |a: Duration, b: Duration| (b - a).as_secs_f64() / took.as_secs_f64() * 100.0;
        println!(
            "{phase:?} ({:.0} s; load average before/after: {load_before} / {}): CPU of a core: hubs {:.0}%, PostgreSQL {:.0}%, simulator {:.0}%; hubs' RSS {} kB at the end; {stored} records stored ({:.0}/s), {} waits answered",
            took.as_secs_f64(),
            load_average(),
            cpu(before.hubs, after.hubs),
            cpu(before.pg, after.pg),
            cpu(before.sim, after.sim),
            after.rss,
            stored as f64 / took.as_secs_f64(),
            counted(&sim.waits_answered) - answered_before,
        );
        report_phase(&sim, phase, &since);
        if phase == Phase::Abuse {
            let a: Vec<u64> = sim
                .abuse
                .iter()
                .zip(&abused_before)
                .map(|(n, b)| n.load(Ordering::Relaxed) - b)
                .collect();
            println!(
                "  the abuser: {} pushes stored, {} refused for its quota; {} waits answered after their 30 s, {} answered at once past a cap ({:.0}/s); {} other answers",
                a[0],
                a[1],
                a[2],
                a[3],
                a[3] as f64 / took.as_secs_f64(),
                a[4]
            );
        }
    }
    sim.set_phase(Phase::Done);
    println!("All rounds together:");
    let none = HashMap::new();
    println!("Quiet:");
    let quiet = report_phase(&sim, Phase::Quiet, &none);
    println!("Abuse:");
    let abused = report_phase(&sim, Phase::Abuse, &none);
    for kind in KINDS {
        println!(
            "p99 of {kind:?} with the abuser / without: {:.2}x",
            abused[&kind] / quiet[&kind]
        );
    }
    let stored = sim.stored[Phase::Saturation as usize].load(Ordering::Relaxed);
    println!(
        "records/s at saturation (every device pushing {} records a push back to back, waits and pulls on): {:.0}",
        scale.saturation_records,
        stored as f64 / scale.saturation.as_secs_f64()
    );
    tasks.abort_all();
    for hub in &hubs {
        let log = hub.log();
        if !log.trim().is_empty() {
            println!(
                "a hub's warnings:\n{}",
                log.lines().take(20).collect::<Vec<_>>().join("\n")
            );
        }
    }
}
