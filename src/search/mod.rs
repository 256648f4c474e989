//! The full-text index of visits (`visit_fts`, an FTS5 table): what is indexed, how a visit maps
//! to its index row, and keeping the two in step.
//!
//! The index is contentless: it holds tokens and rowids, never a copy of the text. A visit's
//! rowid is its **key**: the first 8 bytes of its id (a UUIDv7 made from its visit time) read as a
//! big-endian integer, i.e. its millisecond and sub-millisecond time. So rowid order is time
//! order, FTS5 returns matches newest first by itself (`ORDER BY rowid DESC`), a page cursor or a
//! date range is a rowid range, and a rowid leads back to its visit by a primary-key range seek,
//! with no mapping table to write on every visit. [`free_visit_id`] keeps keys unique: a visit
//! whose key is taken (two visits in the same microsecond) gets the next free sub-millisecond
//! value, which reorders it by less than a microsecond.
//!
//! Invariants:
//! - A visit is in the index iff it is in `visit` (once [`backfill()`] is done): every insert goes
//!   through `visits::insert_visit_in`, which calls [`index_visit_in`] in the same transaction;
//!   every delete goes through `forget`, which calls [`unindex_visit_in`] in the same transaction.
//! - No two visits share a key (checked where ids are made: [`free_visit_id`]).
//!
//! What is indexed per visit ([`IndexedText`], which must give the same text for a stored visit
//! forever: deleting a row from a contentless index takes the text it was indexed with): the domain in Unicode (and in punycode when that
//! differs, so both spellings find it), the title as stored, and the URL without its scheme, host
//! and fragment (its path and query), cut at [`MAX_INDEXED_URL_BYTES`]: the host is the domain
//! already, and long query strings are tracking noise that would double the index.

mod backfill;
pub mod query;
pub mod unicode61;

use rusqlite::{named_params, Connection, OptionalExtension, Transaction};

use crate::error::{Error, Result};
use crate::ids::VisitId;
use crate::time::Timestamp;

pub use backfill::{backfill, backfill_batch, get_index_status, BackfillOptions, IndexStatus};

/// Bytes of a URL's path and query that are indexed.
pub const MAX_INDEXED_URL_BYTES: usize = 300;

/// The index key (FTS rowid) of a visit: the first 8 bytes of its id, big-endian.
pub fn key_of(id: VisitId) -> i64 {
    let b = id.0.as_bytes();
    i64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// The smallest and the largest visit id whose key is `key`.
pub fn id_range(key: i64) -> (VisitId, VisitId) {
    let head = key.to_be_bytes();
    let (mut lo, mut hi) = ([0u8; 16], [0xffu8; 16]);
    lo[..8].copy_from_slice(&head);
    hi[..8].copy_from_slice(&head);
    (
        VisitId(uuid::Uuid::from_bytes(lo)),
        VisitId(uuid::Uuid::from_bytes(hi)),
    )
}

/// `id` with its key's 12-bit sub-millisecond field one higher, or `None` at the end of its
/// millisecond. The random rest of the id is kept.
fn next_key(id: VisitId) -> Option<VisitId> {
    let mut b = *id.0.as_bytes();
    let fraction = (u16::from(b[6] & 0x0f) << 8) | u16::from(b[7]);
    if fraction >= 0x0fff {
        return None;
    }
    let next = fraction + 1;
    let [hi, lo] = next.to_be_bytes();
    b[6] = (b[6] & 0xf0) | hi;
    b[7] = lo;
    Some(VisitId(uuid::Uuid::from_bytes(b)))
}

/// True if a stored visit has key `key`.
fn key_taken(conn: &Connection, key: i64) -> Result<bool> {
    let (lo, hi) = id_range(key);
    Ok(conn
        .prepare_cached(r#"SELECT EXISTS (SELECT 1 FROM visit WHERE id >= :lo AND id <= :hi)"#)?
        .query_row(named_params! { ":lo": lo, ":hi": hi }, |r| r.get(0))?)
}

/// A new id for a visit made at `at` whose key no stored visit has: `VisitId::at(at)`, or, when a
/// visit of the same microsecond holds that key, the next free key of the millisecond. Call in
/// the write transaction that inserts the visit (nobody else can take the key meanwhile).
pub fn free_visit_id(conn: &Connection, at: Timestamp) -> Result<VisitId> {
    free_id_from(conn, VisitId::at(at))
}

/// `id`, or the first id after it (same millisecond, same random tail) whose key is free.
pub(crate) fn free_id_from(conn: &Connection, id: VisitId) -> Result<VisitId> {
    let mut id = id;
    loop {
        if !key_taken(conn, key_of(id))? {
            return Ok(id);
        }
        id = next_key(id).ok_or_else(|| {
            Error::Conflict(
                "more than 4,096 visits are stored in this visit's millisecond: it cannot be told apart from them"
                    .into(),
            )
        })?;
    }
}

/// Free keys for a writer adding many visits in one transaction, mostly in time order (an
/// import): where [`free_visit_id`] asks the database about every key, this remembers the gap
/// between two stored visits that the last key it gave fell into, so the next visit's key, when
/// it falls into the same gap, needs no query. One query per gap between stored visits instead
/// of one per visit: none at all for an import into a database holding nothing newer.
///
/// Valid within one transaction only, and only while every visit inserted meanwhile got its id
/// here (the gap is narrowed past each id given): [`FreeKeys::default`] for each transaction.
#[derive(Clone, Copy, Debug, Default)]
pub struct FreeKeys {
    /// Keys strictly between these are free: the last key given (or, before any was, one below
    /// the one asked about) and the next stored key above it (`None`: no stored visit above).
    gap: Option<(i64, Option<i64>)>,
}

impl FreeKeys {
    /// A new id for a visit made at `at` whose key no stored visit has, as [`free_visit_id`]
    /// gives it. The caller inserts the visit under it (or under none) before asking again.
    pub fn free_visit_id(&mut self, conn: &Connection, at: Timestamp) -> Result<VisitId> {
        let mut id = VisitId::at(at);
        loop {
            let key = key_of(id);
            let free = match self.gap {
                Some((after, before)) if after < key && before.is_none_or(|b| key < b) => true,
                _ => {
                    let next = next_stored_key(conn, key)?;
                    self.gap = Some((key.saturating_sub(1), next));
                    next != Some(key)
                }
            };
            if free {
                // Later keys of this gap are free up to its end; this one is about to be taken.
                if let Some((after, _)) = &mut self.gap {
                    *after = key;
                }
                return Ok(id);
            }
            id = next_key(id).ok_or_else(|| {
                Error::Conflict(
                    "more than 4,096 visits are stored in this visit's millisecond: it cannot be told apart from them"
                        .into(),
                )
            })?;
        }
    }
}

/// The smallest key of a stored visit at or above `key`, if any.
fn next_stored_key(conn: &Connection, key: i64) -> Result<Option<i64>> {
    let (lo, _) = id_range(key);
    let next: Option<VisitId> = conn
        .prepare_cached(r#"SELECT id FROM visit WHERE id >= :lo ORDER BY id LIMIT 1"#)?
        .query_row(named_params! { ":lo": lo }, |r| r.get("id"))
        .optional()?;
    Ok(next.map(key_of))
}

/// The text indexed for one visit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexedText {
    /// The domain in Unicode, followed by its punycode when that differs.
    pub domain: String,
    /// The title as stored.
    pub title: Option<String>,
    /// The URL's path and query, cut at [`MAX_INDEXED_URL_BYTES`].
    pub url: String,
}

impl IndexedText {
    /// What is indexed for a visit to `url` (whose website is `domain`) titled `title`.
    pub fn new(domain: &str, url: &str, title: Option<&str>) -> IndexedText {
        IndexedText {
            domain: domain_text(domain),
            title: title.map(str::to_owned),
            url: url_text(url).to_owned(),
        }
    }
}

/// The domain as people type it (`münchen.example`) and as stored (`xn--mnchen-3ya.example`).
fn domain_text(domain: &str) -> String {
    match crate::domain::unicode_form(domain) {
        std::borrow::Cow::Owned(unicode) => format!("{unicode} {domain}"),
        std::borrow::Cow::Borrowed(_) => domain.to_owned(),
    }
}

/// The part of `url` after its host and before its fragment (path and query), cut at a character
/// boundary at [`MAX_INDEXED_URL_BYTES`].
fn url_text(url: &str) -> &str {
    let url = url.trim();
    let after_scheme = url.find("://").map_or(url, |i| &url[i + 3..]);
    let rest = after_scheme
        .find(['/', '?', '#'])
        .map_or("", |i| &after_scheme[i..]);
    let rest = rest.split('#').next().unwrap_or("");
    if rest.len() <= MAX_INDEXED_URL_BYTES {
        return rest;
    }
    let mut end = MAX_INDEXED_URL_BYTES;
    while !rest.is_char_boundary(end) {
        end -= 1;
    }
    &rest[..end]
}

/// Adds the visit `id` to the index, in the caller's transaction (the one that inserted it).
pub fn index_visit_in(tx: &Transaction<'_>, id: VisitId, text: &IndexedText) -> Result<()> {
    insert_row_in(tx, key_of(id), text)
}

/// The index row of key `key`.
fn insert_row_in(tx: &Transaction<'_>, key: i64, text: &IndexedText) -> Result<()> {
    tx.prepare_cached(
        r#"INSERT INTO visit_fts (rowid, domain, title, url) VALUES (:key, :domain, :title, :url)"#,
    )?
    .execute(named_params! {
        ":key": key, ":domain": text.domain, ":title": text.title, ":url": text.url,
    })?;
    Ok(())
}

/// Index rows waiting to be added together, before their transaction commits.
///
/// FTS5 keeps the terms of the rows it is given in memory and writes them to disk as a segment
/// only at the next statement savepoint (a statement that may have to undo itself alone: one
/// inserting several rows, firing a trigger or, for an import, storing the estimated times), at
/// the commit, when a key is not above the last one, or when the pending terms pass `hashsize`.
/// Indexed as each visit was inserted, between statements that open savepoints, every visit
/// became a segment of its own, merged again and again (about ten index statements a visit).
/// Added together at the end, in key order, a batch of visits is one segment. Each row is its own
/// one-row statement, which opens no savepoint: measured faster than the batch's rows in one
/// statement read from JSON (`serde_json` writing it, SQLite's `json_each` and `->>` reading it:
/// docs/BENCHMARKS.md), and no copy of the batch's text in memory.
#[derive(Debug, Default)]
pub struct IndexBatch {
    rows: Vec<(i64, IndexedText)>,
}

impl IndexBatch {
    /// Queues the visit `id` with `text`; [`IndexBatch::flush_in`] adds it.
    pub fn add(&mut self, id: VisitId, text: IndexedText) {
        self.rows.push((key_of(id), text));
    }

    /// Adds every queued row to the index in the caller's transaction (the one that inserted the
    /// visits), in key order, and empties the batch.
    pub fn flush_in(&mut self, tx: &Transaction<'_>) -> Result<()> {
        self.rows.sort_unstable_by_key(|(key, _)| *key);
        for (key, text) in self.rows.drain(..) {
            insert_row_in(tx, key, &text)?;
        }
        Ok(())
    }
}

/// Removes the visit `id`, indexed with `text` (rebuilt from the stored visit with
/// [`IndexedText::new`]), from the index, in the caller's transaction (the one that deletes it).
/// With the table's `secure-delete` option its tokens leave the index pages at once.
pub fn unindex_visit_in(tx: &Transaction<'_>, id: VisitId, text: &IndexedText) -> Result<()> {
    tx.prepare_cached(
        r#"INSERT INTO visit_fts (visit_fts, rowid, domain, title, url)
           VALUES ('delete', :key, :domain, :title, :url)"#,
    )?
    .execute(named_params! {
        ":key": key_of(id), ":domain": text.domain, ":title": text.title, ":url": text.url,
    })?;
    Ok(())
}

/// Empties the index, in the caller's transaction, and sets the backfill to index every visit
/// again: what a forgetting of most of the history does instead of deleting its rows one by one
/// (with the table's `secure-delete`, about a millisecond each). The forgotten visits are then
/// deleted unindexed and the backfill indexes the others. With `secure_delete = ON` on the
/// caller's connection the freed index pages are zeroed.
pub fn reset_index_in(tx: &Transaction<'_>, visits_left: u64, now: Timestamp) -> Result<()> {
    tx.prepare_cached(r#"INSERT INTO visit_fts (visit_fts) VALUES ('delete-all')"#)?
        .execute([])?;
    tx.prepare_cached(
        r#"UPDATE search_state
           SET below = X'ffffffffffffffffffffffffffffffff', total = :total, done = 0, updated_at = :now
           WHERE id = 1"#,
    )?
    .execute(named_params! { ":total": visits_left as i64, ":now": now })?;
    Ok(())
}

/// A setting of the index that FTS5 keeps in its config table (`visit_fts_config`), so it
/// outlives the connection that sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexSetting {
    /// Segments of one level merged once there are this many (0, no merging but a crisis's, or
    /// 2 to 64).
    Automerge,
    /// The bytes of pending terms FTS5 holds in memory before it writes them to disk as a segment
    /// (it also writes them at each statement savepoint and at the commit).
    Hashsize,
}

impl IndexSetting {
    /// FTS5's name of the setting.
    fn key(self) -> &'static str {
        match self {
            IndexSetting::Automerge => "automerge",
            IndexSetting::Hashsize => "hashsize",
        }
    }

    /// FTS5's value when it was never set.
    pub fn default_value(self) -> i64 {
        match self {
            IndexSetting::Automerge => DEFAULT_AUTOMERGE,
            IndexSetting::Hashsize => DEFAULT_HASHSIZE,
        }
    }
}

/// FTS5's default `automerge`: segments of one level merged once there are this many.
pub const DEFAULT_AUTOMERGE: i64 = 4;

/// FTS5's default `hashsize`: 1 MiB of pending terms.
pub const DEFAULT_HASHSIZE: i64 = 1024 * 1024;

/// The index's `setting` (its default when never set).
pub fn index_setting(conn: &Connection, setting: IndexSetting) -> Result<i64> {
    Ok(conn
        .prepare_cached(r#"SELECT v FROM visit_fts_config WHERE k = :key"#)?
        .query_row(named_params! { ":key": setting.key() }, |r| r.get::<_, i64>(0))
        .optional()?
        .unwrap_or(setting.default_value()))
}

/// Sets the index's `setting` to `value` (FTS5 refuses a value out of its range): kept in the
/// database, so it outlives the connection.
pub fn set_index_setting(conn: &Connection, setting: IndexSetting, value: i64) -> Result<()> {
    conn.prepare_cached(r#"INSERT INTO visit_fts (visit_fts, rank) VALUES (:key, :value)"#)?
        .execute(named_params! { ":key": setting.key(), ":value": value })?;
    Ok(())
}

/// True if the visit `id` is in the index. Reads FTS5's own `visit_fts_docsize` table (one row
/// per indexed document, keyed by rowid): a contentless table cannot be asked directly.
pub fn is_indexed(conn: &Connection, id: VisitId) -> Result<bool> {
    Ok(conn
        .prepare_cached(r#"SELECT EXISTS (SELECT 1 FROM visit_fts_docsize WHERE id = :key)"#)?
        .query_row(named_params! { ":key": key_of(id) }, |r| r.get(0))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_time_and_bound_their_ids() {
        let t = Timestamp::parse_rfc3339("2026-11-29T10:00:00.123456Z").unwrap();
        let (a, b) = (
            VisitId::at(t),
            VisitId::at(t.plus(std::time::Duration::from_micros(1))),
        );
        assert!(key_of(a) < key_of(b), "a later microsecond has a larger key");
        assert!(key_of(a) > 0);
        let (lo, hi) = id_range(key_of(a));
        assert!(lo <= a && a <= hi);
        let next = next_key(a).unwrap();
        assert_eq!(key_of(next), key_of(a) + 1);
        assert!(
            key_of(next) < key_of(b),
            "a bumped key stays before the next microsecond"
        );
        assert_eq!(&next.0.as_bytes()[8..], &a.0.as_bytes()[8..]);
        assert_eq!(next.0.get_version_num(), 7);
        // The last sub-millisecond value has no successor.
        let mut last = *a.0.as_bytes();
        last[6] |= 0x0f;
        last[7] = 0xff;
        assert_eq!(next_key(VisitId(uuid::Uuid::from_bytes(last))), None);
    }

    #[test]
    fn indexed_text_is_domain_title_and_path() {
        let t = IndexedText::new(
            "xn--mnchen-3ya.example",
            "https://xn--mnchen-3ya.example/stadt/rathaus?tab=2#oben",
            Some("Stadt München"),
        );
        assert_eq!(t.domain, "münchen.example xn--mnchen-3ya.example");
        assert_eq!(t.url, "/stadt/rathaus?tab=2");
        assert_eq!(IndexedText::new("github.com", "https://github.com", None).url, "");
        assert_eq!(
            IndexedText::new("a.example", "http://a.example?q=1", None).url,
            "?q=1"
        );
        let long = format!("https://a.example/{}", "é".repeat(400));
        let cut = IndexedText::new("a.example", &long, None).url;
        assert!(cut.len() <= MAX_INDEXED_URL_BYTES && cut.len() >= MAX_INDEXED_URL_BYTES - 1);
    }
}
