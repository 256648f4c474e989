//! Devices: registering (once, touched after), leaving (for good: no push, no claim, its
//! claims given back), and the limit of devices per account.

use reqwest::Method;
use sitetrail_sync_wire::limits;
use uuid::Uuid;

use crate::support::{record, setup, token};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_registers_once_and_leaves_for_good() {
    let s = setup("devices");
    let (account, laptop) = s.api.account_with_device().await;
    let first = s.api.register(&account, laptop).await.expect(200).clone();
    assert_eq!(first["device_id"], laptop.to_string());
    assert!(first["left_at_ms"].is_null());
    let again = s.api.register(&account, laptop).await;
    assert_eq!(
        again.expect(200)["created_at_ms"],
        first["created_at_ms"],
        "registering again only touches it"
    );
    let desktop = Uuid::new_v4();
    s.api.register(&account, desktop).await.expect(200);
    let listed = s.api.get("/v1/devices", Some(&account)).await;
    let ids: Vec<&str> = listed.expect(200)["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [laptop.to_string(), desktop.to_string()]);

    // The laptop holds a claim, then leaves: the claim goes back at once.
    let t = token();
    s.api
        .claim(&account, laptop, 3_600_000, &[(t.clone(), false)])
        .await
        .expect(200);
    s.api
        .push(&account, &[record(laptop, "visits", 1, 100)])
        .await
        .expect(200);
    let leave = s.api.leave(&account, laptop).await;
    assert_eq!(leave.status, 204);
    let leave = s.api.leave(&account, laptop).await;
    assert_eq!(leave.status, 204, "leaving twice is leaving");
    let granted = s.api.claim(&account, desktop, 60_000, &[(t, false)]).await;
    assert_eq!(
        granted.expect(200)["claims"][0]["state"],
        "granted",
        "the leaver's claim is free"
    );

    // It can push, claim and register no more; its records stay.
    let refused = s.api.push(&account, &[record(laptop, "visits", 2, 100)]).await;
    refused.expect(403);
    assert_eq!(refused.code(), "forbidden");
    s.api
        .claim(&account, laptop, 60_000, &[(token(), false)])
        .await
        .expect(403);
    s.api.register(&account, laptop).await.expect(403);
    let page = s.api.page(&account, laptop, "visits", 0, None).await;
    assert_eq!(page.expect(200)["records"].as_array().unwrap().len(), 1);
    let listed = s.api.get("/v1/devices", Some(&account)).await;
    assert!(listed.expect(200)["devices"][0]["left_at_ms"].as_i64().is_some());
    assert_eq!(s.pg.psql(&s.db, "SELECT count(*) FROM record"), "1");

    let unknown = s.api.leave(&account, Uuid::new_v4()).await;
    unknown.expect(404);
    let garbage = s
        .api
        .send(Method::PUT, "/v1/devices/not-a-uuid", Some(&account), None, None)
        .await;
    garbage.expect(404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_has_at_most_its_limit_of_devices() {
    let s = setup("devicelimit");
    let (account, first) = s.api.account_with_device().await;
    for _ in 1..limits::MAX_DEVICES_PER_ACCOUNT {
        s.api.register(&account, Uuid::new_v4()).await.expect(200);
    }
    let refused = s.api.register(&account, Uuid::new_v4()).await;
    refused.expect(409);
    assert!(
        refused.message().contains("MAX_DEVICES_PER_ACCOUNT"),
        "{}",
        refused.message()
    );
    assert_eq!(
        s.pg.psql(&s.db, "SELECT count(*) FROM device"),
        limits::MAX_DEVICES_PER_ACCOUNT.to_string()
    );
    // A device that left makes room.
    s.api.leave(&account, first).await;
    s.api.register(&account, Uuid::new_v4()).await.expect(200);
}
