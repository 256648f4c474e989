//! The import's reading thread: it reads the browser's visits and does every step that needs no
//! database of ours (the source's own checks, the URL parsed once for its domain and its stored
//! form, the title repaired and cleaned, the search index text), so that the thread that writes
//! runs little else than SQL, and an import uses two cores.
//!
//! The visits go to the writer in chunks of at most [`CHUNK_ROWS`] rows over a channel that holds
//! [`READ_AHEAD`] of them: the reader is at most a few thousand rows ahead of the writer, so
//! memory stays bounded whatever the file's size (and the batch size). The writer decides
//! everything that depends on what is stored (a blocked or forgotten visit, the website, the key)
//! in the batch's transaction, as before.
//!
//! Invariants:
//! - Chunks never straddle two batches: a batch of `batch_size` rows read (skipped or not) is the
//!   chunks up to the one that completes it (or ends the file), and the last one says where the
//!   cursor moves with it; the writer commits them, or none of them, in one transaction.
//! - A read error ends the reading: it is sent in place of the batch it interrupted (nothing of
//!   that batch is stored). When the writer stops (cancelled, failed), its end of the channel
//!   closes and the reader stops at its next batch.

use std::path::Path;
use std::sync::mpsc::SyncSender;

use rusqlite::named_params;

use crate::domain::Domain;
use crate::error::Result;
use crate::visits::ReadyVisit;

use super::cursor::CursorAt;
use super::rows::{accept, RawVisit, Skip, SkipCounts};
use super::snapshot::Snapshot;
use super::SourceSpec;

/// Most rows in one chunk.
pub(super) const CHUNK_ROWS: u64 = 1_000;

/// Chunks read ahead of the one being written.
pub(super) const READ_AHEAD: usize = 4;

/// Browser visits read and made ready: a batch's, or part of one.
#[derive(Default)]
pub(super) struct ReadChunk {
    /// Browser visits read.
    pub(super) read: u64,
    /// The last one read: where the cursor moves when the batch commits.
    pub(super) last: Option<CursorAt>,
    /// Visits skipped for what they are (not for what is stored: that is the writer's part).
    pub(super) skipped: SkipCounts,
    /// The visits to store, unless stored already, blocked or forgotten.
    pub(super) visits: Vec<ReadyRow>,
    /// True if the file ends with this chunk.
    pub(super) end_of_file: bool,
}

/// A visit that passed the checks needing no database, ready to insert.
pub(super) struct ReadyRow {
    /// Its website.
    pub(super) domain: Domain,
    /// The visit as it is stored.
    pub(super) visit: ReadyVisit,
    /// The browser's id with the visit's time (see `rows::Accepted::source_visit_id`).
    pub(super) source_visit_id: String,
    /// True if the title had to be repaired.
    pub(super) title_repaired: bool,
    /// How long the page was open, where the source records it.
    pub(super) duration_ms: Option<i64>,
}

/// The visit of `raw`, ready to insert, or why it is skipped.
pub(super) fn ready_row(raw: &RawVisit<'_>) -> std::result::Result<ReadyRow, Skip> {
    let accepted = accept(raw)?;
    let url = crate::page_url::stored_form(accepted.parsed);
    let visit = ReadyVisit::new(
        url,
        accepted.title.as_deref(),
        accepted.visited_at,
        &accepted.domain,
    );
    Ok(ReadyRow {
        domain: accepted.domain,
        visit,
        source_visit_id: accepted.source_visit_id,
        title_repaired: accepted.title_repaired,
        duration_ms: raw.duration_ms,
    })
}

/// Reads the visits of `snapshot` (a `spec` file, read from `path`) after the browser's visit id
/// `after`, and sends them to `to` in chunks, each batch of `batch_size` rows in chunks of its
/// own, until the end of the file, a read error (sent as the last message) or the writer's end of
/// the channel closing.
pub(super) fn read_chunks(
    snapshot: Snapshot,
    spec: &SourceSpec,
    (after, batch_size): (i64, usize),
    path: &Path,
    to: &SyncSender<Result<ReadChunk>>,
) {
    let read_failed = super::read_failed(path, "visits");
    let outcome = (|| -> Result<()> {
        let mut stmt = snapshot.conn().prepare(spec.rows_sql).map_err(read_failed)?;
        let mut rows = stmt
            .query(named_params! { ":after": after })
            .map_err(read_failed)?;
        let batch_size = batch_size as u64;
        // Rows of the current batch read so far.
        let mut in_batch = 0;
        loop {
            let rows_wanted = CHUNK_ROWS.min(batch_size - in_batch);
            let mut chunk = ReadChunk::default();
            while chunk.read < rows_wanted {
                let Some(row) = rows.next().map_err(read_failed)? else {
                    chunk.end_of_file = true;
                    break;
                };
                let raw = (spec.read)(&row).map_err(read_failed)?;
                chunk.read += 1;
                chunk.last = Some(CursorAt {
                    visit_id: raw.id,
                    visit_time: raw.time_key,
                });
                match ready_row(&raw) {
                    Ok(ready) => chunk.visits.push(ready),
                    Err(skip) => chunk.skipped.add(skip),
                }
            }
            in_batch = (in_batch + chunk.read) % batch_size;
            let end_of_file = chunk.end_of_file;
            // An error here: the writer stopped and will not read any more.
            if to.send(Ok(chunk)).is_err() || end_of_file {
                return Ok(());
            }
        }
    })();
    if let Err(e) = outcome {
        // Ignored when the writer stopped already: it has its own outcome.
        let _ = to.send(Err(e));
    }
}
