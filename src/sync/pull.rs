//! Pulling the other devices' records and applying them.
//!
//! What it keeps, whatever the hub or another device sends:
//! - **Nothing stops the pull but the network.** A record that does not open, does not inflate
//!   or parse, or would inflate past its cap is noted in `sync_unreadable` ([`unreadable`]) and
//!   moved past, in the transaction that applies its neighbours: the rest of its series and
//!   every other series still apply, and it never is. A record the hub serves at the wrong place
//!   stops its series for this sync only (noted too); the other series go on.
//! - **Memory is bounded by bytes, not by counts.** A page's records are opened, inflated and
//!   parsed on a thread of their own, each reserving its worst case before inflating and keeping
//!   only its real size once parsed, within [`MEMORY_BUDGET`]; the applier gives the bytes back
//!   as it applies. One record is at most [`ops::MAX_INFLATED_BYTES`] inflated and
//!   [`ops::MAX_OPS_PER_RECORD`] operations.
//! - **A writer waits briefly.** Records are applied many per transaction on a connection with
//!   the forgetting's settings (deleted bytes zeroed; no fsync per commit: see
//!   `forget::open_applying_connection`). A transaction ends after [`TX_TIME`] at most, or as soon
//!   as a writer waits for the lock once it has held it [`TX_YIELD_AFTER`] (waiting writers are
//!   seen across processes: `store::waiting`), and the next one begins only once the waiting
//!   writers have the lock; so a visit the browser records meanwhile waits about
//!   `TX_YIELD_AFTER` at most, and with nobody waiting the pull pauses for no one. (Should the
//!   waiting writers not be seen, the pull falls back to transactions of [`BLIND_TX_TIME`] with a
//!   pause of [`BLIND_PAUSE`] after each, which SQLite's busy handler does not miss.) A record
//!   whose operations take longer spans transactions. What is read once per transaction (the
//!   forgetting's lists, the websites met) is an [`apply::Batch`], and so are the visits' search
//!   index rows (added together at its end). The next page is fetched while one is applied.
//!   `sync_applied` moves past a record in the transaction that applies its last operations, and
//!   applying is idempotent: a crash loses nothing and applies nothing twice.

use std::sync::mpsc;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{named_params, Connection, OptionalExtension, Transaction};
use uuid::Uuid;

use sitetrail_sync_wire as wire;

use super::apply;
use super::crypto::{AccountKeys, Place};
use super::session::{series, Session, SyncReport, SERIES};
use super::unreadable::{self, Reason};
use crate::blocking;
use crate::error::Result;
use crate::store::Store;
use crate::sync_log::ops;

/// Records asked for per page.
const PAGE_RECORDS: u32 = 100;
/// Most bytes of records read and not yet applied that a pull holds (their inflated contents
/// and parsed operations), whatever the records contain.
pub const MEMORY_BUDGET: usize = 64 * 1024 * 1024;
/// Longest a transaction of applied records holds the write lock when no writer waits (about:
/// it is checked every [`SLICE_OPS`] operations). Its search index rows are held until its end.
const TX_TIME: Duration = Duration::from_millis(500);
/// How long a transaction holds the lock before it gives way to a writer waiting: long enough to
/// be worth its commit, short enough that the writer hardly notices.
const TX_YIELD_AFTER: Duration = Duration::from_millis(40);
/// Longest the pull waits, after a commit, for the writers waiting to take the lock.
const LET_IN_MAX: Duration = Duration::from_millis(100);
/// Operations applied between two looks at the time a transaction has held the lock.
const SLICE_OPS: usize = 100;
/// Without a view of waiting writers: the longest transaction.
const BLIND_TX_TIME: Duration = Duration::from_millis(70);
/// Without a view of waiting writers: the pause after each transaction. SQLite's busy handler
/// sleeps at most 25 ms between its tries in a writer's first 128 ms of waiting, so a writer
/// that came while a transaction ran gets the lock in this pause (it waited at most
/// `BLIND_TX_TIME + BLIND_PAUSE`).
const BLIND_PAUSE: Duration = Duration::from_millis(25);

/// When a transaction of applied records ends, and what comes between two.
enum Turns {
    /// Waiting writers are seen: a transaction ends when one waits (after [`TX_YIELD_AFTER`]) or
    /// after [`TX_TIME`], and the next begins once they have the lock.
    Watched(crate::store::waiting::Watch),
    /// They are not (the `-writers` file could not be opened): transactions of
    /// [`BLIND_TX_TIME`], each followed by [`BLIND_PAUSE`].
    Blind,
}

impl Turns {
    fn new(store: &Store) -> Turns {
        match store.watch_writers() {
            Ok(w) => Turns::Watched(w),
            Err(e) => {
                tracing::warn!(error = %e, "waiting writers cannot be seen: the pull pauses after each transaction");
                Turns::Blind
            }
        }
    }

    /// True if the transaction begun at `started` should end now.
    fn over(&self, started: Instant) -> bool {
        let held = started.elapsed();
        match self {
            Turns::Watched(w) => held >= TX_TIME || (held >= TX_YIELD_AFTER && w.anyone_waiting()),
            Turns::Blind => held >= BLIND_TX_TIME,
        }
    }

    /// Before the next transaction (the last committed at `committed`): lets the writers waiting
    /// take the lock.
    fn between(&self, committed: Instant) {
        match self {
            Turns::Watched(w) => w.let_in(LET_IN_MAX),
            Turns::Blind => {
                if let Some(left) = BLIND_PAUSE.checked_sub(committed.elapsed()) {
                    std::thread::sleep(left);
                }
            }
        }
    }
}

/// What one record holds in memory, at most, while it is parsed: its inflated contents and its
/// operations (strings no longer than the contents they came from).
fn worst_case_bytes() -> usize {
    let inflated = usize::try_from(ops::MAX_INFLATED_BYTES).unwrap_or(usize::MAX);
    inflated
        .saturating_mul(2)
        .saturating_add(ops::MAX_OPS_PER_RECORD * std::mem::size_of::<ops::Stamped>())
}

/// What parsed operations hold: their structs, and their strings (no longer than the inflated
/// contents they came from).
fn parsed_bytes(inflated: usize, parsed: &[ops::Stamped]) -> usize {
    inflated.saturating_add(std::mem::size_of_val(parsed))
}

fn applied_idx(conn: &Connection, device: Uuid) -> Result<u64> {
    let n: Option<i64> = conn
        .prepare_cached(r#"SELECT last_idx FROM sync_applied WHERE device_id = :d AND series = :s"#)?
        .query_row(
            named_params! { ":d": device.as_bytes().as_slice(), ":s": SERIES },
            |r| r.get(0),
        )
        .optional()?;
    Ok(n.map_or(0, |n| u64::try_from(n).unwrap_or(0)))
}

fn set_applied_in(tx: &Transaction<'_>, device: Uuid, idx: u64) -> Result<()> {
    tx.prepare_cached(
        r#"INSERT INTO sync_applied (device_id, series, last_idx) VALUES (:d, :s, :i)
           ON CONFLICT (device_id, series) DO UPDATE SET last_idx = excluded.last_idx"#,
    )?
    .execute(named_params! {
        ":d": device.as_bytes().as_slice(), ":s": SERIES, ":i": i64::try_from(idx).unwrap_or(i64::MAX),
    })?;
    Ok(())
}

/// A record of a page, as fetched.
struct Fetched {
    idx: u64,
    record_id: Uuid,
    payload: Vec<u8>,
}

/// A record read: its operations, or why it cannot be read; and the bytes it holds.
struct Read {
    idx: u64,
    content: std::result::Result<Vec<ops::Stamped>, Reason>,
    held: usize,
}

/// The records of a page that sit where they should (consecutive from `after + 1`, of `device`'s
/// series), and the index of the first that does not, if one does not.
fn placed(page: Vec<wire::StoredRecord>, device: Uuid, after: u64) -> (Vec<Fetched>, Option<u64>) {
    let series = series();
    let mut out = Vec::with_capacity(page.len());
    for stored in page {
        let r = stored.record;
        let expected = after + out.len() as u64 + 1;
        if r.device_id != device || r.series != series || r.idx != expected {
            return (out, Some(expected));
        }
        out.push(Fetched {
            idx: r.idx,
            record_id: r.record_id,
            payload: r.payload.0,
        });
    }
    (out, None)
}

/// Opens, inflates and parses one record (blocking, CPU).
fn read(
    keys: &AccountKeys,
    device: Uuid,
    f: &Fetched,
) -> std::result::Result<(Vec<ops::Stamped>, usize), Reason> {
    let series = series();
    let place = Place {
        device_id: device,
        series: &series,
        idx: f.idx,
        record_id: f.record_id,
    };
    let plain = keys.open(&place, &f.payload).map_err(|_| Reason::DoesNotOpen)?;
    let json = ops::inflate(&plain).map_err(unpack_reason)?;
    drop(plain);
    let parsed = ops::parse(&json).map_err(unpack_reason)?;
    let held = parsed_bytes(json.len(), &parsed);
    Ok((parsed, held))
}

fn unpack_reason(e: ops::UnpackError) -> Reason {
    match e {
        ops::UnpackError::Damaged => Reason::Damaged,
        ops::UnpackError::TooLarge => Reason::TooLarge,
    }
}

/// Bytes a pull may still take: the reader takes before it reads a record, the applier gives
/// back as it applies.
struct Budget {
    left: Mutex<usize>,
    freed: Condvar,
}

impl Budget {
    fn new(bytes: usize) -> Budget {
        Budget {
            left: Mutex::new(bytes),
            freed: Condvar::new(),
        }
    }

    fn take(&self, n: usize) {
        let mut left = self
            .left
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while *left < n {
            left = self
                .freed
                .wait(left)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *left -= n;
    }

    fn give(&self, n: usize) {
        let mut left = self
            .left
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *left = left.saturating_add(n);
        self.freed.notify_all();
    }
}

/// What applying a page did.
#[derive(Default)]
struct PageApplied {
    records: u64,
    visits: u64,
    unreadable: u64,
    forgetting_left: bool,
}

/// Applies one record read from its operation `from` on (or notes it unreadable), in `tx`, and
/// moves past it; or, when the transaction begun at `started` is over ([`Turns::over`]) before
/// its end, stops and returns where the next transaction goes on. A record's operations may so span transactions: applying is
/// idempotent, and `sync_applied` moves with its last ones, so a crash between applies the
/// first ones again, which changes nothing.
fn apply_read(
    (tx, batch): (&Transaction<'_>, &mut apply::Batch),
    device: Uuid,
    (r, from): (&Read, usize),
    (now, started, turns): (crate::time::Timestamp, Instant, &Turns),
    out: &mut PageApplied,
) -> Result<Option<usize>> {
    // Applied already (another process of this device got here first): nothing to do.
    if applied_idx(tx, device)? >= r.idx {
        return Ok(None);
    }
    match &r.content {
        Ok(stamped) => {
            let mut at = from;
            while at < stamped.len() {
                let end = (at + SLICE_OPS).min(stamped.len());
                let a = batch.apply(tx, device, &stamped[at..end], now)?;
                out.visits += a.visits;
                out.forgetting_left |= a.forgetting_left;
                at = end;
                if at < stamped.len() && turns.over(started) {
                    return Ok(Some(at));
                }
            }
            unreadable::delete_in(tx, device, SERIES, r.idx)?;
        }
        Err(reason) => {
            tracing::warn!(%device, idx = r.idx, reason = reason.as_str(), "a record of another device cannot be read: skipped");
            unreadable::insert_in(tx, device, SERIES, r.idx, *reason, now)?;
            out.unreadable += 1;
        }
    }
    set_applied_in(tx, device, r.idx)?;
    out.records += 1;
    Ok(None)
}

/// Reads `records` on a thread of its own within `budget` bytes while this thread applies them
/// in transactions that give way to waiting writers ([`Turns`]) (blocking).
fn read_and_apply(
    store: &Store,
    keys: &AccountKeys,
    device: Uuid,
    records: Vec<Fetched>,
    budget: usize,
) -> Result<PageApplied> {
    let worst = worst_case_bytes().min(budget);
    let budget = Budget::new(budget);
    let (tx_read, rx_read) = mpsc::channel::<Read>();
    std::thread::scope(|scope| {
        let budget = &budget;
        scope.spawn(move || {
            for f in &records {
                budget.take(worst);
                let (content, held) = match read(keys, device, f) {
                    Ok((ops, held)) => (Ok(ops), held.min(worst)),
                    Err(reason) => (Err(reason), 0),
                };
                // Keep only what the record really holds.
                budget.give(worst - held);
                if tx_read
                    .send(Read {
                        idx: f.idx,
                        content,
                        held,
                    })
                    .is_err()
                {
                    // The applier stopped (an error): nothing more to read.
                    return;
                }
            }
        });
        let result = apply_all(store, device, &rx_read, budget);
        // Unblock the reader if the applier stopped early, so the scope can end.
        drop(rx_read);
        budget.give(usize::MAX / 2);
        result
    })
}

fn apply_all(store: &Store, device: Uuid, rx: &mpsc::Receiver<Read>, budget: &Budget) -> Result<PageApplied> {
    let mut out = PageApplied::default();
    let mut conn = crate::forget::open_applying_connection(store)?;
    // Statement journals in memory, as the import keeps them (`import::TEMP_STORE_MEMORY`): each
    // visit's insert fires a trigger and may have to undo itself alone, so it first copies the
    // pages it changes into one; in a temporary file that is a system call per page. This
    // connection is the pull's own, with no temporary tables, and closes with the page.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    let turns = Turns::new(store);
    // When the last transaction committed: before the next one, the writers waiting get the lock.
    let mut committed: Option<Instant> = None;
    // The first record of each transaction is waited for outside it: the lock is never held
    // while the reader works.
    while let Ok(first) = rx.recv() {
        // The record being applied, and from which of its operations.
        let mut current = Some((first, 0));
        while current.is_some() {
            if let Some(c) = committed {
                turns.between(c);
            }
            let started = Instant::now();
            let now = store.now();
            // Limits, goals and the focus session arrive from other devices too.
            store.write_on(
                &mut conn,
                crate::forget::forgetting() | crate::changes::Change::Limits,
                |tx| {
                    let mut batch = apply::Batch::begin(tx)?;
                    while let Some((r, from)) = current.take() {
                        if let Some(next) = apply_read(
                            (tx, &mut batch),
                            device,
                            (&r, from),
                            (now, started, &turns),
                            &mut out,
                        )? {
                            // Over inside the record: the next transaction goes on with it.
                            current = Some((r, next));
                            break;
                        }
                        budget.give(r.held);
                        drop(r);
                        if !turns.over(started) {
                            current = rx.try_recv().ok().map(|r| (r, 0));
                        }
                    }
                    batch.finish(tx)
                },
            )?;
            committed = Some(Instant::now());
        }
    }
    // A writer that came during the last transaction gets the lock before the pull goes on.
    if let Some(c) = committed {
        turns.between(c);
    }
    Ok(out)
}

/// Notes that the hub served another record at `idx` of `device`'s series.
fn note_misplaced(store: &Store, device: Uuid, idx: u64) -> Result<()> {
    tracing::warn!(%device, idx, "the hub served a record at the wrong place: this series waits for the next sync");
    let now = store.now();
    store.write(None, |tx| {
        unreadable::insert_in(tx, device, SERIES, idx, Reason::Misplaced, now)
    })
}

/// Pulls and applies the records of every other device's series in `heads` (the hub's index).
#[tracing::instrument(level = "debug", skip_all, fields(series = heads.len()))]
pub(crate) async fn pull(
    s: &Session,
    store: &Store,
    heads: &[wire::SeriesHead],
    report: &mut SyncReport,
) -> Result<()> {
    let series = series();
    for head in heads {
        if head.device_id == s.link.device_id || head.series != series {
            continue;
        }
        let (st, d) = (store.clone(), head.device_id);
        let mut after = blocking::run(move || st.with_conn(|c| applied_idx(c, d))).await?;
        if after >= head.last_idx {
            continue;
        }
        let mut page = s
            .client
            .page(head.device_id, &series, after, PAGE_RECORDS)
            .await?;
        loop {
            if page.records.is_empty() {
                break;
            }
            let more = page.more;
            let (records, misplaced) = placed(page.records, head.device_id, after);
            let count = records.len() as u64;
            // The index said more, and the page too: the next page is fetched while this one is
            // applied (one more page of sealed records held: at most MAX_PAGE_PAYLOAD_BYTES).
            let next =
                (misplaced.is_none() && more && after + count < head.last_idx).then_some(after + count);
            let (st, keys, device) = (store.clone(), s.keys.clone(), head.device_id);
            let applying = blocking::run(move || read_and_apply(&st, &keys, device, records, MEMORY_BUDGET));
            let (applied, fetched) = match next {
                Some(from) => {
                    let (applied, fetched) = tokio::join!(
                        applying,
                        s.client.page(head.device_id, &series, from, PAGE_RECORDS)
                    );
                    (applied?, Some(fetched))
                }
                None => (applying.await?, None),
            };
            if applied.forgetting_left {
                let st = store.clone();
                blocking::run(move || {
                    st.resume_forgetting(&crate::forget::ForgetOptions::default(), &mut |_| {})
                        .map(|_| ())
                })
                .await?;
            }
            after += count;
            report.pulled += applied.records;
            report.visits += applied.visits;
            report.unreadable += applied.unreadable;
            if let Some(idx) = misplaced {
                let st = store.clone();
                blocking::run(move || note_misplaced(&st, device, idx)).await?;
                report.unreadable += 1;
                // The rest of this series waits for the next sync; the other series go on.
                break;
            }
            match fetched {
                Some(fetched) => page = fetched?,
                // The series is read to its head, or the index said more and the page says no
                // more yet: next sync.
                None => break,
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(device: Uuid, idx: u64) -> wire::StoredRecord {
        wire::StoredRecord {
            record: wire::Record {
                record_id: Uuid::now_v7(),
                device_id: device,
                series: series(),
                idx,
                payload: wire::Payload(vec![1]),
            },
            received_at_ms: 0,
        }
    }

    #[test]
    fn a_page_is_read_up_to_its_first_record_out_of_place() {
        let (d, other) = (Uuid::now_v7(), Uuid::now_v7());
        let (ok, wrong) = placed(vec![stored(d, 4), stored(d, 5), stored(d, 6)], d, 3);
        assert_eq!((ok.len(), wrong), (3, None));
        let (ok, wrong) = placed(vec![stored(d, 4), stored(d, 6)], d, 3);
        assert_eq!((ok.len(), wrong), (1, Some(5)), "a gap");
        let (ok, wrong) = placed(vec![stored(d, 4), stored(other, 5)], d, 3);
        assert_eq!((ok.len(), wrong), (1, Some(5)), "another device's record");
        let (ok, wrong) = placed(vec![stored(d, 1)], d, 3);
        assert_eq!((ok.len(), wrong), (0, Some(4)), "an old record again");
    }

    #[test]
    fn the_budget_waits_for_bytes_given_back() {
        let b = Budget::new(10);
        b.take(8);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                b.take(5);
                true
            });
            std::thread::sleep(Duration::from_millis(50));
            assert!(!waiter.is_finished(), "5 bytes are not there yet");
            b.give(8);
            assert!(waiter.join().unwrap());
        });
        assert_eq!(*b.left.lock().unwrap(), 5);
    }

    #[test]
    fn a_transaction_gives_way_to_a_waiting_writer_once_it_has_held_the_lock_a_while() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sitetrail.db");
        let store = Store::open(&path).unwrap();
        let turns = Turns::new(&store);
        assert!(
            matches!(turns, Turns::Watched(_)),
            "waiting writers are seen here"
        );
        // A transaction that has held the lock long enough to give way, not yet TX_TIME.
        let a_while_ago = || Instant::now() - TX_YIELD_AFTER;
        assert!(
            !turns.over(a_while_ago()),
            "nobody waits: the transaction goes on"
        );
        // A writer waits for the lock another connection holds (the pull's, here).
        let holder = Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();
        std::thread::scope(|s| {
            let writer = s.spawn(|| store.write(None, |tx| Ok(tx.execute_batch("CREATE TABLE t (x)")?)));
            let since = Instant::now();
            while !turns.over(a_while_ago()) {
                assert!(
                    since.elapsed() < Duration::from_secs(5),
                    "the writer waiting was not given way"
                );
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(
                !turns.over(Instant::now()),
                "a transaction just begun is worth its commit first"
            );
            holder.execute_batch("COMMIT").unwrap();
            turns.between(Instant::now());
            writer.join().unwrap().unwrap();
        });
        assert!(!turns.over(a_while_ago()), "the writer is through");
        assert!(
            turns.over(Instant::now() - TX_TIME),
            "nobody waits, but the transaction is long enough"
        );
    }

    #[test]
    fn one_record_at_its_caps_fits_the_budget() {
        assert!(worst_case_bytes() <= MEMORY_BUDGET, "{}", worst_case_bytes());
    }
}
