//! Reading history: keyset-paginated visit pages with search and filters, and the summaries the
//! app's overview shows (visits per category, top websites).
//!
//! A visit's id is a UUIDv7 made from its `visited_at`, so `ORDER BY id DESC` is newest first and
//! a page continues from the last id seen (never OFFSET): every page costs the same at any depth.
//! Time ranges become id ranges ([`VisitId::lower_bound`], [`VisitId::upper_bound`]).
//!
//! A page with search text is served by the full-text index instead ([`crate::search::query`]),
//! newest first the same way (index rowids are visit keys, in time order), or best first.

use rusqlite::{named_params, Connection};

use crate::category::{Category, CategorySource};
use crate::error::{Error, Result};
use crate::ids::{VisitId, WebsiteId};
use crate::store::Store;
use crate::time::Timestamp;

/// Largest page the history query returns.
pub const MAX_PAGE: usize = 500;

/// Which category a history query keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CategoryFilter {
    /// Websites in this category.
    Is(Category),
    /// Websites not classified yet.
    Uncategorized,
}

/// The order of a history page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    /// Newest first (keyset pages: `before`).
    #[default]
    Newest,
    /// Best match first (search only; pages by `offset`), among the newest
    /// [`RANK_CANDIDATES`](crate::search::query::RANK_CANDIDATES) matches.
    Rank,
}

/// A history query.
#[derive(Clone, Debug, Default)]
pub struct HistoryQuery {
    /// Words to find in the domain, title or URL: every word, as a word or a word's beginning,
    /// case- and accent-insensitively (see [`crate::search::query`]).
    pub search: Option<String>,
    /// Only visits to websites in this category.
    pub category: Option<CategoryFilter>,
    /// Only visits at or after this time.
    pub from: Option<Timestamp>,
    /// Only visits at or before this time.
    pub to: Option<Timestamp>,
    /// Continue after this visit (the `next_cursor` of the previous page).
    pub before: Option<VisitId>,
    /// Rows per page (1..=[`MAX_PAGE`]).
    pub limit: usize,
    /// The order (best first needs search words).
    pub sort: SortOrder,
    /// Rows to skip (best-first pages only: the `next_offset` of the previous page).
    pub offset: usize,
    /// Only visits recorded on the device of this name (sync).
    pub device: Option<String>,
}

pub(crate) use crate::history_page::{device_name_of_v, read_row};
pub use crate::history_page::{HistoryPage, HistoryRow};

/// Visits per category in a time window.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CategoryCount {
    /// The category id, or `None` for websites not classified yet.
    pub category: Option<Category>,
    /// Visits in the window.
    pub visits: i64,
    /// Distinct websites visited in the window.
    pub websites: i64,
}

/// A website and its visits in a time window.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TopWebsite {
    /// The website.
    pub website_id: WebsiteId,
    /// Its domain.
    pub domain: String,
    /// Its category.
    pub category: Option<Category>,
    /// Who set it.
    pub category_source: Option<CategorySource>,
    /// How sure it is.
    pub category_confidence: Option<crate::confidence::Confidence>,
    /// Visits in the window.
    pub visits: i64,
}

/// The history page query (no search text). Rows come newest first straight off the visit
/// primary key (a test checks the plan: no sort), each joined to its website by primary key. The
/// page's cursor and the date range are folded into one id range `[:low, :below)`, so a page deep
/// in the history starts its index search at the cursor instead of stepping over every newer visit
/// (a test counts the steps).
pub const HISTORY_SQL: &str = concat!(
    r#"SELECT v.id, v.url, v.title, v.visited_at, v.source,
           w.id AS website_id, w.domain, w.category, w.category_source, w.category_confidence, "#,
    device_name_of_v!(),
    r#" AS device
    FROM visit v JOIN website w ON w.id = v.website_id
    WHERE v.id >= :low AND v.id < :below
      AND (:category IS NULL OR w.category = :category)
      AND (:uncategorized = 0 OR w.category IS NULL)
      AND (:device IS NULL OR "#,
    device_name_of_v!(),
    r#" = :device)
    ORDER BY v.id DESC"#
);

/// The exclusive upper end of a page's id range: just past the range's last id, or the cursor if
/// that comes first.
pub fn page_end(to: Option<Timestamp>, before: Option<VisitId>) -> VisitId {
    let after_to = to
        .map(|t| {
            VisitId(uuid::Uuid::from_u128(
                VisitId::upper_bound(t).0.as_u128().saturating_add(1),
            ))
        })
        .unwrap_or(VisitId(uuid::Uuid::max()));
    match before {
        Some(b) if b < after_to => b,
        _ => after_to,
    }
}

/// One page of history matching `q`, newest first.
pub fn list_history(conn: &Connection, q: &HistoryQuery) -> Result<HistoryPage> {
    if q.limit == 0 || q.limit > MAX_PAGE {
        return Err(Error::InvalidInput(format!(
            "a history page holds 1 to {MAX_PAGE} rows, not {}",
            q.limit
        )));
    }
    if let (Some(from), Some(to)) = (q.from, q.to) {
        if from > to {
            return Err(Error::InvalidInput("the date range ends before it starts".into()));
        }
    }
    let low = q
        .from
        .map(VisitId::lower_bound)
        .unwrap_or(VisitId(uuid::Uuid::nil()));
    let (category, uncategorized) = match q.category {
        Some(CategoryFilter::Is(c)) => (Some(c), false),
        Some(CategoryFilter::Uncategorized) => (None, true),
        None => (None, false),
    };
    let search = q.search.as_deref().map(str::trim).filter(|s| !s.is_empty());
    if search.is_none() && q.sort == SortOrder::Rank {
        return Err(Error::InvalidInput("best-first order needs search words".into()));
    }
    if let Some(text) = search {
        let Some(expression) = crate::search::query::match_expression(text) else {
            // Only punctuation: no word to find.
            return Ok(HistoryPage::default());
        };
        let (low, below) = crate::search::query::key_range(low, page_end(q.to, q.before));
        let page = crate::search::query::SearchPage {
            expression: &expression,
            low,
            below,
            category,
            uncategorized,
            device: q.device.as_deref(),
        };
        return match q.sort {
            SortOrder::Newest => crate::search::query::list_newest(conn, &page, q.limit),
            SortOrder::Rank => crate::search::query::list_ranked(conn, &page, q.offset, q.limit),
        };
    }
    let below = page_end(q.to, q.before);
    let mut stmt = conn.prepare_cached(HISTORY_SQL)?;
    let rows = stmt.query_map(
        named_params! {
            ":low": low, ":below": below, ":category": category,
            ":uncategorized": uncategorized, ":device": q.device,
        },
        read_row,
    )?;
    HistoryPage::newest_first(rows, q.limit)
}

/// Visits and websites per category since `since`, most visited first.
pub fn list_category_counts(conn: &Connection, since: Timestamp) -> Result<Vec<CategoryCount>> {
    let mut stmt = conn.prepare_cached(
        r#"SELECT w.category, count(*) AS visits, count(DISTINCT w.id) AS websites
           FROM visit v JOIN website w ON w.id = v.website_id
           WHERE v.id >= :low
           GROUP BY w.category
           ORDER BY visits DESC, w.category"#,
    )?;
    let rows = stmt.query_map(named_params! { ":low": VisitId::lower_bound(since) }, |r| {
        Ok(CategoryCount {
            category: r.get("category")?,
            visits: r.get("visits")?,
            websites: r.get("websites")?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The `n` most visited websites since `since`.
pub fn list_top_websites(conn: &Connection, since: Timestamp, n: usize) -> Result<Vec<TopWebsite>> {
    let mut stmt = conn.prepare_cached(
        r#"SELECT w.id, w.domain, w.category, w.category_source, w.category_confidence, count(*) AS visits
           FROM visit v JOIN website w ON w.id = v.website_id
           WHERE v.id >= :low
           GROUP BY w.id
           ORDER BY visits DESC, w.domain"#,
    )?;
    let rows = stmt.query_map(named_params! { ":low": VisitId::lower_bound(since) }, |r| {
        Ok(TopWebsite {
            website_id: r.get("id")?,
            domain: r.get("domain")?,
            category: r.get("category")?,
            category_source: r.get("category_source")?,
            category_confidence: r.get("category_confidence")?,
            visits: r.get("visits")?,
        })
    })?;
    Ok(rows.take(n).collect::<rusqlite::Result<_>>()?)
}

/// Most visits [`list_website_visits`] returns.
pub const MAX_WEBSITE_VISITS: usize = 500;

/// The newest visits (at most `limit`) to the website `domain` since `since`, newest first: the
/// website page's list. Served by the visit key's range, newest first, so it stops at `limit`.
pub fn list_website_visits(
    conn: &Connection,
    domain: &str,
    since: Timestamp,
    limit: usize,
) -> Result<Vec<HistoryRow>> {
    if limit == 0 || limit > MAX_WEBSITE_VISITS {
        return Err(Error::InvalidInput(format!(
            "ask for 1 to {MAX_WEBSITE_VISITS} visits, not {limit}"
        )));
    }
    let mut stmt = conn.prepare_cached(concat!(
        r#"SELECT v.id, v.url, v.title, v.visited_at, v.source,
                  w.id AS website_id, w.domain, w.category, w.category_source, w.category_confidence, "#,
        device_name_of_v!(),
        r#" AS device
           FROM visit v JOIN website w ON w.id = v.website_id
           WHERE v.id >= :low AND w.domain = :domain
           ORDER BY v.id DESC"#
    ))?;
    let rows = stmt.query_map(
        named_params! { ":low": VisitId::lower_bound(since), ":domain": domain },
        read_row,
    )?;
    Ok(rows.take(limit).collect::<rusqlite::Result<_>>()?)
}

/// Counts visits.
pub fn count_visits(conn: &Connection) -> Result<i64> {
    Ok(conn
        .prepare_cached(r#"SELECT count(*) FROM visit"#)?
        .query_row([], |r| r.get(0))?)
}

/// The names of the devices whose visits are here (sync), in order; empty on a device that
/// does not sync (its visits have no device name).
pub fn list_device_names(conn: &Connection) -> Result<Vec<String>> {
    Ok(conn
        .prepare_cached(r#"SELECT DISTINCT name FROM sync_device WHERE name IS NOT NULL ORDER BY name"#)?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?)
}

impl Store {
    /// The names `HistoryQuery::device` can take ([`list_device_names`]).
    pub fn device_names(&self) -> Result<Vec<String>> {
        self.with_conn(list_device_names)
    }

    /// One page of history.
    pub fn history(&self, q: &HistoryQuery) -> Result<HistoryPage> {
        self.with_conn(|c| list_history(c, q))
    }

    /// Visits per category since `since`.
    pub fn category_counts(&self, since: Timestamp) -> Result<Vec<CategoryCount>> {
        self.with_conn(|c| list_category_counts(c, since))
    }

    /// The `n` most visited websites since `since`.
    pub fn top_websites(&self, since: Timestamp, n: usize) -> Result<Vec<TopWebsite>> {
        self.with_conn(|c| list_top_websites(c, since, n))
    }

    /// The newest visits to `domain` since `since` (at most `limit`).
    pub fn website_visits(&self, domain: &str, since: Timestamp, limit: usize) -> Result<Vec<HistoryRow>> {
        self.with_conn(|c| list_website_visits(c, domain, since, limit))
    }

    /// Number of visits.
    pub fn visit_count(&self) -> Result<i64> {
        self.with_conn(count_visits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::visits::NewVisit;

    #[test]
    fn a_websites_visits_are_its_own_newest_first_within_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("t.db")).unwrap();
        let base = Timestamp::parse_rfc3339("2026-11-30T08:00:00Z").unwrap();
        for (i, domain) in ["a.test", "b.test", "a.test", "a.test"].iter().enumerate() {
            store
                .record_visit(&NewVisit {
                    url: &format!("https://{domain}/{i}"),
                    title: None,
                    visited_at: Timestamp(base.0 + i as i64 * 60_000_000),
                    source: "test",
                    source_visit_id: Some(&i.to_string()),
                })
                .unwrap();
        }
        let urls = |since: Timestamp, limit: usize| -> Vec<String> {
            store
                .website_visits("a.test", since, limit)
                .unwrap()
                .into_iter()
                .map(|r| r.url)
                .collect()
        };
        assert_eq!(
            urls(base, 10),
            ["https://a.test/3", "https://a.test/2", "https://a.test/0"]
        );
        assert_eq!(urls(base, 2), ["https://a.test/3", "https://a.test/2"]);
        assert_eq!(
            urls(Timestamp(base.0 + 60_000_000), 10),
            ["https://a.test/3", "https://a.test/2"]
        );
        assert!(store.website_visits("a.test", base, 0).is_err());
        assert!(store.website_visits("absent.test", base, 10).unwrap().is_empty());
    }
}
