//! The Sync view's state (`get_sync_status`): a link made with `--allow-insecure-http` carries its
//! warning, and a hub that refuses a sync at the account's quota is said plainly (`quota_full`)
//! while recording goes on. Against a real hub (in-process, on a real PostgreSQL) with a 16 KiB
//! quota per account.

use serde_json::{json, Value};
use sitetrail::sync::client::{Transport, INSECURE_WARNING};
use sitetrail::sync::engine;
use sitetrail::NewVisit;

use super::sync_support::TestHub;
use super::TestApp;

fn visit(store: &sitetrail::Store, url: &str) {
    store
        .record_visit(&NewVisit {
            url,
            title: Some(url),
            visited_at: store.now(),
            source: "test",
            source_visit_id: None,
        })
        .expect("record visit");
}

#[test]
fn the_sync_view_says_the_hubs_quota_is_full_and_that_the_link_is_in_clear() {
    // Keys in files: this test never touches the keyring of the person running it.
    sitetrail::sync::keystore::use_file_only();
    let hub = TestHub::start_with_quotas(sitetrail_hub::quota::Quotas {
        bytes: Some(16 * 1024),
        ..sitetrail_hub::quota::Quotas::default()
    });
    // More history than 16 KiB once sealed (random ids do not compress).
    let t = TestApp::start(|store| {
        for i in 0..300u64 {
            let random = |n: u64| std::hash::BuildHasher::hash_one(&std::hash::RandomState::new(), n);
            visit(
                store,
                &format!(
                    "https://example.org/{:x}/{:x}{:x}",
                    random(i),
                    random(i),
                    random(i)
                ),
            );
        }
    });
    let v = t.ok("get_sync_status", json!({}));
    assert_eq!(
        (&v["quota_full"], &v["insecure_warning"]),
        (&Value::Null, &Value::Null)
    );

    // Linked as `sync setup --allow-insecure-http` links it.
    let key_dir = engine::key_dir(Some(&t.paths.settings_file)).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(engine::setup_with(
        &t.store(),
        &key_dir,
        &hub.url,
        Some("app"),
        Transport {
            allow_insecure_http: true,
            ..Transport::default()
        },
    ))
    .unwrap();
    let v = t.ok("get_sync_status", json!({}));
    assert_eq!(v["insecure_warning"], INSECURE_WARNING);

    assert_eq!(t.err_kind("sync_now", json!({})), "rate_limited");
    let v = t.ok("get_sync_status", json!({}));
    let said = v["quota_full"].as_str().unwrap_or_else(|| panic!("{v}"));
    assert!(
        said.starts_with("the hub's quota for this account is full: ") && said.contains(" of 16.0 KiB"),
        "{said}"
    );
    assert_eq!(v["insecure_warning"], INSECURE_WARNING);

    // Recording goes on: a new visit waits to be sent with the rest.
    let pending = v["pending"].as_u64().unwrap();
    assert!(pending >= 300, "{v}");
    visit(&t.store(), "https://example.org/after");
    let v = t.ok("get_sync_status", json!({}));
    assert!(v["pending"].as_u64().unwrap() > pending, "{v}");
}
