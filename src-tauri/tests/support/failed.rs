//! Failing a job for good, as the worker leaves one after its last attempt: shared by the app's
//! command tests (`src/tests`) and its end-to-end tests (`tests/e2e.rs`), which include this file
//! by its path. Each records the website's visit its own way first.

use sitetrail::outbox::{self, ClaimPolicy};
use sitetrail::Store;

/// Fails the one pending job for good after `attempts` attempts, each claimed and failed with
/// `error` (the last one at `max_attempts`); returns its id.
pub fn fail_pending_job(store: &Store, error: &str, attempts: u32) -> String {
    let mut id = String::new();
    for _ in 0..attempts {
        let now = store.now();
        store
            .write(None, |tx| {
                let jobs = outbox::claim_jobs(
                    tx,
                    now,
                    ClaimPolicy {
                        limit: 1,
                        processing_timeout: std::time::Duration::from_secs(300),
                        max_attempts: attempts,
                        ..ClaimPolicy::default()
                    },
                )?;
                assert_eq!(jobs.len(), 1, "one claimable job");
                id = jobs[0].id.to_string();
                outbox::fail_job(tx, &jobs[0], error, attempts, now, now)?;
                Ok(())
            })
            .expect("fail job");
    }
    id
}
