//! A real device (the `sitetrail` library's sync engine, its own SQLite file) syncing with this
//! hub's binary when the hub is killed with SIGKILL in the middle of a push, and of another
//! device's pull: the device reports the hub offline and keeps (or applies) nothing it should
//! not; once a hub is back, one more sync stores each record once, and the other device gets
//! every visit exactly once.

use std::time::Duration;

use sitetrail::sync::engine;

use crate::support::{connect, setup, Hub};
use crate::sync_support::Device;

/// True once a hub connection waits for a lock this test holds (within 30 s).
fn wait_for_lock(rt: &tokio::runtime::Runtime, watcher: &tokio_postgres::Client) -> bool {
    for _ in 0..1500 {
        let n: i64 = rt
            .block_on(watcher.query_one(
                r#"SELECT count(*) FROM pg_stat_activity
                   WHERE application_name = 'sitetrail-hub' AND wait_event_type = 'Lock'"#,
                &[],
            ))
            .unwrap()
            .get(0);
        if n > 0 {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Runs `sync` on a thread, kills `hub` with SIGKILL once one of its connections waits for the
/// lock this test holds (so the kill falls inside the request), and checks that the device said
/// the hub was offline.
fn kill_during(
    hub: &mut Hub,
    rt: &tokio::runtime::Runtime,
    watcher: &tokio_postgres::Client,
    sync: impl FnOnce() -> sitetrail::Result<engine::SyncReport> + Send,
) {
    let (answer, blocked) = std::thread::scope(|scope| {
        let running = scope.spawn(sync);
        let blocked = wait_for_lock(rt, watcher);
        hub.kill();
        (running.join().unwrap(), blocked)
    });
    assert!(blocked, "the device's request never reached the hub's query");
    let err = answer.expect_err("a killed hub gave the device an answer");
    assert_eq!(err.kind().as_str(), "offline", "{err}");
}

#[test]
fn a_hub_killed_in_the_middle_of_a_devices_push_or_pull_loses_nothing_and_stores_nothing_twice() {
    let mut s = setup("device-killed");
    let url = s.pg.url(&s.db);
    let a = Device::new();
    let key = a.setup_at(&s.hub.url, "a");
    a.record(0, 1);
    a.sync();
    let stored = |what: &str| s.pg.psql(&s.db, what);
    let before = stored("SELECT count(*) FROM record");
    a.record(1, 2_000);

    // The push is held inside the hub's transaction (after its inserts, waiting for the series
    // head this test locks), so the kill falls in the middle of it, every time.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let holder = rt.block_on(connect(&url));
    rt.block_on(holder.batch_execute("BEGIN; SELECT 1 FROM series_head FOR UPDATE"))
        .unwrap();
    let watcher = rt.block_on(connect(&url));
    kill_during(&mut s.hub, &rt, &watcher, || a.try_sync());
    rt.block_on(holder.batch_execute("ROLLBACK")).unwrap();
    assert_eq!(
        stored("SELECT count(*) FROM record"),
        before,
        "nothing of the killed push was committed"
    );

    // A hub again (on another port: the device is told, as if the hub had moved).
    let hub = Hub::start(&url);
    a.set_hub_url(&hub.url);
    let report = a.sync();
    assert_eq!(report.pending, 0, "{report:?}");
    assert_eq!(
        stored("SELECT count(*) = count(DISTINCT record_id) FROM record"),
        "t",
        "each record stored once"
    );

    let b = Device::new();
    b.join_at(&hub.url, "b", &key);

    // B's first pull, killed the same way: the hub is held reading the records.
    let mut hub = hub;
    rt.block_on(holder.batch_execute("BEGIN; LOCK TABLE record IN ACCESS EXCLUSIVE MODE"))
        .unwrap();
    kill_during(&mut hub, &rt, &watcher, || b.try_sync());
    rt.block_on(holder.batch_execute("ROLLBACK")).unwrap();
    assert!(
        b.urls().is_empty(),
        "nothing applied from a pull that got no answer"
    );
    let hub = Hub::start(&url);
    b.set_hub_url(&hub.url);
    while b.sync().pulled > 0 {}
    let (ua, ub) = (a.urls(), b.urls());
    assert_eq!(ua.len(), 2_001);
    assert_eq!(ub, ua, "the other device has every visit, once");
}
