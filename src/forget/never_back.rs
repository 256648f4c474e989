//! Never back: what a forgetting leaves so that nothing records the forgotten again, and the
//! checks every write path makes against it.
//!
//! A forgotten visit leaves its [`visit_key`] (URL and time, hashed) in `forgotten_visit`, and an
//! imported one also its [`import_key`] (source and id in the browser) in `forgotten_import`; a
//! range forgetting leaves its tombstone. `record_visit_in` (the CLI, the extension) and sync
//! check one visit at a time ([`is_forgotten_time`], [`is_forgotten_visit`]); an import reads the
//! lists once per batch ([`ForgottenFilter`]). While a website's forgetting runs, no visit to it
//! is recorded ([`refuse_if_being_forgotten`]), so the forgetting always ends.

use rusqlite::{named_params, Connection};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::time::Timestamp;

/// The import key of an imported visit: the first 8 bytes of SHA-256 of its source, a NUL and
/// its id in the browser, as a big-endian integer. Keeps no URL, title or time in readable form.
pub fn import_key(source: &str, source_visit_id: &str) -> i64 {
    let mut h = Sha256::new();
    h.update(source.as_bytes());
    h.update([0u8]);
    h.update(source_visit_id.as_bytes());
    let d = h.finalize();
    i64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

/// The key a forgotten visit leaves in `forgotten_visit`, from what it was: the first 8 bytes of
/// SHA-256 of its URL as stored ([`crate::page_url::stored_url`]), a NUL and its time in microseconds (decimal), as a
/// big-endian integer. The same visit has the same key whatever source or copy of a history file
/// it comes from; the key keeps no URL or time in readable form.
pub fn visit_key(url: &str, visited_at: Timestamp) -> i64 {
    let mut h = Sha256::new();
    h.update(crate::page_url::stored_url(url).as_bytes());
    h.update([0u8]);
    h.update(visited_at.as_micros().to_string().as_bytes());
    let d = h.finalize();
    i64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

/// True if the visit of `url` at `t` was forgotten (its [`visit_key`] is in `forgotten_visit`).
pub fn is_forgotten_visit(conn: &Connection, url: &str, t: Timestamp) -> Result<bool> {
    Ok(conn
        .prepare_cached(r#"SELECT EXISTS (SELECT 1 FROM forgotten_visit WHERE key = :key)"#)?
        .query_row(named_params! { ":key": visit_key(url, t) }, |r| r.get(0))?)
}

/// True if the website of `domain` is being forgotten (its forgetting started and is not done),
/// by a forgetting that takes every visit: one bounded by a sync clock ends whatever arrives.
pub fn is_being_forgotten(conn: &Connection, domain: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            r#"SELECT EXISTS (
                   SELECT 1 FROM tombstone t INDEXED BY tombstone_pending_idx
                   JOIN website w ON w.id = t.website_id
                   WHERE t.completed_at IS NULL AND t.kind = 'website' AND t.sync_hlc IS NULL
                     AND w.domain = :domain)"#,
        )?
        .query_row(named_params! { ":domain": domain }, |r| r.get(0))?)
}

/// `Err(Error::Forgetting)` if the website of `domain` is being forgotten: a visit recorded
/// meanwhile would join the visits still to delete, and a writer faster than the forgetting
/// would keep it from ever ending.
pub fn refuse_if_being_forgotten(conn: &Connection, domain: &str) -> Result<()> {
    if is_being_forgotten(conn, domain)? {
        return Err(Error::Forgetting {
            domain: domain.to_owned(),
        });
    }
    Ok(())
}

/// True if `t` lies in a forgotten range.
pub fn is_forgotten_time(conn: &Connection, t: Timestamp) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            r#"SELECT EXISTS (SELECT 1 FROM tombstone INDEXED BY tombstone_range_idx
                              WHERE kind = 'range' AND since <= :t AND until >= :t)"#,
        )?
        .query_row(named_params! { ":t": t }, |r| r.get(0))?)
}

/// The forgotten ranges and whether any import key is forgotten, read once per import batch.
#[derive(Clone, Debug, Default)]
pub struct ForgottenFilter {
    ranges: Vec<(Timestamp, Timestamp)>,
    any_keys: bool,
    any_visits: bool,
    being_forgotten: Vec<String>,
}

impl ForgottenFilter {
    /// Reads the forgotten ranges (a handful) and whether there is any forgotten import key.
    pub fn load(conn: &Connection) -> Result<ForgottenFilter> {
        let mut stmt = conn.prepare_cached(
            r#"SELECT since, until FROM tombstone INDEXED BY tombstone_range_idx WHERE kind = 'range'"#,
        )?;
        let ranges = stmt
            .query_map([], |r| Ok((r.get("since")?, r.get("until")?)))?
            .collect::<rusqlite::Result<_>>()?;
        let any_keys = conn
            .prepare_cached(r#"SELECT EXISTS (SELECT 1 FROM forgotten_import)"#)?
            .query_row([], |r| r.get(0))?;
        let any_visits = conn
            .prepare_cached(r#"SELECT EXISTS (SELECT 1 FROM forgotten_visit)"#)?
            .query_row([], |r| r.get(0))?;
        let being_forgotten = conn
            .prepare_cached(
                r#"SELECT w.domain FROM tombstone t INDEXED BY tombstone_pending_idx
                   JOIN website w ON w.id = t.website_id
                   WHERE t.completed_at IS NULL AND t.kind = 'website' AND t.sync_hlc IS NULL"#,
            )?
            .query_map([], |r| r.get("domain"))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(ForgottenFilter {
            ranges,
            any_keys,
            any_visits,
            being_forgotten,
        })
    }

    /// True if the website of `domain` is being forgotten ([`is_being_forgotten`]).
    pub fn forgets_domain(&self, domain: &str) -> bool {
        self.being_forgotten.iter().any(|d| d == domain)
    }

    /// True if an imported visit of `url` at `t`, stored as (`source`, `source_visit_id`), was
    /// forgotten: its time is in a forgotten range, the visit itself (its URL and time) was
    /// forgotten from whatever source, or its import key was.
    pub fn forgets(
        &self,
        conn: &Connection,
        (url, t): (&str, Timestamp),
        source: &str,
        source_visit_id: &str,
    ) -> Result<bool> {
        if self.ranges.iter().any(|&(since, until)| since <= t && t <= until) {
            return Ok(true);
        }
        if self.any_visits && is_forgotten_visit(conn, url, t)? {
            return Ok(true);
        }
        if !self.any_keys {
            return Ok(false);
        }
        Ok(conn
            .prepare_cached(r#"SELECT EXISTS (SELECT 1 FROM forgotten_import WHERE key = :key)"#)?
            .query_row(
                named_params! { ":key": import_key(source, source_visit_id) },
                |r| r.get(0),
            )?)
    }
}
