//! The lease heartbeat: while a worker works on a batch, it renews the batch's leases.
//!
//! [`with_heartbeat`] runs the work and, beside it in the same task, renews the leases every third
//! of the lease length, each renewal one short `BEGIN IMMEDIATE` transaction on the blocking pool
//! ([`outbox::renew_leases`]). So a job is never reclaimed from a worker that is still waiting on
//! its classifier, however slow the call; a worker that dies (or is killed, or whose task
//! panicked) stops renewing, and its jobs are reclaimed once their lease runs out. The renewal is
//! polled together with the work: when the work ends, or its task unwinds, the heartbeat ends with
//! it, with no task left behind.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use tracing::warn;

use crate::outbox::{self, ClaimedJob};
use crate::store::Store;

/// The shortest time between two renewals, whatever the lease.
const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// Runs `work`, renewing the leases of `jobs` (to `now + lease`) every `lease / 3` until it ends.
pub(super) async fn with_heartbeat<T>(
    store: &Store,
    jobs: &[ClaimedJob],
    lease: Duration,
    work: impl Future<Output = T>,
) -> T {
    tokio::pin!(work);
    let beat = renew_forever(store, jobs, lease);
    tokio::pin!(beat);
    tokio::select! {
        biased;
        out = &mut work => out,
        never = &mut beat => match never {},
    }
}

async fn renew_forever(store: &Store, jobs: &[ClaimedJob], lease: Duration) -> Infallible {
    let every = (lease / 3).max(MIN_INTERVAL);
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut held: Vec<ClaimedJob> = jobs.to_vec();
    loop {
        ticker.tick().await;
        if held.is_empty() {
            continue;
        }
        let renew = held.clone();
        let r = store
            .run(move |s| {
                let until = s.now().plus(lease);
                s.write(None, |tx| outbox::renew_leases(tx, &renew, until))
            })
            .await;
        match r {
            Ok(lost) if !lost.is_empty() => {
                for id in &lost {
                    warn!(job = %id, "job no longer held by this worker (retried, categorised by the user or reclaimed); its result will be dropped");
                }
                held.retain(|j| !lost.contains(&j.id));
            }
            Ok(_) => {}
            Err(e) => warn!(error = %e, "cannot renew the lease of the jobs in flight; will try again"),
        }
    }
}
