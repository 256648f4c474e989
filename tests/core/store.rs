//! Storage: migrations, pragmas, and the transactional write path of `record_visit`.

use std::sync::{Arc, Barrier};

use sitetrail::store::{StoreOptions, Synchronous};
use sitetrail::{Error, NewVisit, Store, Timestamp};

use crate::support::{cli, count, exec, run_ok, try_visit, visit, TempDb};

#[test]
fn migrations_apply_to_an_empty_file_once() {
    let db = TempDb::new();
    let store = db.open();
    let tables: Vec<String> = store
        .with_conn(|c| {
            let mut s = c.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?;
            let names = s
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(names)
        })
        .unwrap();
    for t in [
        "schema_migrations",
        "visit",
        "website",
        "website_category_classification_outbox",
    ] {
        assert!(tables.iter().any(|n| n == t), "missing table {t}: {tables:?}");
    }
    let applied = count(&store, "schema_migrations");
    assert_eq!(applied, sitetrail::store::MIGRATIONS.len() as i64);
    drop(store);
    // Reopening applies nothing twice.
    let store = db.open();
    assert_eq!(count(&store, "schema_migrations"), applied);
}

#[test]
fn every_pooled_connection_has_the_pragmas() {
    let db = TempDb::new();
    let store = db.open();
    // Hold several connections at once so the pool has to create them.
    let conns: Vec<_> = (0..4).map(|_| store.conn().unwrap()).collect();
    for c in &conns {
        let mode: String = c.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        let sync: i64 = c.query_row("PRAGMA synchronous", [], |r| r.get(0)).unwrap();
        assert_eq!(sync, 1, "synchronous=NORMAL");
        let fk: i64 = c.query_row("PRAGMA foreign_keys", [], |r| r.get(0)).unwrap();
        assert_eq!(fk, 1);
        let busy: i64 = c.query_row("PRAGMA busy_timeout", [], |r| r.get(0)).unwrap();
        assert!(busy >= 1000, "busy_timeout {busy}");
    }
    drop(conns);
    let full = Store::open_with(
        &db.path,
        StoreOptions {
            synchronous: Synchronous::Full,
            ..Default::default()
        },
    )
    .unwrap();
    let sync: i64 = full
        .with_conn(|c| Ok(c.query_row("PRAGMA synchronous", [], |r| r.get(0))?))
        .unwrap();
    assert_eq!(sync, 2, "synchronous=FULL by config");
}

#[test]
fn a_new_domain_gets_one_website_and_one_pending_job() {
    let db = TempDb::new();
    let store = db.open();
    let first = visit(&store, "https://WWW.Example.com:8443/a?q=1");
    assert!(first.new_website && first.inserted);
    assert_eq!(first.domain, "example.com");
    let second = visit(&store, "http://example.com/b");
    assert!(!second.new_website);
    assert_eq!(second.website_id, first.website_id);
    assert_eq!(count(&store, "website"), 1);
    assert_eq!(count(&store, "visit"), 2);
    let (status, attempts, attempted_at): (String, i64, Option<i64>) = store
        .with_conn(|c| {
            Ok(c.query_row(
                "SELECT status, attempt_count, attempted_at FROM website_category_classification_outbox",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?)
        })
        .unwrap();
    assert_eq!((status.as_str(), attempts, attempted_at), ("PENDING", 0, None));
}

#[test]
fn a_failure_between_website_and_outbox_leaves_neither() {
    let db = TempDb::new();
    let store = db.open();
    // A real failure inside the transaction, after the website insert: the outbox insert aborts.
    exec(
        &store,
        "CREATE TRIGGER fail_outbox BEFORE INSERT ON website_category_classification_outbox
                 BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
    );
    let err = try_visit(&store, "https://new.example/").unwrap_err();
    assert!(err.to_string().contains("injected failure"), "{err}");
    assert_eq!(count(&store, "website"), 0);
    assert_eq!(count(&store, "website_category_classification_outbox"), 0);
    assert_eq!(count(&store, "visit"), 0);
}

#[test]
fn a_failed_visit_insert_rolls_back_the_website_and_its_job() {
    let db = TempDb::new();
    let store = db.open();
    exec(
        &store,
        "CREATE TRIGGER fail_visit BEFORE INSERT ON visit
                 BEGIN SELECT RAISE(ABORT, 'visit insert failed'); END;",
    );
    assert!(try_visit(&store, "https://new.example/").is_err());
    assert_eq!(count(&store, "website"), 0);
    assert_eq!(count(&store, "website_category_classification_outbox"), 0);
}

#[test]
fn bad_urls_are_refused_by_name_and_store_nothing() {
    let db = TempDb::new();
    let store = db.open();
    visit(&store, "https://kept.example/");
    for bad in [
        "ftp://files.example/",
        "javascript:alert(1)",
        "no scheme here",
        "https://",
        "chrome://history",
    ] {
        let err = try_visit(&store, bad).unwrap_err();
        assert!(matches!(err, Error::InvalidUrl { .. }), "{err:?}");
        assert!(err.to_string().contains(bad), "error {err} should name {bad}");
    }
    assert_eq!(count(&store, "website"), 1);
    assert_eq!(count(&store, "visit"), 1);
}

#[test]
fn the_same_source_visit_is_recorded_once() {
    let db = TempDb::new();
    let store = db.open();
    let v = NewVisit {
        url: "https://example.org/",
        title: None,
        visited_at: Timestamp::now(),
        source: "chrome:default",
        source_visit_id: Some("42"),
    };
    let a = store.record_visit(&v).unwrap();
    let b = store.record_visit(&v).unwrap();
    assert!(a.inserted && !b.inserted);
    assert_eq!(a.visit_id, b.visit_id);
    assert_eq!(count(&store, "visit"), 1);
}

#[test]
fn threads_recording_the_same_new_domains_make_one_website_and_one_job_each() {
    let db = TempDb::new();
    let store = db.open();
    let threads = 8;
    let per_thread = 40;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let store = store.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..per_thread {
                    // Every thread visits the same 10 new domains, interleaved.
                    let url = format!("https://site{}.example/page/{t}/{i}", i % 10);
                    visit(&store, &url);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("no thread saw an error");
    }
    assert_eq!(count(&store, "website"), 10);
    assert_eq!(count(&store, "website_category_classification_outbox"), 10);
    assert_eq!(count(&store, "visit"), (threads * per_thread) as i64);
}

#[test]
fn processes_recording_the_same_new_domain_make_one_website_and_one_job() {
    let db = TempDb::new();
    drop(db.open()); // create the file and schema first; each process then only writes
    let procs = 12;
    let children: Vec<_> = (0..procs)
        .map(|i| {
            cli(&db.path)
                .args(["visit", &format!("https://race.example/{i}"), "--title", "race"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let store = db.open();
    assert_eq!(count(&store, "website"), 1);
    assert_eq!(count(&store, "website_category_classification_outbox"), 1);
    assert_eq!(count(&store, "visit"), procs);
}

#[test]
fn processes_opening_a_new_file_at_once_migrate_it_once() {
    let db = TempDb::new();
    let children: Vec<_> = (0..6)
        .map(|_| {
            cli(&db.path)
                .args(["status", "--json"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let store = db.open();
    assert_eq!(
        count(&store, "schema_migrations"),
        sitetrail::store::MIGRATIONS.len() as i64
    );
    let _ = run_ok(cli(&db.path).args(["status"]));
}
