//! A list the user keeps the same on every device: a table of entries (a key and the time it was
//! added), each addition and removal queued for the other devices as a last-writer-wins register
//! of the entry (`1` on the list, `0` off it) in the same transaction. The never-record list
//! ([`crate::blocked`]) and the exclusions ([`crate::exclusions`]) are such lists; each adds what
//! an entry means (settling or queueing jobs) around [`SyncedList::add_in`] and
//! [`SyncedList::remove_in`].
//!
//! Invariant: a change is queued only when the table changed (an entry added that was not there,
//! or removed that was), so an edit that changes nothing sends nothing.

use rusqlite::{named_params, Transaction};

use crate::error::Result;
use crate::sync_log::local;
use crate::sync_log::ops::Op;
use crate::time::Timestamp;

/// One synced list: its two statements and how its entries are synced.
pub(crate) struct SyncedList {
    /// Adds the entry `:key` at `:now`, doing nothing if it is there (`ON CONFLICT DO NOTHING`).
    pub insert: &'static str,
    /// Removes the entry `:key`.
    pub delete: &'static str,
    /// The register key of an entry (`block:<domain>`, `exclude:<pattern>`).
    pub register_key: fn(&str) -> String,
    /// The operation that puts an entry on (true) or off the list on the other devices.
    pub op: fn(&str, bool) -> Op,
}

impl SyncedList {
    /// Adds `key` at `now`; true if it was not on the list (the change is then queued).
    pub(crate) fn add_in(&self, tx: &Transaction<'_>, key: &str, now: Timestamp) -> Result<bool> {
        let added = tx
            .prepare_cached(self.insert)?
            .execute(named_params! { ":key": key, ":now": now })?
            == 1;
        if added {
            self.queue_in(tx, key, true)?;
        }
        Ok(added)
    }

    /// Removes `key`; true if it was on the list (the change is then queued).
    pub(crate) fn remove_in(&self, tx: &Transaction<'_>, key: &str) -> Result<bool> {
        let removed = tx
            .prepare_cached(self.delete)?
            .execute(named_params! { ":key": key })?
            == 1;
        if removed {
            self.queue_in(tx, key, false)?;
        }
        Ok(removed)
    }

    /// Queues `key` on (`on`) or off the list for the other devices.
    fn queue_in(&self, tx: &Transaction<'_>, key: &str, on: bool) -> Result<()> {
        local::queue_register_in(
            tx,
            &(self.register_key)(key),
            Some(local::flag(on)),
            &(self.op)(key, on),
        )
    }
}
