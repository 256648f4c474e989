//! Creating accounts: once per id, the login stored as its SHA-256 only, at most ten per
//! address and minute across every hub process.

use serde_json::json;

use crate::support::{setup, Account, Api, Hub};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_is_created_once_and_keeps_only_the_hash_of_its_login() {
    let s = setup("accounts");
    let account = Account::random();
    let created = s.api.create_account(&account).await;
    assert_eq!(created.expect(201)["account_id"], json!(account.id));
    // The same request again (its answer was lost): the same account, not a second one.
    assert_eq!(
        s.api.create_account(&account).await.expect(200)["account_id"],
        json!(account.id)
    );
    // Another login for the same id: taken.
    let thief = Account {
        login: Account::random().login,
        ..account.clone()
    };
    let taken = s.api.create_account(&thief).await;
    taken.expect(409);
    assert_eq!(taken.code(), "conflict");

    let login_hex = hex(account.login.as_bytes());
    let stored =
        s.pg.psql(&s.db, "SELECT encode(login_sha256, 'hex') FROM account");
    assert_eq!(
        stored,
        s.pg.psql(
            &s.db,
            &format!("SELECT encode(sha256('\\x{login_hex}'::bytea), 'hex')")
        )
    );
    assert_ne!(stored, login_hex);
    // The thief's login did not replace it.
    s.api.index(&account).await.expect(200);
    s.api.index(&thief).await.expect(401);

    for bad in [
        json!({}),
        json!({"account_id": account.id}),
        json!({"account_id": "x", "login": "y"}),
    ] {
        s.api.post("/v1/accounts", None, &bad).await.expect(400);
    }
    assert_eq!(s.pg.psql(&s.db, "SELECT count(*) FROM account"), "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounts_per_address_are_limited_across_hub_processes() {
    let s = setup("ratelimit");
    let url = s.pg.url(&s.db);
    // Behind a proxy: the address comes from the header it writes.
    let a = Hub::start_with(&url, &["--real-ip-header", "x-forwarded-for"], &[]);
    let b = Hub::start_with(&url, &["--real-ip-header", "x-forwarded-for"], &[]);
    let http = reqwest::Client::new();
    let create = |hub: &Hub, address: &str| {
        let account = Account::random();
        http.post(format!("{}/v1/accounts", hub.url))
            .header("x-forwarded-for", format!("192.0.2.77, {address}"))
            .json(&json!({"account_id": account.id, "login": account.login}))
            .send()
    };
    for i in 0..10 {
        let hub = if i % 2 == 0 { &a } else { &b };
        assert_eq!(
            create(hub, "198.51.100.1").await.unwrap().status(),
            201,
            "account {i}"
        );
    }
    // The eleventh from that address, on either process, is refused and stores nothing.
    for hub in [&a, &b] {
        let refused = create(hub, "198.51.100.1").await.unwrap();
        assert_eq!(refused.status(), 429);
        let wait: u64 = refused.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=60).contains(&wait), "{wait}");
        let body: serde_json::Value = refused.json().await.unwrap();
        assert_eq!(body["error"], "too_many_requests");
        assert!(body["message"]
            .as_str()
            .unwrap()
            .contains("ACCOUNTS_PER_ADDRESS_PER_MINUTE"));
    }
    assert_eq!(s.pg.psql(&s.db, "SELECT count(*) FROM account"), "10");
    // Another address is not held back; neither is the same address through the hub's own peer
    // address on a hub that trusts no proxy header.
    assert_eq!(create(&a, "198.51.100.2").await.unwrap().status(), 201);
    let plain = Api::new(&s.hub.url);
    plain.create_account(&Account::random()).await.expect(201);
    assert_eq!(s.pg.psql(&s.db, "SELECT count(*) FROM account"), "12");
}
