//! The review list: websites whose category is not certain, most visited first, so a person can
//! find the wrong ones (uncategorised ones are easy to find; wrong ones are not) and settle each
//! with one click: "right" makes the shown category the user's own, or the user picks another.
//!
//! A website is on the list while its category is `low` or `medium` and was not set by the user.
//! Order: most visits first, then the less certain first, then by domain. Visits are counted in
//! one pass over the visit table (which has no index by website on purpose: see ARCHITECTURE.md);
//! docs/BENCHMARKS.md has its cost at 1,000,000 visits.

use std::collections::HashMap;

use rusqlite::{named_params, Connection};

use crate::category::{Category, CategorySource};
use crate::confidence::Confidence;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::ids::WebsiteId;
use crate::store::{Change, Store};
use crate::websites::{self, Website};

/// Most rows one review list returns.
pub const MAX_REVIEW: usize = 1_000;

/// Rows a review list holds when its caller does not say (the CLI's `--limit`, the app's view).
pub const DEFAULT_REVIEW: usize = 100;

/// Which websites the review list shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReviewQuery {
    /// Rows at most (1..=[`MAX_REVIEW`]).
    pub limit: usize,
    /// Only this band (`low` or `medium`); both if `None`.
    pub confidence: Option<Confidence>,
}

impl Default for ReviewQuery {
    fn default() -> Self {
        ReviewQuery {
            limit: DEFAULT_REVIEW,
            confidence: None,
        }
    }
}

impl ReviewQuery {
    /// The query for `limit` rows ([`DEFAULT_REVIEW`] if `None`) of the band typed as `low` or
    /// `medium` (both if `None` or blank), checked: the one reading of a review request, for the
    /// CLI and the app.
    pub fn parse(limit: Option<usize>, confidence: Option<&str>) -> Result<ReviewQuery> {
        let confidence = match confidence.map(str::trim).filter(|c| !c.is_empty()) {
            None => None,
            Some(c @ ("low" | "medium")) => Some(c.parse::<Confidence>()?),
            Some(other) => {
                return Err(Error::InvalidInput(format!(
                    "the review list shows low or medium confidence (or both), not {:?}",
                    crate::error::truncate_chars(other, 40)
                )))
            }
        };
        let q = ReviewQuery {
            limit: limit.unwrap_or(DEFAULT_REVIEW),
            confidence,
        };
        q.check()?;
        Ok(q)
    }

    /// Refuses a limit outside 1..=[`MAX_REVIEW`] and the `high` band (certain categories are
    /// not reviewed).
    pub fn check(&self) -> Result<()> {
        if self.limit == 0 || self.limit > MAX_REVIEW {
            return Err(Error::InvalidInput(format!(
                "the review list holds 1 to {MAX_REVIEW} websites, not {}",
                self.limit
            )));
        }
        if self.confidence == Some(Confidence::High) {
            return Err(Error::InvalidInput(
                "the review list shows low and medium categories; high ones are certain".into(),
            ));
        }
        Ok(())
    }
}

/// One website to review.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ReviewItem {
    /// The website.
    pub website_id: WebsiteId,
    /// Its domain.
    pub domain: String,
    /// Its domain as people read it (Unicode for an internationalised name).
    pub display: String,
    /// Its category.
    pub category: Category,
    /// Who set it (`builtin` or `ai`).
    pub category_source: CategorySource,
    /// How sure it is (`low` or `medium`).
    pub category_confidence: Confidence,
    /// The built-in rule that gave it, if one did.
    pub category_rule: Option<String>,
    /// True while the remote provider has still to answer (the category is provisional).
    pub waiting_for_ai: bool,
    /// Visits recorded.
    pub visits: i64,
}

/// The review list (see the module docs).
pub fn list_review(conn: &Connection, q: &ReviewQuery) -> Result<Vec<ReviewItem>> {
    q.check()?;
    let mut stmt = conn.prepare_cached(
        r#"SELECT w.id, w.domain, w.category, w.category_source, w.category_confidence, w.category_rule,
                  o.status IN ('PENDING', 'PROCESSING') AS open
           FROM website w
           LEFT JOIN website_category_classification_outbox o ON o.website_id = w.id
           WHERE w.category IS NOT NULL AND w.category_source <> 'user'
             AND w.category_confidence IN ('low', 'medium')
             AND (:confidence IS NULL OR w.category_confidence = :confidence)"#,
    )?;
    let rows = stmt.query_map(named_params! { ":confidence": q.confidence }, |r| {
        let source: CategorySource = r.get("category_source")?;
        let open: Option<bool> = r.get("open")?;
        let domain: String = r.get("domain")?;
        Ok(ReviewItem {
            website_id: r.get("id")?,
            display: crate::domain::unicode_form(&domain).into_owned(),
            domain,
            category: r.get("category")?,
            waiting_for_ai: open.unwrap_or(false) && source == CategorySource::Builtin,
            category_source: source,
            category_confidence: r.get("category_confidence")?,
            category_rule: r.get("category_rule")?,
            visits: 0,
        })
    })?;
    let mut items: Vec<ReviewItem> = rows.collect::<rusqlite::Result<_>>()?;
    if items.is_empty() {
        return Ok(items);
    }
    let mut visits: HashMap<WebsiteId, i64> = items.iter().map(|i| (i.website_id, 0)).collect();
    let mut stmt = conn.prepare_cached(r#"SELECT website_id FROM visit"#)?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let id: WebsiteId = row.get("website_id")?;
        if let Some(n) = visits.get_mut(&id) {
            *n += 1;
        }
    }
    for item in &mut items {
        item.visits = visits.get(&item.website_id).copied().unwrap_or(0);
    }
    items.sort_by(|a, b| {
        b.visits
            .cmp(&a.visits)
            .then(a.category_confidence.cmp(&b.category_confidence))
            .then_with(|| a.domain.cmp(&b.domain))
    });
    items.truncate(q.limit);
    Ok(items)
}

impl Store {
    /// The review list.
    pub fn review(&self, q: &ReviewQuery) -> Result<Vec<ReviewItem>> {
        self.with_conn(|c| list_review(c, q))
    }

    /// "Right": makes `domain`'s current category the user's own (never overwritten, certain).
    /// With `expected`, refuses if the category is no longer that one (a classifier changed it
    /// since the list was read), so a click never confirms a category the user did not see.
    pub fn confirm_category(&self, domain: &str, expected: Option<Category>) -> Result<Website> {
        let domain = Domain::parse(domain)?;
        let now = self.now();
        self.write(Some(Change::Websites), |tx| {
            let site = websites::get_website_by_domain(tx, &domain)?;
            let current = match site.category {
                Some(c) => c,
                None => {
                    return Err(Error::Conflict(format!(
                        "{domain} has no category yet; choose one with `sitetrail categorize {domain} <CATEGORY>`"
                    )))
                }
            };
            if let Some(e) = expected.filter(|e| *e != current) {
                return Err(Error::Conflict(format!(
                    "{domain} is now {} (was {} when you looked); look again",
                    current.id(),
                    e.id()
                )));
            }
            websites::set_user_category_in(tx, &site, current, now)?;
            websites::get_website_by_domain(tx, &domain)
        })
    }
}
