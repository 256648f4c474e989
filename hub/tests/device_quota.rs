//! A real device (the `sitetrail` library's sync engine) at its account's quota on this hub's
//! binary: the sync says so in plain words (and `sync status` keeps it), the device keeps
//! recording, loses nothing (its records stay sealed), and sends everything once the hub's
//! operator makes room; another device then gets every visit, once.

use sitetrail::sync::engine;
use sitetrail::ErrorKind;

use crate::support::{postgres, Hub};
use crate::sync_support::Device;

#[test]
fn a_device_at_its_quota_says_so_keeps_everything_and_sends_it_once_there_is_room() {
    let pg = postgres::shared();
    let db = pg.create_database("device_quota");
    let url = pg.url(&db);
    let hub = Hub::start_with(&url, &["--quota-bytes", "16KiB"], &[]);
    let a = Device::new();
    let key = a.setup_at(&hub.url, "a");
    a.record(0, 1);
    a.sync();

    a.record(1, 3_000);
    let e = a.try_sync().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::RateLimited, "{e}");
    let said = e.to_string();
    assert!(
        said.contains("the hub's quota for this account is full: ") && said.contains(" of 16.0 KiB"),
        "{said}"
    );
    let stored_before: String = pg.psql(&db, "SELECT count(*) FROM record");
    // It keeps recording, and loses nothing: every visit here, its operations waiting.
    a.record(3_001, 10);
    assert_eq!(a.urls().len(), 3_011);
    let status = a.store.with_conn(engine::status).unwrap();
    assert!(status.pending >= 3_000, "{}", status.pending);
    let last = status.link.unwrap().last_error.unwrap();
    assert!(last.contains("quota for this account is full"), "{last}");
    assert!(
        pg.psql(&db, "SELECT bytes_stored FROM account")
            .parse::<u64>()
            .unwrap()
            <= 16 * 1024,
        "the hub stored nothing past the quota"
    );

    // The operator makes room (no limit now): the next sync sends everything.
    drop(hub);
    let hub = Hub::start_with(&url, &["--quota-bytes", "0"], &[]);
    a.set_hub_url(&hub.url);
    let report = a.sync();
    assert_eq!(report.pending, 0, "{report:?}");
    assert_ne!(pg.psql(&db, "SELECT count(*) FROM record"), stored_before);

    let b = Device::new();
    b.join_at(&hub.url, "b", &key);
    while b.sync().pulled > 0 {}
    assert_eq!(b.urls(), a.urls(), "the other device has every visit, once");
}
