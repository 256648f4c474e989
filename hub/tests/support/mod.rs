//! What the hub's tests share: the PostgreSQL harness, a `sitetrail-hub` process, an HTTP client
//! that speaks the wire crate's shapes, and generators of accounts and records. The benchmarks
//! (`hub/benches/hub.rs`, `load.rs`) include this module too, so a hub is started one way.

#![allow(dead_code)]

pub mod pgbouncer;
#[path = "../../../tests/support/poll.rs"]
pub mod poll;
#[path = "../../../tests/support/postgres.rs"]
pub mod postgres;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};
use sitetrail_sync_wire::{authorization, Login, Payload, Record, Series, DEVICE_HEADER};
use uuid::Uuid;

pub use postgres::Postgres;

/// The hub binary under test.
pub const HUB: &str = env!("CARGO_BIN_EXE_sitetrail-hub");

/// A running `sitetrail-hub serve`, killed (SIGKILL) when dropped. Its stderr (the log) goes to
/// a file the test can read.
pub struct Hub {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    log: tempfile::NamedTempFile,
}

impl Hub {
    /// Starts a hub on a free port over `database_url`.
    pub fn start(database_url: &str) -> Hub {
        Hub::start_with(database_url, &[], &[])
    }

    /// Starts a hub with more flags and environment variables.
    pub fn start_with(database_url: &str, args: &[&str], env: &[(&str, &str)]) -> Hub {
        Hub::start_binary(HUB, database_url, args, env)
    }

    /// [`Hub::start_with`] from another build of `sitetrail-hub` (a benchmark's "before").
    pub fn start_binary(binary: &str, database_url: &str, args: &[&str], env: &[(&str, &str)]) -> Hub {
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut child = Command::new(binary)
            .args(["serve", "--listen", "127.0.0.1:0", "--startup-wait", "0"])
            .args(args)
            .env("SITETRAIL_HUB_DATABASE_URL", database_url)
            .env("SITETRAIL_HUB_LOG", "info")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log.reopen().unwrap())
            .spawn()
            .expect("start sitetrail-hub");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some(url) = line.trim().strip_prefix("sitetrail-hub listening on ") else {
            let _ = child.wait();
            panic!(
                "the hub did not start: {line:?}\n{}",
                std::fs::read_to_string(log.path()).unwrap()
            );
        };
        Hub {
            url: url.to_owned(),
            child,
            log,
        }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills it with SIGKILL: no shutdown, no COMMIT of anything in flight.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap()
    }

    /// Where its metrics listen (started with `--metrics-listen 127.0.0.1:0`): the address its
    /// log says, in either log format. Panics if it says none within 20 s.
    pub fn metrics_at(&self) -> String {
        let at = poll::poll(Duration::from_secs(20), Duration::from_millis(20), || {
            self.log().lines().find_map(|l| {
                if !l.contains("metrics at /metrics") {
                    return None;
                }
                match serde_json::from_str::<Value>(l) {
                    Ok(v) => v["address"].as_str().map(str::to_owned),
                    Err(_) => l
                        .split_once("address=")
                        .map(|(_, rest)| rest.split_whitespace().next().unwrap_or("").to_owned()),
                }
            })
        });
        at.unwrap_or_else(|| panic!("no metrics address in the log:\n{}", self.log()))
    }

    /// Its metrics now (`GET /metrics` on [`Hub::metrics_at`]).
    pub async fn metrics(&self) -> String {
        let r = reqwest::get(format!("http://{}/metrics", self.metrics_at()))
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        r.text().await.unwrap()
    }

    /// Waits until `n` long-polls wait in this process (`sitetrail_hub_waits_open`, on a hub
    /// started with `--metrics-listen`): the moment a test can act on a waiting long-poll.
    /// Panics after 20 s.
    pub async fn wait_for_waits(&self, n: usize) {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let text = self.metrics().await;
            if sample(&text, "sitetrail_hub_waits_open") == Some(n as f64) {
                return;
            }
            assert!(std::time::Instant::now() < deadline, "not {n} waits:\n{text}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Its user + system CPU time so far, and its resident memory now (kB), from `/proc`.
    pub fn cpu_and_rss(&self) -> (Duration, u64) {
        cpu_and_rss(self.pid())
    }
}

/// The value of the sample `series` (name and labels exactly as written) in the metrics `text`.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// A process's user + system CPU time so far, and its resident memory now (kB), from `/proc`.
pub fn cpu_and_rss(pid: u32) -> (Duration, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    // utime and stime are fields 14 and 15 (1-based) of the whole line; 12 and 13 after ')'.
    // Both count clock ticks of 10 ms (USER_HZ is 100 on Linux).
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    (Duration::from_millis(ticks * 10), rss)
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A test's own database on the shared cluster, and a hub over it.
pub struct Setup {
    /// The cluster.
    pub pg: &'static Postgres,
    /// The database's name.
    pub db: String,
    /// The hub.
    pub hub: Hub,
    /// A client of it.
    pub api: Api,
}

/// A new database and a hub over it (with its metrics, for [`Hub::wait_for_waits`]).
pub fn setup(hint: &str) -> Setup {
    let pg = postgres::shared();
    let db = pg.create_database(hint);
    let hub = Hub::start_with(&pg.url(&db), &["--metrics-listen", "127.0.0.1:0"], &[]);
    let api = Api::new(&hub.url);
    Setup { pg, db, hub, api }
}

/// An account's id and login, as a device derives them.
#[derive(Clone, Debug)]
pub struct Account {
    /// Its id.
    pub id: Uuid,
    /// Its login.
    pub login: Login,
}

impl Account {
    /// A new random account.
    pub fn random() -> Account {
        let mut login = [0u8; 32];
        login.iter_mut().for_each(|b| *b = fastrand::u8(..));
        Account {
            id: Uuid::new_v4(),
            login: Login::new(login),
        }
    }

    /// Its `Authorization` header.
    pub fn header(&self) -> String {
        authorization(self.id, &self.login)
    }
}

/// `n` random bytes.
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    fastrand::fill(&mut v);
    v
}

/// A record at (`device`, `series`, `idx`) with a random id and `bytes` random payload bytes.
pub fn record(device: Uuid, series: &str, idx: u64, bytes: usize) -> Record {
    Record {
        record_id: Uuid::new_v4(),
        device_id: device,
        series: Series::new(series).unwrap(),
        idx,
        payload: Payload(random_bytes(bytes)),
    }
}

/// Records `from..=to` of a series.
pub fn records(device: Uuid, series: &str, from: u64, to: u64, bytes: usize) -> Vec<Record> {
    (from..=to).map(|i| record(device, series, i, bytes)).collect()
}

/// Standard base64, as payloads travel.
pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// An answer: the status and the body (JSON, or `Value::Null` if it was not).
#[derive(Debug)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The body.
    pub body: Value,
    /// The headers.
    pub headers: reqwest::header::HeaderMap,
}

impl Answer {
    /// The error code of an error answer.
    pub fn code(&self) -> &str {
        self.body["error"].as_str().unwrap_or("")
    }

    /// The message of an error answer.
    pub fn message(&self) -> &str {
        self.body["message"].as_str().unwrap_or("")
    }

    /// Asserts the status (and, for errors, that the body is the wire's error shape).
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Value {
        assert_eq!(self.status, status, "{:?}", self.body);
        if status >= 400 {
            assert!(
                !self.code().is_empty() && !self.message().is_empty(),
                "{:?}",
                self.body
            );
        }
        &self.body
    }

    /// A header's value, as text ("" if it is missing).
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    /// Whether every pushed record was acknowledged (`stored` or `duplicate`).
    pub fn all_acknowledged(&self) -> bool {
        self.statuses().iter().all(|s| s == "stored" || s == "duplicate")
    }

    /// The push results' statuses.
    pub fn statuses(&self) -> Vec<String> {
        self.body["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["status"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// An HTTP client of one hub.
#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    /// The hub's URL.
    pub base: String,
}

impl Api {
    /// A client of the hub at `base`.
    pub fn new(base: &str) -> Api {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        Api {
            http,
            base: base.to_owned(),
        }
    }

    /// Sends a request; `auth` logs in as the account, `device` sends the device header.
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        auth: Option<&Account>,
        device: Option<Uuid>,
        body: Option<Vec<u8>>,
    ) -> Answer {
        self.try_send(method, path, auth, device, body)
            .await
            .expect("the hub answers")
    }

    /// [`Api::send`], for a hub that may not answer.
    pub async fn try_send(
        &self,
        method: reqwest::Method,
        path: &str,
        auth: Option<&Account>,
        device: Option<Uuid>,
        body: Option<Vec<u8>>,
    ) -> Result<Answer, reqwest::Error> {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(account) = auth {
            request = request.header("authorization", account.header());
        }
        if let Some(device) = device {
            request = request.header(DEVICE_HEADER, device.to_string());
        }
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body);
        }
        let response = request.send().await?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await?;
        Ok(Answer {
            status,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            headers,
        })
    }

    /// POST JSON.
    pub async fn post(&self, path: &str, auth: Option<&Account>, body: &Value) -> Answer {
        self.send(
            reqwest::Method::POST,
            path,
            auth,
            None,
            Some(serde_json::to_vec(body).unwrap()),
        )
        .await
    }

    /// GET.
    pub async fn get(&self, path: &str, auth: Option<&Account>) -> Answer {
        self.send(reqwest::Method::GET, path, auth, None, None).await
    }

    /// Creates the account.
    pub async fn create_account(&self, account: &Account) -> Answer {
        self.post(
            "/v1/accounts",
            None,
            &json!({"account_id": account.id, "login": account.login}),
        )
        .await
    }

    /// Registers a device.
    pub async fn register(&self, account: &Account, device: Uuid) -> Answer {
        self.send(
            reqwest::Method::PUT,
            &format!("/v1/devices/{device}"),
            Some(account),
            Some(device),
            None,
        )
        .await
    }

    /// A new account with one registered device.
    pub async fn account_with_device(&self) -> (Account, Uuid) {
        let account = Account::random();
        self.create_account(&account).await.expect(201);
        let device = Uuid::new_v4();
        self.register(&account, device).await.expect(200);
        (account, device)
    }

    /// Pushes records.
    pub async fn push(&self, account: &Account, records: &[Record]) -> Answer {
        self.try_push(account, records).await.expect("the hub answers")
    }

    /// The device leaves.
    pub async fn leave(&self, account: &Account, device: Uuid) -> Answer {
        self.send(
            reqwest::Method::DELETE,
            &format!("/v1/devices/{device}"),
            Some(account),
            None,
            None,
        )
        .await
    }

    /// Pushes records to a hub that may not answer.
    pub async fn try_push(&self, account: &Account, records: &[Record]) -> Result<Answer, reqwest::Error> {
        let body = serde_json::to_vec(&json!({ "records": records })).unwrap();
        self.try_send(
            reqwest::Method::POST,
            "/v1/records",
            Some(account),
            None,
            Some(body),
        )
        .await
    }

    /// A page of a series.
    pub async fn page(
        &self,
        account: &Account,
        device: Uuid,
        series: &str,
        after: u64,
        limit: Option<u32>,
    ) -> Answer {
        let limit = limit.map(|l| format!("&limit={l}")).unwrap_or_default();
        self.get(
            &format!("/v1/records?device_id={device}&series={series}&after={after}{limit}"),
            Some(account),
        )
        .await
    }

    /// The account's index.
    pub async fn index(&self, account: &Account) -> Answer {
        self.get("/v1/index", Some(account)).await
    }

    /// Asks for claims on `tokens` (`again` for each).
    pub async fn claim(
        &self,
        account: &Account,
        device: Uuid,
        lease_ms: u64,
        tokens: &[(String, bool)],
    ) -> Answer {
        let items: Vec<Value> = tokens
            .iter()
            .map(|(t, again)| json!({"token": t, "again": again}))
            .collect();
        self.post(
            "/v1/claims",
            Some(account),
            &json!({"device_id": device, "lease_ms": lease_ms, "items": items}),
        )
        .await
    }

    /// Completes (or releases) claims.
    pub async fn settle(
        &self,
        account: &Account,
        device: Uuid,
        how: &str,
        claims: &[(String, String)],
    ) -> Answer {
        let claims: Vec<Value> = claims
            .iter()
            .map(|(t, c)| json!({"token": t, "claim_id": c}))
            .collect();
        self.post(
            &format!("/v1/claims/{how}"),
            Some(account),
            &json!({"device_id": device, "claims": claims}),
        )
        .await
    }
}

/// A random token (64 lower-case hex characters).
pub fn token() -> String {
    random_bytes(32).iter().map(|b| format!("{b:02x}")).collect()
}

/// Waits until the hub's health is 200 (or panics after `timeout`).
pub async fn wait_healthy(api: &Api, timeout: Duration) {
    let end = std::time::Instant::now() + timeout;
    loop {
        if api.get("/v1/health", None).await.status == 200 {
            return;
        }
        assert!(
            std::time::Instant::now() < end,
            "the hub did not become healthy within {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Connects to a database directly (for what a test checks or holds behind the hub's back).
pub async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// Runs `sitetrail-hub ARGS` to its end: (exit code, stderr).
pub fn run_hub(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(HUB)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A long-poll of `device` on `visits` (`GET /v1/index/wait`), having seen `seen` of the others'
/// records, waiting at most `wait_ms`: the answer and how long it took.
pub async fn long_poll(
    api: &Api,
    account: &Account,
    device: Uuid,
    seen: u64,
    wait_ms: u64,
) -> (Answer, std::time::Duration) {
    let started = std::time::Instant::now();
    let answer = api
        .send(
            reqwest::Method::GET,
            &format!("/v1/index/wait?series=visits&seen={seen}&wait_ms={wait_ms}"),
            Some(account),
            Some(device),
            None,
        )
        .await;
    (answer, started.elapsed())
}

/// The last index of `device`'s series in an index answer's body.
pub fn last_idx(body: &Value, device: Uuid) -> Option<u64> {
    body["series"]
        .as_array()?
        .iter()
        .find(|h| h["device_id"].as_str() == Some(&device.to_string()))?["last_idx"]
        .as_u64()
}
