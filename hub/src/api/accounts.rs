//! `DELETE /v1/account`: the account holder deletes the account and everything of it
//! ([`crate::accounts::delete`]).
//!
//! `POST /v1/accounts`: a new account, at most [`limits::ACCOUNTS_PER_ADDRESS_PER_MINUTE`]
//! created per network address in any minute, and at most `--max-new-accounts-per-hour` over
//! every address (sliding windows, counted in PostgreSQL under one advisory lock, so every hub
//! process shares the counts and two requests at once cannot both take the last place).

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use sitetrail_sync_wire::{limits, AccountCreated};

use crate::app::App;
use crate::auth::{login_hash, login_matches, Authed};
use crate::body::{client_address, Body, Peer};
use crate::error::{HubError, HubResult};
use crate::request::parse_create_account;
use crate::sql::Queries;
use tokio_postgres::types::Type;

/// The advisory lock creations take turns under ("ST", then "AC").
const RATE_LOCK: (i32, i32) = (0x5354, 0x4143);

/// Creates the account: 201; 200 if it exists with this very login (a repeated request whose
/// answer was lost); 409 if the id is another login's; 429 past the per-address limit.
#[tracing::instrument(level = "debug", skip_all)]
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
    // One creation at a time (any hub process), so the counts below stay true. Creations are
    // rare: a turn costs nothing that matters.
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, $2)",
        &[(&RATE_LOCK.0, Type::INT4), (&RATE_LOCK.1, Type::INT4)],
    )
    .await?;
    tx.execute(
        "DELETE FROM account_creation WHERE at <= now() - interval '1 hour'",
        &[],
    )
    .await?;
    if let Some(per_hour) = app.quotas.new_accounts_per_hour {
        let row = tx
            .query_one(
                r#"SELECT count(*) AS n,
                          ceil(extract(epoch FROM min(at) + interval '1 hour' - now()))::int8 AS wait_s
                   FROM account_creation"#,
                &[],
            )
            .await?;
        let (n, wait_s): (i64, Option<i64>) = (row.get("n"), row.get("wait_s"));
        if u64::try_from(n).unwrap_or(u64::MAX) >= u64::from(per_hour) {
            tx.commit().await?;
            tracing::warn!(
                per_hour,
                "new accounts refused: the hub's hourly limit is reached"
            );
            return Err(HubError::TooManyRequests {
                message: format!(
                    "this hub creates at most {per_hour} accounts an hour (--max-new-accounts-per-hour); try again later"
                ),
                retry_after_s: u64::try_from(wait_s.unwrap_or(3600)).unwrap_or(1).clamp(1, 3600),
            });
        }
    }
    let row = tx
        .query_one(
            r#"SELECT count(*) AS n,
                      ceil(extract(epoch FROM min(at) + interval '1 minute' - now()))::int8 AS wait_s
               FROM account_creation WHERE address = $1 AND at > now() - interval '1 minute'"#,
            &[(&address, Type::INET)],
        )
        .await?;
    let (n, wait_s): (i64, Option<i64>) = (row.get("n"), row.get("wait_s"));
    if u64::try_from(n).unwrap_or(u64::MAX) >= u64::from(limits::ACCOUNTS_PER_ADDRESS_PER_MINUTE) {
        tx.commit().await?;
        return Err(HubError::TooManyRequests {
            message: format!(
                "at most {} accounts are created per address and minute (ACCOUNTS_PER_ADDRESS_PER_MINUTE); try again later",
                limits::ACCOUNTS_PER_ADDRESS_PER_MINUTE
            ),
            retry_after_s: u64::try_from(wait_s.unwrap_or(60)).unwrap_or(1).clamp(1, 60),
        });
    }
    let hash = login_hash(&request.login).to_vec();
    let created = tx
        .query_opt(
            r#"INSERT INTO account (account_id, login_sha256) VALUES ($1, $2)
               ON CONFLICT (account_id) DO NOTHING RETURNING account_id"#,
            &[(&request.account_id, Type::UUID), (&hash, Type::BYTEA)],
        )
        .await?
        .is_some();
    if created {
        tx.execute(
            "INSERT INTO account_creation (address) VALUES ($1)",
            &[(&address, Type::INET)],
        )
        .await?;
    }
    let status = if created {
        StatusCode::CREATED
    } else {
        let existing = tx
            .query_opt(
                "SELECT login_sha256 FROM account WHERE account_id = $1",
                &[(&request.account_id, Type::UUID)],
            )
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
    Ok((
        status,
        Json(AccountCreated {
            account_id: request.account_id,
        }),
    ))
}

/// Deletes the account the login opens, and every record, device and claim of it, in one
/// transaction: 204. Afterwards its login opens nothing (401), and its id can be created again.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn delete(State(app): State<App>, authed: Authed) -> HubResult<StatusCode> {
    let mut client = app.pool.get().await?;
    let tx = client.transaction().await?;
    let deleted = crate::accounts::delete(tx.as_postgres(), authed.account_id).await?;
    tx.commit().await?;
    // Another request deleted it between the login and here: it is gone all the same.
    let Some(deleted) = deleted else {
        return Err(HubError::Unauthorized);
    };
    app.notifier.wake(authed.account_id);
    tracing::info!(
        devices = deleted.devices,
        records = deleted.records,
        claim_jobs = deleted.claim_jobs,
        "account deleted by its holder"
    );
    Ok(StatusCode::NO_CONTENT)
}
