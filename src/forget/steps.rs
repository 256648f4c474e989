//! The transactions of a forgetting: its start (the tombstone and the first batch) and each later
//! batch ([`advance_in`]), each bounded by a budget of visits.
//!
//! A website forgetting walks the website's visits newest first (`resume_at`: where the next batch
//! continues, exclusive; NULL: from the newest). When a pass reaches the oldest visit, it checks
//! that none is left (visits recorded meanwhile join the website and are found by another pass)
//! and deletes the website. A range forgetting walks the range's ids oldest first (`resume_at`:
//! the next id to look at, inclusive), noting each website it took visits from; then (`resume_at`
//! NULL) it deletes those left without visits.

use std::collections::HashMap;

use rusqlite::{named_params, OptionalExtension, Transaction};

use crate::blocked;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::ids::{TombstoneId, VisitId, WebsiteId};
use crate::time::Timestamp;

use super::delete::{self, delete_visits_in, delete_website_in, has_visits_in, Doomed};
use super::ForgetReport;

/// What one batch did.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Step {
    pub(super) visits: u64,
    pub(super) websites: u64,
    pub(super) done: bool,
}

fn insert_tombstone(
    tx: &Transaction<'_>,
    kind: &str,
    fields: TombstoneFields<'_>,
    now: Timestamp,
) -> Result<TombstoneId> {
    let id = TombstoneId::new();
    tx.prepare_cached(
        r#"INSERT INTO tombstone (id, kind, visit_id, domain_sha256, website_id, since, until, blocked,
                                  visits, resume_at, forgotten_at, completed_at, sync_hlc)
           VALUES (:id, :kind, :visit_id, :hash, :website_id, :since, :until, :blocked,
                   :visits, :resume_at, :now, :completed_at, :sync_hlc)"#,
    )?
    .execute(named_params! {
        ":id": id, ":kind": kind, ":visit_id": fields.visit_id, ":hash": fields.domain_sha256,
        ":website_id": fields.website_id, ":since": fields.since, ":until": fields.until,
        ":blocked": fields.blocked, ":visits": fields.visits, ":resume_at": fields.resume_at,
        ":now": now, ":completed_at": fields.completed_at, ":sync_hlc": fields.sync_hlc,
    })?;
    Ok(id)
}

#[derive(Default)]
struct TombstoneFields<'a> {
    visit_id: Option<VisitId>,
    domain_sha256: Option<&'a [u8]>,
    website_id: Option<WebsiteId>,
    since: Option<Timestamp>,
    until: Option<Timestamp>,
    blocked: bool,
    visits: i64,
    resume_at: Option<VisitId>,
    completed_at: Option<Timestamp>,
    sync_hlc: Option<i64>,
}

/// Forgets the visits `ids` (one tombstone each) and the websites left without visits.
pub(crate) fn forget_visits_in(
    tx: &Transaction<'_>,
    ids: &[VisitId],
    now: Timestamp,
) -> Result<ForgetReport> {
    let mut report = ForgetReport::default();
    let mut websites: HashMap<WebsiteId, String> = HashMap::new();
    let mut doomed = Vec::with_capacity(ids.len());
    let mut seen = std::collections::HashSet::new();
    for &id in ids {
        match delete::get_doomed(tx, id)? {
            Some(v) if seen.insert(id) => doomed.push(v),
            _ => report.not_found += 1,
        }
    }
    delete_visits_in(tx, &doomed.iter().collect::<Vec<_>>())?;
    for v in doomed {
        insert_tombstone(
            tx,
            "visit",
            TombstoneFields {
                visit_id: Some(v.id),
                visits: 1,
                completed_at: Some(now),
                ..TombstoneFields::default()
            },
            now,
        )?;
        report.visits += 1;
        websites.insert(v.website_id, v.domain);
    }
    for (id, domain) in websites {
        if !has_visits_in(tx, id, &domain)? {
            delete_website_in(tx, id)?;
            report.websites += 1;
        }
    }
    Ok(report)
}

/// The first transaction of a website forgetting: blocks the domain if asked, writes the
/// tombstone, deletes the website's job, and runs the first batch. Returns the tombstone if
/// batches are left. With `sync_hlc` (the clock of the forgetting queued for the other devices)
/// the walk takes the visits recorded before it, as on every other device.
pub(super) fn start_website_in(
    tx: &Transaction<'_>,
    domain: &Domain,
    block: bool,
    (now, sync_hlc): (Timestamp, Option<i64>),
    budget: usize,
) -> Result<(Option<TombstoneId>, ForgetReport)> {
    let mut report = ForgetReport::default();
    if block {
        blocked::block_in(tx, domain, now)?;
        report.blocked = Some(domain.as_str().to_owned());
    }
    let website = crate::websites::find_website_id(tx, domain.as_str())?;
    let Some(website_id) = website else {
        if block {
            return Ok((None, report));
        }
        return Err(Error::NotFound {
            what: "website",
            key: domain.to_string(),
        });
    };
    let hash = super::domain_sha256(domain.as_str());
    let id = insert_tombstone(
        tx,
        "website",
        TombstoneFields {
            domain_sha256: Some(&hash),
            website_id: Some(website_id),
            blocked: block,
            sync_hlc,
            ..TombstoneFields::default()
        },
        now,
    )?;
    // The job goes first: from this commit on no worker can claim the website.
    tx.prepare_cached(r#"DELETE FROM website_category_classification_outbox WHERE website_id = :w"#)?
        .execute(named_params! { ":w": website_id })?;
    let step = advance_in(tx, id, now, budget)?;
    report.visits = step.visits;
    report.websites = step.websites;
    Ok(((!step.done).then_some(id), report))
}

/// Another device's forgetting of the website of `domain`, made at `at` with clock `hlc`: the
/// visits recorded before it (by the clock) are forgotten here (a visit recorded later, here or
/// elsewhere, is kept everywhere), and the tombstone drops any such visit that arrives later. The
/// website itself goes once it has no visit left. Like [`start_website_in`], the rest continues
/// in later batches.
pub(crate) fn start_synced_website_in(
    tx: &Transaction<'_>,
    domain: &Domain,
    at_hlc: (Timestamp, i64),
    now: Timestamp,
    budget: usize,
) -> Result<Option<TombstoneId>> {
    let website = crate::websites::find_website_id(tx, domain.as_str())?;
    let hash = super::domain_sha256(domain.as_str());
    start_synced_website_by_hash_in(tx, &hash, website, at_hlc, now, budget)
}

/// [`start_synced_website_in`] for a website known only by the SHA-256 of its domain (`hash`; a
/// forgetting made before its device was linked), `website` the one here whose domain has it,
/// if any.
pub(crate) fn start_synced_website_by_hash_in(
    tx: &Transaction<'_>,
    hash: &[u8],
    website: Option<crate::ids::WebsiteId>,
    (at, hlc): (Timestamp, i64),
    now: Timestamp,
    budget: usize,
) -> Result<Option<TombstoneId>> {
    let id = insert_tombstone(
        tx,
        "website",
        TombstoneFields {
            domain_sha256: Some(hash),
            website_id: website,
            completed_at: website.is_none().then_some(now),
            sync_hlc: Some(hlc),
            ..TombstoneFields::default()
        },
        at,
    )?;
    if website.is_none() {
        return Ok(None);
    }
    let step = advance_in(tx, id, now, budget)?;
    Ok((!step.done).then_some(id))
}

/// Remembers that the visits `ids` were forgotten (by another device), for those not yet
/// remembered: a copy that arrives later is dropped.
pub(crate) fn remember_forgotten_visits_in(
    tx: &Transaction<'_>,
    ids: &[VisitId],
    now: Timestamp,
) -> Result<()> {
    for &id in ids {
        let known: bool = tx
            .prepare_cached(
                r#"SELECT EXISTS (SELECT 1 FROM tombstone INDEXED BY tombstone_visit_idx
                                  WHERE kind = 'visit' AND visit_id = :v)"#,
            )?
            .query_row(named_params! { ":v": id }, |r| r.get(0))?;
        if !known {
            insert_tombstone(
                tx,
                "visit",
                TombstoneFields {
                    visit_id: Some(id),
                    completed_at: Some(now),
                    ..TombstoneFields::default()
                },
                now,
            )?;
        }
    }
    Ok(())
}

/// A range forgetting that takes more than half of the history, and at least this many visits,
/// empties the search index and rebuilds what is left instead of deleting index rows one by one.
const REBUILD_MIN_VISITS: i64 = 2_000;

/// Visits indexed in a batch that would delete one: indexing costs about a twentieth of it.
const REBUILD_PER_VISIT: usize = 20;

/// The first transaction of a range forgetting: the tombstone (from its commit on, no visit in the
/// range is recorded) and the first batch. Returns the tombstone if batches are left.
pub(crate) fn start_range_in(
    tx: &Transaction<'_>,
    since: Timestamp,
    until: Timestamp,
    now: Timestamp,
    budget: usize,
) -> Result<(Option<TombstoneId>, ForgetReport)> {
    let (in_range, total): (i64, i64) = tx
        .prepare_cached(
            r#"SELECT (SELECT count(*) FROM visit WHERE id >= :lo AND id <= :hi), (SELECT count(*) FROM visit)"#,
        )?
        .query_row(
            named_params! { ":lo": VisitId::lower_bound(since), ":hi": VisitId::upper_bound(until) },
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
    if in_range >= REBUILD_MIN_VISITS && in_range * 2 > total {
        // Deleting each visit's index row costs about a millisecond (secure-delete takes its words
        // out of every page at once); rebuilding the rest costs about ten microseconds a visit.
        crate::search::reset_index_in(tx, (total - in_range) as u64, now)?;
    }
    let id = insert_tombstone(
        tx,
        "range",
        TombstoneFields {
            since: Some(since),
            until: Some(until),
            resume_at: Some(VisitId::lower_bound(since)),
            ..TombstoneFields::default()
        },
        now,
    )?;
    let step = advance_in(tx, id, now, budget)?;
    let report = ForgetReport {
        visits: step.visits,
        websites: step.websites,
        ..ForgetReport::default()
    };
    Ok(((!step.done).then_some(id), report))
}

/// A pending tombstone, as a batch needs it.
struct Pending {
    kind: String,
    website_id: Option<WebsiteId>,
    since: Option<Timestamp>,
    until: Option<Timestamp>,
    resume_at: Option<VisitId>,
    completed: bool,
    sync_hlc: Option<i64>,
}

/// Runs the next batch of the forgetting `id`: at most `budget` visits deleted (or, for a website
/// while the index is being built, a bounded piece of the visit table scanned).
pub(super) fn advance_in(
    tx: &Transaction<'_>,
    id: TombstoneId,
    now: Timestamp,
    budget: usize,
) -> Result<Step> {
    let t: Option<Pending> = tx
        .prepare_cached(
            r#"SELECT kind, website_id, since, until, resume_at, completed_at IS NOT NULL AS completed,
                      sync_hlc
               FROM tombstone WHERE id = :id"#,
        )?
        .query_row(named_params! { ":id": id }, |r| {
            Ok(Pending {
                kind: r.get("kind")?,
                website_id: r.get("website_id")?,
                since: r.get("since")?,
                until: r.get("until")?,
                sync_hlc: r.get("sync_hlc")?,
                resume_at: r.get("resume_at")?,
                completed: r.get("completed")?,
            })
        })
        .optional()?;
    let Some(t) = t.filter(|t| !t.completed) else {
        return Ok(Step {
            done: true,
            ..Step::default()
        });
    };
    match (t.kind.as_str(), t.website_id, t.since, t.until) {
        ("website", Some(website), _, _) => {
            advance_website(tx, id, website, (t.resume_at, t.sync_hlc), now, budget)
        }
        ("range", _, Some(since), Some(until)) => {
            advance_range(tx, id, (since, until), t.resume_at, now, budget)
        }
        _ => {
            complete(tx, id, 0, now)?;
            Ok(Step {
                done: true,
                ..Step::default()
            })
        }
    }
}

fn save(tx: &Transaction<'_>, id: TombstoneId, resume_at: Option<VisitId>, visits: u64) -> Result<()> {
    tx.prepare_cached(r#"UPDATE tombstone SET resume_at = :resume_at, visits = visits + :n WHERE id = :id"#)?
        .execute(named_params! { ":id": id, ":resume_at": resume_at, ":n": visits as i64 })?;
    Ok(())
}

/// Marks the forgetting done. A website tombstone keeps only its domain's hash.
fn complete(tx: &Transaction<'_>, id: TombstoneId, visits: u64, now: Timestamp) -> Result<()> {
    tx.prepare_cached(
        r#"UPDATE tombstone
           SET resume_at = NULL, website_id = NULL, completed_at = :now, visits = visits + :n
           WHERE id = :id"#,
    )?
    .execute(named_params! { ":id": id, ":now": now, ":n": visits as i64 })?;
    Ok(())
}

fn advance_website(
    tx: &Transaction<'_>,
    id: TombstoneId,
    website: WebsiteId,
    (below, bound): (Option<VisitId>, Option<i64>),
    now: Timestamp,
    budget: usize,
) -> Result<Step> {
    let domain: Option<String> = tx
        .prepare_cached(r#"SELECT domain FROM website WHERE id = :w"#)?
        .query_row(named_params! { ":w": website }, |r| r.get("domain"))
        .optional()?;
    let Some(domain) = domain else {
        complete(tx, id, 0, now)?;
        return Ok(Step {
            done: true,
            ..Step::default()
        });
    };
    let found = delete::find_website_visits(tx, website, &domain, below, budget)?;
    let mut doomed: Vec<&delete::Doomed> = found.visits.iter().collect();
    if let Some(bound) = bound {
        // Only the visits recorded before the forgetting, by the sync clock.
        let mut clock = tx.prepare_cached(r#"SELECT coalesce(sync_hlc, 0) FROM visit WHERE id = :v"#)?;
        let mut kept = Vec::with_capacity(doomed.len());
        for v in doomed {
            let hlc: i64 = clock.query_row(named_params! { ":v": v.id }, |r| r.get(0))?;
            if crate::sync_log::conflict::forgets(bound, hlc) {
                kept.push(v);
            }
        }
        doomed = kept;
    }
    delete_visits_in(tx, &doomed)?;
    let visits = doomed.len() as u64;
    if found.next_below.is_some() {
        save(tx, id, found.next_below, visits)?;
        return Ok(Step {
            visits,
            ..Step::default()
        });
    }
    // This pass reached the oldest visit. Visits recorded meanwhile may have joined the website:
    // then another pass from the newest. A bounded forgetting (with a sync clock) keeps the
    // visits recorded after it, and the website with them.
    let left = has_visits_in(tx, website, &domain)?;
    if left && bound.is_some() {
        complete(tx, id, visits, now)?;
        return Ok(Step {
            visits,
            done: true,
            ..Step::default()
        });
    }
    if left {
        save(tx, id, None, visits)?;
        return Ok(Step {
            visits,
            ..Step::default()
        });
    }
    delete_website_in(tx, website)?;
    complete(tx, id, visits, now)?;
    Ok(Step {
        visits,
        websites: 1,
        done: true,
    })
}

fn advance_range(
    tx: &Transaction<'_>,
    id: TombstoneId,
    (since, until): (Timestamp, Timestamp),
    resume_at: Option<VisitId>,
    now: Timestamp,
    budget: usize,
) -> Result<Step> {
    let Some(from) = resume_at else {
        return sweep_websites(tx, id, now, budget);
    };
    let rows: Vec<Doomed> = tx
        .prepare_cached(&format!(
            r#"SELECT {cols} FROM visit v JOIN website w ON w.id = v.website_id
               WHERE v.id >= :from AND v.id <= :to ORDER BY v.id"#,
            cols = delete::DOOMED_COLUMNS
        ))?
        .query_map(
            named_params! { ":from": from, ":to": VisitId::upper_bound(until) },
            Doomed::read,
        )?
        .take(budget)
        .collect::<rusqlite::Result<_>>()?;
    // Ids bound the range to the millisecond; the visit's own time decides.
    let doomed: Vec<&Doomed> = rows
        .iter()
        .filter(|v| since <= v.visited_at && v.visited_at <= until)
        .collect();
    delete_visits_in(tx, &doomed)?;
    let mut add_candidate = tx.prepare_cached(
        r#"INSERT INTO forget_candidate (tombstone_id, website_id) VALUES (:t, :w) ON CONFLICT DO NOTHING"#,
    )?;
    for v in &doomed {
        add_candidate.execute(named_params! { ":t": id, ":w": v.website_id })?;
    }
    let visits = doomed.len() as u64;
    let next = if rows.len() < budget {
        None
    } else {
        rows.last()
            .map(|v| VisitId(uuid::Uuid::from_u128(v.id.0.as_u128().saturating_add(1))))
    };
    save(tx, id, next, visits)?;
    Ok(Step {
        visits,
        ..Step::default()
    })
}

/// The end of a range forgetting: deletes the websites it took visits from that have none left.
/// The check is served by the search index: while it is being built (after a forgetting emptied
/// it, or on an upgraded database), this batch builds the next piece of it instead.
fn sweep_websites(tx: &Transaction<'_>, id: TombstoneId, now: Timestamp, budget: usize) -> Result<Step> {
    if !crate::search::get_index_status(tx)?.complete {
        crate::search::backfill_batch(tx, budget * REBUILD_PER_VISIT, now)?;
        return Ok(Step::default());
    }
    let candidates: Vec<(WebsiteId, Option<String>)> = tx
        .prepare_cached(
            r#"SELECT c.website_id, w.domain FROM forget_candidate c
               LEFT JOIN website w ON w.id = c.website_id
               WHERE c.tombstone_id = :t"#,
        )?
        .query_map(named_params! { ":t": id }, |r| {
            Ok((r.get("website_id")?, r.get("domain")?))
        })?
        .take(budget)
        .collect::<rusqlite::Result<_>>()?;
    if candidates.is_empty() {
        complete(tx, id, 0, now)?;
        return Ok(Step {
            done: true,
            ..Step::default()
        });
    }
    let mut websites = 0;
    let mut done =
        tx.prepare_cached(r#"DELETE FROM forget_candidate WHERE tombstone_id = :t AND website_id = :w"#)?;
    for (website, domain) in candidates {
        if let Some(domain) = domain {
            if !has_visits_in(tx, website, &domain)? {
                delete_website_in(tx, website)?;
                websites += 1;
            }
        }
        done.execute(named_params! { ":t": id, ":w": website })?;
    }
    Ok(Step {
        websites,
        ..Step::default()
    })
}
