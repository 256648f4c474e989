//! Limits: each one refused with its status and a message naming it, with nothing stored;
//! garbage, absurd headers and slow clients never take the hub down.

use std::time::{Duration, Instant};

use sitetrail_sync_wire::limits;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use uuid::Uuid;

use crate::support::{random_bytes, record, records, setup, token, Account, Api, Hub};

#[track_caller]
fn refused(answer: &crate::support::Answer, status: u16, code: &str, names: &str) {
    assert_eq!(
        (answer.status, answer.code()),
        (status, code),
        "{:?}",
        answer.body
    );
    assert!(
        answer.message().contains(names),
        "{:?} should name {names}",
        answer.message()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_limit_is_refused_and_stores_nothing() {
    let s = setup("limits");
    let (account, device) = s.api.account_with_device().await;
    let api = &s.api;

    let many = records(device, "visits", 1, limits::MAX_RECORDS_PER_PUSH as u64 + 1, 10);
    refused(
        &api.push(&account, &many).await,
        400,
        "bad_request",
        "MAX_RECORDS_PER_PUSH",
    );
    let big = record(device, "visits", 1, limits::MAX_RECORD_BYTES + 1);
    refused(
        &api.push(&account, &[big]).await,
        400,
        "bad_request",
        &limits::MAX_RECORD_BYTES.to_string(),
    );
    let empty = record(device, "visits", 1, 0);
    refused(&api.push(&account, &[empty]).await, 400, "bad_request", "payload");
    let heavy = records(device, "visits", 1, 40, 250 * 1024);
    refused(
        &api.push(&account, &heavy).await,
        413,
        "too_large",
        "MAX_PUSH_PAYLOAD_BYTES",
    );
    let series: Vec<_> = (0..=limits::MAX_SERIES_PER_DEVICE)
        .map(|i| record(device, &format!("s{i}"), 1, 10))
        .collect();
    refused(
        &api.push(&account, &series).await,
        400,
        "bad_request",
        "MAX_SERIES_PER_DEVICE",
    );
    // Over the body limit, declared: refused before a byte of it is read (so sent here without
    // it: a client still sending when the answer comes may see a reset instead of it).
    let declared = format!(
        "POST /v1/records HTTP/1.1\r\nhost: x\r\nauthorization: {}\r\ncontent-length: {}\r\n\r\n",
        account.header(),
        limits::MAX_BODY_BYTES + 1
    );
    let (status, text, _) = raw(&s.hub.url, declared.as_bytes(), Duration::from_secs(10)).await;
    assert!(
        status.starts_with("HTTP/1.1 413") && text.contains("MAX_BODY_BYTES"),
        "{text}"
    );
    assert_eq!(s.pg.psql(&s.db, "SELECT count(*) FROM record"), "0");
    assert_eq!(s.pg.psql(&s.db, "SELECT count(*) FROM series_head"), "0");

    // The series limit also counts what a device already has.
    let sixteen: Vec<_> = (0..limits::MAX_SERIES_PER_DEVICE)
        .map(|i| record(device, &format!("s{i}"), 1, 10))
        .collect();
    api.push(&account, &sixteen).await.expect(200);
    let one_more = api
        .push(
            &account,
            &[record(device, "another", 1, 10), record(device, "s0", 2, 10)],
        )
        .await;
    refused(&one_more, 400, "bad_request", "MAX_SERIES_PER_DEVICE");
    assert_eq!(
        s.pg.psql(&s.db, "SELECT count(*), max(idx) FROM record"),
        format!("{}|1", limits::MAX_SERIES_PER_DEVICE)
    );

    for limit in [0, limits::MAX_PAGE_RECORDS + 1] {
        refused(
            &api.page(&account, device, "s0", 0, Some(limit)).await,
            400,
            "bad_request",
            "MAX_PAGE_RECORDS",
        );
    }
    let items: Vec<(String, bool)> = (0..=limits::MAX_CLAIM_ITEMS).map(|_| (token(), false)).collect();
    refused(
        &api.claim(&account, device, 60_000, &items).await,
        400,
        "bad_request",
        "MAX_CLAIM_ITEMS",
    );
    for lease in [limits::LEASE_MS.start() - 1, limits::LEASE_MS.end() + 1] {
        refused(
            &api.claim(&account, device, lease, &items[..1]).await,
            400,
            "bad_request",
            "LEASE_MS",
        );
    }
    let settle: Vec<(String, String)> = items
        .iter()
        .map(|(t, _)| (t.clone(), Uuid::new_v4().to_string()))
        .collect();
    refused(
        &api.settle(&account, device, "complete", &settle).await,
        400,
        "bad_request",
        "MAX_CLAIM_ITEMS",
    );
    assert_eq!(s.pg.psql(&s.db, "SELECT count(*) FROM claim_job"), "0");
}

/// Sends raw bytes on a new connection and reads the answer until the hub closes it or
/// `within` passes: (status line, everything read, how long it took).
async fn raw(url: &str, bytes: &[u8], within: Duration) -> (String, String, Duration) {
    let address = url.strip_prefix("http://").unwrap();
    let mut stream = TcpStream::connect(address).await.unwrap();
    let started = Instant::now();
    let _ = stream.write_all(bytes).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(within, stream.read_to_end(&mut answer)).await;
    let text = String::from_utf8_lossy(&answer).into_owned();
    (
        text.lines().next().unwrap_or("").to_owned(),
        text,
        started.elapsed(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_and_absurd_headers_get_answers_not_a_crash() {
    let s = setup("garbage");
    let (account, device) = s.api.account_with_device().await;
    let routes = [
        "/v1/accounts",
        "/v1/records",
        "/v1/claims",
        "/v1/claims/complete",
        "/v1/claims/release",
    ];
    for _ in 0..20 {
        for route in routes {
            let body = random_bytes(fastrand::usize(0..2000));
            let answer = s
                .api
                .send(reqwest::Method::POST, route, Some(&account), None, Some(body))
                .await;
            assert!(
                answer.status == 400 || answer.status == 429,
                "{route}: {answer:?}"
            );
        }
    }
    let nested = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let answer = s
        .api
        .send(
            reqwest::Method::POST,
            "/v1/records",
            Some(&account),
            None,
            Some(nested.into_bytes()),
        )
        .await;
    assert_eq!(answer.status, 400);
    let answer = s
        .api
        .send(
            reqwest::Method::GET,
            "/v1/index",
            Some(&account),
            Some(device),
            None,
        )
        .await;
    answer.expect(200);
    let http = reqwest::Client::new();
    let bad_device = http
        .get(format!("{}/v1/index", s.hub.url))
        .header("authorization", account.header())
        .header(sitetrail_sync_wire::DEVICE_HEADER, "💥")
        .send()
        .await
        .unwrap();
    assert_eq!(bad_device.status(), 400);
    for (path, status) in [("/v1/nothing", 404), ("/v2/records", 404), ("/", 404)] {
        assert_eq!(s.api.get(path, Some(&account)).await.status, status, "{path}");
    }
    assert_eq!(
        s.api
            .send(reqwest::Method::PATCH, "/v1/records", Some(&account), None, None)
            .await
            .status,
        404
    );
    let page = s
        .api
        .get(
            "/v1/records?device_id=x&series=&after=-1&limit=%FF",
            Some(&account),
        )
        .await;
    page.expect(400);

    // Headers past the hub's buffer, a header line without end, a binary request line.
    let header = format!(
        "GET /v1/index HTTP/1.1\r\nhost: x\r\nx-big: {}\r\n\r\n",
        "a".repeat(100 * 1024)
    );
    let (status, _, _) = raw(&s.hub.url, header.as_bytes(), Duration::from_secs(10)).await;
    assert!(status.starts_with("HTTP/1.1 431"), "{status:?}");
    let (status, _, _) = raw(
        &s.hub.url,
        b"\x00\xff\xfe GARBAGE\r\n\r\n",
        Duration::from_secs(10),
    )
    .await;
    assert!(
        status.starts_with("HTTP/1.1 400") || status.is_empty(),
        "{status:?}"
    );
    // A declared length past the limit is refused from the headers alone.
    let declared = format!(
        "POST /v1/records HTTP/1.1\r\nhost: x\r\nauthorization: {}\r\ncontent-length: 99999999999\r\n\r\n",
        account.header()
    );
    let (status, _, _) = raw(&s.hub.url, declared.as_bytes(), Duration::from_secs(10)).await;
    assert!(status.starts_with("HTTP/1.1 413"), "{status:?}");

    // An endless chunked body is cut at the limit.
    let address = s.hub.url.strip_prefix("http://").unwrap().to_owned();
    let mut stream = TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /v1/records HTTP/1.1\r\nhost: x\r\nauthorization: {}\r\ntransfer-encoding: chunked\r\n\r\n",
        account.header()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let writing = tokio::spawn(async move {
        let chunk = format!("{:x}\r\n{}\r\n", 64 * 1024, " ".repeat(64 * 1024));
        for _ in 0..(limits::MAX_BODY_BYTES / (64 * 1024) + 50) {
            if writer.write_all(chunk.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let mut answer = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(30), reader.read(&mut answer))
        .await
        .unwrap()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&answer[..n]).starts_with("HTTP/1.1 413"),
        "{}",
        String::from_utf8_lossy(&answer[..n])
    );
    writing.abort();

    crate::support::wait_healthy(&s.api, Duration::from_secs(5)).await;
    assert_eq!(s.pg.psql(&s.db, "SELECT count(*) FROM record"), "0");
    assert!(!s.hub.log().contains("panicked"), "{}", s.hub.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_are_cut_off_and_hold_no_one_up() {
    let pg = crate::support::postgres::shared();
    let db = pg.create_database("slow");
    let flags = [
        "--header-timeout",
        "1",
        "--request-timeout",
        "2",
        "--max-connections",
        "4",
    ];
    let hub = Hub::start_with(&pg.url(&db), &flags, &[]);
    let api = Api::new(&hub.url);
    let (account, _device) = api.account_with_device().await;

    // Four connections that send nothing, or half a request line and then nothing, take every
    // place...
    let address = hub.url.strip_prefix("http://").unwrap().to_owned();
    let mut idle = Vec::new();
    for i in 0..4 {
        let mut stream = TcpStream::connect(&address).await.unwrap();
        if i % 2 == 0 {
            stream.write_all(b"GET /v1/ind").await.unwrap();
        }
        idle.push(stream);
    }
    // ... until the header timeout closes them, and the next client is served.
    let started = Instant::now();
    api.index(&account).await.expect(200);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    for mut stream in idle {
        let mut rest = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await;
        assert!(read.is_ok(), "a silent connection stays open");
    }

    // A body that stops coming is answered 503 at the request timeout, and the connection closed.
    let head = format!(
        "POST /v1/records HTTP/1.1\r\nhost: x\r\nauthorization: {}\r\ncontent-length: 1000\r\n\r\n{{\"records\":",
        account.header()
    );
    let (status, text, took) = raw(&hub.url, head.as_bytes(), Duration::from_secs(10)).await;
    assert!(status.starts_with("HTTP/1.1 503"), "{text}");
    assert!(text.contains("unavailable"), "{text}");
    assert!(took < Duration::from_secs(8), "{took:?}");
    let answer = api.create_account(&Account::random()).await;
    answer.expect(201);
}
