//! Recording visits: the write path that never waits for the AI.
//!
//! A visit, its website (if the domain is new) and that website's classification job are written
//! in one transaction, so a website never exists without its outbox row. Importers call
//! [`record_visit_in`] many times inside one transaction; the CLI and the app call
//! [`Store::record_visit`].

use rusqlite::{named_params, OptionalExtension, Transaction};

use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::ids::{OutboxId, VisitId, WebsiteId};
use crate::store::{Change, Store};
use crate::time::Timestamp;

/// Longest title kept (characters); longer ones are cut.
pub const MAX_TITLE_CHARS: usize = 2_000;

/// A visit to record.
#[derive(Clone, Debug)]
pub struct NewVisit<'a> {
    /// The page's URL (`http` or `https`).
    pub url: &'a str,
    /// The page's title, if known.
    pub title: Option<&'a str>,
    /// When the page was visited.
    pub visited_at: Timestamp,
    /// Where the visit came from: `cli`, `app`, or an importer's source name.
    pub source: &'a str,
    /// The visit's id in its source, for idempotent imports; `None` for live visits.
    pub source_visit_id: Option<&'a str>,
}

/// What recording a visit did.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Recorded {
    /// The visit's id (the existing one's if this visit was already recorded).
    pub visit_id: Option<VisitId>,
    /// The website the visit belongs to.
    pub website_id: WebsiteId,
    /// The website's domain.
    pub domain: String,
    /// True if this visit created the website (and its outbox job).
    pub new_website: bool,
    /// False if the visit was already recorded (same `source` and `source_visit_id`).
    pub inserted: bool,
}

/// Cleans a title for storage: control characters become spaces, whitespace is trimmed, empty
/// titles become `None`, very long ones are cut.
pub fn clean_title(title: Option<&str>) -> Option<String> {
    let t = title?;
    let cleaned: String = t.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let trimmed = cleaned.trim();
    if trimmed.is_empty() {
        return None;
    }
    Some(crate::error::truncate_chars(trimmed, MAX_TITLE_CHARS))
}

/// Records `visit` inside the caller's transaction (which must be `BEGIN IMMEDIATE`): inserts the
/// website if its domain is new, and only then its `PENDING` outbox row, then the visit.
pub fn record_visit_in(tx: &Transaction<'_>, visit: &NewVisit<'_>, now: Timestamp) -> Result<Recorded> {
    let domain = Domain::from_url(visit.url)?;
    if visit.source.trim().is_empty() {
        return Err(Error::InvalidConfig("a visit's source must not be empty".into()));
    }
    // Inside this BEGIN IMMEDIATE transaction no other writer can add the domain between the
    // lookup and the insert; the lookup first spares the common case (a known website) an insert
    // attempt, and ON CONFLICT keeps the insert safe regardless.
    let existing: Option<WebsiteId> = tx
        .prepare_cached(r#"SELECT id FROM website WHERE domain = :domain"#)?
        .query_row(named_params! { ":domain": domain.as_str() }, |r| r.get("id"))
        .optional()?;
    let (website_id, inserted_website) = match existing {
        Some(id) => (id, false),
        None => {
            let new_id = WebsiteId::new();
            let inserted = tx
                .prepare_cached(
                    r#"INSERT INTO website (id, domain, created_at, version)
                       VALUES (:id, :domain, :now, 0)
                       ON CONFLICT (domain) DO NOTHING"#,
                )?
                .execute(named_params! { ":id": new_id, ":domain": domain.as_str(), ":now": now })?
                == 1;
            if !inserted {
                return Err(Error::Conflict(format!(
                    "website {domain} appeared inside a write transaction"
                )));
            }
            tx.prepare_cached(
                r#"INSERT INTO website_category_classification_outbox
                       (id, website_id, status, attempt_count, attempted_at, created_at, version)
                   VALUES (:id, :website_id, 'PENDING', 0, NULL, :now, 0)"#,
            )?
            .execute(named_params! { ":id": OutboxId::new(), ":website_id": new_id, ":now": now })?;
            (new_id, true)
        }
    };

    let visit_id = VisitId::at(visit.visited_at);
    let title = clean_title(visit.title);
    let inserted =
        tx.prepare_cached(
            r#"INSERT INTO visit (id, website_id, url, title, visited_at, source, source_visit_id)
               VALUES (:id, :website_id, :url, :title, :visited_at, :source, :source_visit_id)
               ON CONFLICT (source, source_visit_id) WHERE source_visit_id IS NOT NULL DO NOTHING"#,
        )?
        .execute(named_params! {
            ":id": visit_id,
            ":website_id": website_id,
            ":url": visit.url.trim(),
            ":title": title,
            ":visited_at": visit.visited_at,
            ":source": visit.source,
            ":source_visit_id": visit.source_visit_id,
        })? == 1;
    let visit_id = if inserted {
        Some(visit_id)
    } else {
        tx.prepare_cached(r#"SELECT id FROM visit WHERE source = :source AND source_visit_id = :svid"#)?
            .query_row(
                named_params! { ":source": visit.source, ":svid": visit.source_visit_id },
                |r| r.get("id"),
            )
            .optional()?
    };
    Ok(Recorded {
        visit_id,
        website_id,
        domain: domain.as_str().to_owned(),
        new_website: inserted_website,
        inserted,
    })
}

impl Store {
    /// Records one visit in its own transaction. Never waits for the classifier: the website's
    /// classification job is only queued.
    pub fn record_visit(&self, visit: &NewVisit<'_>) -> Result<Recorded> {
        let now = self.now();
        self.write(Some(Change::Visits), |tx| record_visit_in(tx, visit, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_cleaned() {
        assert_eq!(clean_title(Some("  a\u{0}b\nc  ")), Some("a b c".to_owned()));
        assert_eq!(clean_title(Some(" \t ")), None);
        assert_eq!(clean_title(None), None);
        assert_eq!(
            clean_title(Some(&"x".repeat(5000))).unwrap().chars().count(),
            MAX_TITLE_CHARS
        );
    }
}
