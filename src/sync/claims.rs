//! One AI call per website for all of a person's devices: the worker's [`ClaimGate`] on the
//! hub's claims (docs/SYNC.md, "Claims").
//!
//! Before the worker asks a remote provider about some domains, it asks the hub for a claim on
//! each domain's blinded token. `granted`: this device asks; its answer is written locally,
//! queued as an `ai` category for the other devices, and the claim completed. `held` (another
//! device has a live lease) and `done` (another device answered; its record is on the way): the
//! job waits without an attempt, and a pull is asked for at once, whose record settles the job
//! here. A claim whose device died runs out with its lease and the next device that asks gets
//! it. If the hub cannot be reached, or the device is not linked, every domain is `Ask`: the
//! local outbox keeps its promises unchanged and offline costs nothing.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use uuid::Uuid;

use sitetrail_sync_wire::{self as wire, ClaimState};

use super::engine;
use crate::store::Store;
use crate::worker::{ClaimGate, GateDecision};

/// How long a job waits after the hub said another device has answered (its record should be
/// pulled by then).
pub const DONE_WAIT: Duration = Duration::from_secs(10);
/// After this many `done` answers for a domain without its record arriving, ask again anyway
/// (`again: true`): the device that answered may never push it.
pub const DONE_WAITS_BEFORE_ASKING: u32 = 6;

/// The hub's claims as the worker's gate.
pub struct HubClaims {
    store: Store,
    key_dir: PathBuf,
    lease: Duration,
    wake: Arc<Notify>,
    held: Mutex<HashMap<String, (wire::Token, Uuid)>>,
    done_waits: Mutex<HashMap<String, u32>>,
}

impl std::fmt::Debug for HubClaims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubClaims")
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl HubClaims {
    /// Claims for the device linked in `store` (key in `key_dir`), held for `lease` (clamped to
    /// the hub's limits); `wake` is notified when another device's answer should be pulled.
    pub fn new(store: Store, key_dir: PathBuf, lease: Duration, wake: Arc<Notify>) -> HubClaims {
        HubClaims {
            store,
            key_dir,
            lease,
            wake,
            held: Mutex::new(HashMap::new()),
            done_waits: Mutex::new(HashMap::new()),
        }
    }

    fn lease_ms(&self) -> u64 {
        let ms = u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX);
        ms.clamp(*wire::limits::LEASE_MS.start(), *wire::limits::LEASE_MS.end())
    }
}

#[async_trait::async_trait]
impl ClaimGate for HubClaims {
    async fn decide(&self, domains: &[String]) -> Vec<GateDecision> {
        let ask_all = || vec![GateDecision::Ask; domains.len()];
        let Ok(s) = engine::session(&self.store, &self.key_dir).await else {
            return ask_all();
        };
        let mut tokens = Vec::with_capacity(domains.len());
        for d in domains {
            match s.keys.domain_token(d) {
                Some(t) => tokens.push(t),
                None => return ask_all(),
            }
        }
        let waits = lock(&self.done_waits).clone();
        let mut decisions = Vec::with_capacity(domains.len());
        for (chunk_domains, chunk_tokens) in domains
            .chunks(wire::limits::MAX_CLAIM_ITEMS)
            .zip(tokens.chunks(wire::limits::MAX_CLAIM_ITEMS))
        {
            let items = chunk_domains
                .iter()
                .zip(chunk_tokens)
                .map(|(d, t)| wire::ClaimItem {
                    token: t.clone(),
                    again: waits.get(d).copied().unwrap_or(0) >= DONE_WAITS_BEFORE_ASKING,
                })
                .collect();
            let answers = match s.client.claims(s.link.device_id, self.lease_ms(), items).await {
                Ok(a) => a,
                Err(e) => {
                    tracing::debug!(error = %e, "no claims from the hub; this device asks on its own");
                    decisions.extend(chunk_domains.iter().map(|_| GateDecision::Ask));
                    continue;
                }
            };
            for ((d, t), a) in chunk_domains.iter().zip(chunk_tokens).zip(answers) {
                decisions.push(match a.state {
                    ClaimState::Granted { claim_id, .. } => {
                        lock(&self.held).insert(d.clone(), (t.clone(), claim_id));
                        lock(&self.done_waits).remove(d);
                        GateDecision::Ask
                    }
                    ClaimState::Held { retry_after_ms } => {
                        GateDecision::Wait(Duration::from_millis(retry_after_ms.max(1_000)))
                    }
                    ClaimState::Done { .. } => {
                        *lock(&self.done_waits).entry(d.clone()).or_insert(0) += 1;
                        self.wake.notify_one();
                        GateDecision::Wait(DONE_WAIT)
                    }
                });
            }
        }
        decisions
    }

    async fn settle(&self, answered: &[String], unanswered: &[String]) {
        let take = |ds: &[String]| -> Vec<wire::Settle> {
            let mut held = lock(&self.held);
            ds.iter()
                .filter_map(|d| held.remove(d))
                .map(|(token, claim_id)| wire::Settle { token, claim_id })
                .collect()
        };
        let (done, released) = (take(answered), take(unanswered));
        if done.is_empty() && released.is_empty() {
            return;
        }
        let Ok(s) = engine::session(&self.store, &self.key_dir).await else {
            return;
        };
        if !done.is_empty() {
            // The answer is queued: push it now so the others find its record.
            self.wake.notify_one();
        }
        for (claims, is_done) in [(done, true), (released, false)] {
            for chunk in claims.chunks(wire::limits::MAX_CLAIM_ITEMS) {
                if let Err(e) = s.client.settle(s.link.device_id, chunk.to_vec(), is_done).await {
                    // The lease runs out by itself.
                    tracing::debug!(error = %e, "settling claims on the hub failed");
                }
            }
        }
    }
}
