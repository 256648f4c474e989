//! Renewing the leases of claimed jobs while their classifier call is in flight.
//!
//! A claim gives each job a lease (`lease_until = now + lease`, `worker_id`); the worker's
//! heartbeat calls [`renew_leases`] every third of the lease, so the lease of a live worker's job
//! never runs out, however slow the call. A renewal is not a state change: it leaves `version`
//! alone (the worker's later write is still guarded by the version it claimed), and it touches
//! only jobs still `PROCESSING` at that version, so a job reclaimed, retried, categorised by the
//! user or already settled is not revived.

use rusqlite::{named_params, Transaction};

use super::ClaimedJob;
use crate::error::Result;
use crate::ids::OutboxId;
use crate::time::Timestamp;

/// The renewal of one job's lease: by primary key, guarded by the claimed version.
pub const RENEW_SQL: &str = r#"UPDATE website_category_classification_outbox SET lease_until = :until
           WHERE id = :id AND version = :version AND status = 'PROCESSING'"#;

/// Moves the lease of each of `jobs` still held at its claimed version to `until`, in the
/// caller's `BEGIN IMMEDIATE` transaction. Returns the jobs that are no longer held (their
/// version moved on): the worker has lost them and its result will be dropped.
pub fn renew_leases(tx: &Transaction<'_>, jobs: &[ClaimedJob], until: Timestamp) -> Result<Vec<OutboxId>> {
    let mut renew = tx.prepare_cached(RENEW_SQL)?;
    let mut lost = Vec::new();
    for job in jobs {
        let n = renew.execute(named_params! { ":id": job.id, ":version": job.version, ":until": until })?;
        if n == 0 {
            lost.push(job.id);
        }
    }
    Ok(lost)
}
