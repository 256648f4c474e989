//! A pull gives way to the browser (issue 27): visits recorded by another process while a device
//! applies a first sync get the write lock while the pull runs, not after it (the pull sees them
//! waiting: `store::waiting`), and nothing is lost on either side.

use std::process::Stdio;
use std::time::Duration;

use sitetrail::NewVisit;

use crate::support::sync::{Device, TestHub};
use crate::support::{cli, wait_for};

/// Records applied on `d` so far (of every series).
fn applied(d: &Device) -> i64 {
    d.store
        .with_conn(|c| {
            Ok(
                c.query_row("SELECT coalesce(sum(last_idx), 0) FROM sync_applied", [], |r| {
                    r.get(0)
                })?,
            )
        })
        .unwrap()
}

#[test]
fn visits_recorded_by_another_process_during_a_pull_get_in_while_it_runs() {
    let hub = TestHub::start();
    let (a, b) = (Device::new(), Device::new());
    let history = 20_000;
    a.record(0, history);
    let key = a.setup(&hub, "a");
    a.sync();
    b.join(&hub, "b", &key);

    // The pull runs in a process of its own; the browser's visits are recorded by this one.
    let mut pull = cli(&b.db)
        .arg("--settings")
        .arg(b.settings())
        .args(["sync", "now", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        wait_for(Duration::from_secs(120), || applied(&b) >= 1),
        "the pull never applied a record"
    );
    let meanwhile = 5;
    for i in 0..meanwhile {
        let url = format!("https://meanwhile.example/{i}");
        b.store
            .record_visit(&NewVisit {
                url: &url,
                title: Some("meanwhile"),
                visited_at: sitetrail::Timestamp::now(),
                source: "extension",
                source_visit_id: None,
            })
            .unwrap();
        assert!(
            pull.try_wait().unwrap().is_none(),
            "visit {i} got the write lock only once the pull had ended"
        );
    }
    let out = pull.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["visits"], history, "{report}");
    let urls = b.urls();
    assert_eq!(urls.len(), history + meanwhile, "every visit of both is kept");
    assert!(urls.iter().any(|u| u == "https://meanwhile.example/4"));
}
