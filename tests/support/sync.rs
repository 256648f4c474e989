//! Sync test fixtures: a real hub (the `sitetrail-hub` library, served in-process on 127.0.0.1)
//! over a real PostgreSQL (one cluster per test binary, one database per hub), and devices, each
//! its own database file and key folder.

#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use sitetrail::sync::engine::{self, SyncReport};
use sitetrail::{NewVisit, Store, Timestamp};

#[path = "postgres.rs"]
pub mod postgres;

/// A hub on 127.0.0.1 over its own database.
pub struct TestHub {
    pub url: String,
    pub database: String,
    /// The hub's long-polls (its `waiting()` says how many devices wait on it now).
    notifier: std::sync::Arc<sitetrail_hub::notify::Notifier>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestHub {
    pub fn start() -> TestHub {
        TestHub::start_on(postgres::shared())
    }

    /// A hub over a database of `pg` (a cluster of the test's own, to stop and start).
    pub fn start_on(pg: &postgres::Postgres) -> TestHub {
        TestHub::start_on_database(pg, pg.create_database("sync"))
    }

    /// A hub that grants claims a lease of `max_lease` at most (`--max-lease-ms`), so a test of
    /// a lease that runs out waits out a short one.
    pub fn with_max_lease(max_lease: Duration) -> TestHub {
        let pg = postgres::shared();
        let ms = u64::try_from(max_lease.as_millis()).unwrap_or(u64::MAX);
        TestHub::start_with(
            pg,
            pg.create_database("sync"),
            sitetrail_hub::quota::Quotas::default(),
            Some(ms),
        )
    }

    /// A hub with these quotas per account (`sitetrail-hub serve --quota-*`).
    pub fn start_with_quotas(quotas: sitetrail_hub::quota::Quotas) -> TestHub {
        let pg = postgres::shared();
        TestHub::start_with(pg, pg.create_database("sync"), quotas, None)
    }

    /// A hub over database `database` of `pg` as it is (one restored from a dump, say).
    pub fn start_on_database(pg: &postgres::Postgres, database: String) -> TestHub {
        TestHub::start_with(pg, database, sitetrail_hub::quota::Quotas::default(), None)
    }

    fn start_with(
        pg: &postgres::Postgres,
        database: String,
        quotas: sitetrail_hub::quota::Quotas,
        max_lease_ms: Option<u64>,
    ) -> TestHub {
        let db_url = pg.url(&database);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let config = sitetrail_hub::db::config(&db_url).unwrap();
                sitetrail_hub::migrate::migrate(&config).await.unwrap();
                let pool =
                    sitetrail_hub::db::pool(config.clone(), 8, sitetrail_hub::sql::Statements::Prepared)
                        .unwrap();
                let notifier = std::sync::Arc::new(sitetrail_hub::notify::Notifier::default());
                tokio::spawn(sitetrail_hub::notify::listen(config, notifier.clone()));
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap();
                ready_tx.send((addr, notifier.clone())).unwrap();
                let app = sitetrail_hub::server::App {
                    pool,
                    real_ip_header: None,
                    notifier: notifier.clone(),
                    quotas,
                    max_lease_ms,
                };
                let limits = sitetrail_hub::server::Limits {
                    max_connections: 256,
                    max_requests: 64,
                    max_requests_per_account: 8,
                    request_timeout: Duration::from_secs(30),
                    header_timeout: Duration::from_secs(30),
                };
                sitetrail_hub::server::serve(listener, sitetrail_hub::server::router(app), limits, async {
                    let _ = stopped.await;
                    notifier.close();
                })
                .await;
            });
        });
        let (addr, notifier) = ready_rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the hub starts");
        TestHub {
            url: format!("http://{addr}"),
            database,
            notifier,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Every byte PostgreSQL holds for this hub's database (`pg_dump`).
    pub fn dump(&self) -> Vec<u8> {
        postgres::shared().dump(&self.database)
    }

    pub fn psql(&self, sql: &str) -> String {
        postgres::shared().psql(&self.database, sql)
    }

    /// Waits until `n` long-polls wait on this hub (devices whose background sync is done with
    /// its sync and listens for the others'); panics after `timeout`.
    pub fn wait_for_waiting(&self, n: usize, timeout: Duration) {
        let deadline = std::time::Instant::now() + timeout;
        while self.notifier.waiting() < n {
            assert!(
                std::time::Instant::now() < deadline,
                "{} long-polls of {n} after {timeout:?}",
                self.notifier.waiting()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for TestHub {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A device: a database file and a key folder of its own.
pub struct Device {
    pub dir: tempfile::TempDir,
    pub db: PathBuf,
    pub key_dir: PathBuf,
    pub store: Store,
    rt: tokio::runtime::Runtime,
    /// How far this device's clock is off, in microseconds (its store's `OffsetClock`).
    offset: i64,
}

/// The offset from now to `rfc3339` in microseconds (for [`Device::with_clock`]).
pub fn offset_to(rfc3339: &str) -> i64 {
    Timestamp::parse_rfc3339(rfc3339).unwrap().0 - Timestamp::now().0
}

impl Device {
    pub fn new() -> Device {
        Device::with_clock(0)
    }

    /// A device whose clock is `offset` microseconds off (the store's clock, which the sync
    /// clock reads too).
    pub fn with_clock(offset: i64) -> Device {
        Device::in_dir(tempfile::tempdir().unwrap(), offset)
    }

    /// A device whose database and key folder are copies of `other`'s as they are now: a
    /// backup to restore later, or the same files on a second machine.
    pub fn copy_of(other: &Device) -> Device {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("sitetrail.db");
        other
            .store
            .with_conn(|c| {
                c.execute("VACUUM INTO ?1", [db.to_str().unwrap()])?;
                Ok(())
            })
            .unwrap();
        let key_dir = dir.path().join("config").join("sync");
        std::fs::create_dir_all(&key_dir).unwrap();
        if let Ok(files) = std::fs::read_dir(&other.key_dir) {
            for f in files {
                let f = f.unwrap().path();
                std::fs::copy(&f, key_dir.join(f.file_name().unwrap())).unwrap();
            }
        }
        Device::in_dir(dir, other.offset)
    }

    fn in_dir(dir: tempfile::TempDir, offset: i64) -> Device {
        // Keys in files: these tests never touch the keyring of the person running them.
        sitetrail::sync::keystore::use_file_only();
        let db = dir.path().join("sitetrail.db");
        let key_dir = dir.path().join("config").join("sync");
        let store = Store::open_with(
            &db,
            sitetrail::StoreOptions {
                clock: std::sync::Arc::new(sitetrail::time::OffsetClock(offset)),
                ..sitetrail::StoreOptions::default()
            },
        )
        .unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        Device {
            dir,
            db,
            key_dir,
            store,
            rt,
            offset,
        }
    }

    /// Points this device at another hub URL (a fake one), as if the hub had moved.
    pub fn set_hub_url(&self, url: &str) {
        self.store
            .write(None, |tx| {
                tx.execute("UPDATE sync_link SET hub = ?1", [url])?;
                Ok(())
            })
            .unwrap();
    }

    /// The settings path whose folder holds this device's key folder (for the CLI).
    pub fn settings(&self) -> PathBuf {
        self.dir.path().join("config").join("settings.json")
    }

    pub fn setup(&self, hub: &TestHub, name: &str) -> String {
        self.setup_at(&hub.url, name)
    }

    /// Sets up sync with the hub at `url` (a hub process of the hub's own tests); returns the key.
    pub fn setup_at(&self, url: &str, name: &str) -> String {
        let (_, key) = self
            .rt
            .block_on(engine::setup(&self.store, &self.key_dir, url, Some(name)))
            .unwrap();
        key
    }

    pub fn join(&self, hub: &TestHub, name: &str, key: &str) {
        self.join_at(&hub.url, name, key);
    }

    /// Joins the account of `key` on the hub at `url`.
    pub fn join_at(&self, url: &str, name: &str, key: &str) {
        self.rt
            .block_on(engine::join(&self.store, &self.key_dir, url, Some(name), key))
            .unwrap();
    }

    pub fn try_join(&self, hub: &TestHub, key: &str) -> sitetrail::Result<()> {
        self.rt
            .block_on(engine::join(
                &self.store,
                &self.key_dir,
                &hub.url,
                Some("joining"),
                key,
            ))
            .map(|_| ())
    }

    /// Sealed records waiting for the hub: (index, record id).
    pub fn pending_records(&self) -> Vec<(i64, Vec<u8>)> {
        self.store
            .with_conn(|c| {
                let mut s = c.prepare("SELECT idx, record_id FROM sync_sealed ORDER BY idx")?;
                let rows = s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })
            .unwrap()
    }

    /// This device leaves the account (`force`: even if what it queued cannot be sent).
    pub fn leave(&self, force: bool) -> sitetrail::Result<engine::Left> {
        self.rt.block_on(engine::leave(&self.store, &self.key_dir, force))
    }

    /// The account's devices as the hub knows them.
    pub fn hub_devices(&self) -> Vec<engine::DeviceRow> {
        self.rt
            .block_on(engine::devices(&self.store, &self.key_dir))
            .unwrap()
    }

    /// Removes another device of the account.
    pub fn remove_device(&self, which: &str) -> sitetrail::Result<engine::DeviceRow> {
        self.rt
            .block_on(engine::remove_device(&self.store, &self.key_dir, which))
    }

    /// Moves the account to a new recovery key (`sync rotate-key`); returns the new key.
    pub fn rotate_key(&self) -> String {
        self.rt
            .block_on(sitetrail::sync::account::rotate_key(&self.store, &self.key_dir))
            .unwrap()
            .recovery_key
    }

    /// This device's link.
    pub fn link(&self) -> Option<engine::Link> {
        self.store.with_conn(engine::get_link).unwrap()
    }

    /// Runs `f` (a call of the sync engine on this device's files) on this device's runtime.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    pub fn try_sync(&self) -> sitetrail::Result<SyncReport> {
        self.rt.block_on(engine::sync_now(&self.store, &self.key_dir))
    }

    pub fn sync(&self) -> SyncReport {
        self.try_sync().unwrap()
    }

    /// Records a visit to `url` at `at` (seconds after a fixed start), as the extension would.
    pub fn visit_at(&self, url: &str, title: &str, at_s: i64) -> sitetrail::ids::VisitId {
        self.store
            .record_visit(&NewVisit {
                url,
                title: Some(title),
                visited_at: t(at_s),
                source: "extension",
                source_visit_id: None,
            })
            .unwrap()
            .visit_id
            .unwrap()
    }

    /// `n` visits to distinct pages (numbered from `from`, a day ago), one transaction each.
    pub fn record(&self, from: usize, n: usize) {
        let base = Timestamp::now().as_micros() - 86_400_000_000;
        for i in from..from + n {
            self.store
                .record_visit(&NewVisit {
                    url: &format!("https://site{}.example/page/{i}", i % 50),
                    title: Some("a page"),
                    visited_at: Timestamp(base + i as i64 * 1_000_000),
                    source: "test",
                    source_visit_id: None,
                })
                .unwrap();
        }
    }

    /// Every visit's URL, sorted.
    pub fn urls(&self) -> Vec<String> {
        self.store
            .with_conn(|c| {
                let mut s = c.prepare("SELECT url FROM visit ORDER BY url")?;
                let rows = s.query_map([], |r| r.get(0))?;
                Ok(rows.collect::<rusqlite::Result<Vec<String>>>()?)
            })
            .unwrap()
    }

    /// Every visit: (id, url, title, time, device is this one).
    pub fn visits(&self) -> Vec<(String, String, Option<String>, i64)> {
        self.store
            .with_conn(|c| {
                let mut s =
                    c.prepare("SELECT lower(hex(coalesce(sync_id, id))) AS g, url, title, visited_at FROM visit ORDER BY g")?;
                let rows = s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })
            .unwrap()
    }

    /// Every website with its category and source.
    pub fn websites(&self) -> Vec<(String, Option<String>, Option<String>)> {
        self.store
            .with_conn(|c| {
                let mut s =
                    c.prepare("SELECT domain, category, category_source FROM website ORDER BY domain")?;
                let rows = s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })
            .unwrap()
    }

    pub fn blocked(&self) -> Vec<String> {
        self.store
            .blocked_domains()
            .unwrap()
            .into_iter()
            .map(|b| b.domain)
            .collect()
    }

    /// The shared list of hosts never sent to a remote provider, as stored.
    pub fn exclusions(&self) -> Vec<String> {
        self.store
            .excluded_hosts()
            .unwrap()
            .into_iter()
            .map(|e| e.pattern)
            .collect()
    }

    /// Active time per visit id.
    pub fn times(&self) -> Vec<(String, Option<i64>, Option<i64>)> {
        self.store
            .with_conn(|c| {
                let mut s = c.prepare(
                    "SELECT lower(hex(coalesce(v.sync_id, v.id))) AS g, t.active_ms, t.estimated_ms
                     FROM visit_time t JOIN visit v ON v.id = t.visit_id ORDER BY g",
                )?;
                let rows = s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            })
            .unwrap()
    }

    /// Search hits for `q` (the index follows synced visits).
    pub fn search(&self, q: &str) -> usize {
        let query = sitetrail::history::HistoryQuery {
            search: Some(q.to_owned()),
            limit: 500,
            ..Default::default()
        };
        self.store.history(&query).unwrap().rows.len()
    }
}

/// A fixed start (2026-06-01T00:00:00Z) plus `s` seconds.
pub fn t(s: i64) -> Timestamp {
    Timestamp((1_780_272_000 + s) * 1_000_000)
}

/// Syncs every device until none pulls anything (at most a few rounds).
pub fn converge(devices: &[&Device]) {
    for _ in 0..4 {
        let mut moved = 0;
        for d in devices {
            let r = d.sync();
            moved += r.pulled + r.pushed;
        }
        if moved == 0 {
            return;
        }
    }
}

/// The background sync (`sync::background::run`) of some devices, on a runtime of its own, until
/// [`Syncing::stop`].
pub struct Syncing {
    rt: tokio::runtime::Runtime,
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Syncing {
    /// Starts the background sync of each of `devices` at `pace`.
    pub fn start(devices: &[&Device], pace: sitetrail::sync::background::Pace) -> Syncing {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (stop, rx) = tokio::sync::watch::channel(false);
        let tasks = devices
            .iter()
            .map(|d| {
                rt.spawn(sitetrail::sync::background::run(
                    d.store.clone(),
                    d.key_dir.clone(),
                    pace,
                    std::sync::Arc::new(tokio::sync::Notify::new()),
                    rx.clone(),
                    |_| {},
                ))
            })
            .collect();
        Syncing { rt, stop, tasks }
    }

    /// Stops every background sync and waits for each to end.
    pub fn stop(self) {
        let _ = self.stop.send(true);
        for t in self.tasks {
            self.rt.block_on(t).unwrap();
        }
    }
}

/// Records a visit to `url` on `from` now and waits until `to` has it; returns how long it
/// took, or panics after `limit`.
pub fn time_to_arrive(from: &Device, to: &Device, url: &str, limit: Duration) -> Duration {
    let started = std::time::Instant::now();
    from.store
        .record_visit(&NewVisit {
            url,
            title: Some("Arrives soon"),
            visited_at: Timestamp::now(),
            source: "test",
            source_visit_id: None,
        })
        .unwrap();
    loop {
        let there: bool = to
            .store
            .with_conn(|c| {
                Ok(
                    c.query_row("SELECT EXISTS (SELECT 1 FROM visit WHERE url = ?1)", [url], |r| {
                        r.get(0)
                    })?,
                )
            })
            .unwrap();
        if there {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "{url} did not reach the other device within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
