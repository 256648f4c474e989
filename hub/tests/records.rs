//! Pushing and pulling: idempotent pushes, conflicts and gaps, pages and the index.

use sitetrail_sync_wire::{limits, PageResponse, Record};
use uuid::Uuid;

use crate::support::{b64, record, records, setup};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_push_stores_nothing_twice() {
    let s = setup("idempotent");
    let (account, device) = s.api.account_with_device().await;
    let batch = records(device, "visits", 1, 5, 300);
    let first = s.api.push(&account, &batch).await;
    first.expect(200);
    assert_eq!(first.statuses(), ["stored"; 5]);
    let again = s.api.push(&account, &batch).await;
    assert_eq!(again.statuses(), ["duplicate"; 5]);
    assert_eq!(
        s.pg.psql(&s.db, "SELECT count(*), count(DISTINCT record_id) FROM record"),
        "5|5"
    );
    // Partly new: the known ones are acknowledged, the new ones stored.
    let mut more = batch[3..].to_vec();
    more.extend(records(device, "visits", 6, 7, 300));
    assert_eq!(
        s.api.push(&account, &more).await.statuses(),
        ["duplicate", "duplicate", "stored", "stored"]
    );
    assert_eq!(s.pg.psql(&s.db, "SELECT count(*), max(idx) FROM record"), "7|7");
    let results = &again.body["results"][0];
    assert_eq!(
        (results["series"].as_str(), results["idx"].as_u64()),
        (Some("visits"), Some(1))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicts_and_gaps_store_nothing_at_the_wrong_place() {
    let s = setup("conflicts");
    let (account, device) = s.api.account_with_device().await;
    s.api
        .push(&account, &records(device, "visits", 1, 3, 64))
        .await
        .expect(200);
    let before = s.pg.psql(
        &s.db,
        "SELECT string_agg(record_id::text, ',' ORDER BY idx) FROM record",
    );
    let mut push = vec![
        record(device, "visits", 2, 64), // another id at a stored place
        record(device, "visits", 6, 64), // 4 and 5 missing
    ];
    // Out of order within a push: stored in index order.
    push.extend([record(device, "visits", 5, 64), record(device, "visits", 4, 64)]);
    let answer = s.api.push(&account, &push).await;
    assert_eq!(answer.statuses(), ["conflict", "stored", "stored", "stored"]);
    assert_eq!(s.pg.psql(&s.db, "SELECT count(*), max(idx) FROM record"), "6|6");
    let after = s.pg.psql(
        &s.db,
        "SELECT string_agg(record_id::text, ',' ORDER BY idx) FROM record WHERE idx <= 3",
    );
    assert_eq!(before, after, "a conflict overwrote nothing");
    let gap = s
        .api
        .push(
            &account,
            &[record(device, "visits", 9, 64), record(device, "state", 2, 64)],
        )
        .await;
    assert_eq!(gap.statuses(), ["gap", "gap"]);
    assert_eq!(s.pg.psql(&s.db, "SELECT count(*) FROM record"), "6");
    // A gap-only push starts no series.
    let index = s.api.index(&account).await;
    assert_eq!(index.expect(200)["series"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_and_the_index_give_back_what_was_pushed() {
    let s = setup("pages");
    let (account, laptop) = s.api.account_with_device().await;
    let desktop = Uuid::new_v4();
    s.api.register(&account, desktop).await.expect(200);
    let mut pushed: Vec<Record> = Vec::new();
    for (from, to) in [(1, 200), (201, 400), (401, 450)] {
        let batch = records(laptop, "visits", from, to, 100 + (from as usize % 50));
        s.api.push(&account, &batch).await.expect(200);
        pushed.extend(batch);
    }
    s.api
        .push(&account, &records(laptop, "forget", 1, 2, 40))
        .await
        .expect(200);
    s.api
        .push(&account, &records(desktop, "visits", 1, 3, 40))
        .await
        .expect(200);

    let index = s.api.index(&account).await;
    let heads: Vec<(String, String, u64)> = index.expect(200)["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["device_id"].as_str().unwrap().to_owned(),
                h["series"].as_str().unwrap().to_owned(),
                h["last_idx"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut expected = vec![
        (laptop.to_string(), "forget".to_owned(), 2),
        (laptop.to_string(), "visits".to_owned(), 450),
        (desktop.to_string(), "visits".to_owned(), 3),
    ];
    expected.sort();
    assert_eq!(heads, expected);

    // Pages of the default size, then the end.
    let mut pulled: Vec<Record> = Vec::new();
    let mut after = 0;
    let mut pages = Vec::new();
    loop {
        let answer = s.api.page(&account, laptop, "visits", after, None).await;
        let page: PageResponse = serde_json::from_value(answer.expect(200).clone()).unwrap();
        pages.push((page.records.len(), page.more));
        for r in &page.records {
            assert!(r.received_at_ms > 1_700_000_000_000, "the hub's clock, in ms");
        }
        pulled.extend(page.records.into_iter().map(|r| r.record));
        if !page.more {
            break;
        }
        after = pulled.last().unwrap().idx;
    }
    assert_eq!(pages, [(200, true), (200, true), (50, false)]);
    assert_eq!(
        pulled, pushed,
        "ids, places and payload bytes come back as pushed"
    );
    let small = s.api.page(&account, laptop, "visits", 440, Some(3)).await;
    let small: PageResponse = serde_json::from_value(small.expect(200).clone()).unwrap();
    assert_eq!(
        small.records.iter().map(|r| r.record.idx).collect::<Vec<_>>(),
        [441, 442, 443]
    );
    assert!(small.more);
    let end = s.api.page(&account, laptop, "visits", 450, None).await;
    assert_eq!(end.expect(200)["records"].as_array().unwrap().len(), 0);
    assert_eq!(end.body["more"], false);
    let none = s.api.page(&account, laptop, "state", 0, None).await;
    assert_eq!(none.expect(200)["records"].as_array().unwrap().len(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_stops_near_its_byte_cap() {
    let s = setup("bytecap");
    let (account, device) = s.api.account_with_device().await;
    let size = limits::MAX_RECORD_BYTES - 1000;
    let per_push = limits::MAX_PUSH_PAYLOAD_BYTES / size;
    let total = 40;
    let mut idx = 1;
    while idx <= total {
        let to = (idx + per_push as u64 - 1).min(total);
        s.api
            .push(&account, &records(device, "visits", idx, to, size))
            .await
            .expect(200);
        idx = to + 1;
    }
    let answer = s.api.page(&account, device, "visits", 0, None).await;
    let page: PageResponse = serde_json::from_value(answer.expect(200).clone()).unwrap();
    let expected = limits::MAX_PAGE_PAYLOAD_BYTES / size;
    assert_eq!(page.records.len(), expected);
    assert!(page.more);
    let bytes: usize = page.records.iter().map(|r| r.record.payload.0.len()).sum();
    assert!(bytes <= limits::MAX_PAGE_PAYLOAD_BYTES);
    // The rest, from where it stopped.
    let rest = s
        .api
        .page(&account, device, "visits", expected as u64, None)
        .await;
    let rest: PageResponse = serde_json::from_value(rest.expect(200).clone()).unwrap();
    assert_eq!(
        rest.records.first().map(|r| r.record.idx),
        Some(expected as u64 + 1)
    );
    assert_eq!(rest.records.len(), total as usize - expected);
    assert!(!rest.more);
    // The base64 on the wire is the stored bytes.
    let raw = s.api.page(&account, device, "visits", 0, Some(1)).await;
    assert_eq!(
        raw.body["records"][0]["payload"],
        b64(&page.records[0].record.payload.0)
    );
}
