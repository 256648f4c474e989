//! Change notifications: which kinds of data a committed transaction touched, heard in every
//! process that has the file open.
//!
//! Every write transaction goes through [`Store::write_changes`](crate::Store::write_changes)
//! (or `write`, which names its kinds up front). The kinds it touched are a [`Changes`] set; just
//! before the commit, if the transaction changed any row, one counter per kind in the
//! `store_changes` table is increased **in the same transaction** (migration 0008), and after
//! the commit the kinds are sent to this process's subscribers at once.
//!
//! Other processes (the CLI, the native host, a second app) learn of it through a watcher thread
//! that each store starts when it first gets a subscriber: every [`WATCH_INTERVAL`] it asks its
//! own connection for `PRAGMA data_version` (a read of SQLite's shared memory, microseconds),
//! and only when that moved does it read the counters and send the kinds whose counter grew.
//! So a visit recorded by another process reaches the app and an idle worker within a fraction
//! of a second, without any process polling the data itself.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::broadcast;

/// What changed, sent to subscribers after the transaction that changed it committed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Visits were added or removed.
    Visits,
    /// A website was added or its category changed.
    Websites,
    /// An outbox job was added or changed state.
    Outbox,
    /// The worker paused or resumed.
    Worker,
    /// A limit or goal, the focus session or the reminder settings changed (here, from another
    /// process, or from another device through sync).
    Limits,
}

impl Change {
    /// Every kind.
    pub const ALL: [Change; 5] = [
        Change::Visits,
        Change::Websites,
        Change::Outbox,
        Change::Worker,
        Change::Limits,
    ];

    /// The name stored in `store_changes.kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Visits => "visits",
            Change::Websites => "websites",
            Change::Outbox => "outbox",
            Change::Worker => "worker",
            Change::Limits => "limits",
        }
    }

    fn parse(s: &str) -> Option<Change> {
        Change::ALL.into_iter().find(|c| c.as_str() == s)
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// The kind of data each table holds, for the check that every write announces what it
/// touched (a table missing here fails that test: a new table must say what it is).
pub const TABLE_KINDS: &[(&str, Option<Change>)] = &[
    ("visit", Some(Change::Visits)),
    // A visit's time spent (migration 0005) shows with the visit.
    ("visit_time", Some(Change::Visits)),
    ("website", Some(Change::Websites)),
    ("website_category_classification_outbox", Some(Change::Outbox)),
    ("worker_state", Some(Change::Worker)),
    // Bumped by triggers with every change to a user's category (migration 0007).
    ("user_categories_version", Some(Change::Websites)),
    // The search index of visits (migration 6): the FTS5 table and the tables it keeps its data
    // in are written with the visits they index.
    ("visit_fts", Some(Change::Visits)),
    ("visit_fts_data", Some(Change::Visits)),
    ("visit_fts_idx", Some(Change::Visits)),
    ("visit_fts_docsize", Some(Change::Visits)),
    ("visit_fts_config", Some(Change::Visits)),
    // A forgetting's record is written with the visits it deletes; blocking and icons are
    // websites' (migration 6).
    ("tombstone", Some(Change::Visits)),
    ("blocked_domain", Some(Change::Websites)),
    ("website_favicon", Some(Change::Websites)),
    // Bookkeeping no view shows.
    ("search_state", None),
    ("forget_candidate", None),
    ("forgotten_import", None),
    // What was forgotten, by URL and time, and a forgetting's pending WAL scrub (migration 0012).
    ("forgotten_visit", None),
    ("scrub_pending", None),
    ("import_cursor", None),
    ("schema_migrations", None),
    ("store_changes", None),
    // Which websites the local pass judges again from their titles (migration 0009): counters
    // bumped by visit triggers, read by the worker alone.
    ("website_title_judging", None),
    // Sync (migration 0010): the link, the operations and records waiting for the hub, and what
    // was applied from other devices. The names of the devices show in history.
    ("sync_link", None),
    ("sync_op", None),
    ("sync_sealed", None),
    ("sync_applied", None),
    ("sync_register", None),
    ("sync_device", Some(Change::Visits)),
    // When each browser's extension last talked to the host (migration 0011): the settings view
    // reads it when shown and after new visits (the first page an extension sends).
    ("extension_contact", None),
    // The hosts kept from remote providers on all devices (migration 0014): they change which
    // jobs a provider sees.
    ("excluded_host", Some(Change::Outbox)),
    // Other devices' records that could not be read (migration 0017): sync status reads them
    // when shown, as it reads the link.
    ("sync_unreadable", None),
    // Limits and goals (migration 0018), the focus session (0019) and the reminder settings
    // (0020): the app's limits, focus and reminder views show them.
    ("time_limit", Some(Change::Limits)),
    ("focus_session", Some(Change::Limits)),
    ("reminder_setting", Some(Change::Limits)),
    // Which reminders were shown: read by the reminder check (daemon, app, CLI) when it runs.
    ("reminder_sent", None),
];

/// A set of [`Change`]s: what one transaction touched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Changes(u16);

impl Changes {
    /// Nothing.
    pub const NONE: Changes = Changes(0);

    /// Adds `c`.
    pub fn insert(&mut self, c: Change) {
        self.0 |= c.bit();
    }

    /// True if `c` is in the set.
    pub fn contains(self, c: Change) -> bool {
        self.0 & c.bit() != 0
    }

    /// True if the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The kinds in the set.
    pub fn iter(self) -> impl Iterator<Item = Change> {
        Change::ALL.into_iter().filter(move |c| self.contains(*c))
    }
}

impl From<Change> for Changes {
    fn from(c: Change) -> Changes {
        Changes(c.bit())
    }
}

impl From<Option<Change>> for Changes {
    fn from(c: Option<Change>) -> Changes {
        c.map(Changes::from).unwrap_or_default()
    }
}

impl std::ops::BitOr<Change> for Change {
    type Output = Changes;
    fn bitor(self, rhs: Change) -> Changes {
        Changes(self.bit() | rhs.bit())
    }
}

impl std::ops::BitOr<Change> for Changes {
    type Output = Changes;
    fn bitor(self, rhs: Change) -> Changes {
        Changes(self.0 | rhs.bit())
    }
}

impl std::ops::BitOrAssign<Change> for Changes {
    fn bitor_assign(&mut self, rhs: Change) {
        self.insert(rhs);
    }
}

impl std::ops::BitOrAssign<Changes> for Changes {
    fn bitor_assign(&mut self, rhs: Changes) {
        self.0 |= rhs.0;
    }
}

/// How often the watcher asks whether another connection committed.
pub const WATCH_INTERVAL: Duration = Duration::from_millis(200);

/// Adds one to the counter of every kind in `changes`, in the caller's transaction.
pub(crate) fn bump_counters(tx: &Connection, changes: Changes) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare_cached(
        r#"INSERT INTO store_changes (kind, n) VALUES (:kind, 1)
           ON CONFLICT (kind) DO UPDATE SET n = n + 1"#,
    )?;
    for c in changes.iter() {
        stmt.execute(rusqlite::named_params! { ":kind": c.as_str() })?;
    }
    Ok(())
}

/// Every counter.
fn read_counters(conn: &Connection) -> rusqlite::Result<BTreeMap<Change, i64>> {
    let mut stmt = conn.prepare_cached(r#"SELECT kind, n FROM store_changes"#)?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>("kind")?, r.get::<_, i64>("n")?)))?;
    let mut out = BTreeMap::new();
    for row in rows {
        let (kind, n) = row?;
        if let Some(c) = Change::parse(&kind) {
            out.insert(c, n);
        }
    }
    Ok(out)
}

/// What the store's clones share for notifications.
#[derive(Debug)]
pub(crate) struct Hub {
    sender: broadcast::Sender<Change>,
    /// The watcher, started with the first subscriber.
    watcher: Mutex<bool>,
}

impl Hub {
    pub(crate) fn new() -> Arc<Hub> {
        let (sender, _) = broadcast::channel(256);
        Arc::new(Hub {
            sender,
            watcher: Mutex::new(false),
        })
    }

    /// Sends `changes` to this process's subscribers.
    pub(crate) fn send(&self, changes: Changes) {
        for c in changes.iter() {
            // No subscriber is fine: nobody is listening.
            let _ = self.sender.send(c);
        }
    }

    /// A receiver; the first one starts the watcher for other processes' commits on `path`.
    pub(crate) fn subscribe(
        self: &Arc<Hub>,
        open: impl FnOnce() -> rusqlite::Result<Connection>,
    ) -> broadcast::Receiver<Change> {
        let rx = self.sender.subscribe();
        if let Ok(mut started) = self.watcher.lock() {
            if !*started {
                // The starting point is read before returning, so a commit made after
                // `subscribe` returns is always heard, however late the thread starts.
                match open().and_then(|conn| {
                    let seen = Seen::read(&conn)?;
                    Ok((conn, seen))
                }) {
                    Ok((conn, seen)) => {
                        let hub = Arc::downgrade(self);
                        let spawned = std::thread::Builder::new()
                            .name("sitetrail-watch".into())
                            .spawn(move || watch(conn, seen, hub));
                        *started = spawned.is_ok();
                        if let Err(e) = spawned {
                            tracing::warn!(error = %e, "cannot watch for other processes' changes");
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot watch for other processes' changes"),
                }
            }
        }
        rx
    }
}

/// The watcher: until the store is dropped, sends the kinds whose counters grew since it last
/// looked, whenever `data_version` says another connection committed. Its own process's commits
/// are seen too and sent again: subscribers take a notification as "look again", so a second
/// one costs a refresh, never a wrong view.
fn watch(conn: Connection, mut seen: Seen, hub: Weak<Hub>) {
    loop {
        std::thread::sleep(WATCH_INTERVAL);
        let Some(hub) = hub.upgrade() else {
            return; // the store is gone
        };
        if hub.sender.receiver_count() == 0 {
            continue;
        }
        match Seen::data_version(&conn) {
            Ok(v) if v != seen.version => {}
            _ => continue,
        }
        let Ok(now) = Seen::read(&conn) else { continue };
        let mut changed = Changes::NONE;
        for (kind, n) in &now.counters {
            if seen.counters.get(kind).is_none_or(|old| old < n) {
                changed.insert(*kind);
            }
        }
        seen = now;
        hub.send(changed);
    }
}

/// What the watcher last saw: the file's `data_version` and every counter, read in one read
/// transaction so that a commit between the two reads cannot be taken for already seen.
struct Seen {
    version: i64,
    counters: BTreeMap<Change, i64>,
}

impl Seen {
    fn data_version(conn: &Connection) -> rusqlite::Result<i64> {
        conn.query_row("PRAGMA data_version", [], |r| r.get(0))
    }

    fn read(conn: &Connection) -> rusqlite::Result<Seen> {
        conn.execute_batch("BEGIN")?;
        let read = (|| {
            // The counters first: this statement starts the read transaction's snapshot, and
            // `data_version` then names that snapshot.
            let counters = read_counters(conn)?;
            Ok(Seen {
                version: Seen::data_version(conn)?,
                counters,
            })
        })();
        conn.execute_batch("COMMIT")?;
        read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_holds_each_kind_once() {
        let mut c = Change::Visits | Change::Outbox;
        c |= Change::Visits;
        assert_eq!(c.iter().collect::<Vec<_>>(), [Change::Visits, Change::Outbox]);
        assert!(!c.contains(Change::Worker));
        assert!(Changes::from(None::<Change>).is_empty());
        for k in Change::ALL {
            assert_eq!(Change::parse(k.as_str()), Some(k));
        }
    }
}
