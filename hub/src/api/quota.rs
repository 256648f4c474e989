//! `GET /v1/quota`: what the account uses of each of the hub's quotas, and the limits
//! ([`crate::quota`]).

use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use sitetrail_sync_wire::{Quota, QuotaResponse};

use crate::app::App;
use crate::auth::Authed;
use crate::error::HubResult;
use crate::quota;

/// `GET /v1/quota`: the account's usage of every quota.
pub async fn quota(State(app): State<App>, authed: Authed) -> HubResult<(HeaderMap, Json<QuotaResponse>)> {
    let client = app.pool.get().await?;
    let (bytes, records, claim_jobs) = quota::counters(&client, authed.account_id).await?;
    let devices = quota::devices(&client, authed.account_id).await?;
    let leases = quota::leases(&client, authed.account_id).await?;
    let q = &app.quotas;
    let mut headers = HeaderMap::new();
    for (quota, used) in [
        (Quota::Bytes, bytes),
        (Quota::Records, records),
        (Quota::Devices, devices),
        (Quota::ClaimJobs, claim_jobs),
        (Quota::Leases, leases),
    ] {
        q.header(&mut headers, quota, used);
    }
    Ok((
        headers,
        Json(QuotaResponse {
            bytes: q.usage(Quota::Bytes, bytes),
            records: q.usage(Quota::Records, records),
            devices: q.usage(Quota::Devices, devices),
            claim_jobs: q.usage(Quota::ClaimJobs, claim_jobs),
            leases: q.usage(Quota::Leases, leases),
        }),
    ))
}
