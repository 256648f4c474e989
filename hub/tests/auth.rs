//! Logging in: no login and a wrong login are 401 on every route that needs one; another
//! account's login reads and writes nothing of this account; nothing secret reaches the log.

use reqwest::Method;
use serde_json::json;
use sitetrail_sync_wire::Login;
use uuid::Uuid;

use crate::support::{b64, record, records, setup, token, Account, Hub};

/// Every route that needs a login, with a body it would take.
fn authenticated_routes(device: Uuid) -> Vec<(Method, String, Option<serde_json::Value>)> {
    vec![
        (Method::GET, "/v1/devices".into(), None),
        (Method::PUT, format!("/v1/devices/{device}"), None),
        (Method::DELETE, format!("/v1/devices/{device}"), None),
        (Method::POST, "/v1/records".into(), Some(json!({"records": []}))),
        (
            Method::GET,
            format!("/v1/records?device_id={device}&series=visits&after=0"),
            None,
        ),
        (Method::GET, "/v1/index".into(), None),
        (
            Method::POST,
            "/v1/claims".into(),
            Some(json!({"device_id": device, "lease_ms": 1000, "items": []})),
        ),
        (
            Method::POST,
            "/v1/claims/complete".into(),
            Some(json!({"device_id": device, "claims": []})),
        ),
        (
            Method::POST,
            "/v1/claims/release".into(),
            Some(json!({"device_id": device, "claims": []})),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_login_or_a_wrong_one_is_refused_everywhere() {
    let s = setup("auth");
    let (account, device) = s.api.account_with_device().await;
    let wrong = Account {
        login: Login::new([0; 32]),
        ..account.clone()
    };
    let unknown = Account::random();
    let http = reqwest::Client::new();
    for (method, path, body) in authenticated_routes(device) {
        let body = body.map(|b| serde_json::to_vec(&b).unwrap());
        for who in [None, Some(&wrong), Some(&unknown)] {
            let answer = s
                .api
                .send(method.clone(), &path, who, Some(device), body.clone())
                .await;
            assert_eq!(
                (answer.status, answer.code()),
                (401, "unauthorized"),
                "{method} {path}"
            );
        }
        for header in [
            "Basic dXNlcjpwYXNz",
            "Bearer",
            "Bearer x.y",
            &format!("Bearer {}", account.id),
        ] {
            let answer = http
                .request(method.clone(), format!("{}{path}", s.hub.url))
                .header("authorization", header)
                .body(body.clone().unwrap_or_default())
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status(), 401, "{method} {path} {header}");
        }
    }
    // Nothing was changed by any of it: the device is still there and has not left.
    let devices = s.api.get("/v1/devices", Some(&account)).await;
    assert!(devices.expect(200)["devices"][0]["left_at_ms"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_accounts_login_reads_and_writes_nothing_of_this_one() {
    let s = setup("isolation");
    let (alice, laptop) = s.api.account_with_device().await;
    s.api
        .push(&alice, &records(laptop, "visits", 1, 3, 50))
        .await
        .expect(200);
    let t = token();
    let granted = s.api.claim(&alice, laptop, 60_000, &[(t.clone(), false)]).await;
    let claim_id = granted.expect(200)["claims"][0]["claim_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = s.pg.psql(&s.db, "SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM (SELECT r::text FROM record r UNION ALL SELECT c::text FROM claim_job c UNION ALL SELECT d::text FROM device d) t(t)");

    let (mallory, own) = s.api.account_with_device().await;
    // Reading: her index and pages show only her own (nothing), even for Alice's device id.
    let index = s.api.index(&mallory).await;
    assert_eq!(index.expect(200)["series"], json!([]));
    let page = s.api.page(&mallory, laptop, "visits", 0, None).await;
    assert_eq!(page.expect(200)["records"], json!([]));
    let devices = s.api.get("/v1/devices", Some(&mallory)).await;
    assert_eq!(devices.expect(200)["devices"].as_array().unwrap().len(), 1);
    // Writing with Alice's device id: not a device of hers.
    let push = s.api.push(&mallory, &[record(laptop, "visits", 4, 50)]).await;
    assert_eq!((push.status, push.code()), (403, "forbidden"));
    s.api
        .claim(&mallory, laptop, 60_000, &[(t.clone(), false)])
        .await
        .expect(403);
    s.api
        .settle(&mallory, laptop, "complete", &[(t.clone(), claim_id.clone())])
        .await
        .expect(403);
    s.api
        .settle(&mallory, laptop, "release", &[(t.clone(), claim_id.clone())])
        .await
        .expect(403);
    let leave = s.api.leave(&mallory, laptop).await;
    leave.expect(404);
    // The same token in her account is her own job: granted to her, Alice's stays held by Alice.
    let hers = s.api.claim(&mallory, own, 60_000, &[(t.clone(), false)]).await;
    assert_eq!(hers.expect(200)["claims"][0]["state"], "granted");
    let guessed = s
        .api
        .settle(&mallory, own, "complete", &[(t.clone(), claim_id.clone())])
        .await;
    assert_eq!(
        guessed.expect(200)["stale"],
        1,
        "Alice's claim id settles nothing of hers"
    );
    // Registering Alice's device id under her account makes a device of hers, nothing of Alice's.
    s.api.register(&mallory, laptop).await.expect(200);
    s.api
        .push(&mallory, &[record(laptop, "visits", 1, 50)])
        .await
        .expect(200);

    let alice_page = s.api.page(&alice, laptop, "visits", 0, None).await;
    assert_eq!(alice_page.expect(200)["records"].as_array().unwrap().len(), 3);
    let alices = s.pg.psql(&s.db, &format!("SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM (SELECT r::text FROM record r WHERE account_id = '{0}' UNION ALL SELECT c::text FROM claim_job c WHERE account_id = '{0}' UNION ALL SELECT d::text FROM device d WHERE account_id = '{0}') t(t)", alice.id));
    assert_eq!(alices, before, "nothing of Alice's changed");
    let still = s.api.claim(&alice, laptop, 60_000, &[(t, false)]).await;
    assert_eq!(
        still.expect(200)["claims"][0]["claim_id"],
        claim_id.as_str(),
        "still hers"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_holds_no_login_header_or_payload() {
    let pg = crate::support::postgres::shared();
    let db = pg.create_database("logs");
    let hub = Hub::start_with(&pg.url(&db), &[], &[("SITETRAIL_HUB_LOG", "trace")]);
    let api = crate::support::Api::new(&hub.url);
    let (account, device) = api.account_with_device().await;
    let pushed = records(device, "visits", 1, 3, 200);
    api.push(&account, &pushed).await.expect(200);
    api.page(&account, device, "visits", 0, None).await.expect(200);
    let wrong = Account {
        login: Login::new([7; 32]),
        ..account.clone()
    };
    api.index(&wrong).await.expect(401);
    let log = hub.log();
    assert!(log.contains("request"), "the log is at trace level: {log}");
    for secret in [
        account.login.to_base64url(),
        wrong.login.to_base64url(),
        account.header(),
    ] {
        assert!(!log.contains(&secret), "a login is in the log");
    }
    assert!(
        !log.to_lowercase().contains("bearer"),
        "an Authorization header is in the log"
    );
    for r in &pushed {
        let encoded = b64(&r.payload.0);
        assert!(!log.contains(&encoded[..40]), "a payload is in the log");
    }
}
