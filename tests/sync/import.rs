//! An import on a device linked to a hub: every visit it stores, with the time the browser says
//! the page stayed open, reaches the other devices, which find it by search, as a visit recorded
//! live does. The import reads once per batch whether the device is linked (issue 31): this is
//! what holds that it still queues every change when it is.

use sitetrail::import::Browser;

use crate::support::import::{chromium_history, import_batched};
use crate::support::sync::{Device, TestHub};

/// Visits in the history, over `SITES` websites, each open for `DURATION_MS`.
const VISITS: usize = 25;
const SITES: usize = 4;
const DURATION_MS: i64 = 7_000;

/// A Chromium history of `VISITS` visits a minute apart in 2026, each open `DURATION_MS`.
fn history(dir: &std::path::Path) -> std::path::PathBuf {
    let (minute, open) = (
        std::time::Duration::from_secs(60),
        std::time::Duration::from_millis(DURATION_MS as u64),
    );
    chromium_history(dir, "imported", (VISITS, SITES), (minute, open))
}

#[test]
fn an_import_on_a_linked_device_reaches_the_other_devices() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let key = a.setup(&hub, "a");
    b.join(&hub, "b", &key);
    a.sync();
    b.sync();

    let dir = tempfile::tempdir().unwrap();
    let file = history(dir.path());
    // Batches of 10: the link is read in each of the three.
    let report = import_batched(&a.store, Browser::Chrome, &file, 10).unwrap();
    assert_eq!(report.imported, VISITS as u64, "{report:?}");
    a.sync();
    b.sync();

    let mut expected: Vec<String> = (0..VISITS)
        .map(|i| format!("https://imported{}.example/page/{i}", i % SITES))
        .collect();
    expected.sort();
    let imported =
        |d: &Device| -> Vec<String> { d.urls().into_iter().filter(|u| u.contains("imported")).collect() };
    assert_eq!(imported(&a), expected);
    assert_eq!(
        imported(&b),
        expected,
        "every imported visit reached the other device"
    );
    // The time each page stayed open went with it, under the visit's id on both devices.
    let estimates = |d: &Device| -> Vec<(String, Option<i64>)> {
        d.times()
            .into_iter()
            .map(|(id, _, estimated)| (id, estimated))
            .collect()
    };
    assert_eq!(estimates(&a).len(), VISITS);
    assert!(estimates(&a).iter().all(|(_, e)| *e == Some(DURATION_MS)));
    assert_eq!(
        estimates(&b),
        estimates(&a),
        "the estimated times reached the other device"
    );
    let of_site_2 = (0..VISITS).filter(|i| i % SITES == 2).count();
    assert_eq!(
        b.search("imported2"),
        of_site_2,
        "the other device finds them by search"
    );
}
