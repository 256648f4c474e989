//! Change notifications: every write announces every kind of data it touched, in its own
//! transaction, and a commit in another process reaches this one's subscribers and wakes an idle
//! worker.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sitetrail::capture::events::store_events;
use sitetrail::changes::TABLE_KINDS;
use sitetrail::classify::builtin::Builtin;
use sitetrail::classify::WithLatency;
use sitetrail::worker::state::PauseKind;
use sitetrail::worker::{Worker, WorkerConfig};
use sitetrail::{Category, Change, Store, Timestamp};

use crate::support::fake_ai::count_status;
use crate::support::{cli, run_ok, visit, wait_for, TempDb};

/// Which tables the store's one connection touched, from TEMP triggers on every table.
fn install_spies(store: &Store) {
    store
        .with_conn(|c| {
            c.execute_batch("CREATE TEMP TABLE touched (t TEXT)")?;
            let tables: Vec<String> = c
                // Not the search index (FTS5: no trigger can be put on its virtual table, and its
                // own tables are written from inside SQLite's commit): it is written with the
                // visits it indexes, which are spied on.
                .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND substr(name, 1, 9) <> 'visit_fts'")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            for t in tables {
                for op in ["INSERT", "UPDATE", "DELETE"] {
                    c.execute_batch(&format!(
                        "CREATE TEMP TRIGGER spy_{t}_{op} AFTER {op} ON main.\"{t}\"
                         BEGIN INSERT INTO touched (t) VALUES ('{t}'); END"
                    ))?;
                }
            }
            Ok(())
        })
        .unwrap();
}

/// The counters in `store_changes`.
fn counters(store: &Store) -> Vec<(String, i64)> {
    store
        .with_conn(|c| {
            Ok(c.prepare("SELECT kind, n FROM store_changes ORDER BY kind")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?)
        })
        .unwrap()
}

/// Runs `op`, then returns (kinds of the tables it touched, kinds it announced).
fn observe(store: &Store, op: impl FnOnce()) -> (BTreeSet<&'static str>, BTreeSet<String>) {
    store
        .with_conn(|c| Ok(c.execute("DELETE FROM temp.touched", [])?))
        .unwrap();
    let before = counters(store);
    op();
    let tables: Vec<String> = store
        .with_conn(|c| {
            Ok(c.prepare("SELECT DISTINCT t FROM temp.touched")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?)
        })
        .unwrap();
    let touched = tables
        .iter()
        .filter_map(|t| {
            let (_, kind) = TABLE_KINDS
                .iter()
                .find(|(name, _)| name == t)
                .unwrap_or_else(|| panic!("table {t} has no kind in sitetrail::changes::TABLE_KINDS"));
            kind.map(Change::as_str)
        })
        .collect();
    let after = counters(store);
    let announced = after
        .iter()
        .filter(|(k, n)| before.iter().find(|(bk, _)| bk == k).is_none_or(|(_, bn)| bn < n))
        .map(|(k, _)| k.clone())
        .collect();
    (touched, announced)
}

fn set(kinds: &[&'static str]) -> BTreeSet<&'static str> {
    kinds.iter().copied().collect()
}

#[test]
fn every_write_announces_exactly_the_kinds_it_touched() {
    let db = TempDb::new();
    let store = db.open_one_connection();
    // Every table says what kind of data it holds.
    let tables: Vec<String> =
        store
            .with_conn(|c| {
                Ok(c.prepare(
                    "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
                )?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?)
            })
            .unwrap();
    for t in &tables {
        assert!(
            TABLE_KINDS.iter().any(|(n, _)| n == t),
            "table {t} is not in TABLE_KINDS"
        );
    }
    install_spies(&store);
    let check = |what: &str, expect: &[&'static str], op: &dyn Fn()| {
        let (touched, announced) = observe(&store, op);
        assert_eq!(touched, set(expect), "{what}: tables touched");
        let announced: BTreeSet<&str> = announced.iter().map(String::as_str).collect();
        assert_eq!(announced, touched, "{what}: announced kinds");
    };

    check(
        "a visit to a new website",
        &["visits", "websites", "outbox"],
        &|| {
            visit(&store, "https://a.example/");
        },
    );
    check("a visit to a known website", &["visits"], &|| {
        visit(&store, "https://a.example/2");
    });
    check("the user's category", &["websites", "outbox"], &|| {
        store.set_user_category("a.example", Category::News).unwrap();
    });
    check("reclassify", &["websites", "outbox"], &|| {
        store.reclassify("a.example").unwrap();
    });
    let rt = tokio::runtime::Runtime::new().unwrap();
    check("a worker tick", &["websites", "outbox"], &|| {
        let worker = Worker::new(store.clone(), Arc::new(Builtin), WorkerConfig::default()).unwrap();
        let (_tx, mut rx) = tokio::sync::watch::channel(false);
        rt.block_on(worker.tick(&mut rx)).unwrap();
    });
    check("a pause", &["worker"], &|| {
        store.pause_worker(PauseKind::NeedsUser, "test", None).unwrap();
    });
    check("a resume", &["worker"], &|| {
        store.resume_worker().unwrap();
    });
    check("an exclusion", &["outbox"], &|| {
        store.exclude_host("*.bank.example").unwrap();
    });
    check("an exclusion already there", &[], &|| {
        store.exclude_host("*.bank.example").unwrap();
    });
    check("a resume with nothing to resume", &[], &|| {
        store.resume_worker().unwrap();
    });
    // Limits and goals, the focus session and the reminder settings: the app's limit views
    // refresh on this kind, whoever wrote it.
    let social = sitetrail::limits::Target::Category(Category::Social);
    let (day, max) = (sitetrail::limits::Period::Day, sitetrail::limits::Kind::Max);
    check("a limit", &["limits"], &|| {
        store.set_limit(&social, day, max, 30).unwrap();
    });
    check("a limit's one entry removed", &["limits"], &|| {
        assert!(store.remove_limit(&social, day, max).unwrap());
    });
    check("a limit not there removed", &[], &|| {
        assert!(!store.remove_limit(&social, day, max).unwrap());
    });
    check("a limit set again and removed", &["limits"], &|| {
        store.set_limit(&social, day, max, 30).unwrap();
        store.remove_limits(&social, None).unwrap();
    });
    check("a focus session", &["limits"], &|| {
        store.start_focus(25, vec![social.clone()]).unwrap();
    });
    check("a focus session stopped", &["limits"], &|| {
        store.stop_focus().unwrap();
    });
    check("the reminder settings", &["limits"], &|| {
        store
            .set_reminder_settings(&sitetrail::reminders::ReminderSettings {
                enabled: true,
                ..Default::default()
            })
            .unwrap();
    });
    check("an import", &["visits", "websites", "outbox"], &|| {
        let fixture =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/chromium-History");
        sitetrail::import::import_file(
            &store,
            sitetrail::import::Browser::Chrome,
            &fixture,
            &Default::default(),
            &mut |_| {},
        )
        .unwrap();
    });
    let t = Timestamp::now().as_micros() / 1000;
    let ev = |id: &str, kind: &str, url: &str| serde_json::json!({"id": id, "kind": kind, "visit": "v1", "url": url, "at": t, "title": "T", "active_ms": 5});
    check(
        "a batch from the extension, new website",
        &["visits", "websites", "outbox"],
        &|| {
            store_events(
                &store,
                "extension:chromium",
                &[ev("v1", "visit", "https://live.example/")],
            )
            .unwrap();
        },
    );
    check("a title and time update from the extension", &["visits"], &|| {
        let mut update = ev("u1", "update", "");
        update["active_ms"] = serde_json::json!(9000);
        store_events(&store, "extension:chromium", &[update]).unwrap();
    });
}

#[test]
fn a_visit_recorded_by_another_process_reaches_this_one_within_a_second() {
    let db = TempDb::new();
    let store = db.open();
    let mut rx = store.subscribe();
    run_ok(cli(&db.path).args(["visit", "https://other-process.example/"]));
    let start = Instant::now();
    let mut heard = BTreeSet::new();
    assert!(
        wait_for(Duration::from_secs(5), || {
            while let Ok(c) = rx.try_recv() {
                heard.insert(c);
            }
            // Each kind is its own message: wait for both rather than stop at the first.
            heard.contains(&Change::Visits) && heard.contains(&Change::Outbox)
        }),
        "the other process's visit and its new job were not both announced: {heard:?}"
    );
    eprintln!("heard after {:?}", start.elapsed());
}

/// An idle worker sleeps up to `idle_poll` (a minute here) unless new work is announced. Time is
/// paused (tokio's clock, which the store's clock follows too) and stands still while the test
/// waits in a blocking task: the minute never passes, so only the announcement of another
/// process's commit can get the second job done. The only real time waited is the watcher's look
/// for other processes' commits.
#[tokio::test(start_paused = true)]
async fn an_idle_worker_wakes_for_a_job_queued_by_another_process() {
    let db = TempDb::new();
    let store = db.open_on_tokio_clock();
    let config = WorkerConfig {
        fixed_delay: Duration::from_millis(10),
        idle_poll: Duration::from_secs(60),
        ..WorkerConfig::default()
    };
    // A provider that is asked (not the built-in rules, whose local pass would settle the jobs
    // itself): a job is completed by the worker's claim alone.
    let remote = Arc::new(WithLatency::new(Arc::new(Builtin), Duration::ZERO));
    visit(&store, "https://kwertyzop.net/first");
    let handle = Worker::new(store.clone(), remote, config).unwrap().spawn();
    while count_status(&store, "COMPLETED") < 1 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A second of paused time: the worker has found nothing more and sleeps.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let path = db.path.clone();
    let s = store.clone();
    let woken = tokio::task::spawn_blocking(move || {
        run_ok(cli(&path).args(["visit", "https://blorvistan.org/second"]));
        wait_for(Duration::from_secs(10), || count_status(&s, "COMPLETED") == 2)
    })
    .await
    .unwrap();
    assert!(woken, "the idle worker did not wake for the new job");
    handle.shutdown().await.unwrap();
}
