//! `POST /v1/accounts`: a new account, at most
//! [`limits::ACCOUNTS_PER_ADDRESS_PER_MINUTE`] requests per network address and calendar
//! minute (counted in PostgreSQL, so every hub process shares the count).

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use sitetrail_sync_wire::{limits, AccountCreated};

use crate::auth::{login_hash, login_matches};
use crate::body::{client_address, Body, Peer};
use crate::error::{HubError, HubResult};
use crate::request::parse_create_account;
use crate::server::App;

/// Creates the account: 201; 200 if it exists with this very login (a repeated request whose
/// answer was lost); 409 if the id is another login's; 429 past the per-address limit.
pub async fn create(
    State(app): State<App>,
    peer: Option<Extension<Peer>>,
    headers: HeaderMap,
    Body(body): Body,
) -> HubResult<(StatusCode, Json<AccountCreated>)> {
    let request = parse_create_account(&body)?;
    let address = client_address(peer.map(|p| p.0), &headers, app.real_ip_header.as_deref())
        .ok_or_else(|| HubError::BadRequest("the client's address is unknown".into()))?;
    let mut client = app.pool.get().await?;
    let tx = client.transaction().await?;
    let count = tx
        .prepare_cached(
            r#"INSERT INTO account_creation (address, minute, requests)
               VALUES ($1, date_trunc('minute', now()), 1)
               ON CONFLICT (address, minute) DO UPDATE SET requests = account_creation.requests + 1
               RETURNING requests"#,
        )
        .await?;
    let requests: i32 = tx.query_one(&count, &[&address]).await?.get("requests");
    let expired = tx
        .prepare_cached("DELETE FROM account_creation WHERE minute < date_trunc('minute', now()) - interval '1 minute'")
        .await?;
    tx.execute(&expired, &[]).await?;
    if u32::try_from(requests).unwrap_or(u32::MAX) > limits::ACCOUNTS_PER_ADDRESS_PER_MINUTE {
        // The count is kept: refused requests count too, so hammering does not help.
        tx.commit().await?;
        return Err(HubError::TooManyRequests(format!(
            "at most {} accounts are created per address and minute (ACCOUNTS_PER_ADDRESS_PER_MINUTE); try again in a minute",
            limits::ACCOUNTS_PER_ADDRESS_PER_MINUTE
        )));
    }
    let hash = login_hash(&request.login).to_vec();
    let insert = tx
        .prepare_cached(
            r#"INSERT INTO account (account_id, login_sha256) VALUES ($1, $2)
               ON CONFLICT (account_id) DO NOTHING RETURNING account_id"#,
        )
        .await?;
    let created = tx.query_opt(&insert, &[&request.account_id, &hash]).await?.is_some();
    let status = if created {
        StatusCode::CREATED
    } else {
        let existing = tx
            .query_opt("SELECT login_sha256 FROM account WHERE account_id = $1", &[&request.account_id])
            .await?
            .map(|r| r.get::<_, Vec<u8>>("login_sha256"));
        if !login_matches(existing.as_deref(), &request.login) {
            tx.commit().await?;
            return Err(HubError::Conflict("this account id is taken".into()));
        }
        StatusCode::OK
    };
    tx.commit().await?;
    if created {
        tracing::info!("account created");
    }
    Ok((status, Json(AccountCreated { account_id: request.account_id })))
}
