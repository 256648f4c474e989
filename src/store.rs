//! The database: one SQLite file behind an r2d2 pool.
//!
//! Owns opening the file, the per-connection pragmas, migrations and the two helpers every query
//! module goes through: [`Store::with_conn`] for reads and [`Store::write`] for write
//! transactions, which are always `BEGIN IMMEDIATE` so a writer takes the lock up front and waits
//! for it under `busy_timeout` instead of failing with `SQLITE_BUSY` on upgrade. Async callers go
//! through [`Store::run`], which moves the work onto a blocking thread: no async task ever holds a
//! connection.
//!
//! Before the pool touches a file, [`identity`] checks that it is new, empty or Sitetrail's own
//! (SQLite's `application_id`, or Sitetrail's `schema_migrations` for files from before the mark)
//! and that no newer Sitetrail migrated it: any other file is refused unchanged, byte for byte. A
//! path that is not a regular file (a FIFO, a device, a folder) is refused before it is opened. A
//! database that can only be read (read-only media, folder or file) is opened read-only: reads
//! work, and every write is refused with [`Error::ReadOnly`] before it starts. The first
//! connection is made before the pool, so a file SQLite cannot open is reported at once; on it, a
//! forgetting's pending WAL scrub is finished (`store::scrub`). The data folder and the
//! database files are created private (`0700`/`0600`, see [`crate::fsutil`]).
//!
//! Invariant: only the modules ARCHITECTURE.md names under "Only these modules run SQL" touch
//! rusqlite (the importers among them, which also read the browsers' own copied files); the
//! test `core_architecture` holds the list and the code to each other, so the list is kept in
//! one place.

mod identity;
pub(crate) mod scrub;
pub(crate) mod waiting;

pub use identity::APPLICATION_ID;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use r2d2::ManageConnection;
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};
use tokio::sync::broadcast;

use crate::changes::{bump_counters, Hub};
pub use crate::changes::{Change, Changes};
use crate::error::{Error, Result};
use crate::time::{Clock, SystemClock, Timestamp};

/// The migrations, embedded in the binary, applied in order, each once.
pub const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "core", include_str!("../migrations/0001_core.sql")),
    (
        2,
        "worker_state",
        include_str!("../migrations/0002_worker_state.sql"),
    ),
    (3, "import", include_str!("../migrations/0003_import.sql")),
    (4, "hardening", include_str!("../migrations/0004_hardening.sql")),
    (5, "time_spent", include_str!("../migrations/0005_time_spent.sql")),
    (6, "history", include_str!("../migrations/0006_history.sql")),
    (
        7,
        "local_first",
        include_str!("../migrations/0007_local_first.sql"),
    ),
    (8, "changes", include_str!("../migrations/0008_changes.sql")),
    (
        9,
        "title_judging",
        include_str!("../migrations/0009_title_judging.sql"),
    ),
    (10, "sync", include_str!("../migrations/0010_sync.sql")),
    (
        11,
        "extension_contact",
        include_str!("../migrations/0011_extension_contact.sql"),
    ),
    (
        12,
        "forgetting",
        include_str!("../migrations/0012_forgetting.sql"),
    ),
    (
        13,
        "block_patterns",
        include_str!("../migrations/0013_block_patterns.sql"),
    ),
    (
        14,
        "excluded_hosts",
        include_str!("../migrations/0014_excluded_hosts.sql"),
    ),
    (15, "sync_heal", include_str!("../migrations/0015_sync_heal.sql")),
    (
        16,
        "sync_transport",
        include_str!("../migrations/0016_sync_transport.sql"),
    ),
    (
        17,
        "sync_unreadable",
        include_str!("../migrations/0017_sync_unreadable.sql"),
    ),
    (18, "limits", include_str!("../migrations/0018_limits.sql")),
    (19, "focus", include_str!("../migrations/0019_focus.sql")),
    (20, "reminders", include_str!("../migrations/0020_reminders.sql")),
    (
        21,
        "sync_backfill_others",
        include_str!("../migrations/0021_sync_backfill_others.sql"),
    ),
    (
        22,
        "titled_counted_in_rust",
        include_str!("../migrations/0022_titled_counted_in_rust.sql"),
    ),
];

/// How hard SQLite works to keep the last commits after a power cut.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    /// WAL + `synchronous=NORMAL`: the database is never corrupted, and a crash of the process
    /// loses nothing; a power cut or OS crash may lose the last transactions committed since the
    /// last checkpoint (they are in the WAL but not yet fsynced). The default: far fewer fsyncs.
    #[default]
    Normal,
    /// WAL + `synchronous=FULL`: every commit is fsynced, so it survives a power cut too.
    Full,
}

impl Synchronous {
    /// Every value's name, as the settings, the flag and `SITETRAIL_SYNCHRONOUS` take them.
    pub const NAMES: &'static [&'static str] = &["normal", "full"];

    /// The name.
    pub fn as_str(self) -> &'static str {
        match self {
            Synchronous::Normal => "normal",
            Synchronous::Full => "full",
        }
    }
}

impl std::str::FromStr for Synchronous {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "normal" => Ok(Synchronous::Normal),
            "full" => Ok(Synchronous::Full),
            other => Err(Error::InvalidConfig(format!(
                "synchronous must be `normal` or `full`, not {other:?}"
            ))),
        }
    }
}

/// Options for opening the database.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// `synchronous` pragma for every connection.
    pub synchronous: Synchronous,
    /// How long a connection waits for another writer before giving up.
    pub busy_timeout: Duration,
    /// Largest number of pooled connections.
    pub pool_size: u32,
    /// Where "now" comes from.
    pub clock: Arc<dyn Clock>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            synchronous: Synchronous::Normal,
            busy_timeout: Duration::from_secs(10),
            pool_size: 8,
            clock: Arc::new(SystemClock),
        }
    }
}

/// The variable that chooses `synchronous` for every command that opens the database.
pub const SYNCHRONOUS_ENV: &str = "SITETRAIL_SYNCHRONOUS";

/// `synchronous` from [`SYNCHRONOUS_ENV`] if it is set (an empty value counts as unset); a
/// value other than `normal` or `full` is refused with a message naming the variable.
pub fn synchronous_from_env() -> Result<Option<Synchronous>> {
    parse_synchronous(std::env::var(SYNCHRONOUS_ENV).ok().as_deref())
}

fn parse_synchronous(value: Option<&str>) -> Result<Option<Synchronous>> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        Some(v) => v.parse().map(Some).map_err(|_| {
            Error::InvalidConfig(format!("{SYNCHRONOUS_ENV} must be `normal` or `full`, not {v:?}"))
        }),
        None => Ok(None),
    }
}

impl StoreOptions {
    /// The defaults, with `synchronous` taken from `SITETRAIL_SYNCHRONOUS` (`normal` or `full`)
    /// when it is set: how the CLI opens the database. (The app, `worker` and `daemon`, which
    /// load the settings anyway, also read the settings file's `synchronous` under it:
    /// `crate::settings`.)
    pub fn from_env() -> Result<StoreOptions> {
        StoreOptions::with_synchronous(std::env::var(SYNCHRONOUS_ENV).ok().as_deref())
    }

    /// The defaults, with `synchronous` parsed from `value` if given.
    pub fn with_synchronous(value: Option<&str>) -> Result<StoreOptions> {
        Ok(StoreOptions {
            synchronous: parse_synchronous(value)?.unwrap_or_default(),
            ..StoreOptions::default()
        })
    }
}

/// A handle on the database. Cheap to clone; clones share the pool.
#[derive(Clone)]
pub struct Store {
    pool: r2d2::Pool<SqliteConnectionManager>,
    path: PathBuf,
    clock: Arc<dyn Clock>,
    hub: Arc<Hub>,
    busy_timeout: Duration,
    /// The pooled connections' `synchronous`.
    synchronous: Synchronous,
    /// Why the file can only be read, if so.
    read_only: Option<String>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// The pause between two batches of a long write by default ([`pause_between_batches`]): at
/// least the 100 ms a waiting writer's busy handler may sleep between two looks at the lock.
pub const BATCH_PAUSE: Duration = Duration::from_millis(100);

/// The pause between two batches of a long write (a forgetting, the search index's backfill):
/// `base` plus up to a third more at random. SQLite's write lock is not fair and a waiting
/// writer's busy handler polls it at most every 100 ms, so back-to-back batches would starve
/// one; the random part keeps the batches from falling into step with its polls. Blocking.
pub fn pause_between_batches(base: Duration) {
    if base.is_zero() {
        return;
    }
    let jitter = base.mul_f64(fastrand::f64() / 3.0);
    std::thread::sleep(base + jitter);
}

/// The environment variable naming the database file (the CLI's `--db`, the app's file).
pub const DB_ENV: &str = "SITETRAIL_DB";

/// The database file when none is named on the command line: [`DB_ENV`] if it is set and not
/// empty, else `sitetrail.db` in the user's data directory. The one resolution, for the CLI, the
/// app and the native host.
pub fn default_db_path() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os(DB_ENV).filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    Ok(crate::fsutil::project_dirs()?.data_dir().join("sitetrail.db"))
}

fn configure(conn: &mut Connection, sync: Synchronous, busy: Duration) -> rusqlite::Result<()> {
    // busy_timeout first, so that switching to WAL waits for other processes instead of failing.
    conn.busy_timeout(busy)?;
    // A new file gives freed pages back to the file system (after a large forgetting,
    // `forget` runs `PRAGMA incremental_vacuum`). Possible only before the file's first page is
    // written (switching to WAL writes it); an older file keeps `auto_vacuum = NONE` (switching
    // needs a full VACUUM, see ARCHITECTURE.md) and reuses its free pages instead.
    let pages: i64 = conn.pragma_query_value(None, "page_count", |r| r.get(0))?;
    if pages == 0 {
        conn.pragma_update(None, "auto_vacuum", "INCREMENTAL")?;
    }
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some(format!("journal_mode is {mode}, expected wal")),
        ));
    }
    let sync = match sync {
        Synchronous::Normal => "NORMAL",
        Synchronous::Full => "FULL",
    };
    conn.pragma_update(None, "synchronous", sync)?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    // 16 MiB of page cache (a ceiling, filled only as pages are read) keeps the B-tree interior
    // pages of a million-visit history cached, so a claim costs the same at 1,000 and 1,000,000
    // jobs (benches/engine.rs, figure (d)). SQLite's default is 2 MiB.
    conn.pragma_update(None, "cache_size", -16_384)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// The pragmas of a connection to a database opened read-only: no journal mode to set (the file's
/// own is read), and `query_only` so that nothing can even try to write.
fn configure_read_only(conn: &mut Connection, busy: Duration) -> rusqlite::Result<()> {
    conn.busy_timeout(busy)?;
    conn.pragma_update(None, "query_only", "ON")?;
    conn.pragma_update(None, "cache_size", -16_384)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// How many of this binary's migrations the database has not had.
fn pending_migrations(conn: &Connection) -> Result<usize> {
    let mut stmt = conn.prepare(r#"SELECT version FROM schema_migrations"#)?;
    let applied: std::collections::HashSet<i64> = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(MIGRATIONS.iter().filter(|(v, _, _)| !applied.contains(v)).count())
}

impl Store {
    /// A connection of its own to this database, not pooled, set up as the pool's are (WAL
    /// checked, busy timeout, cache) but with `sync` and `busy`: for work whose own pragmas must
    /// never reach other code (a forgetting's `secure_delete`). Blocking.
    pub(crate) fn open_own_connection(&self, sync: Synchronous, busy: Duration) -> Result<Connection> {
        let mut conn = Connection::open_with_flags(
            self.path(),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        configure(&mut conn, sync, busy)?;
        Ok(conn)
    }

    /// Opens (creating if needed) the database at `path` with default options.
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        Store::open_with(path, StoreOptions::default())
    }

    /// Opens (creating if needed) the database at `path`, sets the pragmas on every pooled
    /// connection and applies pending migrations. A file that is not a Sitetrail database (or was
    /// migrated by a newer Sitetrail) is refused before anything is written to it.
    pub fn open_with(path: impl AsRef<Path>, opts: StoreOptions) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        let open_err = |reason: String| Error::Open {
            path: path.clone(),
            reason,
        };
        let state = identity::check_database_file(&path).map_err(open_err)?;
        let exists = state == identity::FileState::Ours || path.exists();
        let read_only = if exists {
            identity::read_only_reason(&path)
        } else {
            None
        };
        let (sync, busy) = (opts.synchronous, opts.busy_timeout);
        let make_manager: Box<dyn Fn() -> SqliteConnectionManager> = match &read_only {
            None => {
                if state == identity::FileState::New {
                    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                        crate::fsutil::create_private_dir_all(dir).map_err(|e| open_err(e.to_string()))?;
                    }
                    crate::fsutil::create_private_file_if_missing(&path)
                        .map_err(|e| open_err(e.to_string()))?;
                }
                let file = path.clone();
                Box::new(move || {
                    SqliteConnectionManager::file(&file).with_init(move |c| configure(c, sync, busy))
                })
            }
            Some(reason) => {
                if state == identity::FileState::New {
                    return Err(open_err(format!(
                        "it is empty and read-only ({reason}), so it cannot become a database; pass a new file name in a writable folder"
                    )));
                }
                let uri = identity::read_only_uri(&path, identity::has_live_wal(&path))
                    .map_err(|e| open_err(e.to_string()))?;
                Box::new(move || {
                    SqliteConnectionManager::file(&uri)
                        .with_flags(
                            OpenFlags::SQLITE_OPEN_READ_ONLY
                                | OpenFlags::SQLITE_OPEN_URI
                                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                        )
                        .with_init(move |c| configure_read_only(c, busy))
                })
            }
        };
        // The first connection is made here, not by the pool: the pool retries a connection that
        // fails until its timeout (30 s), and a file SQLite cannot open should be said at once.
        let mut first = make_manager().connect().map_err(|e| open_err(e.to_string()))?;
        match &read_only {
            None => {
                migrate(&mut first).map_err(|e| open_err(e.to_string()))?;
                // A forgetting that could not truncate the WAL (another process was reading) is
                // finished by the next process that opens the file: this one. Never fatal.
                if let Err(e) = scrub::finish_pending_scrub(&first, busy) {
                    tracing::warn!(error = %e, "could not finish a forgetting's scrub of the WAL");
                }
            }
            Some(reason) => {
                let pending = pending_migrations(&first).map_err(|e| open_err(e.to_string()))?;
                if pending > 0 {
                    return Err(open_err(format!(
                        "it is read-only ({reason}) and was written by an older Sitetrail: upgrading it \
                         would change it. Copy it somewhere writable and open the copy"
                    )));
                }
            }
        }
        drop(first);
        // No idle minimum: the pool opens a connection when one is asked for and there is none
        // idle, never in the background afterwards. A connection still being opened by the
        // pool's thread when the process exits would never be closed, so the last connection
        // to close would not checkpoint, and the file would change under the next reader.
        let pool = r2d2::Pool::builder()
            .max_size(opts.pool_size.max(1))
            .min_idle(Some(0))
            .idle_timeout(None)
            .connection_timeout(Duration::from_secs(30))
            .build(make_manager())
            .map_err(|e| open_err(e.to_string()))?;
        if let Some(reason) = &read_only {
            tracing::info!(db = %path.display(), %reason, "the database is opened read-only");
        }
        Ok(Store {
            pool,
            path,
            clock: opts.clock,
            hub: Hub::new(),
            busy_timeout: busy,
            synchronous: sync,
            read_only,
        })
    }

    /// How hard the pooled connections' commits and checkpoints sync the file (the option it was
    /// opened with).
    pub(crate) fn synchronous(&self) -> Synchronous {
        self.synchronous
    }

    /// Why the database was opened read-only (read-only media, folder or file), if it was.
    /// Reading works; every write is refused with [`Error::ReadOnly`].
    pub fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    /// `Err(Error::ReadOnly)` if the database was opened read-only: called before any write.
    pub fn check_writable(&self) -> Result<()> {
        match &self.read_only {
            None => Ok(()),
            Some(reason) => Err(Error::ReadOnly {
                path: self.path.clone(),
                reason: reason.clone(),
            }),
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// "Now", from the store's clock.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// A pooled connection. Blocking: never call from async code (use [`Store::run`]).
    pub fn conn(&self) -> Result<r2d2::PooledConnection<SqliteConnectionManager>> {
        crate::blocking::note("database");
        Ok(self.pool.get()?)
    }

    /// Runs `f` with a pooled connection (for reads).
    pub fn with_conn<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let conn = self.conn()?;
        f(&conn)
    }

    /// Runs `f` in a `BEGIN IMMEDIATE` transaction, committing if it returns `Ok` and rolling back
    /// otherwise. `changes` are the kinds of data it may touch (`Change::Visits | Change::Outbox`,
    /// a single `Some(Change::Visits)`, or `None`): if it changed any row they are recorded in the
    /// same transaction and announced to subscribers, in this process and others, after the
    /// commit. A transaction that changed nothing announces nothing.
    pub fn write<T>(
        &self,
        changes: impl Into<Changes>,
        f: impl FnOnce(&Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        let changes = changes.into();
        self.write_changes(|tx, c| {
            *c |= changes;
            f(tx)
        })
    }

    /// [`Store::write`] for a transaction that says what it touched as it goes: `f` adds the
    /// kinds to the set it is given (a visit adds `Websites` and `Outbox` only with a new website).
    pub fn write_changes<T>(&self, f: impl FnOnce(&Transaction<'_>, &mut Changes) -> Result<T>) -> Result<T> {
        let mut conn = self.conn()?;
        self.write_changes_on(&mut conn, f)
    }

    /// [`Store::write`] on a connection the caller holds across several transactions (from
    /// [`Store::conn`]): an importer keeps its page cache warm from one batch to the next.
    pub fn write_on<T>(
        &self,
        conn: &mut Connection,
        changes: impl Into<Changes>,
        f: impl FnOnce(&Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        let changes = changes.into();
        self.write_changes_on(conn, |tx, c| {
            *c |= changes;
            f(tx)
        })
    }

    /// [`Store::write_changes`] on a connection the caller holds.
    #[tracing::instrument(level = "trace", name = "write", skip_all, fields(path = %self.path.display()))]
    pub fn write_changes_on<T>(
        &self,
        conn: &mut Connection,
        f: impl FnOnce(&Transaction<'_>, &mut Changes) -> Result<T>,
    ) -> Result<T> {
        self.check_writable()?;
        // A writer that waits for the lock says so, for long work holding it (`waiting`).
        let (out, changed, changes) = waiting::begin_immediate(conn, &self.path, |tx| {
            let before = tx.total_changes();
            let mut changes = Changes::NONE;
            let out = crate::time::writing_at(self.now(), || f(&tx, &mut changes))?;
            let changed = tx.total_changes() != before;
            if changed {
                bump_counters(&tx, changes)?;
            }
            tx.commit()?;
            Ok((out, changed, changes))
        })?;
        if changed {
            self.hub.send(changes);
        }
        Ok(out)
    }

    /// A view of the writers waiting for the write lock, for long work that holds it in many
    /// transactions ([`waiting::Watch`]). Blocking (it may create the empty `-writers` file).
    pub(crate) fn watch_writers(&self) -> Result<waiting::Watch> {
        Ok(waiting::Watch::open(&self.path)?)
    }

    /// A receiver of committed changes: this process's at once, other processes' within
    /// [`crate::changes::WATCH_INTERVAL`] (the first subscriber starts the watcher).
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        let (path, busy) = (self.path.clone(), self.busy_timeout);
        let read_only = self.read_only.is_some();
        self.hub.subscribe(move || {
            let conn = if read_only {
                // Nobody can write this file, so nothing changes: a connection that never sees a change.
                Connection::open_with_flags(
                    identity::read_only_uri(&path, identity::has_live_wal(&path))?,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
                )?
            } else {
                Connection::open(&path)?
            };
            conn.busy_timeout(busy)?;
            Ok(conn)
        })
    }

    /// Runs blocking database work on tokio's blocking pool, for async callers.
    pub async fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Store) -> Result<T> + Send + 'static,
    {
        let store = self.clone();
        crate::blocking::run(move || f(&store)).await
    }
}

/// Applies every migration not yet recorded in `schema_migrations`, each in its own
/// `BEGIN IMMEDIATE` transaction so that several processes opening a new file at once apply each
/// migration exactly once.
fn migrate(conn: &mut Connection) -> Result<()> {
    conn.execute_batch(
        r#"CREATE TABLE IF NOT EXISTS schema_migrations (
               version    INTEGER NOT NULL PRIMARY KEY,
               name       TEXT    NOT NULL,
               applied_at INTEGER NOT NULL
           )"#,
    )?;
    for &(version, name, sql) in MIGRATIONS {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let done: bool = tx.query_row(
            r#"SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = ?1)"#,
            [version],
            |r| r.get(0),
        )?;
        if !done {
            tx.execute_batch(sql)?;
            tx.execute(
                r#"INSERT INTO schema_migrations (version, name, applied_at) VALUES (?1, ?2, ?3)"#,
                rusqlite::params![version, name, Timestamp::now()],
            )?;
        }
        tx.commit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_is_built_without_one_shared_page_cache_or_global_memory_counters() {
        // .cargo/config.toml's LIBSQLITE3_FLAGS (issue 31): with one page cache shared by every
        // connection behind one mutex, an import's two threads took turns at every page.
        let conn = Connection::open_in_memory().unwrap();
        let options: Vec<String> = conn
            .prepare("PRAGMA compile_options")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(
            !options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"),
            "SQLite was built with ENABLE_MEMORY_MANAGEMENT (is .cargo/config.toml's LIBSQLITE3_FLAGS read?): {options:?}"
        );
        assert!(
            options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"),
            "SQLite counts memory globally: {options:?}"
        );
    }

    #[test]
    fn synchronous_comes_from_its_setting() {
        assert_eq!(
            StoreOptions::with_synchronous(None).unwrap().synchronous,
            Synchronous::Normal
        );
        assert_eq!(
            StoreOptions::with_synchronous(Some("FULL")).unwrap().synchronous,
            Synchronous::Full
        );
        let err = StoreOptions::with_synchronous(Some("off"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("SITETRAIL_SYNCHRONOUS") && err.contains("off"),
            "{err}"
        );
    }

    #[test]
    fn every_migration_file_is_embedded_in_order() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".sql"))
            .collect();
        files.sort();
        assert_eq!(
            files.len(),
            MIGRATIONS.len(),
            "a migration file is not listed in MIGRATIONS"
        );
        let mut last = 0;
        for (file, &(version, name, _)) in files.iter().zip(MIGRATIONS) {
            assert!(version > last, "migrations must be listed in increasing order");
            last = version;
            assert_eq!(file, &format!("{version:04}_{name}.sql"));
        }
    }
}
