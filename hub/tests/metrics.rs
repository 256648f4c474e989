//! What the hub is doing, for the person running it: Prometheus metrics on their own listener
//! (`--metrics-listen`; not on the API's), and JSON log lines (`--log-format json`) that carry
//! ids, counts and sizes, never what a user sent.

use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::Value;

use crate::support::{postgres, records, sample, Account, Api, Hub};

/// The hub's JSON log lines so far (each must be one JSON object).
fn json_lines(hub: &Hub) -> Vec<Value> {
    hub.log()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_bytes_waits_and_refusals_on_their_own_listener() {
    let pg = postgres::shared();
    let db = pg.create_database("metrics");
    let hub = Hub::start_with(
        &pg.url(&db),
        &[
            "--metrics-listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--quota-bytes",
            "1KiB",
        ],
        &[],
    );
    let api = Api::new(&hub.url);
    // Where the metrics listen: said in the (JSON) log.
    let deadline = Instant::now() + Duration::from_secs(20);
    let metrics_at = loop {
        let found = json_lines(&hub).into_iter().find_map(|l| {
            (l["message"] == "metrics at /metrics").then(|| l["address"].as_str().unwrap().to_owned())
        });
        if let Some(at) = found {
            break at;
        }
        assert!(Instant::now() < deadline, "{}", hub.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let scrape = || async {
        let r = reqwest::get(format!("http://{metrics_at}/metrics"))
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert!(r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4"));
        r.text().await.unwrap()
    };

    let (account, device) = api.account_with_device().await;
    assert!(api
        .push(&account, &records(device, "ops", 1, 1, 500))
        .await
        .all_acknowledged());
    let refused = api.push(&account, &records(device, "ops", 2, 2, 600)).await;
    assert_eq!(refused.status, 507);
    api.page(&account, device, "ops", 0, None).await.expect(200);
    api.index(&Account::random()).await.expect(401);
    // A long-poll in flight.
    let waiting = {
        let (api, account) = (api.clone(), account.clone());
        tokio::spawn(async move {
            api.send(
                Method::GET,
                "/v1/index/wait?series=ops&seen=0&wait_ms=3000",
                Some(&account),
                Some(device),
                None,
            )
            .await
        })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let text = scrape().await;
        if sample(&text, "sitetrail_hub_waits_open") == Some(1.0) {
            break text;
        }
        assert!(Instant::now() < deadline, "{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    for (series, value) in [
        (
            r#"sitetrail_hub_requests_total{route="/v1/records",method="POST",status="200"}"#,
            1.0,
        ),
        (
            r#"sitetrail_hub_requests_total{route="/v1/records",method="POST",status="507"}"#,
            1.0,
        ),
        (
            r#"sitetrail_hub_requests_total{route="/v1/records",method="GET",status="200"}"#,
            1.0,
        ),
        (
            r#"sitetrail_hub_requests_total{route="/v1/index",method="GET",status="401"}"#,
            1.0,
        ),
        (
            r#"sitetrail_hub_request_duration_seconds_count{route="/v1/records"}"#,
            3.0,
        ),
        (
            r#"sitetrail_hub_request_duration_seconds_bucket{route="/v1/records",le="+Inf"}"#,
            3.0,
        ),
        ("sitetrail_hub_pushed_bytes_total", 500.0),
        ("sitetrail_hub_pushed_records_total", 1.0),
        ("sitetrail_hub_pulled_bytes_total", 500.0),
        ("sitetrail_hub_pulled_records_total", 1.0),
        (r#"sitetrail_hub_quota_refusals_total{quota="bytes"}"#, 1.0),
        (r#"sitetrail_hub_quota_refusals_total{quota="records"}"#, 0.0),
        ("sitetrail_hub_accounts", 1.0),
        ("sitetrail_hub_records_stored", 1.0),
        ("sitetrail_hub_bytes_stored", 500.0),
        (r#"sitetrail_hub_postgres_errors_total{kind="unavailable"}"#, 0.0),
    ] {
        assert_eq!(sample(&text, series), Some(value), "{series}\n{text}");
    }
    assert!(
        sample(&text, "sitetrail_hub_pool_connections_open").unwrap() >= 1.0,
        "{text}"
    );
    assert_eq!(sample(&text, "sitetrail_hub_pool_connections_max"), Some(16.0));
    assert!(sample(&text, "sitetrail_hub_pool_waiting").is_some());
    // Every sample's family is declared, and no label holds an id.
    assert!(text.contains("# TYPE sitetrail_hub_request_duration_seconds histogram"));
    assert!(!text.contains(&account.id.to_string()) && !text.contains(&device.to_string()));
    assert_eq!(waiting.await.unwrap().status, 200);
    let text = scrape().await;
    assert_eq!(sample(&text, "sitetrail_hub_waits_open"), Some(0.0), "{text}");

    // Not on the API's listener.
    api.get("/metrics", None).await.expect(404);

    // The JSON log: every line an object with its envelope; nothing a user sent.
    let lines = json_lines(&hub);
    assert!(lines.len() >= 3);
    for l in &lines {
        for key in ["time", "level", "target", "message"] {
            assert!(l[key].is_string(), "{key}: {l}");
        }
    }
    let log = hub.log();
    assert!(!log.contains(&account.login.to_base64url()) && !log.contains(&account.id.to_string()));
}

#[test]
fn metrics_are_off_unless_asked_for() {
    let pg = postgres::shared();
    let db = pg.create_database("metrics_off");
    let hub = Hub::start(&pg.url(&db));
    assert!(!hub.log().contains("metrics at"), "{}", hub.log());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(Api::new(&hub.url).get("/metrics", None)).expect(404);
}
