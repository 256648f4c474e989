//! Classification claims: one job per (account, blinded token), the local outbox's claim on the
//! hub. `POST /v1/claims` in one short transaction:
//!
//! ```text
//! lock the account's row                                  (claims of one account take turns,
//!                                                          so the quota counts stay true)
//! INSERT the missing jobs ... ON CONFLICT DO NOTHING      (tokens sorted: no deadlock;
//!                                                          refused past --quota-claim-jobs)
//! SELECT the jobs ... FOR UPDATE SKIP LOCKED              (a job another request is deciding
//!                                                          about right now is skipped: `held`)
//! decide each: done → `done` (unless again); live lease of another device → `held`;
//!              this device's live lease → renewed; otherwise → `granted` (attempts + 1)
//! UPDATE the granted and renewed jobs (one statement, arrays)
//! count the live leases                                   (refused past --quota-leases)
//! COMMIT
//! ```
//!
//! Invariants: at most one device holds a live lease on a job; every time is the database's
//! `now()` (one value per transaction), so hub processes agree; a lease that ran out goes to
//! the next device that asks. Complete and release are guarded by the claim id and the device:
//! a device whose claim was taken over changes nothing (`stale`).

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use sitetrail_sync_wire::{ClaimAnswer, ClaimResponse, ClaimState, Quota, SettleResponse, Token};
use uuid::Uuid;

use crate::app::App;
use crate::auth::Authed;
use crate::body::Body;
use crate::error::{HubError, HubResult};
use crate::quota;
use crate::request::{parse_claims, parse_settle};
use crate::sql::Queries;
use tokio_postgres::types::Type;

/// The shortest `retry_after_ms` of a `held` answer.
const MIN_RETRY_AFTER_MS: u64 = 1_000;

/// A token's 32 bytes (its hex form is checked by [`Token::new`]).
pub fn token_bytes(token: &Token) -> [u8; 32] {
    let hex = token.as_str().as_bytes();
    let nibble = |c: u8| {
        if c.is_ascii_digit() {
            c - b'0'
        } else {
            c.wrapping_sub(b'a') + 10
        }
    };
    let mut bytes = [0u8; 32];
    for (i, byte) in bytes.iter_mut().enumerate() {
        let (hi, lo) = (
            hex.get(2 * i).copied().unwrap_or(b'0'),
            hex.get(2 * i + 1).copied().unwrap_or(b'0'),
        );
        *byte = (nibble(hi) << 4) | (nibble(lo) & 0x0f);
    }
    bytes
}

/// A job as the claim read it, locked.
struct Job {
    state: String,
    claim_id: Option<Uuid>,
    device_id: Option<Uuid>,
    attempts: i32,
    /// Milliseconds until the lease runs out (negative: it has), if the job is claimed.
    lease_left_ms: Option<i64>,
    done_at_ms: Option<i64>,
}

/// Locks the free jobs among the tokens asked about, by primary key (public for the plan test
/// in `hub/tests/schema.rs`).
pub const LOCK_JOBS: &str = r#"
    SELECT token, state, claim_id, device_id, attempts,
           floor(extract(epoch FROM lease_until - now()) * 1000)::int8 AS lease_left_ms,
           floor(extract(epoch FROM done_at) * 1000)::int8 AS done_at_ms
    FROM claim_job WHERE account_id = $1 AND token = ANY($2)
    ORDER BY token FOR UPDATE SKIP LOCKED"#;

/// Asks for claims: one answer per item, in the request's order; the account's jobs and live
/// leases in the quota headers.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn claim(
    State(app): State<App>,
    authed: Authed,
    Body(body): Body,
) -> HubResult<(HeaderMap, Json<ClaimResponse>)> {
    let request = parse_claims(&body)?;
    if request.items.is_empty() {
        return Ok((HeaderMap::new(), Json(ClaimResponse { claims: vec![] })));
    }
    let mut again: BTreeMap<[u8; 32], bool> = BTreeMap::new();
    for item in &request.items {
        *again.entry(token_bytes(&item.token)).or_default() |= item.again;
    }
    let tokens: Vec<&[u8]> = again.keys().map(<[u8; 32]>::as_slice).collect();

    let mut client = app.pool.get().await?;
    let tx = client.transaction().await?;
    super::require_active_device(&tx, authed.account_id, request.device_id).await?;
    let jobs_before: i64 = tx
        .query_opt(
            "SELECT claim_jobs FROM account WHERE account_id = $1 FOR NO KEY UPDATE",
            &[(&authed.account_id, Type::UUID)],
        )
        .await?
        .ok_or(HubError::Unauthorized)?
        .get("claim_jobs");
    let jobs_before = u64::try_from(jobs_before).unwrap_or(0);
    let leases_before = quota::leases(&tx, authed.account_id).await?;
    let created = tx
        .execute(
            r#"INSERT INTO claim_job (account_id, token)
               SELECT $1, t FROM unnest($2::bytea[]) AS t ORDER BY t
               ON CONFLICT (account_id, token) DO NOTHING"#,
            &[(&authed.account_id, Type::UUID), (&tokens, Type::BYTEA_ARRAY)],
        )
        .await?;
    app.quotas.check(Quota::ClaimJobs, jobs_before, created)?;
    if created > 0 {
        tx.execute(
            "UPDATE account SET claim_jobs = claim_jobs + $2 WHERE account_id = $1",
            &[
                (&authed.account_id, Type::UUID),
                (&i64::try_from(created).unwrap_or(i64::MAX), Type::INT8),
            ],
        )
        .await?;
    }
    let mut jobs: BTreeMap<Vec<u8>, Job> = BTreeMap::new();
    let rows = tx
        .query(
            LOCK_JOBS,
            &[(&authed.account_id, Type::UUID), (&tokens, Type::BYTEA_ARRAY)],
        )
        .await?;
    for row in rows {
        jobs.insert(
            row.get("token"),
            Job {
                state: row.get("state"),
                claim_id: row.get("claim_id"),
                device_id: row.get("device_id"),
                attempts: row.get("attempts"),
                lease_left_ms: row.get("lease_left_ms"),
                done_at_ms: row.get("done_at_ms"),
            },
        );
    }

    let mut answers: BTreeMap<[u8; 32], ClaimState> = BTreeMap::new();
    let (mut grant_tokens, mut grant_ids, mut grant_attempts) = (Vec::new(), Vec::new(), Vec::new());
    for (token, again) in &again {
        let state = match jobs.get(token.as_slice()) {
            // Another request holds the row this very instant: it is deciding; ask again soon.
            None => ClaimState::Held {
                retry_after_ms: MIN_RETRY_AFTER_MS,
            },
            Some(job) => decide(job, request.device_id, *again),
        };
        if let ClaimState::Granted { claim_id, attempts } = &state {
            grant_tokens.push(token.as_slice());
            grant_ids.push(*claim_id);
            grant_attempts.push(i32::try_from(*attempts).unwrap_or(i32::MAX));
        }
        answers.insert(*token, state);
    }
    if !grant_tokens.is_empty() {
        let lease_ms = request.lease_ms.min(app.max_lease_ms.unwrap_or(u64::MAX));
        let lease_ms = i64::try_from(lease_ms).unwrap_or(i64::MAX);
        tx.execute(
            r#"UPDATE claim_job c
               SET state = 'claimed', claim_id = g.claim_id, device_id = $3, attempts = g.attempts,
                   lease_until = now() + make_interval(secs => $4::int8 / 1000.0), done_at = NULL,
                   updated_at = now()
               FROM unnest($2::bytea[], $5::uuid[], $6::int4[]) AS g(token, claim_id, attempts)
               WHERE c.account_id = $1 AND c.token = g.token"#,
            &[
                (&authed.account_id, Type::UUID),
                (&grant_tokens, Type::BYTEA_ARRAY),
                (&request.device_id, Type::UUID),
                (&lease_ms, Type::INT8),
                (&grant_ids, Type::UUID_ARRAY),
                (&grant_attempts, Type::INT4_ARRAY),
            ],
        )
        .await?;
    }
    let leases = quota::leases(&tx, authed.account_id).await?;
    app.quotas
        .check(Quota::Leases, leases_before, leases.saturating_sub(leases_before))?;
    tx.commit().await?;
    let mut headers = HeaderMap::new();
    app.quotas
        .header(&mut headers, Quota::ClaimJobs, jobs_before + created);
    app.quotas.header(&mut headers, Quota::Leases, leases);

    let claims = request
        .items
        .into_iter()
        .map(|item| {
            let state = answers
                .get(&token_bytes(&item.token))
                .cloned()
                .unwrap_or(ClaimState::Held {
                    retry_after_ms: MIN_RETRY_AFTER_MS,
                });
            ClaimAnswer {
                token: item.token,
                state,
            }
        })
        .collect();
    Ok((headers, Json(ClaimResponse { claims })))
}

/// The answer for one locked job, asked by `device`.
fn decide(job: &Job, device: Uuid, again: bool) -> ClaimState {
    let live = job.state == "claimed" && job.lease_left_ms.is_some_and(|ms| ms > 0);
    let attempts = u32::try_from(job.attempts).unwrap_or(0);
    match (job.state.as_str(), live, job.claim_id) {
        ("done", _, _) if !again => ClaimState::Done {
            done_at_ms: job.done_at_ms.unwrap_or(0),
        },
        // This device holds it: the same claim, renewed.
        ("claimed", true, Some(claim_id)) if job.device_id == Some(device) => {
            ClaimState::Granted { claim_id, attempts }
        }
        ("claimed", true, _) => ClaimState::Held {
            retry_after_ms: job
                .lease_left_ms
                .and_then(|ms| u64::try_from(ms).ok())
                .unwrap_or(0)
                .max(MIN_RETRY_AFTER_MS),
        },
        // Open, released, run out, or done and asked again: a new claim.
        _ => ClaimState::Granted {
            claim_id: Uuid::new_v4(),
            attempts: attempts.saturating_add(1),
        },
    }
}

/// How a settle request changes a job it still holds.
#[derive(Clone, Copy, Debug)]
pub enum Settlement {
    /// The answer is pushed: the job is `done`.
    Complete,
    /// No answer: the job is open for any device to take.
    Release,
}

/// `POST /v1/claims/complete`.
pub async fn complete(
    State(app): State<App>,
    authed: Authed,
    body: Body,
) -> HubResult<(HeaderMap, Json<SettleResponse>)> {
    settle(app, authed, body, Settlement::Complete).await
}

/// `POST /v1/claims/release`.
pub async fn release(
    State(app): State<App>,
    authed: Authed,
    body: Body,
) -> HubResult<(HeaderMap, Json<SettleResponse>)> {
    settle(app, authed, body, Settlement::Release).await
}

#[tracing::instrument(level = "debug", skip_all)]
async fn settle(
    app: App,
    authed: Authed,
    Body(body): Body,
    how: Settlement,
) -> HubResult<(HeaderMap, Json<SettleResponse>)> {
    let request = parse_settle(&body)?;
    let total = u32::try_from(request.claims.len()).unwrap_or(u32::MAX);
    if total == 0 {
        return Ok((HeaderMap::new(), Json(SettleResponse { settled: 0, stale: 0 })));
    }
    let mut pairs: Vec<([u8; 32], Uuid)> = request
        .claims
        .iter()
        .map(|c| (token_bytes(&c.token), c.claim_id))
        .collect();
    // One order for every writer of claim_job rows.
    pairs.sort();
    let tokens: Vec<&[u8]> = pairs.iter().map(|p| p.0.as_slice()).collect();
    let ids: Vec<Uuid> = pairs.iter().map(|p| p.1).collect();
    let mut client = app.pool.get().await?;
    let tx = client.transaction().await?;
    super::require_active_device(&tx, authed.account_id, request.device_id).await?;
    let sql = match how {
        Settlement::Complete => {
            r#"UPDATE claim_job c SET state = 'done', done_at = now(), lease_until = NULL, updated_at = now()
               FROM unnest($2::bytea[], $3::uuid[]) AS s(token, claim_id)
               WHERE c.account_id = $1 AND c.token = s.token AND c.claim_id = s.claim_id
                 AND c.device_id = $4 AND c.state = 'claimed'"#
        }
        Settlement::Release => {
            r#"UPDATE claim_job c SET state = 'open', claim_id = NULL, device_id = NULL, lease_until = NULL,
                      updated_at = now()
               FROM unnest($2::bytea[], $3::uuid[]) AS s(token, claim_id)
               WHERE c.account_id = $1 AND c.token = s.token AND c.claim_id = s.claim_id
                 AND c.device_id = $4 AND c.state = 'claimed'"#
        }
    };
    let settled = tx
        .execute(
            sql,
            &[
                (&authed.account_id, Type::UUID),
                (&tokens, Type::BYTEA_ARRAY),
                (&ids, Type::UUID_ARRAY),
                (&request.device_id, Type::UUID),
            ],
        )
        .await?;
    let leases = quota::leases(&tx, authed.account_id).await?;
    tx.commit().await?;
    let mut headers = HeaderMap::new();
    app.quotas.header(&mut headers, Quota::Leases, leases);
    let settled = u32::try_from(settled).unwrap_or(u32::MAX).min(total);
    Ok((
        headers,
        Json(SettleResponse {
            settled,
            stale: total - settled,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(state: &str, device: Option<u128>, lease_left_ms: Option<i64>) -> Job {
        Job {
            state: state.to_owned(),
            claim_id: device.map(|_| Uuid::from_u128(77)),
            device_id: device.map(Uuid::from_u128),
            attempts: 2,
            lease_left_ms,
            done_at_ms: (state == "done").then_some(123),
        }
    }

    #[test]
    fn decisions_follow_the_lease() {
        let me = Uuid::from_u128(1);
        assert!(matches!(
            decide(&job("open", None, None), me, false),
            ClaimState::Granted { attempts: 3, .. }
        ));
        assert_eq!(
            decide(&job("done", Some(2), None), me, false),
            ClaimState::Done { done_at_ms: 123 }
        );
        assert!(matches!(
            decide(&job("done", Some(2), None), me, true),
            ClaimState::Granted { attempts: 3, .. }
        ));
        assert_eq!(
            decide(&job("claimed", Some(2), Some(5_000)), me, false),
            ClaimState::Held {
                retry_after_ms: 5_000
            }
        );
        assert_eq!(
            decide(&job("claimed", Some(2), Some(10)), me, true),
            ClaimState::Held {
                retry_after_ms: MIN_RETRY_AFTER_MS
            }
        );
        // Mine and live: renewed, same claim, same attempt.
        assert_eq!(
            decide(&job("claimed", Some(1), Some(5_000)), me, false),
            ClaimState::Granted {
                claim_id: Uuid::from_u128(77),
                attempts: 2
            }
        );
        // Run out: anyone's, as a new attempt.
        let taken = decide(&job("claimed", Some(2), Some(-1)), me, false);
        assert!(
            matches!(taken, ClaimState::Granted { attempts: 3, claim_id } if claim_id != Uuid::from_u128(77))
        );
    }

    #[test]
    fn tokens_decode_to_their_bytes() {
        let token = Token::new(&format!("{}ff", "0a".repeat(31))).unwrap();
        let bytes = token_bytes(&token);
        assert_eq!(bytes[0], 0x0a);
        assert_eq!(bytes[31], 0xff);
    }
}
