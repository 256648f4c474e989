//! Forgetting: deleting visits, websites and time ranges for good, and recording that they were
//! forgotten.
//!
//! Three forgettings: some visits by id ([`Store::forget_visits`]), a website with every visit to
//! it and its classification job ([`Store::forget_website`], optionally also blocking it), and
//! every visit in a time range ([`Store::forget_range`]; "the last hour", "everything").
//!
//! Invariants:
//! - **Gone from the file.** A forgotten visit's row and its search-index entry are deleted
//!   (the index row with the text it was indexed with, under the index's `secure-delete` option,
//!   so its words leave the index pages; a forgetting of most of the history empties the index
//!   instead and rebuilds what is left, `search::reset_index_in`), on a connection with
//!   `secure_delete = ON` (deleted bytes are zeroed), and when the forgetting is done the WAL is
//!   checkpointed and truncated, so no old page copy keeps them (`space.rs`). A website left without visits is deleted with its
//!   job and favicon: its domain is content too.
//! - **Never back.** Each forgetting writes a tombstone (what and when, never a URL, title or
//!   domain: a website is recorded by the SHA-256 of its domain), so a later sync can forget it on
//!   other devices. An imported visit leaves its import key (a hash of its source and its id in
//!   the browser, [`import_key`]) in `forgotten_import`, every forgotten visit leaves what it was
//!   (its URL and time, hashed: [`visit_key`]) in `forgotten_visit`, and a time range stays
//!   forgotten: `record_visit_in` (the CLI, the extension), sync and every import refuse a visit in
//!   a forgotten range or with a forgotten key, from any source: importing a copy of the file, or
//!   the same file under another `--source`, brings nothing back.
//! - **Short locks.** A forgetting is one transaction when it is small. A large one commits in
//!   batches of at most [`ForgetOptions::batch_size`] visits (about a tenth of a second of write
//!   lock each), each moving the tombstone's cursor with it: interrupted, it is resumed where it
//!   stopped ([`Store::resume_forgetting`], run by the CLI and the app at start). Its effect on
//!   new visits is immediate: the first transaction writes the tombstone (a range then refuses
//!   new visits in it) and deletes the website's job (it can never be claimed again).
//! - **References kept by hand.** The forgetting's connection has foreign keys off: SQLite checks
//!   a website's deletion by scanning every visit (there is no index on `visit.website_id`, on
//!   purpose), which would cost a full scan per website. Websites are deleted only after
//!   [`delete::has_visits_in`] found none (served by the search index), with their job and favicon.

mod delete;
mod never_back;
mod space;
pub(crate) mod steps;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use sha2::{Digest, Sha256};

use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::ids::{TombstoneId, VisitId};
use crate::store::{Change, Store};
use crate::time::Timestamp;

pub use never_back::{
    import_key, is_being_forgotten, is_forgotten_time, is_forgotten_visit, refuse_if_being_forgotten,
    visit_key, ForgottenFilter,
};
pub use space::{Reclaimed, SCRUB_WAIT};

/// Most visits deleted per transaction by default (also websites checked).
pub const DEFAULT_FORGET_BATCH: usize = 1_000;

/// The largest first batch: later ones grow towards [`TARGET_BATCH_TIME`].
pub(crate) const FIRST_BATCH: usize = 200;

/// How long one batch should hold the write lock: later batches are sized from the last one's
/// time to stay near it, whatever the machine's speed or load.
pub const TARGET_BATCH_TIME: Duration = Duration::from_millis(100);

/// The pause after each batch (plus up to a third more, at random). Other writers waiting for the
/// lock poll it every 100 ms at most (SQLite's busy handler): a pause at least that long lets
/// each of them in between two batches, instead of starving behind back-to-back ones.
pub const DEFAULT_PAUSE: Duration = crate::store::BATCH_PAUSE;

/// Most visit ids one `forget_visits` call may name (one transaction).
pub const MAX_VISIT_IDS: usize = 10_000;

/// How to forget.
#[derive(Clone, Debug)]
pub struct ForgetOptions {
    /// Most visits deleted per transaction (the first batch's size; later ones aim at
    /// [`TARGET_BATCH_TIME`] within this bound).
    pub batch_size: usize,
    /// The pause between two batches, so other writers get the lock.
    pub pause: Duration,
    /// Checked between batches: when set, the forgetting stops after the batch in flight and is
    /// resumed later ([`Store::resume_forgetting`]).
    pub cancel: Option<Arc<AtomicBool>>,
    /// How long the last step (truncating the WAL) is tried again while another connection reads,
    /// before the scrub is left pending ([`SCRUB_WAIT`]).
    pub scrub_wait: Duration,
}

impl Default for ForgetOptions {
    fn default() -> Self {
        ForgetOptions {
            batch_size: DEFAULT_FORGET_BATCH,
            pause: DEFAULT_PAUSE,
            cancel: None,
            scrub_wait: SCRUB_WAIT,
        }
    }
}

/// What a forgetting did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ForgetReport {
    /// Visits deleted.
    pub visits: u64,
    /// Websites deleted (the forgotten one, or those left without visits).
    pub websites: u64,
    /// Visit ids that were not stored (already forgotten, say).
    pub not_found: u64,
    /// The domain now blocked, if the forgetting blocked one.
    pub blocked: Option<String>,
    /// True once what was forgotten is gone from the database file and its WAL. False if it was
    /// cancelled before the end (it is resumed later), or if its scrub is pending.
    pub complete: bool,
    /// True if the visits are deleted but another connection (another process reading) kept the
    /// WAL, which may still hold copies of them, from being truncated, even after
    /// [`ForgetOptions::scrub_wait`]: the next Sitetrail process to open the file truncates it.
    pub scrub_pending: bool,
    /// Space given back to the file system once complete (bytes).
    pub reclaimed_bytes: u64,
    /// The longest any of its transactions held the write lock (ms).
    pub longest_batch_ms: u64,
}

/// How far a forgetting is, after each committed batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ForgetProgress {
    /// Visits deleted so far.
    pub visits: u64,
    /// Websites deleted so far.
    pub websites: u64,
    /// True while the last step waits for another connection that is reading (up to
    /// [`ForgetOptions::scrub_wait`]).
    pub waiting_for_readers: bool,
}

/// A tombstone: one forgetting, without the content.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Tombstone {
    /// Its id.
    pub id: TombstoneId,
    /// `visit`, `website` or `range`.
    pub kind: String,
    /// The forgotten visit (kind `visit`).
    pub visit_id: Option<VisitId>,
    /// Hex SHA-256 of the forgotten website's domain (kind `website`).
    pub domain_sha256: Option<String>,
    /// The forgotten range's start (kind `range`).
    pub since: Option<Timestamp>,
    /// The forgotten range's end, inclusive.
    pub until: Option<Timestamp>,
    /// Visits deleted.
    pub visits: i64,
    /// When it was asked for.
    pub forgotten_at: Timestamp,
    /// When it was done (`None` while its batches are still being committed).
    pub completed_at: Option<Timestamp>,
}

/// Hex SHA-256 of a domain, as a website tombstone keeps it.
pub fn domain_sha256(domain: &str) -> Vec<u8> {
    Sha256::digest(domain.as_bytes()).to_vec()
}

/// Every tombstone, oldest first.
pub fn list_tombstones(conn: &Connection) -> Result<Vec<Tombstone>> {
    let mut stmt = conn.prepare_cached(
        r#"SELECT id, kind, visit_id, domain_sha256, since, until, visits, forgotten_at, completed_at
           FROM tombstone ORDER BY id"#,
    )?;
    let rows = stmt.query_map([], |r| {
        let hash: Option<Vec<u8>> = r.get("domain_sha256")?;
        Ok(Tombstone {
            id: r.get("id")?,
            kind: r.get("kind")?,
            visit_id: r.get("visit_id")?,
            domain_sha256: hash.map(|h| h.iter().map(|b| format!("{b:02x}")).collect()),
            since: r.get("since")?,
            until: r.get("until")?,
            visits: r.get("visits")?,
            forgotten_at: r.get("forgotten_at")?,
            completed_at: r.get("completed_at")?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// What a forgetting's transactions touch: visits, websites and their jobs (announced to every
/// process after each commit).
pub(crate) fn forgetting() -> crate::store::Changes {
    Change::Visits | Change::Websites | Change::Outbox
}

/// How long the forgetting's connection waits for the write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The connection a forgetting runs on: `secure_delete = ON` (deleted content is zeroed) and
/// foreign keys off (see the module doc). Its own, not a pooled one, so these settings never
/// reach other code; closed when the forgetting ends.
pub(crate) fn open_connection(store: &Store) -> Result<Connection> {
    crate::blocking::note("database");
    store.check_writable()?;
    let conn = store.open_own_connection(crate::store::Synchronous::Full, BUSY_TIMEOUT)?;
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    conn.pragma_update(None, "secure_delete", "ON")?;
    Ok(conn)
}

/// The connection other devices' operations are applied on: the forgetting's settings (they may
/// forget), but `synchronous = NORMAL`: a transaction of applied records moves `sync_applied`
/// past them in itself, so one lost to a power cut (the only thing NORMAL risks in WAL mode) is
/// pulled and applied again at the next sync, and an fsync per commit (several a second while a
/// first sync applies) buys nothing.
pub(crate) fn open_applying_connection(store: &Store) -> Result<Connection> {
    crate::blocking::note("database");
    store.check_writable()?;
    let conn = store.open_own_connection(crate::store::Synchronous::Normal, BUSY_TIMEOUT)?;
    conn.pragma_update(None, "foreign_keys", "OFF")?;
    conn.pragma_update(None, "secure_delete", "ON")?;
    Ok(conn)
}

use crate::store::pause_between_batches as pause;

/// The next batch's size from the last one's: aiming at [`TARGET_BATCH_TIME`], at most `max`.
fn next_budget(last: usize, took: Duration, max: usize) -> usize {
    let secs = took.as_secs_f64().max(1e-4);
    let scaled = last as f64 * TARGET_BATCH_TIME.as_secs_f64() / secs;
    // Grow gently (a batch that was quick may have been a cheap one), shrink at once.
    // In range: a positive float no larger than twice a usize, and `as` saturates.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let next = scaled.min(last as f64 * 2.0) as usize;
    // At least 10 a batch, unless the caller allows fewer (`clamp` would panic on max < 10).
    next.clamp(10.min(max.max(1)), max.max(1))
}

fn cancelled(opts: &ForgetOptions) -> bool {
    opts.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed))
}

impl Store {
    /// Forgets the visits `ids` in one transaction (ids not stored are counted, not an error),
    /// and the websites they leave without visits.
    #[tracing::instrument(level = "debug", skip_all, fields(visits = ids.len()))]
    pub fn forget_visits(&self, ids: &[VisitId]) -> Result<ForgetReport> {
        if ids.len() > MAX_VISIT_IDS {
            return Err(Error::InvalidInput(format!(
                "forget at most {MAX_VISIT_IDS} visits at a time, not {}",
                ids.len()
            )));
        }
        let mut conn = open_connection(self)?;
        let now = self.now();
        let started = Instant::now();
        let mut report = self.write_on(&mut conn, forgetting(), |tx| {
            let mut global = Vec::with_capacity(ids.len());
            for &id in ids {
                global.push(crate::sync_log::local::global_visit_id(tx, id)?);
            }
            crate::sync_log::local::queue_in(tx, &crate::sync_log::ops::Op::ForgetVisits { ids: global })?;
            steps::forget_visits_in(tx, ids, now)
        })?;
        report.longest_batch_ms = crate::time::millis(started.elapsed());
        let reclaimed = space::reclaim(self, &mut conn, (DEFAULT_PAUSE, SCRUB_WAIT), &mut || {})?;
        report.reclaimed_bytes = reclaimed.bytes;
        report.complete = reclaimed.scrubbed;
        report.scrub_pending = !reclaimed.scrubbed;
        Ok(report)
    }

    /// Forgets the website of `domain`: every visit to it, its job (at once: it can never be
    /// claimed again) and the website itself. With `block`, also puts the domain (and so its
    /// subdomains) on the never-record list, in the first transaction; blocking works for a
    /// domain never visited too.
    #[tracing::instrument(level = "debug", skip_all, fields(block))]
    pub fn forget_website(
        &self,
        domain: &str,
        block: bool,
        opts: &ForgetOptions,
        progress: &mut dyn FnMut(ForgetProgress),
    ) -> Result<ForgetReport> {
        let domain = Domain::parse(domain)?;
        let mut conn = open_connection(self)?;
        let now = self.now();
        let budget = opts.batch_size.clamp(1, FIRST_BATCH);
        let started = Instant::now();
        let (tombstone, mut report) = self.write_on(&mut conn, forgetting(), |tx| {
            // A website that is here is forgotten on the other devices too, up to this clock.
            let hlc = if let Some(website) = crate::websites::find_website_id(tx, domain.as_str())? {
                let op = crate::sync_log::ops::Op::ForgetWebsite {
                    domain: domain.as_str().to_owned(),
                    at: now.as_micros(),
                };
                // Stamped past every visit of the website here (deletions win over what was seen,
                // whatever the clocks of the devices that recorded them).
                crate::sync_log::local::queue_past_in(tx, &op, |tx| {
                    crate::sync_log::local::website_visits_stamp(tx, website)
                })?
                .map(|(hlc, _)| hlc)
            } else {
                None
            };
            steps::start_website_in(tx, &domain, block, (now, hlc), budget)
        })?;
        report.longest_batch_ms = crate::time::millis(started.elapsed());
        self.finish(&mut conn, tombstone, &mut report, opts, progress)?;
        Ok(report)
    }

    /// Forgets every visit made from `since` to `until` (inclusive), and the websites it leaves
    /// without visits. From the first transaction on, no path records a visit in that range.
    #[tracing::instrument(level = "debug", skip_all, fields(since = since.as_micros(), until = until.as_micros()))]
    pub fn forget_range(
        &self,
        since: Timestamp,
        until: Timestamp,
        opts: &ForgetOptions,
        progress: &mut dyn FnMut(ForgetProgress),
    ) -> Result<ForgetReport> {
        if since > until {
            return Err(Error::InvalidInput(
                "the time range to forget ends before it starts".into(),
            ));
        }
        let mut conn = open_connection(self)?;
        let now = self.now();
        let budget = opts.batch_size.clamp(1, FIRST_BATCH);
        let started = Instant::now();
        let (tombstone, mut report) = self.write_on(&mut conn, forgetting(), |tx| {
            let op = crate::sync_log::ops::Op::ForgetRange {
                since: since.as_micros(),
                until: until.as_micros(),
            };
            crate::sync_log::local::queue_in(tx, &op)?;
            steps::start_range_in(tx, since, until, now, budget)
        })?;
        report.longest_batch_ms = crate::time::millis(started.elapsed());
        self.finish(&mut conn, tombstone, &mut report, opts, progress)?;
        Ok(report)
    }

    /// Continues every forgetting that was interrupted (a process stopped between its batches).
    pub fn resume_forgetting(
        &self,
        opts: &ForgetOptions,
        progress: &mut dyn FnMut(ForgetProgress),
    ) -> Result<Vec<ForgetReport>> {
        let pending: Vec<TombstoneId> = self.with_conn(|c| {
            let mut stmt = c.prepare_cached(
                r#"SELECT id FROM tombstone INDEXED BY tombstone_pending_idx
                   WHERE completed_at IS NULL ORDER BY forgotten_at"#,
            )?;
            let rows = stmt.query_map([], |r| r.get("id"))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })?;
        if pending.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = open_connection(self)?;
        let mut reports = Vec::new();
        for id in pending {
            let mut report = ForgetReport::default();
            self.finish(&mut conn, Some(id), &mut report, opts, progress)?;
            reports.push(report);
        }
        Ok(reports)
    }

    /// True if a forgetting is still being committed (interrupted, or running in another process).
    pub fn forgetting_pending(&self) -> Result<bool> {
        self.with_conn(|c| {
            Ok(c.prepare_cached(
                r#"SELECT EXISTS (SELECT 1 FROM tombstone INDEXED BY tombstone_pending_idx
                                  WHERE completed_at IS NULL)"#,
            )?
            .query_row([], |r| r.get(0))?)
        })
    }

    /// Every tombstone, oldest first (for a future sync, and to show what was forgotten).
    pub fn tombstones(&self) -> Result<Vec<Tombstone>> {
        self.with_conn(list_tombstones)
    }

    /// Runs the batches of the forgetting `tombstone` (if it is not done yet) until it is done or
    /// cancelled, then gives the space back.
    fn finish(
        &self,
        conn: &mut Connection,
        tombstone: Option<TombstoneId>,
        report: &mut ForgetReport,
        opts: &ForgetOptions,
        progress: &mut dyn FnMut(ForgetProgress),
    ) -> Result<()> {
        let max = opts.batch_size.max(1);
        // The first batch is small; the next ones are sized from its time.
        let mut budget = max.min(FIRST_BATCH);
        progress(ForgetProgress {
            visits: report.visits,
            websites: report.websites,
            waiting_for_readers: false,
        });
        if let Some(id) = tombstone {
            loop {
                if cancelled(opts) {
                    return Ok(());
                }
                pause(opts.pause);
                let now = self.now();
                let started = Instant::now();
                let step = self.write_on(conn, forgetting(), |tx| steps::advance_in(tx, id, now, budget))?;
                let took = started.elapsed();
                report.longest_batch_ms = report.longest_batch_ms.max(crate::time::millis(took));
                budget = next_budget(budget, took, max);
                report.visits += step.visits;
                report.websites += step.websites;
                progress(ForgetProgress {
                    visits: report.visits,
                    websites: report.websites,
                    waiting_for_readers: false,
                });
                if step.done {
                    break;
                }
            }
        }
        let (visits, websites) = (report.visits, report.websites);
        let mut waiting = || {
            progress(ForgetProgress {
                visits,
                websites,
                waiting_for_readers: true,
            });
        };
        let reclaimed = space::reclaim(self, conn, (opts.pause, opts.scrub_wait), &mut waiting)?;
        report.reclaimed_bytes = reclaimed.bytes;
        report.complete = reclaimed.scrubbed;
        report.scrub_pending = !reclaimed.scrubbed;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_budget_below_ten_is_kept_not_a_panic() {
        assert_eq!(next_budget(1, Duration::from_millis(1), 1), 1);
        assert_eq!(next_budget(5, Duration::from_secs(5), 3), 3);
        assert_eq!(next_budget(100, Duration::from_secs(100), 1000), 10);
        assert_eq!(next_budget(1, Duration::ZERO, 0), 1);
    }

    #[test]
    fn batches_aim_at_the_target_time() {
        let max = 1_000;
        assert_eq!(next_budget(1_000, Duration::from_millis(400), max), 250);
        assert_eq!(next_budget(250, Duration::from_millis(100), max), 250);
        assert_eq!(
            next_budget(250, Duration::from_millis(10), max),
            500,
            "grows at most twofold"
        );
        assert_eq!(next_budget(800, Duration::from_millis(1), max), max);
        assert_eq!(next_budget(20, Duration::from_secs(5), max), 10, "never below 10");
    }

    #[test]
    fn import_keys_hash_source_and_id_apart() {
        assert_eq!(import_key("chrome:ab", "1@2"), import_key("chrome:ab", "1@2"));
        assert_ne!(import_key("chrome:ab", "1@2"), import_key("chrome:ab", "1@3"));
        // The NUL keeps the two parts apart: "a" + "b@1" is not "ab" + "@1".
        assert_ne!(import_key("a", "b@1"), import_key("ab", "@1"));
        assert_eq!(domain_sha256("example.com").len(), 32);
    }
}
