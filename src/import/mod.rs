//! Importing browsing history from the browsers' own databases.
//!
//! One module per source (`chromium`, `firefox`, `safari`) says which tables and columns it needs,
//! how to read its visits in id order after a cursor, and which visits are not page views. This
//! module is the shared driver: it takes a validated private snapshot (`snapshot.rs`) of the file, streams the
//! visits after the source's [`cursor`], and stores them through the same two steps as the CLI's
//! `record_visit` ([`get_or_insert_website_in`], [`insert_visit_in`]), in `BEGIN IMMEDIATE` batches
//! of thousands.
//!
//! [`get_or_insert_website_in`]: crate::visits::get_or_insert_website_in
//! [`insert_visit_in`]: crate::visits::insert_visit_in
//!
//! Invariants:
//! - A file that is not an intact database of the named kind is refused before any row is read:
//!   an [`Error::Import`], nothing stored.
//! - Each batch, with the cursor moved past it, is one transaction: a failure or a crash loses at
//!   most the batch in flight, and the cursor never runs ahead of the stored visits.
//! - Importing is idempotent: a visit is stored under (`source`, `<its id in the browser>@<its
//!   time>`), which is unique, so reading a visit twice (cursor lost, history re-read) stores it
//!   once, and a browser that reuses ids after its history was cleared cannot hide a new visit.
//! - The cursor also remembers the time of the visit it points at: when that visit is gone or
//!   changed, the history was cleared or replaced, and the whole file is read again.
//! - A bad row in an intact file (unreadable URL, non-web URL, timestamp out of range) is skipped
//!   and counted; a title with invalid UTF-8 or control characters is repaired and counted. A row
//!   never fails a batch; only a database error does.
//! - Memory does not grow with the file: rows are streamed, never collected.
//! - Website icons come from the browser's icon file beside the history (`favicons.rs`), read
//!   through the same validated snapshot after the visits; a bad icon file costs the history
//!   nothing (it is named in `favicons_problem`).

mod batch;
mod checkpoint;
mod chromium;
pub mod cursor;
pub mod detect;
mod favicons;
mod firefox;
mod reader;
mod rows;
mod safari;
mod snapshot;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use rusqlite::types::ValueRef;
use rusqlite::{named_params, OptionalExtension};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::store::{Change, Store};

use batch::{Batch, WebsiteCache};
use checkpoint::Checkpoints;
use reader::ReadChunk;
use rows::{Columns, RawVisit};
use snapshot::{Schema, Snapshot};

pub use detect::{detect_profiles, DetectedProfile};
pub use rows::{RowValues, RowVisit, Skip, SkipCounts, MAX_VISIT_MICROS, MIN_VISIT_MICROS};

/// Browser visits per transaction unless [`ImportOptions::batch_size`] says otherwise: large
/// enough that the commit cost is spread thin, small enough that a crash redoes little and other
/// writers wait a small fraction of a second (see docs/BENCHMARKS.md, "Import (issue 4)").
pub const DEFAULT_BATCH_SIZE: usize = 10_000;

/// Page cache of the connection an import writes with (KiB), kept across its batches: enough for
/// the hot pages (the right edge of the visit table, the website index); a fixed bound whatever
/// the file's size. Larger caches measured slower, not faster (docs/BENCHMARKS.md).
const IMPORT_CACHE_KIB: i64 = 8 * 1024;

/// The search index's settings while an import writes (docs/BENCHMARKS.md):
/// - `automerge` 16 (FTS5's default is 4): segments of one level merged when there are this many,
///   so each visit's index rows are merged about half as often. Measured: 0, 16 and 32 the same,
///   8 between.
/// - `hashsize` 16 MiB (FTS5's default is 1 MiB): a batch's pending terms (a few MiB for 10,000
///   visits) stay in memory until it commits and are written as one segment, not one per MiB.
const IMPORT_INDEX_SETTINGS: [(crate::search::IndexSetting, i64); 2] = [
    (crate::search::IndexSetting::Automerge, 16),
    (crate::search::IndexSetting::Hashsize, 16 * 1024 * 1024),
];

/// The busy timeout of the import's checkpointing connection (a `PASSIVE` checkpoint never waits
/// on it; opening the connection may). Its `synchronous` is the pool's: a checkpoint syncs the file
/// as the import's own connection would.
const CHECKPOINT_BUSY: std::time::Duration = std::time::Duration::from_secs(5);

/// `PRAGMA temp_store`'s value for temporary files (and statement journals) held in memory.
const TEMP_STORE_MEMORY: i64 = 2;

/// A browser family: which schema the file has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Browser {
    /// Chrome, Chromium, Edge, Brave, Vivaldi, Opera: `<profile>/History`.
    Chrome,
    /// Firefox, LibreWolf, Waterfox: `<profile>/places.sqlite`.
    Firefox,
    /// Safari: `~/Library/Safari/History.db`.
    Safari,
}

impl Browser {
    /// The name used on the command line and in source names.
    pub fn as_str(self) -> &'static str {
        match self {
            Browser::Chrome => "chrome",
            Browser::Firefox => "firefox",
            Browser::Safari => "safari",
        }
    }

    /// Which file the user should give, for error messages.
    pub fn file_hint(self) -> &'static str {
        match self {
            Browser::Chrome => "a Chrome-family `History` file from a browser profile directory",
            Browser::Firefox => "a Firefox-family `places.sqlite` file from a browser profile directory",
            Browser::Safari => "Safari's `History.db` from ~/Library/Safari",
        }
    }

    fn spec(self) -> &'static SourceSpec {
        match self {
            Browser::Chrome => &chromium::SPEC,
            Browser::Firefox => &firefox::SPEC,
            Browser::Safari => &safari::SPEC,
        }
    }
}

impl std::str::FromStr for Browser {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "chrome" => Ok(Browser::Chrome),
            "firefox" => Ok(Browser::Firefox),
            "safari" => Ok(Browser::Safari),
            other => Err(Error::InvalidInput(format!(
                "unknown browser {other:?}; use chrome, firefox or safari"
            ))),
        }
    }
}

impl std::fmt::Display for Browser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How to import.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// The source name visits are stored under and the cursor is kept for; by default
    /// `<browser>:<hash of the file's canonical path>` (see [`default_source`]).
    pub source: Option<String>,
    /// Browser visits read per transaction.
    pub batch_size: usize,
    /// Checked between batches: when set, the import stops after the batch in flight commits.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            source: None,
            batch_size: DEFAULT_BATCH_SIZE,
            cancel: None,
        }
    }
}

/// What an import did (counting committed batches only).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ImportReport {
    /// The browser family.
    pub browser: Browser,
    /// The file imported.
    pub path: PathBuf,
    /// The source name the visits are stored under.
    pub source: String,
    /// Browser visits read (after the cursor).
    pub read: u64,
    /// Visits stored.
    pub imported: u64,
    /// Visits read that were stored before (same source and id): imported twice, stored once.
    pub already_present: u64,
    /// Websites created (each with its classification job queued).
    pub new_websites: u64,
    /// Visits not imported, by reason.
    pub skipped: SkipCounts,
    /// Imported visits whose title had invalid UTF-8 or control characters (repaired, kept).
    pub repaired_titles: u64,
    /// The cursor after the import: the last browser visit id read.
    pub last_visit_id: i64,
    /// True if the browser's history was cleared or replaced since the last import (the visit at
    /// the cursor is gone or changed), so the whole file was read again; visits already stored
    /// were recognised (`already_present`), not stored twice.
    pub rescanned: bool,
    /// False if the import was cancelled before the end of the file.
    pub complete: bool,
    /// Websites that got their icon from the browser's icon file.
    pub favicons: u64,
    /// Why the browser's icon file could not be read, if it could not (the visits are imported).
    pub favicons_problem: Option<String>,
}

/// Where an import is, for a progress bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Browser visits read so far (committed).
    pub read: u64,
    /// Browser visits to read in all.
    pub total: u64,
}

/// What one source module knows about its file.
pub(crate) struct SourceSpec {
    schema: Schema,
    /// `count(*)` of the visits after `:after`.
    count_sql: &'static str,
    /// The `visit_time` column of the visit with id `:id`, to check the cursor's fingerprint.
    probe_sql: &'static str,
    /// A visit time as the browser stores it, as an integer: the cursor's fingerprint.
    time_key: fn(ValueRef<'_>) -> Option<i64>,
    /// The visits after `:after`, by id, with columns `id`, `url`, `title` and what `read` needs.
    rows_sql: &'static str,
    read: for<'r> fn(&dyn Columns<'r>) -> rusqlite::Result<RawVisit<'r>>,
}

/// What the importer makes of one visit row of `browser`, given as its column values (the
/// columns of the source's visits query: `id`, `url`, `title` and the source's own, such as
/// Chromium's `visit_time` and `transition`): the visit it would store, or why it skips the row.
/// The same code the importer runs on every row, without a database, for fuzzing and tests. An
/// error only where the importer would stop too (a column missing, an `id` that is not an
/// integer).
pub fn read_row(browser: Browser, row: RowValues<'_>) -> Result<std::result::Result<RowVisit, Skip>> {
    let raw = (browser.spec().read)(&row)?;
    Ok(rows::accept(&raw).map(RowVisit::from))
}

/// The default source name for `path`: `<browser>:<16 hex digits of SHA-256 of its canonical
/// path>`, so that `import chrome PATH` and `import --auto` store a profile under the same name,
/// and two profiles never share one.
pub fn default_source(browser: Browser, path: &Path) -> String {
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{}:{hex}", browser.as_str())
}

impl ImportReport {
    fn add(&mut self, b: &Batch) {
        self.read += b.read;
        self.imported += b.imported;
        self.already_present += b.already_present;
        self.new_websites += b.new_websites;
        self.skipped.merge(&b.skipped);
        self.repaired_titles += b.repaired_titles;
        if let Some(last) = b.last {
            self.last_visit_id = last.visit_id;
        }
    }
}

/// The error for a browser file of ours whose `what` (its visits, its icons) SQLite failed to
/// read: the file named, SQLite's reason given.
fn read_failed<'p>(path: &'p Path, what: &'static str) -> impl Fn(rusqlite::Error) -> Error + Copy + 'p {
    move |e| Error::Import {
        path: path.to_path_buf(),
        problem: format!("reading its {what} failed ({e})"),
    }
}

/// Imports the visits of `path` (a `browser` history file) added since the last import.
/// `progress` hears after every committed batch.
#[tracing::instrument(level = "info", skip_all, fields(browser = ?browser, batch_size = opts.batch_size, imported = tracing::field::Empty))]
pub fn import_file(
    store: &Store,
    browser: Browser,
    path: &Path,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<ImportReport> {
    let spec = browser.spec();
    let source = match &opts.source {
        Some(s) if s.trim().is_empty() => {
            return Err(Error::InvalidInput("--source must not be empty".into()));
        }
        Some(s) => s.trim().to_owned(),
        None => default_source(browser, path),
    };
    let snapshot = Snapshot::take(path, spec.schema, browser.file_hint())?;
    let read_failed = read_failed(path, "visits");
    let cursor = store.with_conn(|c| cursor::get_last_visit(c, &source))?;
    let rescanned = match cursor {
        Some((id, time)) => {
            let now_there: Option<Option<i64>> = snapshot
                .conn()
                .query_row(spec.probe_sql, named_params! { ":id": id }, |r| {
                    Ok((spec.time_key)(r.get_ref("visit_time")?))
                })
                .optional()
                .map_err(read_failed)?;
            now_there != Some(time)
        }
        None => false,
    };
    let after = match cursor {
        Some((id, _)) if !rescanned => id,
        _ => 0,
    };
    let total: u64 = snapshot
        .conn()
        .query_row(spec.count_sql, named_params! { ":after": after }, |r| r.get(0))
        .map_err(read_failed)?;

    let mut report = ImportReport {
        browser,
        path: path.to_path_buf(),
        source: source.clone(),
        read: 0,
        imported: 0,
        already_present: 0,
        new_websites: 0,
        skipped: SkipCounts::default(),
        repaired_titles: 0,
        last_visit_id: after,
        rescanned,
        complete: false,
        favicons: 0,
        favicons_problem: None,
    };
    let path_text = path.to_string_lossy();
    let batch_size = opts.batch_size.max(1);
    progress(Progress { read: 0, total });
    // One connection for every batch, with its own page cache: the pages every batch touches stay
    // cached from one batch to the next instead of being read back from the file. The cache is
    // bounded, so memory does not grow with the file, and is reset when the connection goes back.
    let mut conn = store.conn()?;
    let usual_cache: i64 = conn.pragma_query_value(None, "cache_size", |r| r.get(0))?;
    conn.pragma_update(None, "cache_size", -IMPORT_CACHE_KIB)?;
    // The search index merges its segments less often while the import writes one a batch
    // (FTS5's `automerge`), and holds a whole batch's terms in memory so that the batch is one
    // segment (`hashsize`): a tenth of an import's time went to merging segments that the next
    // batches made to merge again (docs/BENCHMARKS.md). Both are restored after; an import that
    // died left the import's value (searches then read a few more segments, nothing else), and the
    // next one puts FTS5's default back.
    let mut usual_index_settings = Vec::with_capacity(IMPORT_INDEX_SETTINGS.len());
    for (setting, while_importing) in IMPORT_INDEX_SETTINGS {
        let usual = match crate::search::index_setting(&conn, setting)? {
            value if value == while_importing => setting.default_value(),
            usual => usual,
        };
        usual_index_settings.push((setting, usual));
        crate::search::set_index_setting(&conn, setting, while_importing)?;
    }
    // Statement journals in memory: a statement that may have to undo itself alone (the batch's
    // estimated times, a new website's rows) first copies every page it changes into one. In a
    // temporary file that is a system call per page (docs/BENCHMARKS.md). In memory, a journal
    // holds at most the pages one statement changes (the batch's estimated times are the
    // largest), then it is emptied. Setting `temp_store` drops the connection's temporary
    // tables and triggers: left as it is when the connection has any (none of ours does; a
    // caller's might).
    let usual_temp_store: i64 = conn.pragma_query_value(None, "temp_store", |r| r.get(0))?;
    let temp_objects: i64 = conn.query_row(r#"SELECT count(*) FROM temp.sqlite_schema"#, [], |r| r.get(0))?;
    let journals_to_memory = temp_objects == 0 && usual_temp_store != TEMP_STORE_MEMORY;
    if journals_to_memory {
        conn.pragma_update(None, "temp_store", TEMP_STORE_MEMORY)?;
    }
    // The WAL's checkpoints on a thread of their own (`checkpoint.rs`), when a connection for them
    // opens; else the import's connection checkpoints as usual.
    let usual_autocheckpoint: i64 = conn.pragma_query_value(None, "wal_autocheckpoint", |r| r.get(0))?;
    let checkpointing = store
        .open_own_connection(store.synchronous(), CHECKPOINT_BUSY)
        .ok()
        .map(checkpoint::checkpoints);
    if checkpointing.is_some() {
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    }
    // No foreign key checks while the batches write: every id they write comes from their own
    // transaction (a visit's website found or inserted in it, or cached from an earlier batch of
    // this import, the cache cleared when another connection committed: `batch.rs`; an estimated
    // time's visit inserted just before it; a new website's outbox row its website's), so the
    // parent looked up for each row (an estimated time's in the million-row `visit` key) checked
    // what cannot fail, a tenth of the import's time (docs/BENCHMARKS.md). Nothing an import runs
    // deletes or replaces a row, so no `ON DELETE CASCADE` is skipped. Restored first, whatever
    // happened, and read back; turned off last, so that no early return leaves it off.
    // `tests/import/integrity.rs` runs `PRAGMA foreign_key_check` after an import that caches
    // websites across batches, meets one forgotten between two of them and stores estimated times.
    let usual_foreign_keys: bool = conn.pragma_query_value(None, "foreign_keys", |r| r.get(0))?;
    conn.pragma_update(None, "foreign_keys", false)?;
    let mut websites = WebsiteCache::default();
    // The visits read on the reading thread (`reader.rs`) are written here, a batch a transaction,
    // while the reader reads the next ones.
    let mut write_batches =
        |chunks: &Receiver<Result<ReadChunk>>, checkpoints: Option<&Checkpoints>| -> Result<()> {
            let next_chunk = || -> Result<ReadChunk> {
                chunks.recv().map_err(|_| Error::Import {
                    path: path.to_path_buf(),
                    problem: "reading its visits stopped before the end of the file".into(),
                })?
            };
            loop {
                if opts.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
                    return Ok(());
                }
                // The batch's first rows are read before its transaction begins: waiting for the
                // reader holds no lock then.
                let mut first = Some(next_chunk()?);
                let now = store.now();
                let batch = store.write_changes_on(&mut conn, |tx, changes| {
                    websites.begin_batch(tx)?;
                    let mut batch = Batch::default();
                    loop {
                        let read = match first.take() {
                            Some(chunk) => chunk,
                            None if batch.read < batch_size as u64 && !batch.end_of_file => next_chunk()?,
                            None => break,
                        };
                        batch.read += read.read;
                        batch.last = read.last.or(batch.last);
                        batch.skipped.merge(&read.skipped);
                        batch.end_of_file = read.end_of_file;
                        for row in read.visits {
                            batch::store_visit(tx, row, (&source, now), &mut websites, &mut batch)?;
                        }
                    }
                    websites.end_batch(tx)?;
                    if let Some(last) = batch.last {
                        cursor::save_cursor_in(tx, &source, browser, &path_text, last, now)?;
                    }
                    if batch.imported > 0 {
                        *changes |= Change::Visits;
                    }
                    if batch.new_websites > 0 {
                        *changes |= Change::Websites | Change::Outbox;
                    }
                    Ok(batch)
                })?;
                if let Some(checkpoints) = checkpoints {
                    checkpoints.after_commit();
                }
                report.add(&batch);
                progress(Progress {
                    read: report.read,
                    total: total.max(report.read),
                });
                if batch.end_of_file {
                    report.complete = true;
                    return Ok(());
                }
            }
        };
    let outcome = std::thread::scope(|scope| {
        let (to_writer, chunks) = std::sync::mpsc::sync_channel(reader::READ_AHEAD);
        let reading = scope.spawn(move || {
            reader::read_chunks(snapshot, spec, (after, batch_size), path, &to_writer);
        });
        let checkpoints = checkpointing.map(|(checkpoints, checkpointer)| {
            scope.spawn(move || checkpointer.run());
            checkpoints
        });
        let written = write_batches(&chunks, checkpoints.as_ref());
        // The checkpointing thread ends once nobody asks; the reader stops at its next chunk once
        // nobody receives them.
        drop(checkpoints);
        drop(chunks);
        let read = reading.join().map_err(|_| Error::Import {
            path: path.to_path_buf(),
            problem: "reading its visits failed (the reading thread stopped)".into(),
        });
        written.and(read)
    });
    // The connection goes back to the pool as it was (and the import's cached pages are freed),
    // its foreign key checks first: no transaction is open here, so the pragma takes effect, and
    // reading it back makes sure.
    let checks_restored = conn
        .pragma_update(None, "foreign_keys", usual_foreign_keys)
        .and_then(|()| conn.pragma_query_value(None, "foreign_keys", |r| r.get::<_, bool>(0)))
        .map_err(Error::from)
        .and_then(|now| {
            if now == usual_foreign_keys {
                Ok(())
            } else {
                Err(Error::Conflict(
                    "the import could not turn the database connection's foreign key checks back on".into(),
                ))
            }
        });
    let restored = checks_restored
        .and_then(|()| {
            conn.pragma_update(None, "cache_size", usual_cache)
                .and_then(|()| conn.pragma_update(None, "wal_autocheckpoint", usual_autocheckpoint))
                .and_then(|()| {
                    if journals_to_memory {
                        conn.pragma_update(None, "temp_store", usual_temp_store)
                    } else {
                        Ok(())
                    }
                })
                .map_err(Error::from)
        })
        .and_then(|()| {
            usual_index_settings
                .iter()
                .try_for_each(|&(setting, usual)| crate::search::set_index_setting(&conn, setting, usual))
        });
    outcome?;
    restored?;
    drop(conn);
    // Icons: for a profile read for the first time (or again), or when it brought new websites.
    if report.complete && (cursor.is_none() || rescanned || report.new_websites > 0) {
        match favicons::import_favicons(store, browser, path) {
            Ok(n) => report.favicons = n,
            Err(e) => report.favicons_problem = Some(e.to_string()),
        }
    }
    tracing::Span::current().record("imported", report.imported);
    Ok(report)
}

/// The outcome of importing one detected profile.
#[derive(Debug)]
pub struct ProfileImport {
    /// The profile.
    pub profile: DetectedProfile,
    /// What importing it did, or why it failed (other profiles are imported anyway).
    pub result: Result<ImportReport>,
}

/// Imports every profile [`detect_profiles`] finds, each under its default source name.
/// `progress` hears about each profile's batches.
pub fn import_detected(
    store: &Store,
    profiles: Vec<DetectedProfile>,
    opts: &ImportOptions,
    progress: &mut dyn FnMut(&DetectedProfile, Progress),
) -> Vec<ProfileImport> {
    let opts = ImportOptions {
        source: None,
        ..opts.clone()
    };
    profiles
        .into_iter()
        .map(|profile| {
            let result = import_file(store, profile.browser, &profile.path, &opts, &mut |p| {
                progress(&profile, p);
            });
            ProfileImport { profile, result }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sources_differ_by_path_and_browser() {
        let a = default_source(Browser::Chrome, Path::new("/nonexistent/a/History"));
        let b = default_source(Browser::Chrome, Path::new("/nonexistent/b/History"));
        assert!(a.starts_with("chrome:") && a.len() == "chrome:".len() + 16, "{a}");
        assert_ne!(a, b);
        assert_eq!(
            a,
            default_source(Browser::Chrome, Path::new("/nonexistent/a/History"))
        );
    }

    #[test]
    fn rows_are_read_without_a_database() {
        use ValueRef::{Integer, Null, Real, Text};
        // 2024-06-01T00:00:00Z in each browser's own time.
        let unix = 1_717_200_000_000_000i64;
        let chrome = [
            ("id", Integer(7)),
            ("url", Text(b"https://WWW.B\xc3\xbccher.example/x")),
            ("title", Text(b"bad \xff\x07 title")),
            ("visit_time", Integer(unix + 11_644_473_600_000_000)),
            ("transition", Integer(0x2000_0000)),
        ];
        let v = read_row(Browser::Chrome, RowValues(&chrome)).unwrap().unwrap();
        assert_eq!(v.domain.as_str(), "xn--bcher-kva.example");
        assert_eq!(v.visited_at, crate::Timestamp(unix));
        assert_eq!(
            (v.title.as_deref(), v.title_repaired),
            (Some("bad \u{fffd}  title"), true)
        );
        assert_eq!(v.source_visit_id, format!("7@{unix}"));
        let mut subframe = chrome;
        subframe[4] = ("transition", Integer(0x2000_0003));
        assert_eq!(
            read_row(Browser::Chrome, RowValues(&subframe)).unwrap(),
            Err(Skip::Subframe)
        );

        let firefox = [
            ("id", Integer(1)),
            ("url", Text(b"about:config")),
            ("title", Null),
            ("visit_date", Integer(unix)),
            ("visit_type", Integer(1)),
            ("redirect_source", Integer(0)),
        ];
        assert_eq!(
            read_row(Browser::Firefox, RowValues(&firefox)).unwrap(),
            Err(Skip::NonWeb)
        );
        let safari = [
            ("id", Integer(2)),
            ("url", Text(b"https://a.example/")),
            ("title", Null),
            ("visit_time", Real(f64::NAN)),
            ("redirect_destination", Null),
        ];
        assert_eq!(
            read_row(Browser::Safari, RowValues(&safari)).unwrap(),
            Err(Skip::BadTimestamp)
        );
        // Where the importer would stop, so does read_row: a missing column, a text id.
        assert!(read_row(Browser::Safari, RowValues(&safari[..4])).is_err());
        let mut text_id = firefox;
        text_id[0] = ("id", Text(b"x"));
        assert!(read_row(Browser::Firefox, RowValues(&text_id)).is_err());
    }
}
