//! Classifier benchmarks (issue 3). Run: `cargo bench --bench classify`.
//!
//! Prints, measured in one run against a fake OpenAI-compatible server on 127.0.0.1 (wiremock,
//! real HTTP, zero latency):
//! 1. engine overhead: API requests and jobs per second, batch 1 and batch 20;
//! 2. API requests per 1,000 websites, batch 1 vs batch 20;
//! 3. time for 10,000 queued websites to drain at 6,000 requests/minute with batch 20, against
//!    the ideal `requests / limit`.
//!
//! The built-in classifier's accuracy has its own bench: `cargo bench --bench builtin_accuracy`.

// A benchmark is a tool run by hand: it may panic on a broken setup and prints its figures.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::cast_possible_truncation
)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use sitetrail::classify::builtin::classify_domain;
use sitetrail::classify::http::HttpOptions;
use sitetrail::classify::openai::{OpenAi, OpenAiConfig};
use sitetrail::classify::Classifier;
use sitetrail::worker::{RetryPolicy, Worker, WorkerConfig};
use sitetrail::{NewVisit, Store, Timestamp};

fn answer(req: &Request) -> ResponseTemplate {
    let body: Value = req.body_json().expect("JSON body");
    let hosts = body["messages"][1]["content"].as_str().unwrap_or_default();
    let results: Vec<Value> = hosts
        .lines()
        .map(|h| json!({"domain": h, "category": classify_domain(h).id(), "confidence": 0.9}))
        .collect();
    let content = json!({ "results": results }).to_string();
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]
    }))
}

fn seeded_store(dir: &tempfile::TempDir, name: &str, n: usize) -> Store {
    let store = Store::open(dir.path().join(name)).expect("open store");
    for i in 0..n {
        store
            .record_visit(&NewVisit {
                url: &format!("https://site{i}.example.com/"),
                title: None,
                visited_at: Timestamp::now(),
                source: "bench",
                source_visit_id: None,
            })
            .expect("record visit");
    }
    store
}

/// Drains `n` websites through the worker; returns (wall time, requests the server received).
async fn drain(n: usize, batch: usize, per_minute: Option<u32>) -> (Duration, usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = seeded_store(&dir, "bench.db", n);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(answer)
        .mount(&server)
        .await;
    let classifier: Arc<dyn Classifier> = Arc::new(
        OpenAi::new(OpenAiConfig {
            base_url: format!("{}/v1", server.uri()),
            model: "bench".into(),
            api_key: None,
            http: HttpOptions::default(),
        })
        .expect("classifier"),
    );
    let config = WorkerConfig {
        fixed_delay: Duration::ZERO,
        retry: RetryPolicy::fixed(Duration::from_millis(10)),
        batch_size: batch,
        max_requests_per_minute: per_minute,
        ..WorkerConfig::default()
    };
    let worker = Worker::new(store.clone(), classifier, config).expect("worker");
    let (_stop, rx) = tokio::sync::watch::channel(false);
    let start = Instant::now();
    worker.run(rx, true).await.expect("run");
    let took = start.elapsed();
    let status = store.queue_status().expect("status");
    assert_eq!(status.completed as usize, n, "every job completed");
    let requests = server.received_requests().await.map_or(0, |r| r.len());
    (took, requests)
}

#[tokio::main]
async fn main() {
    println!("Classifier benchmarks (fake OpenAI-compatible server on 127.0.0.1, zero latency)");

    println!("\n1. engine overhead (2,000 websites, fixed delay 0, no rate limit)");
    for batch in [1, 20] {
        let (took, requests) = drain(2_000, batch, None).await;
        let secs = took.as_secs_f64();
        println!(
            "   batch {batch:>2}: {:>7.0} requests/s, {:>7.0} jobs/s ({requests} requests in {secs:.2} s)",
            requests as f64 / secs,
            2_000.0 / secs
        );
    }

    println!("\n2. API requests per 1,000 websites");
    let (_, unbatched) = drain(1_000, 1, None).await;
    let (_, batched) = drain(1_000, 20, None).await;
    println!(
        "   batch 1: {unbatched} requests; batch 20: {batched} requests ({:.1}x fewer)",
        unbatched as f64 / batched.max(1) as f64
    );

    println!("\n3. 10,000 queued websites at --max-requests-per-minute 6000, --batch-size 20");
    let (took, requests) = drain(10_000, 20, Some(6_000)).await;
    // The first request goes at once, then one every 10 ms.
    let ideal = Duration::from_millis(10) * (requests.saturating_sub(1) as u32);
    println!(
        "   {requests} requests in {:.2} s; the limit allows it in {:.2} s: {:.3}x the ideal; \
         effective rate {:.0} requests/min",
        took.as_secs_f64(),
        ideal.as_secs_f64(),
        took.as_secs_f64() / ideal.as_secs_f64(),
        requests as f64 / took.as_secs_f64() * 60.0
    );
}
