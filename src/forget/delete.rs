//! The deletions every forgetting is made of: one visit (and its index row), one website (and its
//! job and favicon), and finding a website's visits.
//!
//! These run on the forgetting's own connection, which has foreign keys off (see `mod.rs`), so
//! they keep the references themselves: a website is deleted only once no visit refers to it
//! ([`has_visits_in`]), and its job and favicon are deleted with it.

use rusqlite::{named_params, Transaction};

use crate::error::Result;
use crate::ids::{VisitId, WebsiteId};
use crate::search::{self, IndexedText};

/// Rows of the visit table read per transaction when the index cannot say where a website's
/// visits are (it is still being built): a full scan, cut in pieces.
pub(super) const SCAN_ROWS: usize = 50_000;

/// A visit about to be deleted, with what its deletion needs.
pub(super) struct Doomed {
    pub(super) id: VisitId,
    pub(super) website_id: WebsiteId,
    pub(super) url: String,
    pub(super) title: Option<String>,
    pub(super) domain: String,
    pub(super) source: String,
    pub(super) source_visit_id: Option<String>,
    pub(super) visited_at: crate::time::Timestamp,
}

impl Doomed {
    pub(super) fn read(r: &rusqlite::Row<'_>) -> rusqlite::Result<Doomed> {
        Ok(Doomed {
            id: r.get("id")?,
            website_id: r.get("website_id")?,
            url: r.get("url")?,
            title: r.get("title")?,
            domain: r.get("domain")?,
            source: r.get("source")?,
            source_visit_id: r.get("source_visit_id")?,
            visited_at: r.get("visited_at")?,
        })
    }
}

/// The columns [`Doomed::read`] reads, from `visit v JOIN website w`.
pub(super) const DOOMED_COLUMNS: &str =
    "v.id, v.website_id, v.url, v.title, w.domain, v.source, v.source_visit_id, v.visited_at";

/// The visit `id`, if stored.
pub(super) fn get_doomed(tx: &Transaction<'_>, id: VisitId) -> Result<Option<Doomed>> {
    use rusqlite::OptionalExtension;
    Ok(tx
        .prepare_cached(
            r#"SELECT v.id, v.website_id, v.url, v.title, w.domain, v.source, v.source_visit_id, v.visited_at
               FROM visit v JOIN website w ON w.id = v.website_id
               WHERE v.id = :id"#,
        )?
        .query_row(named_params! { ":id": id }, Doomed::read)
        .optional()?)
}

/// Deletes `visits` ([`delete_visit_in`]).
pub(super) fn delete_visits_in(tx: &Transaction<'_>, visits: &[&Doomed]) -> Result<()> {
    for v in visits {
        delete_visit_in(tx, v)?;
    }
    Ok(())
}

/// Deletes the visit, its index row (so its words leave the file), and remembers what it was
/// (its URL and time, hashed: [`super::visit_key`]) and, for an imported visit, its import key, so
/// that nothing brings it back. A visit not in the index (a
/// forgetting emptied it, or the backfill has not reached it) has no index row to delete.
pub(super) fn delete_visit_in(tx: &Transaction<'_>, v: &Doomed) -> Result<()> {
    if search::is_indexed(tx, v.id)? {
        let text = IndexedText::new(&v.domain, &v.url, v.title.as_deref());
        search::unindex_visit_in(tx, v.id, &text)?;
    }
    // Foreign keys are off on this connection: what refers to the visit goes first, by hand.
    tx.prepare_cached(r#"DELETE FROM visit_time WHERE visit_id = :id"#)?
        .execute(named_params! { ":id": v.id })?;
    tx.prepare_cached(r#"DELETE FROM visit WHERE id = :id"#)?
        .execute(named_params! { ":id": v.id })?;
    // What it was, so that no path records it again, from any source.
    tx.prepare_cached(r#"INSERT INTO forgotten_visit (key) VALUES (:key) ON CONFLICT (key) DO NOTHING"#)?
        .execute(named_params! { ":key": super::visit_key(&v.url, v.visited_at) })?;
    if let Some(svid) = &v.source_visit_id {
        tx.prepare_cached(
            r#"INSERT INTO forgotten_import (key) VALUES (:key) ON CONFLICT (key) DO NOTHING"#,
        )?
        .execute(named_params! { ":key": super::import_key(&v.source, svid) })?;
    }
    Ok(())
}

/// Deletes the website, its job and its favicon. The caller has checked it has no visit left.
pub(super) fn delete_website_in(tx: &Transaction<'_>, id: WebsiteId) -> Result<()> {
    tx.prepare_cached(r#"DELETE FROM website_favicon WHERE website_id = :id"#)?
        .execute(named_params! { ":id": id })?;
    tx.prepare_cached(r#"DELETE FROM website_category_classification_outbox WHERE website_id = :id"#)?
        .execute(named_params! { ":id": id })?;
    tx.prepare_cached(r#"DELETE FROM website WHERE id = :id"#)?
        .execute(named_params! { ":id": id })?;
    Ok(())
}

/// The index query for visits whose domain has every label of `domain` (a superset of the
/// website's visits: `github.com` also finds `gist.github.com`), or `None` if it has no label.
fn domain_expression(domain: &str) -> Option<String> {
    let labels: Vec<String> = domain
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|l| !l.is_empty())
        .map(|l| format!("\"{l}\""))
        .collect();
    (!labels.is_empty()).then(|| format!("domain : ({})", labels.join(" ")))
}

/// True once the index holds every visit (the backfill is done): only then can it find a
/// website's visits.
fn index_complete(tx: &Transaction<'_>) -> Result<bool> {
    Ok(search::get_index_status(tx)?.complete)
}

/// True if any visit refers to the website `id` (whose domain is `domain`). Served by the index
/// (the visits with the domain's labels); a full scan while the index is being built.
pub(super) fn has_visits_in(tx: &Transaction<'_>, id: WebsiteId, domain: &str) -> Result<bool> {
    if let (true, Some(m)) = (index_complete(tx)?, domain_expression(domain)) {
        return Ok(tx
            .prepare_cached(
                r#"SELECT EXISTS (
                       SELECT 1 FROM visit_fts CROSS JOIN visit v
                       WHERE visit_fts MATCH :match
                         AND v.id >= unhex(printf('%016X0000000000000000', visit_fts.rowid))
                         AND v.id <= unhex(printf('%016XFFFFFFFFFFFFFFFF', visit_fts.rowid))
                         AND v.website_id = :w)"#,
            )?
            .query_row(named_params! { ":match": m, ":w": id }, |r| r.get(0))?);
    }
    Ok(tx
        .prepare_cached(r#"SELECT EXISTS (SELECT 1 FROM visit WHERE website_id = :w)"#)?
        .query_row(named_params! { ":w": id }, |r| r.get(0))?)
}

/// What one look for a website's visits found.
pub(super) struct Found {
    /// Up to `limit` of the website's visits with ids below the cursor, newest first.
    pub(super) visits: Vec<Doomed>,
    /// Where the next look continues (exclusive), or `None` if this one reached the oldest visit.
    pub(super) next_below: Option<VisitId>,
}

/// The website's visits with ids below `below` (all if `None`), newest first, up to `limit`.
pub(super) fn find_website_visits(
    tx: &Transaction<'_>,
    id: WebsiteId,
    domain: &str,
    below: Option<VisitId>,
    limit: usize,
) -> Result<Found> {
    let below_key = below.map_or(i64::MAX, search::key_of);
    if let (true, Some(m)) = (index_complete(tx)?, domain_expression(domain)) {
        let visits: Vec<Doomed> = tx
            .prepare_cached(
                r#"SELECT v.id, v.website_id, v.url, v.title, :domain AS domain, v.source, v.source_visit_id,
                          v.visited_at
                   FROM visit_fts CROSS JOIN visit v
                   WHERE visit_fts MATCH :match AND visit_fts.rowid < :below
                     AND v.id >= unhex(printf('%016X0000000000000000', visit_fts.rowid))
                     AND v.id <= unhex(printf('%016XFFFFFFFFFFFFFFFF', visit_fts.rowid))
                     AND v.website_id = :w
                   ORDER BY visit_fts.rowid DESC"#,
            )?
            .query_map(
                named_params! { ":match": m, ":below": below_key, ":w": id, ":domain": domain },
                Doomed::read,
            )?
            .take(limit)
            .collect::<rusqlite::Result<_>>()?;
        let next_below = (visits.len() == limit)
            .then(|| visits.last().map(|v| v.id))
            .flatten();
        return Ok(Found { visits, next_below });
    }
    // A scan, newest first, of at most SCAN_ROWS rows below the cursor.
    let below = below.unwrap_or(VisitId(uuid::Uuid::max()));
    let mut scanned = 0;
    let mut last = None;
    let mut ids = Vec::new();
    {
        let mut stmt =
            tx.prepare_cached(r#"SELECT id, website_id FROM visit WHERE id < :below ORDER BY id DESC"#)?;
        let mut rows = stmt.query(named_params! { ":below": below })?;
        while let Some(r) = rows.next()? {
            scanned += 1;
            let vid: VisitId = r.get("id")?;
            last = Some(vid);
            if r.get::<_, WebsiteId>("website_id")? == id {
                ids.push(vid);
            }
            if scanned >= SCAN_ROWS || ids.len() >= limit {
                break;
            }
        }
    }
    let mut visits = Vec::with_capacity(ids.len());
    for vid in ids {
        if let Some(v) = get_doomed(tx, vid)? {
            visits.push(v);
        }
    }
    let reached_end = scanned < SCAN_ROWS && visits.len() < limit;
    Ok(Found {
        visits,
        next_below: if reached_end { None } else { last },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_domain_is_looked_up_by_all_its_labels() {
        assert_eq!(
            domain_expression("mail.google.com").as_deref(),
            Some(r#"domain : ("mail" "google" "com")"#)
        );
        assert_eq!(
            domain_expression("xn--mnchen-3ya.example").as_deref(),
            Some(r#"domain : ("xn" "mnchen" "3ya" "example")"#)
        );
        assert_eq!(domain_expression("[::]"), None);
    }
}
