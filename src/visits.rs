//! Recording visits: the write path that never waits for the AI.
//!
//! A visit, its website (if the domain is new) and that website's classification job are written
//! in one transaction, so a website never exists without its outbox row. The CLI and the app call
//! [`Store::record_visit`]; [`record_visit_in`] is the same inside a caller's transaction. It is
//! [`get_or_insert_website_in`] then [`insert_visit_in`], which importers call directly so they
//! can skip the website lookup for a domain already seen in the same import.
//!
//! Every visit inserted here is added to the search index in the same transaction
//! ([`crate::search::index_visit_in`]), under an id whose index key no other visit has
//! ([`crate::search::free_visit_id`]). A visit to a blocked domain, or at a time the user asked to
//! forget, is refused ([`Error::Blocked`], [`Error::Forgotten`]) before anything is written.
//! Every URL is stored in one form, [`crate::page_url::normalise`]'s (control characters
//! percent-encoded, no user name or password), by the two inserts here that every path uses.

use rusqlite::{named_params, OptionalExtension, Transaction};

use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::ids::{VisitId, WebsiteId};
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

/// Earliest visit time accepted: 1990-01-01T00:00:00Z (before the web, so a bogus value).
pub const MIN_VISIT_MICROS: i64 = 631_152_000_000_000;
/// Latest visit time accepted (exclusive): 2200-01-01T00:00:00Z.
pub const MAX_VISIT_MICROS: i64 = 7_258_118_400_000_000;

/// Checks that a visit time is within the range every source accepts, the importers'
/// (1990-01-01 to 2200-01-01, UTC): earlier or later times are a broken clock or a bogus value,
/// and would sort wrongly (a visit id holds its time from 1970 on). `Err` says why, for a message.
pub fn check_visit_time(t: Timestamp) -> std::result::Result<(), String> {
    if (MIN_VISIT_MICROS..MAX_VISIT_MICROS).contains(&t.as_micros()) {
        Ok(())
    } else {
        Err(format!(
            "the visit time {} is outside the years 1990 to 2199 that Sitetrail accepts",
            t.to_rfc3339()
        ))
    }
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
    record_visit_for_domain_in(tx, visit, &domain, now)
}

/// [`record_visit_in`] for a caller that already derived `domain` from `visit.url`. `domain` must
/// be `Domain::from_url(visit.url)`.
pub fn record_visit_for_domain_in(
    tx: &Transaction<'_>,
    visit: &NewVisit<'_>,
    domain: &Domain,
    now: Timestamp,
) -> Result<Recorded> {
    if visit.source.trim().is_empty() {
        return Err(Error::InvalidInput("a visit's source must not be empty".into()));
    }
    // Every check below sees the URL as it will be stored.
    let url = crate::page_url::normalise(visit.url)?;
    let visit = &NewVisit {
        url: &url,
        ..visit.clone()
    };
    check_visit_time(visit.visited_at).map_err(Error::InvalidInput)?;
    crate::blocked::refuse_if_blocked(tx, domain.as_str())?;
    crate::forget::refuse_if_being_forgotten(tx, domain.as_str())?;
    if crate::forget::is_forgotten_time(tx, visit.visited_at)? {
        return Err(Error::Forgotten {
            at: visit.visited_at.to_rfc3339(),
            visit: false,
        });
    }
    // The same page at the same time, forgotten: from any source (another import, the extension).
    if crate::forget::is_forgotten_visit(tx, visit.url, visit.visited_at)? {
        return Err(Error::Forgotten {
            at: visit.visited_at.to_rfc3339(),
            visit: true,
        });
    }
    let (website_id, new_website) = get_or_insert_website_in(tx, domain, now)?;
    let (visit_id, inserted) = insert_visit_in(tx, visit, website_id, domain)?;
    Ok(Recorded {
        visit_id,
        website_id,
        domain: domain.as_str().to_owned(),
        new_website,
        inserted,
    })
}

/// The first half of [`record_visit_in`]: the website of `domain`, inserted with its `PENDING`
/// outbox row if the domain is new. Returns its id and whether it was inserted. An importer calls
/// this only for domains it has not seen in the current import, then [`insert_visit_in`].
pub fn get_or_insert_website_in(
    tx: &Transaction<'_>,
    domain: &Domain,
    now: Timestamp,
) -> Result<(WebsiteId, bool)> {
    // Inside this BEGIN IMMEDIATE transaction no other writer can add the domain between the
    // lookup and the insert; the lookup first spares the common case (a known website) an insert
    // attempt, and ON CONFLICT keeps the insert safe regardless.
    if let Some(id) = crate::websites::find_website_id(tx, domain.as_str())? {
        return Ok((id, false));
    }
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
    crate::outbox::insert_job_in(tx, new_id, now)?;
    // Another device may have categorised this domain already (synced, waiting here).
    crate::websites::apply_synced_categories_in(tx, new_id, domain.as_str(), now)?;
    Ok((new_id, true))
}

/// The second half of [`record_visit_in`]: inserts the visit for `website_id` (whose domain is
/// `domain`) unless (`source`, `source_visit_id`) is already stored, and adds it to the search
/// index. Returns the visit's id (the existing one's if it was stored before) and whether it was
/// inserted.
pub fn insert_visit_in(
    tx: &Transaction<'_>,
    visit: &NewVisit<'_>,
    website_id: WebsiteId,
    domain: &Domain,
) -> Result<(Option<VisitId>, bool)> {
    let mut batch = VisitBatch::default();
    let inserted = insert_visit_batched_in(tx, visit, website_id, domain, &mut batch)?;
    batch.flush_in(tx)?;
    Ok(inserted)
}

/// What a writer adding many visits in one transaction (an import's batch) reads once for all of
/// them instead of once per visit, and what it adds together before the transaction commits.
///
/// Valid for one transaction: make one with [`VisitBatch::begin_in`] at its start, insert every
/// visit of the transaction through [`insert_visit_batched_in`] with it (the free keys it knows
/// hold only while no visit is inserted otherwise), and call [`VisitBatch::flush_in`] before the
/// commit. [`VisitBatch::default`] reads nothing ahead: what [`insert_visit_in`] uses for one visit.
#[derive(Debug, Default)]
pub struct VisitBatch {
    /// The visits' search index rows, added together by [`VisitBatch::flush_in`].
    index: crate::search::IndexBatch,
    /// Where the next visits' free keys are ([`crate::search::FreeKeys`]).
    keys: crate::search::FreeKeys,
    /// Whether this device's changes are queued for sync (linked to a hub, not applying another
    /// device's), read once; `None`: not read, each change asks as it is queued.
    queues: Option<bool>,
    /// The titled visits inserted, per website, for their judging with titles.
    titled: crate::title_judging::TitledVisits,
}

impl VisitBatch {
    /// A batch for the transaction `tx`, which holds the write lock (`BEGIN IMMEDIATE`): reads
    /// once whether changes are queued for sync (nothing in the transaction links or unlinks).
    pub fn begin_in(tx: &Transaction<'_>) -> Result<VisitBatch> {
        let queues = !crate::sync_log::local::is_applying() && crate::sync_log::local::is_linked(tx)?;
        Ok(VisitBatch {
            queues: Some(queues),
            ..VisitBatch::default()
        })
    }

    /// False if this transaction queues nothing for sync (read by [`VisitBatch::begin_in`]):
    /// the visits' other changes need not be queued either.
    pub fn queues(&self) -> bool {
        self.queues != Some(false)
    }

    /// Adds the batch's visits to the search index and their titles to their websites' counts,
    /// in the caller's transaction (the one that inserted them), before it commits.
    pub fn flush_in(&mut self, tx: &Transaction<'_>) -> Result<()> {
        self.index.flush_in(tx)?;
        self.titled.flush_in(tx)
    }
}

/// A visit made ready to insert without the database (an import does it on its reading thread):
/// its URL in the stored form, its title cleaned, its search index text.
#[derive(Clone, Debug)]
pub struct ReadyVisit {
    /// The URL as stored ([`crate::page_url::normalise`]'s form).
    pub url: String,
    /// The title as stored ([`clean_title`]).
    pub title: Option<String>,
    /// When the page was visited.
    pub visited_at: Timestamp,
    /// What the search index gets for it.
    pub text: crate::search::IndexedText,
}

impl ReadyVisit {
    /// The visit to `stored_url` (already in the stored form, of `domain`) at `visited_at`,
    /// titled `title` as given (cleaned here).
    pub fn new(
        stored_url: String,
        title: Option<&str>,
        visited_at: Timestamp,
        domain: &Domain,
    ) -> ReadyVisit {
        let title = clean_title(title);
        let text = crate::search::IndexedText::new(domain.as_str(), &stored_url, title.as_deref());
        ReadyVisit {
            url: stored_url,
            title,
            visited_at,
            text,
        }
    }
}

/// [`insert_visit_in`] for a caller that writes many visits in one transaction through `batch`
/// (see [`VisitBatch`]): the visit's index row waits in it for [`VisitBatch::flush_in`], which
/// the caller calls before the transaction commits.
pub fn insert_visit_batched_in(
    tx: &Transaction<'_>,
    visit: &NewVisit<'_>,
    website_id: WebsiteId,
    domain: &Domain,
    batch: &mut VisitBatch,
) -> Result<(Option<VisitId>, bool)> {
    let url = crate::page_url::normalise(visit.url)?;
    let ready = ReadyVisit::new(url, visit.title, visit.visited_at, domain);
    insert_ready_visit_in(
        tx,
        ready,
        (visit.source, visit.source_visit_id),
        website_id,
        domain,
        batch,
    )
}

/// [`insert_visit_batched_in`] for a visit made ready beforehand ([`ReadyVisit`], an import's),
/// stored under (`source`, `source_visit_id`).
pub fn insert_ready_visit_in(
    tx: &Transaction<'_>,
    visit: ReadyVisit,
    (source, source_visit_id): (&str, Option<&str>),
    website_id: WebsiteId,
    domain: &Domain,
    batch: &mut VisitBatch,
) -> Result<(Option<VisitId>, bool)> {
    let visit_id = batch.keys.free_visit_id(tx, visit.visited_at)?;
    let inserted =
        tx.prepare_cached(
            r#"INSERT INTO visit (id, website_id, url, title, visited_at, source, source_visit_id)
               VALUES (:id, :website_id, :url, :title, :visited_at, :source, :source_visit_id)
               ON CONFLICT (source, source_visit_id) WHERE source_visit_id IS NOT NULL DO NOTHING"#,
        )?
        .execute(named_params! {
            ":id": visit_id,
            ":website_id": website_id,
            ":url": visit.url,
            ":title": visit.title,
            ":visited_at": visit.visited_at,
            ":source": source,
            ":source_visit_id": source_visit_id,
        })? == 1;
    if inserted {
        batch.titled.add(website_id, visit.title.as_deref());
        batch.index.add(visit_id, visit.text);
        if !batch.queues() {
            return Ok((Some(visit_id), true));
        }
        // Stamped past a forgetting of its website seen here: it stays on every device.
        let queued = crate::sync_log::local::queue_past_in(
            tx,
            &crate::sync_log::ops::Op::Visit {
                id: visit_id,
                url: visit.url,
                title: visit.title,
                at: visit.visited_at.as_micros(),
                source: source.to_owned(),
                active_ms: None,
                estimated_ms: None,
            },
            |tx| crate::sync_log::local::website_forgetting_stamp(tx, domain.as_str()),
        )?;
        if let Some((hlc, _)) = queued {
            crate::sync_log::local::set_visit_hlc_in(tx, visit_id, hlc)?;
        }
        return Ok((Some(visit_id), true));
    }
    let existing = tx
        .prepare_cached(r#"SELECT id FROM visit WHERE source = :source AND source_visit_id = :svid"#)?
        .query_row(
            named_params! { ":source": source, ":svid": source_visit_id },
            |r| r.get("id"),
        )
        .optional()?;
    Ok((existing, false))
}

/// Inserts another device's visit under its own id (or, when its search key is taken here by a
/// visit of the same millisecond, the next free one), recording which device made it and its id
/// there (`sync_id`: the visit's id on every device). Returns the local id. Its search index row
/// goes into `index`, which the caller adds ([`crate::search::IndexBatch::flush_in`]) before
/// anything reads or changes the index and before the transaction commits, and its title into
/// `titled`, which the caller adds before the transaction commits.
pub fn insert_synced_visit_in(
    tx: &Transaction<'_>,
    id: VisitId,
    visit: &NewVisit<'_>,
    website_id: WebsiteId,
    domain: &Domain,
    (device, hlc): (uuid::Uuid, i64),
    (index, titled): (
        &mut crate::search::IndexBatch,
        &mut crate::title_judging::TitledVisits,
    ),
) -> Result<VisitId> {
    let url = crate::page_url::normalise(visit.url)?;
    let visit_id = crate::search::free_id_from(tx, id)?;
    let title = clean_title(visit.title);
    tx.prepare_cached(
        r#"INSERT INTO visit (id, website_id, url, title, visited_at, source, source_visit_id, device_id, sync_id,
                              sync_hlc)
           VALUES (:id, :website_id, :url, :title, :visited_at, :source, NULL, :device, :sync_id, :hlc)"#,
    )?
    .execute(named_params! {
        ":id": visit_id,
        ":sync_id": id,
        ":hlc": hlc,
        ":website_id": website_id,
        ":url": url,
        ":title": &title,
        ":visited_at": visit.visited_at,
        ":source": visit.source,
        ":device": device.as_bytes().as_slice(),
    })?;
    titled.add(website_id, title.as_deref());
    index.add(
        visit_id,
        crate::search::IndexedText::new(domain.as_str(), &url, title.as_deref()),
    );
    Ok(visit_id)
}

/// Sets the title of visit `id` (cleaned as [`insert_visit_in`] cleans it), inside the caller's
/// transaction. Returns whether the stored title changed. The native host calls this when a page
/// sets its title after the visit was stored.
pub fn update_title_in(tx: &Transaction<'_>, id: VisitId, title: Option<&str>) -> Result<bool> {
    let title = clean_title(title);
    // The search index follows the title: its row is replaced, given the text it was indexed with.
    let before: Option<(String, Option<String>, String)> = tx
        .prepare_cached(
            r#"SELECT v.url, v.title, w.domain FROM visit v JOIN website w ON w.id = v.website_id
               WHERE v.id = :id AND v.title IS NOT :title"#,
        )?
        .query_row(named_params! { ":id": id, ":title": title }, |r| {
            Ok((r.get("url")?, r.get("title")?, r.get("domain")?))
        })
        .optional()?;
    let Some((url, old_title, domain)) = before else {
        return Ok(false);
    };
    let changed = tx
        .prepare_cached(r#"UPDATE visit SET title = :title WHERE id = :id AND title IS NOT :title"#)?
        .execute(named_params! { ":id": id, ":title": title })?;
    if changed == 1 && crate::search::is_indexed(tx, id)? {
        let old = crate::search::IndexedText::new(&domain, &url, old_title.as_deref());
        crate::search::unindex_visit_in(tx, id, &old)?;
        let new = crate::search::IndexedText::new(&domain, &url, title.as_deref());
        crate::search::index_visit_in(tx, id, &new)?;
    }
    if changed == 1 && !crate::sync_log::local::is_applying() {
        let id = crate::sync_log::local::global_visit_id(tx, id)?;
        let key = crate::sync_log::local::title_key(id);
        let value = title.clone();
        crate::sync_log::local::queue_register_in(
            tx,
            &key,
            value.as_deref(),
            &crate::sync_log::ops::Op::Title { id, title },
        )?;
    }
    Ok(changed == 1)
}

/// The id of the visit stored under (`source`, `source_visit_id`), if there is one.
pub fn get_visit_id_by_source_in(
    tx: &Transaction<'_>,
    source: &str,
    source_visit_id: &str,
) -> Result<Option<VisitId>> {
    Ok(tx
        .prepare_cached(r#"SELECT id FROM visit WHERE source = :source AND source_visit_id = :svid"#)?
        .query_row(
            named_params! { ":source": source, ":svid": source_visit_id },
            |r| r.get("id"),
        )
        .optional()?)
}

/// The URL and time of the visit stored under (`source`, `source_visit_id`), if there is one: what
/// a sender reusing that id must match (the capture path refuses an id reused for another page).
pub fn get_visit_url_and_time_by_source_in(
    tx: &Transaction<'_>,
    source: &str,
    source_visit_id: &str,
) -> Result<Option<(String, Timestamp)>> {
    Ok(tx
        .prepare_cached(
            r#"SELECT url, visited_at FROM visit WHERE source = :source AND source_visit_id = :svid"#,
        )?
        .query_row(
            named_params! { ":source": source, ":svid": source_visit_id },
            |r| Ok((r.get("url")?, r.get("visited_at")?)),
        )
        .optional()?)
}

impl Store {
    /// Records one visit in its own transaction. Never waits for the classifier: the website's
    /// classification job is only queued.
    #[tracing::instrument(level = "debug", skip_all, fields(source = visit.source))]
    pub fn record_visit(&self, visit: &NewVisit<'_>) -> Result<Recorded> {
        let now = self.now();
        self.write_changes(|tx, changes| {
            let rec = record_visit_in(tx, visit, now)?;
            *changes |= Change::Visits;
            if rec.new_website {
                *changes |= Change::Websites | Change::Outbox;
            }
            Ok(rec)
        })
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
