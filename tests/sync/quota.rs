//! A device at its account's quota on the hub says so plainly in `sync status` (text and
//! `--json`'s `quota_full`), keeps recording, and stops saying it once a sync goes through again.
//! Against a real hub with a small bytes quota.

use sitetrail::ErrorKind;

use crate::support::sync::{Device, TestHub};
use crate::sync::account::sync_cli;

fn status(d: &Device) -> serde_json::Value {
    let (code, out, err) = sync_cli(d, &["status", "--json"], "");
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn sync_status_says_the_hubs_quota_is_full_and_recording_goes_on() {
    let hub = TestHub::start_with_quotas(sitetrail_hub::quota::Quotas {
        bytes: Some(16 * 1024),
        ..sitetrail_hub::quota::Quotas::default()
    });
    let a = Device::new();
    a.setup(&hub, "laptop");
    a.visit_at("https://example.org/first", "First", 10);
    a.sync();
    let s = status(&a);
    assert_eq!(s["quota_full"], serde_json::Value::Null);
    assert_eq!(s["insecure_warning"], serde_json::Value::Null);

    // Far more than 16 KiB of history (random ids do not compress): the hub refuses the push.
    for i in 0..400 {
        a.visit_at(
            &format!(
                "https://example.org/{}/{}",
                uuid::Uuid::now_v7(),
                uuid::Uuid::now_v7()
            ),
            &format!("Page {i} {}", uuid::Uuid::now_v7()),
            20 + i,
        );
    }
    let e = a.try_sync().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::RateLimited, "{e}");
    let s = status(&a);
    let said = s["quota_full"].as_str().unwrap_or_else(|| panic!("{s}"));
    assert!(
        said.starts_with("the hub's quota for this account is full: ") && said.contains(" of 16.0 KiB"),
        "{said}"
    );
    assert!(said.contains("what is recorded here stays here"), "{said}");
    assert!(s["pending"].as_u64().unwrap() >= 400, "{s}");
    let (code, human, err) = sync_cli(&a, &["status"], "");
    assert_eq!(code, 0, "{err}");
    assert!(
        human.contains("warning: the hub's quota for this account is full: "),
        "{human}"
    );
    assert!(
        !human.contains("the last try failed"),
        "said once, as the quota:\n{human}"
    );

    // Recording goes on while the hub refuses.
    a.visit_at("https://example.org/after", "After", 1_000);
    assert_eq!(a.visits().len(), 402);
    assert!(status(&a)["pending"].as_u64().unwrap() > s["pending"].as_u64().unwrap());
}
