//! The Sync commands that act on the account as a whole, on a real hub (in-process) over a real
//! PostgreSQL, with a second device beside the app: `sync_rotate_key` (a new recovery key, shown
//! once; the old key reads nothing; the other device is told) and `sync_delete_account` (nothing
//! of the account left on the hub; this device's history stays), each refused unless confirmed
//! with the start of the account's id, as the CLI asks.

use serde_json::json;

use super::sync_support::{Device, TestHub};
use super::{visit, TestApp};

/// The first 8 characters of the account's id, as the CLI asks them typed.
fn account_start(t: &TestApp) -> String {
    let v = t.ok("get_sync_status", json!({}));
    v["link"]["account_id"].as_str().unwrap().replace('-', "")[..8].to_owned()
}

#[test]
fn rotating_the_key_and_deleting_the_account_are_confirmed_and_done_as_the_cli_does() {
    sitetrail::sync::keystore::use_file_only();
    let hub = TestHub::start();
    let t = TestApp::start(|_| {});
    let setup = t.ok("sync_setup", json!({"hub": hub.url, "deviceName": "app"}));
    let key = setup["recovery_key"].as_str().unwrap().to_owned();
    visit(&t.store(), "from-the-app.example", "From the app");
    let other = Device::new();
    other.join(&hub, "other", &key);
    t.ok("sync_now", json!({}));
    let old = t.ok("get_sync_status", json!({}))["link"]["account_id"].clone();

    // Not confirmed: nothing changes.
    let e = t
        .invoke("sync_rotate_key", json!({"confirm": "nope"}))
        .unwrap_err();
    assert_eq!(e["kind"], "conflict", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("nothing was changed"),
        "{e}"
    );
    assert_eq!(t.ok("get_sync_status", json!({}))["link"]["account_id"], old);

    let r = t.ok("sync_rotate_key", json!({"confirm": account_start(&t)}));
    let new_key = r["recovery_key"].as_str().unwrap().to_owned();
    assert_eq!(new_key.split_whitespace().count(), 24);
    assert_ne!(new_key, key);
    assert_eq!(r["old_account_id"], old);
    assert!(r["first_sync_error"].is_null(), "{r}");
    let linked = t.ok("get_sync_status", json!({}));
    assert_eq!(linked["link"]["account_id"], r["account_id"]);
    assert_ne!(linked["link"]["account_id"], old);
    // The key is shown once: not in the database.
    let db = std::fs::read(&t.paths.db).unwrap();
    assert!(!String::from_utf8_lossy(&db).contains(&new_key));

    // The other device is told in plain words; the old key opens nothing; the new one opens the
    // app's history.
    let told = other.try_sync().unwrap_err().to_string();
    assert!(told.contains("its recovery key was replaced"), "{told}");
    let thief = Device::new();
    assert!(thief.try_join(&hub, &key).is_err());
    let fresh = Device::new();
    fresh.join(&hub, "fresh", &new_key);
    fresh.sync();
    assert_eq!(
        fresh.visits().len(),
        1,
        "the app's history reached the new account"
    );

    // Deleting: not confirmed, nothing is deleted; confirmed, the account is gone from the hub
    // and this device is unlinked, its history kept.
    let e = t
        .invoke("sync_delete_account", json!({"confirm": ""}))
        .unwrap_err();
    assert!(
        e["message"].as_str().unwrap().contains("nothing was deleted"),
        "{e}"
    );
    assert_eq!(hub.psql("SELECT count(*) FROM account"), "1");
    let v = t.ok("sync_delete_account", json!({"confirm": account_start(&t)}));
    assert!(v["link"].is_null(), "{v}");
    assert_eq!(hub.psql("SELECT count(*) FROM account"), "0");
    assert_eq!(hub.psql("SELECT count(*) FROM record"), "0");
    let visits: i64 = t
        .store()
        .with_conn(|c| Ok(c.query_row("SELECT count(*) FROM visit", [], |r| r.get(0))?))
        .unwrap();
    assert_eq!(visits, 1);
    // Not linked any more: nothing to confirm against.
    assert_eq!(
        t.err_kind("sync_delete_account", json!({"confirm": "x"})),
        "not_found"
    );
}
