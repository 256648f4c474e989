//! What counts as a visit: the checks every source shares, and why a browser visit is skipped.
//!
//! A source module reads a row into a [`RawVisit`] (saying itself when the row is a subframe or a
//! redirect); [`check_visit`] then refuses what is not an `http`/`https` page with a readable URL
//! and a plausible time. Nothing here fails: a bad row is a [`Skip`], counted in [`SkipCounts`].

use std::borrow::Cow;

use rusqlite::types::ValueRef;

use crate::domain::Domain;
use crate::time::Timestamp;
use crate::visits::MAX_TITLE_CHARS;

pub use crate::visits::{MAX_VISIT_MICROS, MIN_VISIT_MICROS};

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
    /// A visit to a domain on the never-record list (`sitetrail blocked`).
    Blocked,
    /// A visit the user forgot (by id, website or time range): never imported again.
    Forgotten,
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
    /// See [`Skip::Blocked`].
    pub blocked: u64,
    /// See [`Skip::Forgotten`].
    pub forgotten: u64,
}

impl SkipCounts {
    pub(super) fn add(&mut self, skip: Skip) {
        self.total += 1;
        *match skip {
            Skip::NonWeb => &mut self.non_web,
            Skip::Subframe => &mut self.subframe,
            Skip::Redirect => &mut self.redirect,
            Skip::NotPage => &mut self.not_page,
            Skip::BadUrl => &mut self.bad_url,
            Skip::BadTimestamp => &mut self.bad_timestamp,
            Skip::Blocked => &mut self.blocked,
            Skip::Forgotten => &mut self.forgotten,
        } += 1;
    }

    pub(super) fn merge(&mut self, other: &SkipCounts) {
        self.total += other.total;
        self.non_web += other.non_web;
        self.subframe += other.subframe;
        self.redirect += other.redirect;
        self.not_page += other.not_page;
        self.bad_url += other.bad_url;
        self.bad_timestamp += other.bad_timestamp;
        self.blocked += other.blocked;
        self.forgotten += other.forgotten;
    }
}

/// Where a source reads the columns of one visit row: a row of its visits query, or the values
/// of one given as a list ([`RowValues`]: fuzzing and tests, no database needed).
pub(crate) trait Columns<'r> {
    /// The value of column `name`.
    fn value(&self, name: &str) -> rusqlite::Result<ValueRef<'r>>;
}

impl<'r> Columns<'r> for &'r rusqlite::Row<'_> {
    fn value(&self, name: &str) -> rusqlite::Result<ValueRef<'r>> {
        self.get_ref(name)
    }
}

/// One visit row given as its column values, by column name (the names of the source's visits
/// query: `id`, `url`, `title` and the source's own): see [`read_row`](super::read_row).
#[derive(Clone, Copy, Debug)]
pub struct RowValues<'v>(pub &'v [(&'v str, ValueRef<'v>)]);

impl<'v> Columns<'v> for RowValues<'v> {
    fn value(&self, name: &str) -> rusqlite::Result<ValueRef<'v>> {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .ok_or_else(|| rusqlite::Error::InvalidColumnName(name.to_owned()))
    }
}

/// Column `name` as an integer, refused as `Row::get` refuses a value of another type.
pub(super) fn integer<'r>(row: &dyn Columns<'r>, name: &str) -> rusqlite::Result<i64> {
    match row.value(name)? {
        ValueRef::Integer(i) => Ok(i),
        other => Err(rusqlite::Error::InvalidColumnType(
            0,
            name.to_owned(),
            other.data_type(),
        )),
    }
}

/// One browser visit as read, before the checks every source shares.
pub(crate) struct RawVisit<'r> {
    pub(super) id: i64,
    pub(super) url: ValueRef<'r>,
    pub(super) title: ValueRef<'r>,
    /// `None` when missing, not a number or out of range.
    pub(super) visited_at: Option<Timestamp>,
    /// The visit time as the browser stores it, as an integer (see `SourceSpec::time_key`).
    pub(super) time_key: Option<i64>,
    /// Set when the source itself says this is not a page view.
    pub(super) skip: Option<Skip>,
    /// How long the page was open (ms), where the source records it (Chromium): stored as the
    /// visit's estimated time (`time_spent`).
    pub(super) duration_ms: Option<i64>,
}

impl<'r> RawVisit<'r> {
    /// The visit in `row` (columns `id`, `url`, `title`), whose time the browser stores as
    /// `time_key` and which is `unix_micros` since the Unix epoch.
    pub(super) fn from_row(
        row: &dyn Columns<'r>,
        time_key: Option<i64>,
        unix_micros: Option<i64>,
        skip: Option<Skip>,
    ) -> rusqlite::Result<Self> {
        Ok(RawVisit {
            id: integer(row, "id")?,
            url: row.value("url")?,
            title: row.value("title")?,
            visited_at: unix_micros.and_then(timestamp_in_range),
            time_key,
            skip,
            duration_ms: None,
        })
    }
}

/// A visit that passed the checks, as it is stored.
pub(super) struct Accepted<'r> {
    pub(super) url: &'r str,
    /// `url` as parsed (once, for its domain): its stored form is made from it.
    pub(super) parsed: url::Url,
    pub(super) visited_at: Timestamp,
    pub(super) domain: Domain,
    pub(super) title: Option<Cow<'r, str>>,
    /// True if the title had to be repaired.
    pub(super) title_repaired: bool,
    /// The browser's id with the visit's time: the same row always gives the same key
    /// (idempotent imports), and a browser that reuses an id after its history was cleared
    /// (Firefox does) gives a new visit a new key.
    pub(super) source_visit_id: String,
}

/// The checks and repairs every visit gets: the visit to store, or why it is skipped.
pub(super) fn accept<'r>(raw: &RawVisit<'r>) -> std::result::Result<Accepted<'r>, Skip> {
    let (url, visited_at, (domain, parsed)) = check_visit(raw)?;
    let (title, title_repaired) = read_title(raw.title);
    Ok(Accepted {
        url,
        parsed,
        visited_at,
        domain,
        title,
        title_repaired,
        source_visit_id: format!("{}@{}", raw.id, visited_at.as_micros()),
    })
}

/// One browser visit as the importer would store it (see [`read_row`](super::read_row)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowVisit {
    /// The URL as the browser stored it.
    pub url: String,
    /// Its website.
    pub domain: Domain,
    /// When it happened.
    pub visited_at: Timestamp,
    /// The title as stored (repaired, control characters as spaces, cut).
    pub title: Option<String>,
    /// True if the title had to be repaired.
    pub title_repaired: bool,
    /// The key that makes importing it twice store it once.
    pub source_visit_id: String,
}

impl From<Accepted<'_>> for RowVisit {
    fn from(a: Accepted<'_>) -> RowVisit {
        RowVisit {
            url: a.url.to_owned(),
            domain: a.domain,
            visited_at: a.visited_at,
            title: crate::visits::clean_title(a.title.as_deref()),
            title_repaired: a.title_repaired,
            source_visit_id: a.source_visit_id,
        }
    }
}

/// `micros` (since the Unix epoch) as a timestamp, if it is in the accepted range.
pub(super) fn timestamp_in_range(micros: i64) -> Option<Timestamp> {
    (MIN_VISIT_MICROS..MAX_VISIT_MICROS)
        .contains(&micros)
        .then_some(Timestamp(micros))
}

/// The checks every source shares, in order: what the source says, the URL's bytes and scheme, the
/// time, then the URL's host.
fn check_visit<'r>(
    raw: &RawVisit<'r>,
) -> std::result::Result<(&'r str, Timestamp, (Domain, url::Url)), Skip> {
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
    let parsed = Domain::from_url_parsed(url).map_err(|_| Skip::BadUrl)?;
    Ok((url, visited_at, parsed))
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

/// Bytes of a title looked at: enough for the `MAX_TITLE_CHARS` characters that are kept, so a
/// hostile multi-megabyte title costs no more than a normal one.
const MAX_TITLE_BYTES: usize = 4 * MAX_TITLE_CHARS;

/// The first `MAX_TITLE_BYTES` of `b`, not cutting a UTF-8 sequence in two (a cut is not damage).
fn title_prefix(b: &[u8]) -> &[u8] {
    if b.len() <= MAX_TITLE_BYTES {
        return b;
    }
    let head = &b[..MAX_TITLE_BYTES];
    match std::str::from_utf8(head) {
        Err(e) if e.error_len().is_none() => &head[..e.valid_up_to()],
        _ => head,
    }
}

/// The title as text, and whether it had to be repaired (invalid UTF-8, control characters, not
/// text at all). The visit keeps a repaired title rather than being lost for it;
/// `clean_title` turns control characters into spaces when it is stored.
fn read_title(value: ValueRef<'_>) -> (Option<Cow<'_, str>>, bool) {
    match value {
        ValueRef::Null => (None, false),
        ValueRef::Text(b) | ValueRef::Blob(b) => {
            let text = String::from_utf8_lossy(title_prefix(b));
            let repaired = matches!(text, Cow::Owned(_))
                || matches!(value, ValueRef::Blob(_))
                || text.chars().any(char::is_control);
            (Some(text), repaired)
        }
        ValueRef::Integer(_) | ValueRef::Real(_) => (None, true),
    }
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
        // A huge title is cut before it is converted, at a character boundary: not "repaired".
        // "a" then two-byte characters: byte MAX_TITLE_BYTES falls inside one of them.
        let huge = format!("a{}", "ü".repeat(1_000_000));
        let (t, repaired) = read_title(ValueRef::Text(huge.as_bytes()));
        assert!(!repaired);
        assert_eq!(t.unwrap().chars().count(), 1 + (MAX_TITLE_BYTES - 1) / 2);
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
}
