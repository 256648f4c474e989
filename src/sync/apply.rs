//! Applying other devices' operations, through the same write paths as local changes (so the
//! search index, the time totals and the change feed follow), idempotently: a record applied
//! twice changes nothing the second time. Who wins is [`crate::sync_log::conflict`]'s to say
//! (every operation applied with the stamp it carries, at most its `MAX_STAMP`); this module
//! applies its answers.
//!
//! Rules:
//! - **Visits** keep their id on every device; one already here, or forgotten by id, is skipped.
//!   A visit at a forgotten time, or of a website forgotten after the visit was made (its
//!   tombstone's time, by domain hash) is dropped: deletions win, whenever the visit arrives. (A
//!   blocked domain's visit from a device that had not heard of the block is kept, as it is
//!   there: blocking stops recording, forgetting removes.)
//! - **Limits and goals** are registers too, where a removal wins over the edits of the limit it
//!   removed ([`crate::limits::Version::beats`]).
//! - **Categories, blocking and exclusions** are last-writer-wins registers (clock, then device id). A user's
//!   category or an AI's for a website this device has not seen yet waits in its register and is
//!   applied when the website appears ([`crate::websites::apply_synced_categories_in`]).
//! - **Forgetting** runs the local forgetting's steps: by id, by website up to the forgetting's
//!   time, by range for good; a large one continues in batches after the record's transaction
//!   (`Store::resume_forgetting`).

use std::collections::HashMap;

use rusqlite::{named_params, Transaction};
use uuid::Uuid;

use crate::category::{Category, CategorySource};
use crate::domain::Domain;
use crate::error::Result;
use crate::forget::steps;
use crate::ids::{VisitId, WebsiteId};
use crate::sync_log::conflict;
use crate::sync_log::local::{self, ai_key, block_key, exclude_key, user_key};
use crate::sync_log::ops::{Op, Stamped};
use crate::time::Timestamp;
use crate::visits::{self, NewVisit};

/// What applying some operations did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Operations applied (or found already applied).
    pub ops: u64,
    /// Visits added.
    pub visits: u64,
    /// Operations dropped (forgotten, blocked, unknown kinds, or not valid here).
    pub dropped: u64,
    /// A forgetting has batches left to run.
    pub forgetting_left: bool,
}

/// Records `device`'s name as of clock `hlc` (last writer wins), cut to
/// [`MAX_DEVICE_NAME`] characters.
pub(crate) fn set_device_name_in(tx: &Transaction<'_>, device: Uuid, name: &str, hlc: i64) -> Result<()> {
    tx.prepare_cached(
        r#"INSERT INTO sync_device (device_id, name, hlc) VALUES (:d, :n, :h)
           ON CONFLICT (device_id) DO UPDATE SET name = excluded.name, hlc = excluded.hlc
           WHERE excluded.hlc > sync_device.hlc"#,
    )?
    .execute(named_params! {
        ":d": device.as_bytes().as_slice(),
        ":n": crate::error::truncate_chars(name.trim(), MAX_DEVICE_NAME),
        ":h": hlc,
    })?;
    Ok(())
}

/// What a visit arriving is checked against, read once per [`Batch`] and again after
/// a forgetting it applies (only it writes in its transaction): a first sync onto a device that
/// forgot nothing asks nothing per visit. Each `any_` false means there is nothing to look up.
struct Known {
    ranges: Vec<(i64, i64)>,
    any_forgotten_visits: bool,
    any_visit_tombstones: bool,
    any_website_tombstones: bool,
    any_titles: bool,
}

impl Known {
    fn load(tx: &Transaction<'_>) -> Result<Known> {
        let exists = |sql: &str| -> Result<bool> { Ok(tx.prepare_cached(sql)?.query_row([], |r| r.get(0))?) };
        let ranges = tx
            .prepare_cached(
                r#"SELECT since, until FROM tombstone INDEXED BY tombstone_range_idx WHERE kind = 'range'"#,
            )?
            .query_map([], |r| Ok((r.get("since")?, r.get("until")?)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(Known {
            ranges,
            any_forgotten_visits: exists(r#"SELECT EXISTS (SELECT 1 FROM forgotten_visit)"#)?,
            any_visit_tombstones: exists(
                r#"SELECT EXISTS (SELECT 1 FROM tombstone INDEXED BY tombstone_visit_idx WHERE kind = 'visit')"#,
            )?,
            any_website_tombstones: exists(
                r#"SELECT EXISTS (SELECT 1 FROM tombstone INDEXED BY tombstone_domain_idx WHERE kind = 'website')"#,
            )?,
            any_titles: exists(
                r#"SELECT EXISTS (SELECT 1 FROM sync_register WHERE key >= 'title:' AND key < 'title;')"#,
            )?,
        })
    }

    fn in_forgotten_range(&self, at: Timestamp) -> bool {
        self.ranges
            .iter()
            .any(|&(since, until)| since <= at.as_micros() && at.as_micros() <= until)
    }
}

/// Longest device name.
pub const MAX_DEVICE_NAME: usize = 64;

/// Applies `ops` of `device` in `tx`.
pub fn apply_in(tx: &Transaction<'_>, device: Uuid, ops: &[Stamped], now: Timestamp) -> Result<Applied> {
    let mut batch = Batch::begin(tx)?;
    let applied = batch.apply(tx, device, ops, now)?;
    batch.finish(tx)?;
    Ok(applied)
}

/// Operations applied many calls at a time in one transaction (the pull's): what is read once
/// per transaction (the forgetting's lists, [`Known`]), the website of each domain met in it, the
/// visits' search index rows and titled visits per website (each added together at
/// [`Batch::finish`], before the commit) and the highest clock seen (observed at the end). It
/// lives no longer than its transaction: the transaction holds the write lock, so nothing it
/// remembers changes under it but by its own operations (a forgetting reads the lists again and
/// drops the websites remembered).
pub struct Batch {
    known: Known,
    index: crate::search::IndexBatch,
    titled: crate::title_judging::TitledVisits,
    websites: HashMap<String, WebsiteId>,
    seen: i64,
}

impl Batch {
    /// Starts applying in `tx`.
    pub fn begin(tx: &Transaction<'_>) -> Result<Batch> {
        Ok(Batch {
            known: Known::load(tx)?,
            index: crate::search::IndexBatch::default(),
            titled: crate::title_judging::TitledVisits::default(),
            websites: HashMap::new(),
            seen: 0,
        })
    }

    /// Applies `ops` of `device` in `tx` (the transaction this batch began in).
    pub fn apply(
        &mut self,
        tx: &Transaction<'_>,
        device: Uuid,
        ops: &[Stamped],
        now: Timestamp,
    ) -> Result<Applied> {
        local::applying(|| {
            let mut applied = Applied::default();
            for s in ops {
                // Applied with the stamp it carries (the same on every device), at most MAX_STAMP.
                let s = if conflict::received(s.hlc) == s.hlc {
                    std::borrow::Cow::Borrowed(s)
                } else {
                    std::borrow::Cow::Owned(Stamped {
                        hlc: conflict::received(s.hlc),
                        op: s.op.clone(),
                    })
                };
                let s = s.as_ref();
                self.seen = self.seen.max(s.hlc);
                let forgets = matches!(
                    s.op,
                    Op::ForgetVisits { .. }
                        | Op::ForgetWebsite { .. }
                        | Op::ForgetWebsiteHash { .. }
                        | Op::ForgetRange { .. }
                );
                // The index rows queued go in before an operation that reads or changes the index.
                if forgets || matches!(s.op, Op::Title { .. }) {
                    self.index.flush_in(tx)?;
                    self.titled.flush_in(tx)?;
                }
                match apply_one(tx, device, s, now, self, &mut applied)? {
                    true => applied.ops += 1,
                    false => applied.dropped += 1,
                }
                if forgets {
                    // It may have removed websites and added tombstones.
                    self.known = Known::load(tx)?;
                    self.websites.clear();
                } else if matches!(s.op, Op::Title { .. }) {
                    self.known.any_titles = true;
                }
            }
            Ok(applied)
        })
    }

    /// Adds the queued index rows and titled visits and observes the highest clock seen; call
    /// before the commit.
    pub fn finish(mut self, tx: &Transaction<'_>) -> Result<()> {
        local::applying(|| {
            self.index.flush_in(tx)?;
            self.titled.flush_in(tx)?;
            local::observe_in(tx, self.seen)
        })
    }

    /// The website of `domain`, stored if new (a new website gets the categories other devices
    /// gave it: `apply_synced_categories_in`).
    fn website_in(&mut self, tx: &Transaction<'_>, domain: &Domain, now: Timestamp) -> Result<WebsiteId> {
        if let Some(&id) = self.websites.get(domain.as_str()) {
            return Ok(id);
        }
        let (id, _) = visits::get_or_insert_website_in(tx, domain, now)?;
        if self.websites.len() >= MAX_CACHED_WEBSITES {
            self.websites.clear();
        }
        self.websites.insert(domain.as_str().to_owned(), id);
        Ok(id)
    }
}

/// Most websites a [`Batch`] remembers; past this it starts over, so memory stays bounded.
const MAX_CACHED_WEBSITES: usize = 50_000;

/// True if the visit every device knows as `id` is here, or was forgotten here.
fn visit_known(tx: &Transaction<'_>, known: &Known, id: VisitId) -> Result<bool> {
    if local::local_visit_id(tx, id)?.is_some() {
        return Ok(true);
    }
    if !known.any_visit_tombstones {
        return Ok(false);
    }
    Ok(tx
        .prepare_cached(
            r#"SELECT EXISTS (SELECT 1 FROM tombstone INDEXED BY tombstone_visit_idx
                              WHERE kind = 'visit' AND visit_id = :v)"#,
        )?
        .query_row(named_params! { ":v": id }, |r| r.get(0))?)
}

/// True if the website of `domain` was forgotten after a change with clock `hlc`
/// ([`conflict::forgets`]; a website forgotten before this device was linked has no clock: its
/// time stands for it).
fn website_forgotten_after(tx: &Transaction<'_>, known: &Known, domain: &str, hlc: i64) -> Result<bool> {
    if !known.any_website_tombstones {
        return Ok(false);
    }
    Ok(local::website_forgetting_stamp(tx, domain)?.is_some_and(|f| conflict::forgets(f, hlc)))
}

/// True if applied (or already applied), false if dropped.
fn apply_one(
    tx: &Transaction<'_>,
    device: Uuid,
    s: &Stamped,
    now: Timestamp,
    batch: &mut Batch,
    applied: &mut Applied,
) -> Result<bool> {
    let known = &batch.known;
    match &s.op {
        Op::Visit {
            id,
            url,
            title,
            at,
            source,
            active_ms,
            estimated_ms,
        } => {
            if visit_known(tx, known, *id)? {
                return Ok(true);
            }
            let at = Timestamp(*at);
            let Ok(domain) = Domain::from_url(url) else {
                return Ok(false);
            };
            // A blocked domain is not checked: the visit was recorded where it was not blocked
            // (yet), stays there, and so stays here too (every device holds the same history);
            // forgetting the website with "never record" removes it everywhere.
            if visits::check_visit_time(at).is_err()
                || source.trim().is_empty()
                || known.in_forgotten_range(at)
                || (known.any_forgotten_visits && crate::forget::is_forgotten_visit(tx, url, at)?)
                || website_forgotten_after(tx, known, domain.as_str(), s.hlc)?
            {
                return Ok(false);
            }
            let website = batch.website_in(tx, &domain, now)?;
            let visit = NewVisit {
                url,
                title: title.as_deref(),
                visited_at: at,
                source,
                source_visit_id: None,
            };
            let stored = visits::insert_synced_visit_in(
                tx,
                *id,
                &visit,
                website,
                &domain,
                (device, s.hlc),
                (&mut batch.index, &mut batch.titled),
            )?;
            // A device that retitled this visit may have been heard from first.
            if let Some(newer) = batch
                .known
                .any_titles
                .then(|| local::get_register(tx, &local::title_key(*id)))
                .transpose()?
                .flatten()
            {
                visits::update_title_in(tx, stored, newer.value.as_deref())?;
            }
            if let Some(ms) = active_ms.filter(|&ms| (0..=crate::time_spent::MAX_ACTIVE_MS).contains(&ms)) {
                crate::time_spent::set_active_ms_in(tx, stored, ms, now)?;
            }
            if let Some(ms) = *estimated_ms {
                crate::time_spent::set_estimated_ms_in(tx, stored, ms, now)?;
            }
            applied.visits += 1;
            Ok(true)
        }
        Op::Title { id, title } => {
            // Last writer wins (two devices may retitle one visit).
            if local::offer_register_in(tx, &local::title_key(*id), s.hlc, device, title.as_deref())? {
                if let Some(v) = local::local_visit_id(tx, *id)? {
                    visits::update_title_in(tx, v, title.as_deref())?;
                }
            }
            Ok(true)
        }
        Op::ActiveTime { id, ms } => {
            let valid = (0..=crate::time_spent::MAX_ACTIVE_MS).contains(ms);
            if let Some(v) = local::local_visit_id(tx, *id)?.filter(|_| valid) {
                crate::time_spent::set_active_ms_in(tx, v, *ms, now)?;
            }
            Ok(true)
        }
        Op::EstimatedTime { id, ms } => {
            if let Some(v) = local::local_visit_id(tx, *id)? {
                crate::time_spent::set_estimated_ms_in(tx, v, *ms, now)?;
            }
            Ok(true)
        }
        Op::Category {
            domain,
            category,
            source,
        } => {
            let (Ok(d), Ok(c)) = (Domain::parse(domain), category.parse::<Category>()) else {
                return Ok(false);
            };
            let d = d.as_str();
            match CategorySource::parse(source) {
                Some(CategorySource::User) => {
                    if local::offer_register_in(tx, &user_key(d), s.hlc, device, Some(c.id()))? {
                        if let Some(w) = crate::websites::find_website_id(tx, d)? {
                            crate::websites::set_synced_user_category_in(tx, w, d, c, now)?;
                        }
                    }
                    Ok(true)
                }
                Some(CategorySource::Ai) => {
                    if local::offer_register_in(tx, &ai_key(d), s.hlc, device, Some(c.id()))? {
                        if let Some(w) = crate::websites::find_website_id(tx, d)? {
                            crate::websites::write_synced_ai_category_in(tx, w, c, now)?;
                        }
                    }
                    Ok(true)
                }
                Some(CategorySource::Builtin) | None => Ok(false),
            }
        }
        Op::Block { domain, blocked } => {
            let Ok(d) = Domain::parse(domain) else {
                return Ok(false);
            };
            let value = local::flag(*blocked);
            if local::offer_register_in(tx, &block_key(d.as_str()), s.hlc, device, Some(value))? {
                if *blocked {
                    crate::blocked::block_in(tx, &d, now)?;
                } else {
                    crate::blocked::unblock_in(tx, &d, now)?;
                }
            }
            Ok(true)
        }
        Op::Exclude { pattern, excluded } => {
            let Ok(p) = crate::exclusions::canonical(pattern) else {
                return Ok(false);
            };
            let value = local::flag(*excluded);
            if local::offer_register_in(tx, &exclude_key(&p), s.hlc, device, Some(value))? {
                if *excluded {
                    crate::exclusions::exclude_in(tx, &p, now)?;
                } else {
                    crate::exclusions::include_in(tx, &p)?;
                }
            }
            Ok(true)
        }
        Op::Limit {
            target_type,
            target,
            period,
            kind,
            minutes,
            created,
        } => {
            let op = crate::limits::Synced {
                target_type,
                target,
                period,
                kind,
                minutes: *minutes,
                created: *created,
            };
            crate::limits::apply_synced_in(tx, device, s.hlc, op, now)
        }
        Op::Focus {
            started_at,
            ends_at,
            blocks,
            stopped_at,
        } => {
            let op = crate::focus::Synced {
                started_at: *started_at,
                ends_at: *ends_at,
                blocks,
                stopped_at: *stopped_at,
            };
            crate::focus::apply_synced_in(tx, device, s.hlc, op, now)
        }
        Op::ForgetVisits { ids } => {
            let mut here = Vec::with_capacity(ids.len());
            for &g in ids {
                if let Some(v) = local::local_visit_id(tx, g)? {
                    here.push(v);
                }
            }
            steps::forget_visits_in(tx, &here, now)?;
            steps::remember_forgotten_visits_in(tx, ids, now)?;
            Ok(true)
        }
        Op::ForgetWebsite { domain, at } => {
            let Ok(d) = Domain::parse(domain) else {
                return Ok(false);
            };
            if website_forgetting_held(tx, &crate::forget::domain_sha256(d.as_str()), s.hlc)? {
                return Ok(true);
            }
            let left = steps::start_synced_website_in(
                tx,
                &d,
                (Timestamp(*at), s.hlc),
                now,
                crate::forget::FIRST_BATCH,
            )?;
            applied.forgetting_left |= left.is_some();
            Ok(true)
        }
        Op::ForgetWebsiteHash { domain_sha256, at } => {
            let Some(hash) = decode_sha256(domain_sha256) else {
                return Ok(false);
            };
            // Sent at a link, long after the forgetting, with the stamp it has on its device
            // (`conflict::tombstone_stamp`: its clock, or the stamp of its time if it was made
            // before any link), so visits other devices recorded after it are kept, and every
            // device orders them against it the same way (a device whose wall clock is far off
            // its clock included).
            let hlc = s.hlc;
            if website_forgetting_held(tx, &hash, hlc)? {
                return Ok(true);
            }
            let left = steps::start_synced_website_by_hash_in(
                tx,
                &hash,
                website_with_domain_hash(tx, &hash)?,
                (Timestamp(*at), hlc),
                now,
                crate::forget::FIRST_BATCH,
            )?;
            applied.forgetting_left |= left.is_some();
            Ok(true)
        }
        Op::ForgetRange { since, until } => {
            if since > until {
                return Ok(false);
            }
            if range_forgetting_held(tx, *since, *until)? {
                return Ok(true);
            }
            let (left, _) = steps::start_range_in(
                tx,
                Timestamp(*since),
                Timestamp(*until),
                now,
                crate::forget::FIRST_BATCH,
            )?;
            applied.forgetting_left |= left.is_some();
            Ok(true)
        }
        Op::Device { name } => {
            set_device_name_in(tx, device, name, s.hlc)?;
            Ok(true)
        }
        Op::Unknown => Ok(false),
    }
}

/// True if a forgetting of the website whose domain has SHA-256 `hash` with a clock at or past
/// `hlc` is held here already: it took (and takes) every visit this one would, so this one adds
/// nothing (a device that links again sends its forgettings again).
fn website_forgetting_held(tx: &Transaction<'_>, hash: &[u8], hlc: i64) -> Result<bool> {
    Ok(tx
        .prepare_cached(
            r#"SELECT EXISTS (SELECT 1 FROM tombstone INDEXED BY tombstone_domain_idx
                              WHERE kind = 'website' AND domain_sha256 = :h
                                AND coalesce(sync_hlc, (forgotten_at / 1000) * 65536) >= :hlc)"#,
        )?
        .query_row(named_params! { ":h": hash, ":hlc": hlc }, |r| r.get(0))?)
}

/// True if a forgotten time range covering `since..=until` is held here already.
fn range_forgetting_held(tx: &Transaction<'_>, since: i64, until: i64) -> Result<bool> {
    Ok(tx
        .prepare_cached(
            r#"SELECT EXISTS (SELECT 1 FROM tombstone INDEXED BY tombstone_range_idx
                              WHERE kind = 'range' AND since <= :s AND until >= :u)"#,
        )?
        .query_row(named_params! { ":s": since, ":u": until }, |r| r.get(0))?)
}

/// The 32 bytes of a SHA-256 written as 64 hex digits, or `None`.
fn decode_sha256(hex: &str) -> Option<Vec<u8>> {
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..32)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
        .collect()
}

/// The website here whose domain has SHA-256 `hash`, if any (websites number in the thousands:
/// hashing each is a millisecond, and it happens once per website forgotten before a link).
fn website_with_domain_hash(tx: &Transaction<'_>, hash: &[u8]) -> Result<Option<WebsiteId>> {
    let mut stmt = tx.prepare_cached(r#"SELECT id, domain FROM website"#)?;
    let rows = stmt.query_map([], |r| {
        Ok((r.get::<_, WebsiteId>("id")?, r.get::<_, String>("domain")?))
    })?;
    for row in rows {
        let (id, domain) = row?;
        if crate::forget::domain_sha256(&domain) == hash {
            return Ok(Some(id));
        }
    }
    Ok(None)
}
