//! Importing browsing history from the browsers' own databases.
//!
//! One module per source (`chromium`, `firefox`, `safari`) says which tables and columns it needs,
//! how to read its visits in id order after a cursor, and which visits are not page views. This
//! module is the shared driver: it takes a validated private [`snapshot`] of the file, streams the
//! visits after the source's [`cursor`], and stores them through the same
//! [`record_visit_for_domain_in`] path as the CLI, in `BEGIN IMMEDIATE` batches of thousands.
//!
//! Invariants:
//! - A file that is not an intact database of the named kind is refused before any row is read:
//!   an [`Error::Import`], nothing stored.
//! - Each batch, with the cursor moved past it, is one transaction: a failure or a crash loses at
//!   most the batch in flight, and the cursor never runs ahead of the stored visits.
//! - Importing is idempotent: a visit is stored under (`source`, its id in the browser), which is
//!   unique, so reading a visit twice (cursor lost, `--source` reused) stores it once.
//! - A bad row in an intact file (unreadable URL, non-web URL, timestamp out of range) is skipped
//!   and counted; a title with invalid UTF-8 or control characters is repaired and counted. A row
//!   never fails a batch; only a database error does.
//! - Memory does not grow with the file: rows are streamed, never collected.

mod chromium;
pub mod cursor;
pub mod detect;
mod firefox;
mod safari;
mod snapshot;

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rusqlite::types::ValueRef;
use rusqlite::{named_params, Row};
use sha2::{Digest, Sha256};

use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::store::{Change, Store};
use crate::time::Timestamp;
use crate::visits::{record_visit_for_domain_in, NewVisit};

use snapshot::{Schema, Snapshot};

pub use detect::{detect_profiles, DetectedProfile};

/// Visits per transaction unless [`ImportOptions::batch_size`] says otherwise: large enough that
/// the commit cost vanishes, small enough that a crash loses little and other writers wait little.
pub const DEFAULT_BATCH_SIZE: usize = 5_000;

/// Earliest visit time accepted: 1990-01-01T00:00:00Z (before the web, so a bogus value).
pub const MIN_VISIT_MICROS: i64 = 631_152_000_000_000;
/// Latest visit time accepted (exclusive): 2200-01-01T00:00:00Z.
pub const MAX_VISIT_MICROS: i64 = 7_258_118_400_000_000;

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
            other => Err(Error::InvalidConfig(format!(
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

/// Why a browser visit was not imported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// Not an `http`/`https` URL (`chrome://`, `about:`, `file:`, `data:`, extension pages...).
    NonWeb,
    /// A page loaded inside a frame of another page.
    Subframe,
    /// A URL that redirected elsewhere; the page it led to is imported.
    Redirect,
    /// Neither a page view nor a frame: a download, a keyword-generated search URL.
    NotPage,
    /// A URL that does not parse, has no host, is not UTF-8, is missing or is too long.
    BadUrl,
    /// A visit time missing, not a number or outside 1990..2200.
    BadTimestamp,
}

/// How many visits were skipped, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SkipCounts {
    /// All skipped visits.
    pub total: u64,
    /// See [`Skip::NonWeb`].
    pub non_web: u64,
    /// See [`Skip::Subframe`].
    pub subframe: u64,
    /// See [`Skip::Redirect`].
    pub redirect: u64,
    /// See [`Skip::NotPage`].
    pub not_page: u64,
    /// See [`Skip::BadUrl`].
    pub bad_url: u64,
    /// See [`Skip::BadTimestamp`].
    pub bad_timestamp: u64,
}

impl SkipCounts {
    fn add(&mut self, skip: Skip) {
        self.total += 1;
        *match skip {
            Skip::NonWeb => &mut self.non_web,
            Skip::Subframe => &mut self.subframe,
            Skip::Redirect => &mut self.redirect,
            Skip::NotPage => &mut self.not_page,
            Skip::BadUrl => &mut self.bad_url,
            Skip::BadTimestamp => &mut self.bad_timestamp,
        } += 1;
    }

    fn merge(&mut self, other: &SkipCounts) {
        self.total += other.total;
        self.non_web += other.non_web;
        self.subframe += other.subframe;
        self.redirect += other.redirect;
        self.not_page += other.not_page;
        self.bad_url += other.bad_url;
        self.bad_timestamp += other.bad_timestamp;
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
    /// False if the import was cancelled before the end of the file.
    pub complete: bool,
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
    /// The visits after `:after`, by id, with columns `id`, `url`, `title` and what `read` needs.
    rows_sql: &'static str,
    read: for<'r> fn(&'r Row<'_>) -> rusqlite::Result<RawVisit<'r>>,
}

/// One browser visit as read, before the checks every source shares.
pub(crate) struct RawVisit<'r> {
    id: i64,
    url: ValueRef<'r>,
    title: ValueRef<'r>,
    /// `None` when missing, not a number or out of range.
    visited_at: Option<Timestamp>,
    /// Set when the source itself says this is not a page view.
    skip: Option<Skip>,
}

/// `micros` (since the Unix epoch) as a timestamp, if it is in the accepted range.
fn timestamp_in_range(micros: i64) -> Option<Timestamp> {
    (MIN_VISIT_MICROS..MAX_VISIT_MICROS)
        .contains(&micros)
        .then_some(Timestamp(micros))
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

/// Imports the visits of `path` (a `browser` history file) added since the last import.
/// `progress` hears after every committed batch.
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
            return Err(Error::InvalidConfig("--source must not be empty".into()));
        }
        Some(s) => s.trim().to_owned(),
        None => default_source(browser, path),
    };
    let snapshot = Snapshot::take(path, spec.schema, browser.file_hint())?;
    let read_failed = |e: rusqlite::Error| Error::Import {
        path: path.to_path_buf(),
        problem: format!("reading its visits failed ({e})"),
    };
    let after = store.with_conn(|c| cursor::get_last_visit_id(c, &source))?;
    let total: u64 = snapshot
        .conn()
        .query_row(spec.count_sql, named_params! { ":after": after }, |r| r.get(0))
        .map_err(read_failed)?;
    let mut stmt = snapshot.conn().prepare(spec.rows_sql).map_err(read_failed)?;
    let mut rows = stmt
        .query(named_params! { ":after": after })
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
        complete: false,
    };
    let path_text = path.to_string_lossy();
    let batch_size = opts.batch_size.max(1);
    progress(Progress { read: 0, total });
    loop {
        if opts.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Ok(report);
        }
        let now = store.now();
        let batch = store.write(None, |tx| {
            let mut batch = Batch::default();
            while batch.read < batch_size as u64 {
                let Some(row) = rows.next().map_err(read_failed)? else {
                    batch.end_of_file = true;
                    break;
                };
                let raw = (spec.read)(row).map_err(read_failed)?;
                batch.read += 1;
                batch.last_visit_id = Some(raw.id);
                store_visit(tx, &raw, &source, now, &mut batch)?;
            }
            if let Some(last) = batch.last_visit_id {
                cursor::save_cursor_in(tx, &source, browser, &path_text, last, now)?;
            }
            Ok(batch)
        })?;
        if batch.imported > 0 {
            store.notify(Change::Visits);
        }
        report.add(&batch);
        progress(Progress {
            read: report.read,
            total: total.max(report.read),
        });
        if batch.end_of_file {
            report.complete = true;
            return Ok(report);
        }
    }
}

/// What one committed batch did.
#[derive(Default)]
struct Batch {
    read: u64,
    imported: u64,
    already_present: u64,
    new_websites: u64,
    skipped: SkipCounts,
    repaired_titles: u64,
    last_visit_id: Option<i64>,
    end_of_file: bool,
}

impl ImportReport {
    fn add(&mut self, b: &Batch) {
        self.read += b.read;
        self.imported += b.imported;
        self.already_present += b.already_present;
        self.new_websites += b.new_websites;
        self.skipped.merge(&b.skipped);
        self.repaired_titles += b.repaired_titles;
        if let Some(last) = b.last_visit_id {
            self.last_visit_id = last;
        }
    }
}

/// Checks one browser visit and stores it, or counts why not. Only a database error is an error.
fn store_visit(
    tx: &rusqlite::Transaction<'_>,
    raw: &RawVisit<'_>,
    source: &str,
    now: Timestamp,
    batch: &mut Batch,
) -> Result<()> {
    let verdict = check_visit(raw);
    let (url, visited_at, domain) = match verdict {
        Ok(ok) => ok,
        Err(skip) => {
            batch.skipped.add(skip);
            return Ok(());
        }
    };
    let (title, repaired) = read_title(raw.title);
    let source_visit_id = raw.id.to_string();
    let recorded = record_visit_for_domain_in(
        tx,
        &NewVisit {
            url,
            title: title.as_deref(),
            visited_at,
            source,
            source_visit_id: Some(&source_visit_id),
        },
        &domain,
        now,
    )?;
    if recorded.inserted {
        batch.imported += 1;
        batch.repaired_titles += u64::from(repaired);
    } else {
        batch.already_present += 1;
    }
    batch.new_websites += u64::from(recorded.new_website);
    Ok(())
}

/// The checks every source shares, in order: what the source says, the URL's bytes and scheme, the
/// time, then the URL's host.
fn check_visit<'r>(raw: &RawVisit<'r>) -> std::result::Result<(&'r str, Timestamp, Domain), Skip> {
    if let Some(skip) = raw.skip {
        return Err(skip);
    }
    let url = match raw.url {
        ValueRef::Text(b) | ValueRef::Blob(b) => std::str::from_utf8(b).map_err(|_| Skip::BadUrl)?,
        _ => return Err(Skip::BadUrl),
    };
    match scheme(url) {
        Some(s) if s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https") => {}
        Some(_) => return Err(Skip::NonWeb),
        None => return Err(Skip::BadUrl),
    }
    let visited_at = raw.visited_at.ok_or(Skip::BadTimestamp)?;
    let domain = Domain::from_url(url).map_err(|_| Skip::BadUrl)?;
    Ok((url, visited_at, domain))
}

/// The scheme of `url` (what comes before the first `:`), if it looks like one.
fn scheme(url: &str) -> Option<&str> {
    let url = url.trim_start_matches(|c: char| c <= ' ');
    let (scheme, _) = url.split_once(':')?;
    let valid = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(scheme)
}

/// The title as text, and whether it had to be repaired (invalid UTF-8, control characters, not
/// text at all). The visit keeps a repaired title rather than being lost for it;
/// `clean_title` turns control characters into spaces when it is stored.
fn read_title(value: ValueRef<'_>) -> (Option<Cow<'_, str>>, bool) {
    match value {
        ValueRef::Null => (None, false),
        ValueRef::Text(b) | ValueRef::Blob(b) => {
            let text = String::from_utf8_lossy(b);
            let repaired = matches!(text, Cow::Owned(_))
                || matches!(value, ValueRef::Blob(_))
                || text.chars().any(char::is_control);
            (Some(text), repaired)
        }
        ValueRef::Integer(_) | ValueRef::Real(_) => (None, true),
    }
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
                progress(&profile, p)
            });
            ProfileImport { profile, result }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_are_read_without_parsing() {
        assert_eq!(scheme("https://a.example/"), Some("https"));
        assert_eq!(scheme("  HTTP://a.example/"), Some("HTTP"));
        assert_eq!(scheme("chrome-extension://abc/x.html"), Some("chrome-extension"));
        assert_eq!(scheme("about:blank"), Some("about"));
        assert_eq!(scheme("no scheme here"), None);
        assert_eq!(scheme("/relative:path"), None);
    }

    #[test]
    fn titles_are_repaired_not_dropped() {
        assert_eq!(read_title(ValueRef::Null), (None, false));
        let (t, repaired) = read_title(ValueRef::Text(b"Stadt M\xc3\xbcnchen"));
        assert_eq!((t.as_deref(), repaired), (Some("Stadt München"), false));
        let (t, repaired) = read_title(ValueRef::Text(b"bad \xff byte"));
        assert_eq!((t.as_deref(), repaired), (Some("bad \u{fffd} byte"), true));
        assert!(read_title(ValueRef::Text(b"bell\x07")).1);
        assert_eq!(read_title(ValueRef::Integer(7)), (None, true));
    }

    #[test]
    fn visit_times_outside_1990_to_2200_are_refused() {
        assert_eq!(timestamp_in_range(MIN_VISIT_MICROS - 1), None);
        assert_eq!(timestamp_in_range(MAX_VISIT_MICROS), None);
        assert_eq!(
            timestamp_in_range(1_795_941_531_135_765),
            Some(Timestamp(1_795_941_531_135_765))
        );
    }

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
}
