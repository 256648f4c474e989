//! The import cursor: per source profile, the last browser visit id a committed batch has read.
//!
//! Invariant: the cursor is written only by [`save_cursor_in`], inside the transaction that
//! commits the batch's visits, so it never runs ahead of what is stored: a batch that fails or a
//! process that dies mid-batch leaves the cursor where the last committed batch put it.

use rusqlite::{named_params, Connection, OptionalExtension, Transaction};

use crate::error::Result;
use crate::store::Store;
use crate::time::Timestamp;

use super::Browser;

/// A stored cursor.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Cursor {
    /// The source name the visits were stored under (`chrome:1a2b…`, or `--source NAME`).
    pub source: String,
    /// The browser family.
    pub browser: Browser,
    /// The file last imported from.
    pub path: String,
    /// The highest visit id (in the browser's own table) already read.
    pub last_visit_id: i64,
    /// That visit's time as the browser stores it (an integer in its own unit), to notice a history
    /// that was cleared or replaced since.
    pub last_visit_time: Option<i64>,
    /// When a batch last moved it.
    pub updated_at: Timestamp,
}

/// The last visit id read from `source` and that visit's time, or `None` before its first import.
pub fn get_last_visit(conn: &Connection, source: &str) -> Result<Option<(i64, Option<i64>)>> {
    Ok(conn
        .prepare_cached(r#"SELECT last_visit_id, last_visit_time FROM import_cursor WHERE source = :source"#)?
        .query_row(named_params! { ":source": source }, |r| {
            Ok((r.get("last_visit_id")?, r.get("last_visit_time")?))
        })
        .optional()?)
}

/// Where a cursor points: a browser visit id and that visit's time as the browser stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CursorAt {
    /// The browser's visit id.
    pub visit_id: i64,
    /// Its time, as stored by the browser (`None` if it was not a number).
    pub visit_time: Option<i64>,
}

/// Moves `source`'s cursor to `at`, in the caller's batch transaction.
pub fn save_cursor_in(
    tx: &Transaction<'_>,
    source: &str,
    browser: Browser,
    path: &str,
    at: CursorAt,
    now: Timestamp,
) -> Result<()> {
    tx.prepare_cached(
        r#"INSERT INTO import_cursor (source, browser, path, last_visit_id, last_visit_time, updated_at)
           VALUES (:source, :browser, :path, :last_visit_id, :last_visit_time, :now)
           ON CONFLICT (source) DO UPDATE
           SET browser = excluded.browser, path = excluded.path,
               last_visit_id = excluded.last_visit_id, last_visit_time = excluded.last_visit_time,
               updated_at = excluded.updated_at"#,
    )?
    .execute(named_params! {
        ":source": source,
        ":browser": browser.as_str(),
        ":path": path,
        ":last_visit_id": at.visit_id,
        ":last_visit_time": at.visit_time,
        ":now": now,
    })?;
    Ok(())
}

/// Every stored cursor, by source.
pub fn list_cursors(conn: &Connection) -> Result<Vec<Cursor>> {
    let mut stmt = conn.prepare_cached(
        r#"SELECT source, browser, path, last_visit_id, last_visit_time, updated_at
           FROM import_cursor ORDER BY source"#,
    )?;
    let rows = stmt.query_map([], |r| {
        let browser: String = r.get("browser")?;
        Ok(Cursor {
            source: r.get("source")?,
            // The CHECK constraint allows only the three names `Browser` parses.
            browser: browser.parse().unwrap_or(Browser::Chrome),
            path: r.get("path")?,
            last_visit_id: r.get("last_visit_id")?,
            last_visit_time: r.get("last_visit_time")?,
            updated_at: r.get("updated_at")?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

impl Store {
    /// Every import cursor.
    pub fn import_cursors(&self) -> Result<Vec<Cursor>> {
        self.with_conn(list_cursors)
    }
}
