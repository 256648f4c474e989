//! Writing one batch of browser visits, inside the batch's transaction, on the thread that writes
//! (the reading thread made them ready: `reader.rs`).
//!
//! Each visit that passes the checks goes through the same two steps as `record_visit`
//! ([`get_or_insert_website_in`], then [`insert_ready_visit_in`], the second half of
//! `insert_visit_in` for a visit whose URL, title and index text are made already), so every new
//! website gets its outbox row in the batch's transaction. Between the two, a [`WebsiteCache`]
//! remembers the website of each domain already seen in this import, which saves a lookup for
//! nearly every visit.
//!
//! Before either, a visit to a blocked domain is skipped (`blocked`), and so is one the user
//! forgot: its time lies in a forgotten range, the visit itself (its URL and time) is in
//! `forgotten_visit`, or its import key is in `forgotten_import` (`forgotten`), so no import, not
//! even one that reads the whole file again, a copy of it or under another source, brings it back.
//! Both lists are read once per batch ([`WebsiteCache::begin_batch`]): the batch holds the write
//! lock, so they cannot change under it. So is whether the database is linked to a hub (a
//! [`VisitBatch`]): when it is not, nothing is queued for sync and nothing is asked per visit.
//! The batch's visits are added to the search index together at its end
//! ([`WebsiteCache::end_batch`], one segment: see [`crate::search::IndexBatch`]), in its
//! transaction, so a search right after the import finds them all.
//!
//! Invariant: the cache never holds an id the database might not have. It is filled only by this
//! import's own connection, dropped with a batch that fails (the import stops), and cleared when
//! `PRAGMA data_version` shows that another connection committed since the last batch.
//! The import writes with foreign key checks off (`mod.rs`): this invariant is what keeps every
//! visit's website there (`tests/import/integrity.rs` forgets a website between two batches).

use std::collections::HashMap;

use rusqlite::Transaction;

use crate::blocked::BlockList;
use crate::domain::Domain;
use crate::error::Result;
use crate::forget::ForgottenFilter;
use crate::ids::WebsiteId;
use crate::time::Timestamp;
use crate::visits::{get_or_insert_website_in, insert_ready_visit_in, VisitBatch};

use super::reader::ReadyRow;
use super::rows::{Skip, SkipCounts};

/// Most domains the cache holds; past this it starts over, so memory stays bounded whatever the
/// number of hosts in a history.
const MAX_CACHED_DOMAINS: usize = 100_000;

/// What one committed batch did.
#[derive(Default)]
pub(super) struct Batch {
    pub(super) read: u64,
    pub(super) imported: u64,
    pub(super) already_present: u64,
    pub(super) new_websites: u64,
    pub(super) skipped: SkipCounts,
    pub(super) repaired_titles: u64,
    /// The last browser visit read, where the cursor moves with this batch.
    pub(super) last: Option<super::cursor::CursorAt>,
    pub(super) end_of_file: bool,
}

/// The website id of each domain this import has already stored a visit for.
#[derive(Default)]
pub(super) struct WebsiteCache {
    ids: HashMap<Domain, WebsiteId>,
    data_version: Option<i64>,
    blocked: BlockList,
    forgotten: ForgottenFilter,
    /// What the batch's visits share: their search index rows, added together at its
    /// end ([`WebsiteCache::end_batch`]), their free keys, whether to queue them for sync.
    visits: VisitBatch,
    /// The batch's estimated times, stored together at its end.
    estimates: crate::time_spent::EstimateBatch,
}

impl WebsiteCache {
    /// Call at the start of each batch's transaction: forgets everything if another connection
    /// committed since the last batch (it may have changed the `website` table).
    pub(super) fn begin_batch(&mut self, tx: &Transaction<'_>) -> Result<()> {
        let version: i64 = tx.pragma_query_value(None, "data_version", |r| r.get(0))?;
        if self.data_version != Some(version) || self.ids.len() >= MAX_CACHED_DOMAINS {
            self.ids.clear();
            self.data_version = Some(version);
        }
        self.blocked = BlockList::load(tx)?;
        self.forgotten = ForgottenFilter::load(tx)?;
        self.visits = VisitBatch::begin_in(tx)?;
        Ok(())
    }

    /// Call at the end of each batch's transaction, before it commits: adds the batch's visits
    /// to the search index and stores their estimated times.
    pub(super) fn end_batch(&mut self, tx: &Transaction<'_>) -> Result<()> {
        self.visits.flush_in(tx)?;
        self.estimates.flush_in(tx)
    }

    fn website_in(
        &mut self,
        tx: &Transaction<'_>,
        domain: &Domain,
        now: Timestamp,
    ) -> Result<(WebsiteId, bool)> {
        if let Some(&id) = self.ids.get(domain) {
            return Ok((id, false));
        }
        let (id, inserted) = get_or_insert_website_in(tx, domain, now)?;
        self.ids.insert(domain.clone(), id);
        Ok((id, inserted))
    }
}

/// Stores one visit made ready by the reading thread, or counts why not (blocked, forgotten).
/// Only a database error is an error.
pub(super) fn store_visit(
    tx: &Transaction<'_>,
    row: ReadyRow,
    (source, now): (&str, Timestamp),
    websites: &mut WebsiteCache,
    batch: &mut Batch,
) -> Result<()> {
    if websites.blocked.blocks(row.domain.as_str()) {
        batch.skipped.add(Skip::Blocked);
        return Ok(());
    }
    // A website being forgotten right now takes no visit until that is done.
    if websites.forgotten.forgets_domain(row.domain.as_str()) {
        batch.skipped.add(Skip::Forgotten);
        return Ok(());
    }
    // The stored form: a forgotten visit's key is made from it, whatever form its source had.
    if websites.forgotten.forgets(
        tx,
        (&row.visit.url, row.visit.visited_at),
        source,
        &row.source_visit_id,
    )? {
        batch.skipped.add(Skip::Forgotten);
        return Ok(());
    }
    let (website_id, new_website) = websites.website_in(tx, &row.domain, now)?;
    let (visit_id, inserted) = insert_ready_visit_in(
        tx,
        row.visit,
        (source, Some(&row.source_visit_id)),
        website_id,
        &row.domain,
        &mut websites.visits,
    )?;
    if let (true, Some(id), Some(ms)) = (inserted, visit_id, row.duration_ms) {
        let queues = websites.visits.queues();
        crate::time_spent::set_new_visit_estimated_ms_in(tx, id, ms, now, (&mut websites.estimates, queues))?;
    }
    if inserted {
        batch.imported += 1;
        batch.repaired_titles += u64::from(row.title_repaired);
    } else {
        batch.already_present += 1;
    }
    batch.new_websites += u64::from(new_website);
    Ok(())
}
