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
    /// When a batch last moved it.
    pub updated_at: Timestamp,
}

/// The last visit id read from `source`, or 0 before its first import.
pub fn get_last_visit_id(conn: &Connection, source: &str) -> Result<i64> {
    Ok(conn
        .prepare_cached(r#"SELECT last_visit_id FROM import_cursor WHERE source = :source"#)?
        .query_row(named_params! { ":source": source }, |r| r.get("last_visit_id"))
        .optional()?
        .unwrap_or(0))
}

/// Moves `source`'s cursor to `last_visit_id`, in the caller's batch transaction.
pub fn save_cursor_in(
    tx: &Transaction<'_>,
    source: &str,
    browser: Browser,
    path: &str,
    last_visit_id: i64,
    now: Timestamp,
) -> Result<()> {
    tx.prepare_cached(
        r#"INSERT INTO import_cursor (source, browser, path, last_visit_id, updated_at)
           VALUES (:source, :browser, :path, :last_visit_id, :now)
           ON CONFLICT (source) DO UPDATE
           SET browser = excluded.browser, path = excluded.path,
               last_visit_id = excluded.last_visit_id, updated_at = excluded.updated_at"#,
    )?
    .execute(named_params! {
        ":source": source,
        ":browser": browser.as_str(),
        ":path": path,
        ":last_visit_id": last_visit_id,
        ":now": now,
    })?;
    Ok(())
}

/// Every stored cursor, by source.
pub fn list_cursors(conn: &Connection) -> Result<Vec<Cursor>> {
    let mut stmt = conn.prepare_cached(
        r#"SELECT source, browser, path, last_visit_id, updated_at FROM import_cursor ORDER BY source"#,
    )?;
    let rows = stmt.query_map([], |r| {
        let browser: String = r.get("browser")?;
        Ok(Cursor {
            source: r.get("source")?,
            // The CHECK constraint allows only the three names `Browser` parses.
            browser: browser.parse().unwrap_or(Browser::Chrome),
            path: r.get("path")?,
            last_visit_id: r.get("last_visit_id")?,
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
