//! `sitetrail sync rotate-key` on a real hub over a real PostgreSQL: a lost or stolen device is
//! locked out. The account is founded anew from the rotating device under a new recovery key and
//! the old one deleted (nothing of it left in a dump of the hub, the old key opens nothing);
//! another device, offline and recording meanwhile, is told in plain words, joins again with the
//! new key and loses nothing; a new device joining with the new key gets the whole history.

use sitetrail::ErrorKind;

use crate::support::sync::{converge, postgres, Device, TestHub};
use crate::sync::account::sync_cli;

fn urls(d: &Device) -> Vec<String> {
    let mut u: Vec<String> = d.visits().into_iter().map(|v| v.1).collect();
    u.sort();
    u
}

#[test]
fn rotating_the_key_locks_the_old_key_out_and_the_others_join_again_losing_nothing() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "alpha");
    b.join(&hub, "beta", &key);
    a.visit_at("https://example.org/a", "A", 10);
    b.visit_at("https://example.org/b", "B", 20);
    converge(&[&a, &b]);
    assert_eq!(urls(&a).len(), 2);
    // B is offline from here on, and keeps recording.
    b.visit_at("https://example.org/b-offline", "B offline", 30);
    a.visit_at("https://example.org/a-before", "A before", 40);
    let old = a.link().unwrap().account_id;

    // A wrong answer changes nothing.
    let (code, _, err) = sync_cli(&a, &["rotate-key"], "no\n");
    assert_ne!(code, 0, "{err}");
    assert_eq!(a.link().unwrap().account_id, old);

    let (code, out, err) = sync_cli(&a, &["rotate-key", "--yes", "--json"], "");
    assert_eq!(code, 0, "{err}");
    let out: serde_json::Value = serde_json::from_str(&out).unwrap();
    let new_key = out["recovery_key"].as_str().unwrap().to_owned();
    assert_ne!(new_key, key);
    assert_eq!(out["old_account_id"], old.hyphenated().to_string());
    assert!(out["first_sync_error"].is_null(), "{out}");
    let new = a.link().unwrap().account_id;
    assert_ne!(new, old);
    assert_eq!(out["account_id"], new.hyphenated().to_string());

    // Nothing of the old account is left on the hub, and the old key opens nothing.
    let dump = postgres::shared().dump_data(&hub.database);
    assert!(
        !dump.contains(&old.hyphenated().to_string()) && !dump.contains(&old.simple().to_string()),
        "the old account is still in the hub's dump"
    );
    let thief = Device::new();
    let refused = thief.try_join(&hub, &key).unwrap_err();
    assert!(
        refused.to_string().contains("does not open an account"),
        "{refused}"
    );
    assert!(thief.visits().is_empty());

    // B is told in plain words on its next sync, and keeps what it recorded.
    let e = b.try_sync().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NeedsUser);
    assert!(
        e.to_string().contains("its recovery key was replaced") && e.to_string().contains("join again"),
        "{e}"
    );
    assert_eq!(urls(&b).len(), 3);

    // B joins again with the new key: what it recorded offline reaches A, and A's reaches B.
    b.leave(true).unwrap();
    b.join(&hub, "beta", &new_key);
    converge(&[&a, &b]);
    let all = urls(&a);
    assert_eq!(
        all,
        [
            "https://example.org/a",
            "https://example.org/a-before",
            "https://example.org/b",
            "https://example.org/b-offline",
        ]
    );
    assert_eq!(urls(&b), all);

    // A device that joins with the new key gets the whole history.
    let c = Device::new();
    c.join(&hub, "gamma", &new_key);
    converge(&[&c]);
    assert_eq!(urls(&c), all);
}

/// The laptop was stolen: its visits are on the other devices only. The rotation founds the new
/// account from everything the rotating device holds, so a device that joins the new account
/// gets the stolen laptop's visits too, with their titles (a retitle included) and times; and
/// the laptop's own devices that join again send nothing twice.
#[test]
fn a_rotation_sends_the_visits_of_a_lost_device_to_the_new_account() {
    let hub = TestHub::start();
    let (a, lost) = (Device::new(), Device::new());
    let key = a.setup(&hub, "desktop");
    lost.join(&hub, "laptop", &key);
    a.visit_at("https://example.org/a", "A", 10);
    let kept = lost.visit_at("https://example.org/laptop", "On the laptop", 20);
    let retitled = lost.visit_at("https://example.org/retitled", "Before", 30);
    lost.store
        .write(Some(sitetrail::Change::Visits), |tx| {
            sitetrail::time_spent::set_active_ms_in(tx, kept, 42_000, lost.store.now())?;
            sitetrail::visits::update_title_in(tx, retitled, Some("After"))
        })
        .unwrap();
    converge(&[&a, &lost]);
    let everything = a.visits();
    assert_eq!(everything.len(), 3);
    let times = a.times();
    assert!(times.iter().any(|t| t.1 == Some(42_000)), "{times:?}");
    drop(lost);

    let new_key = a.rotate_key();
    let c = Device::new();
    c.join(&hub, "new laptop", &new_key);
    converge(&[&a, &c]);
    // The same visits (ids, URLs, titles, times), none twice.
    assert_eq!(c.visits(), everything);
    assert_eq!(c.times(), times);
    assert!(c.visits().iter().any(|v| v.2.as_deref() == Some("After")));
    assert_eq!(c.search("laptop"), 1, "the search index follows");
}
