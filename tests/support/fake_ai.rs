//! A fake AI provider on 127.0.0.1 (wiremock: real HTTP, real reqwest) and helpers for the
//! classifier and worker tests.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use sitetrail::classify::builtin::classify_domain;
use sitetrail::classify::http::HttpOptions;
use sitetrail::classify::ollama::{Ollama, OllamaConfig};
use sitetrail::classify::openai::{OpenAi, OpenAiConfig};
use sitetrail::classify::secret::ApiKey;
use sitetrail::classify::Classifier;
use sitetrail::worker::{RetryPolicy, WorkerConfig};
use sitetrail::Store;

/// The key the tests give the provider; it must never show up anywhere.
pub const KEY: &str = "sk-test-SECRET-4f9a1c";

/// Mounts a provider that answers every POST with 401 and an error message quoting the request's
/// `Authorization` header after `prefix`, as some real servers do: the key comes back in the body.
pub async fn mount_key_echo(server: &MockServer, prefix: &'static str) {
    Mock::given(method("POST"))
        .respond_with(move |req: &Request| {
            let auth = req
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            ResponseTemplate::new(401)
                .set_body_json(json!({"error": {"message": format!("{prefix} {auth}")}}))
        })
        .mount(server)
        .await;
}

/// An OpenAI chat completion whose message content is `content`.
pub fn completion(content: &str) -> Value {
    json!({
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [{ "index": 0, "finish_reason": "stop",
                      "message": { "role": "assistant", "content": content, "refusal": null } }]
    })
}

/// The hosts of a chat request: its user message, split into lines.
pub fn hosts_of(req: &Request) -> Vec<String> {
    let body: Value = req.body_json().expect("JSON request body");
    user_message(&body).lines().map(str::to_owned).collect()
}

/// Every host the fake server was asked about, in every request so far, sorted (a host asked
/// twice is there twice).
pub async fn hosts_asked(server: &wiremock::MockServer) -> Vec<String> {
    let mut hosts: Vec<String> = server
        .received_requests()
        .await
        .expect("the server records requests")
        .iter()
        .flat_map(hosts_of)
        .collect();
    hosts.sort();
    hosts
}

/// The user message of a chat request body.
pub fn user_message(body: &Value) -> String {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .expect("a user message")
        .to_owned()
}

/// An answer content that classifies every host as the built-in rules would.
pub fn answer_for(hosts: &[String]) -> String {
    let results: Vec<Value> = hosts
        .iter()
        .map(|h| json!({"domain": h, "category": classify_domain(h).id(), "confidence": 0.9}))
        .collect();
    json!({ "results": results }).to_string()
}

/// A responder that answers every chat request correctly (OpenAI shape).
pub fn openai_ok() -> impl Fn(&Request) -> ResponseTemplate + Send + Sync + 'static {
    |req: &Request| ResponseTemplate::new(200).set_body_json(completion(&answer_for(&hosts_of(req))))
}

/// Mounts a correct OpenAI answer on `server` at `/v1/chat/completions`.
pub async fn mount_openai_ok(server: &MockServer) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(openai_ok())
        .mount(server)
        .await;
}

/// Bodies of every request `server` received, as JSON.
pub async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .expect("request recording on")
        .iter()
        .map(|r| r.body_json().expect("JSON body"))
        .collect()
}

/// Timeouts short enough for tests.
pub fn http() -> HttpOptions {
    HttpOptions {
        connect_timeout: Duration::from_secs(2),
        total_timeout: Duration::from_secs(5),
    }
}

/// An OpenAI classifier for `server` with the test key.
pub fn openai(base: &str) -> Arc<dyn Classifier> {
    Arc::new(openai_plain(base))
}

/// The concrete OpenAI classifier for `base` (`.../v1`), with the test key.
pub fn openai_plain(base: &str) -> OpenAi {
    OpenAi::new(OpenAiConfig {
        base_url: base.to_owned(),
        model: "test-model".into(),
        api_key: ApiKey::new(KEY),
        http: http(),
    })
    .expect("openai classifier")
}

/// An Ollama classifier for `base`.
pub fn ollama(base: &str) -> Ollama {
    Ollama::new(OllamaConfig {
        base_url: base.to_owned(),
        model: "llama-test".into(),
        http: http(),
    })
    .expect("ollama classifier")
}

/// A worker configuration on a millisecond scale.
pub fn fast_config(batch_size: usize) -> WorkerConfig {
    WorkerConfig {
        fixed_delay: Duration::from_millis(1),
        retry: RetryPolicy::fixed(Duration::from_millis(5)),
        batch_size,
        offline_backoff_first: Duration::from_millis(10),
        offline_backoff_max: Duration::from_millis(40),
        pause_poll: Duration::from_millis(10),
        shutdown_grace: Duration::from_millis(500),
        ..WorkerConfig::default()
    }
}

/// Polls `cond` every 10 ms (sleeping on the runtime) until it holds or `timeout` passes.
pub async fn eventually(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    crate::support::poll_async(timeout, Duration::from_millis(10), || cond().then_some(()))
        .await
        .is_some()
}

/// `(status, attempt_count)` of every job, by domain.
pub fn jobs(store: &Store) -> Vec<(String, String, i64)> {
    store
        .with_conn(|c| {
            let mut stmt = c.prepare(
                "SELECT w.domain, o.status, o.attempt_count FROM website_category_classification_outbox o
                 JOIN website w ON w.id = o.website_id ORDER BY w.domain",
            )?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .expect("jobs")
}

/// Number of jobs in `status`.
pub fn count_status(store: &Store, status: &str) -> usize {
    jobs(store).iter().filter(|(_, s, _)| s == status).count()
}

/// Every text value stored in the database, for leak checks.
pub fn all_text(store: &Store) -> String {
    store
        .with_conn(|c| {
            let mut out = String::new();
            for (table, cols) in [
                (
                    "website",
                    "domain || ' ' || coalesce(category, '') || ' ' || coalesce(category_source, '')",
                ),
                (
                    "website_category_classification_outbox",
                    "status || ' ' || coalesce(last_error_message, '')",
                ),
                (
                    "worker_state",
                    "coalesce(paused_kind, '') || ' ' || coalesce(paused_reason, '')",
                ),
            ] {
                let mut stmt = c.prepare(&format!("SELECT {cols} FROM {table}"))?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
                for r in rows {
                    out.push_str(&r?);
                    out.push('\n');
                }
            }
            Ok(out)
        })
        .expect("dump")
}

/// A responder recording when each request arrived, then answering with `inner`.
pub fn timed<F>(
    times: Arc<Mutex<Vec<Instant>>>,
    inner: F,
) -> impl Fn(&Request) -> ResponseTemplate + Send + Sync
where
    F: Fn(&Request) -> ResponseTemplate + Send + Sync,
{
    move |req: &Request| {
        times.lock().expect("times").push(Instant::now());
        inner(req)
    }
}

/// A server that answers the first call with 429 and `headers`, and correctly afterwards,
/// recording when each call arrived in `times`.
pub async fn rate_limited_once(headers: &[(&str, String)], times: Arc<Mutex<Vec<Instant>>>) -> MockServer {
    let server = MockServer::start().await;
    let mut limited = ResponseTemplate::new(429).set_body_string("slow down");
    for (k, v) in headers {
        limited = limited.insert_header(*k, v.as_str());
    }
    Mock::given(method("POST"))
        .respond_with(timed(times.clone(), move |_: &Request| limited.clone()))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(timed(times, openai_ok()))
        .with_priority(2)
        .mount(&server)
        .await;
    server
}
