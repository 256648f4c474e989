//! One page of history as the history list and the search both return it: its row type, the
//! reader of a row, and the SQL naming a visit's device. Below both `history` and `search`, so
//! that the history (which hands search text to the index) and the search (which returns history
//! pages) do not depend on each other.

use crate::category::{Category, CategorySource};
use crate::ids::{VisitId, WebsiteId};
use crate::time::Timestamp;

/// One visit with its website.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HistoryRow {
    /// The visit.
    pub visit_id: VisitId,
    /// The page.
    pub url: String,
    /// Its title.
    pub title: Option<String>,
    /// When.
    pub visited_at: Timestamp,
    /// Where the visit came from (`cli`, an importer's source, ...).
    pub source: String,
    /// The website.
    pub website_id: WebsiteId,
    /// Its domain.
    pub domain: String,
    /// Its domain as people read it (Unicode for an internationalised name).
    pub display: String,
    /// Its category id, once classified.
    pub category: Option<Category>,
    /// Who set the category.
    pub category_source: Option<CategorySource>,
    /// How sure the category is (`high`, `medium`, `low`).
    pub category_confidence: Option<crate::confidence::Confidence>,
    /// The name of the device that recorded the visit, once this device syncs (this device's
    /// own name for its own visits); `None` without sync.
    pub device: Option<String>,
}

/// The name of the device that recorded visit `v` (SQL, for the history queries): a synced
/// visit's device, else this device (the linked one); NULL without sync.
macro_rules! device_name_of_v {
    () => {
        "(SELECT d.name FROM sync_device d WHERE d.device_id = coalesce(v.device_id, (SELECT l.device_id FROM sync_link l)))"
    };
}
pub(crate) use device_name_of_v;

/// A page of history, newest first.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct HistoryPage {
    /// The visits.
    pub rows: Vec<HistoryRow>,
    /// Pass as `before` to get the next page; `None` at the end (and for best-first pages).
    pub next_cursor: Option<VisitId>,
    /// Best-first pages: pass as `offset` to get the next page; `None` at the end.
    pub next_offset: Option<usize>,
}

impl HistoryPage {
    /// A newest-first page of at most `limit` rows, from a query that yields them newest first:
    /// one row more than asked is read (lazily) to tell whether there is a next page, and the
    /// last row kept is then the cursor for it.
    pub(crate) fn newest_first(
        rows: impl Iterator<Item = rusqlite::Result<HistoryRow>>,
        limit: usize,
    ) -> crate::error::Result<HistoryPage> {
        let mut rows: Vec<HistoryRow> = rows
            .take(limit.saturating_add(1))
            .collect::<rusqlite::Result<_>>()?;
        let next_cursor = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(|r| r.visit_id)
        } else {
            None
        };
        Ok(HistoryPage {
            rows,
            next_cursor,
            next_offset: None,
        })
    }
}

/// A history row from a query that selects the visit's columns with its website's `domain`,
/// `category`, `category_source` and `category_confidence` (the history page and the search).
pub(crate) fn read_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<HistoryRow> {
    let domain: String = r.get("domain")?;
    Ok(HistoryRow {
        display: crate::domain::unicode_form(&domain).into_owned(),
        domain,
        visit_id: r.get("id")?,
        url: r.get("url")?,
        title: r.get("title")?,
        visited_at: r.get("visited_at")?,
        source: r.get("source")?,
        website_id: r.get("website_id")?,
        category: r.get("category")?,
        category_source: r.get("category_source")?,
        category_confidence: r.get("category_confidence")?,
        device: r.get("device")?,
    })
}
