//! `PUT`/`DELETE /v1/devices/{device_id}` and `GET /v1/devices`: an account's devices.
//!
//! A device registers once (a repeated PUT touches it); at most
//! [`limits::MAX_DEVICES_PER_ACCOUNT`] active devices per account, and at most `--quota-devices`
//! ever registered (those that left included), counted under a lock on the account's row so two
//! registrations at once cannot pass a limit together. A device that leaves keeps its records,
//! can push and claim no more, and gives back the claims it held. Both answers carry the
//! account's devices in the quota header.
//!
//! Locks follow the hub's one order (a device's row, then the account's row): the touch comes
//! first, the account's lock only for a new device.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::Json;
use sitetrail_sync_wire::{limits, DeviceInfo, DevicesResponse, Quota};
use tokio_postgres::types::Type;
use tokio_postgres::Row;
use uuid::Uuid;

use crate::app::App;
use crate::auth::Authed;
use crate::error::{HubError, HubResult};
use crate::quota;
use crate::request::parse_device_path;
use crate::sql::{Param, Queries};

const DEVICE_COLUMNS: &str = r#"device_id,
    floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms,
    floor(extract(epoch FROM last_seen_at) * 1000)::int8 AS last_seen_at_ms,
    floor(extract(epoch FROM left_at) * 1000)::int8 AS left_at_ms"#;

fn device_info(row: &Row) -> DeviceInfo {
    DeviceInfo {
        device_id: row.get("device_id"),
        created_at_ms: row.get("created_at_ms"),
        last_seen_at_ms: row.get("last_seen_at_ms"),
        left_at_ms: row.get("left_at_ms"),
    }
}

fn device_in_path(uri: &Uri) -> HubResult<Uuid> {
    let tail = uri.path().strip_prefix("/v1/devices/").unwrap_or("");
    parse_device_path(tail)
}

/// Registers the device, or touches it: 200 with what the hub knows of it; 403 if it left; 409
/// past the device limit; 507 past the devices quota.
#[tracing::instrument(level = "debug", skip_all)]
pub async fn register(
    State(app): State<App>,
    authed: Authed,
    uri: Uri,
) -> HubResult<(HeaderMap, Json<DeviceInfo>)> {
    let device_id = device_in_path(&uri)?;
    let mut client = app.pool.get().await?;
    let tx = client.transaction().await?;
    let touch = format!(
        r#"UPDATE device SET last_seen_at = greatest(last_seen_at, date_trunc('minute', now()))
           WHERE account_id = $1 AND device_id = $2 RETURNING {DEVICE_COLUMNS}"#
    );
    let ids: [Param<'_>; 2] = [(&authed.account_id, Type::UUID), (&device_id, Type::UUID)];
    let mut touched = tx.query_opt(&touch, &ids).await?;
    if touched.is_none() {
        // A new device: registrations of one account take turns from here, so the counts below
        // stay true until COMMIT. The same device registered meanwhile is touched after all.
        tx.query_opt(
            "SELECT 1 AS found FROM account WHERE account_id = $1 FOR NO KEY UPDATE",
            &[(&authed.account_id, Type::UUID)],
        )
        .await?
        .ok_or(HubError::Unauthorized)?;
        touched = tx.query_opt(&touch, &ids).await?;
    }
    let mut headers = HeaderMap::new();
    if let Some(row) = touched {
        let info = device_info(&row);
        let registered = quota::devices(&tx, authed.account_id).await?;
        tx.commit().await?;
        if info.left_at_ms.is_some() {
            return Err(HubError::Forbidden(
                "this device left the account and cannot register again: make a new device id".into(),
            ));
        }
        app.quotas.header(&mut headers, Quota::Devices, registered);
        return Ok((headers, Json(info)));
    }
    let row = tx
        .query_one(
            r#"SELECT count(*) AS registered, count(*) FILTER (WHERE left_at IS NULL) AS active
               FROM device WHERE account_id = $1"#,
            &[(&authed.account_id, Type::UUID)],
        )
        .await?;
    let (registered, active): (i64, i64) = (row.get("registered"), row.get("active"));
    if usize::try_from(active).unwrap_or(usize::MAX) >= limits::MAX_DEVICES_PER_ACCOUNT {
        return Err(HubError::Conflict(format!(
            "an account has at most {} devices (MAX_DEVICES_PER_ACCOUNT): let an old one leave first",
            limits::MAX_DEVICES_PER_ACCOUNT
        )));
    }
    let registered = u64::try_from(registered).unwrap_or(0);
    app.quotas.check(Quota::Devices, registered, 1)?;
    let row = tx
        .query_one(
            &format!("INSERT INTO device (account_id, device_id) VALUES ($1, $2) RETURNING {DEVICE_COLUMNS}"),
            &ids,
        )
        .await?;
    tx.commit().await?;
    tracing::info!("device registered");
    app.quotas.header(&mut headers, Quota::Devices, registered + 1);
    Ok((headers, Json(device_info(&row))))
}

/// The device leaves: 204 (also if it had left before); 404 if the account has no such device.
/// It still counts against the devices quota (the header says the account's count).
#[tracing::instrument(level = "debug", skip_all)]
pub async fn leave(State(app): State<App>, authed: Authed, uri: Uri) -> HubResult<(StatusCode, HeaderMap)> {
    let device_id = device_in_path(&uri)?;
    let mut client = app.pool.get().await?;
    let tx = client.transaction().await?;
    let left = tx
        .execute(
            r#"UPDATE device SET left_at = coalesce(left_at, now())
               WHERE account_id = $1 AND device_id = $2"#,
            &[(&authed.account_id, Type::UUID), (&device_id, Type::UUID)],
        )
        .await?;
    if left == 0 {
        return Err(HubError::NotFound("the account has no such device".into()));
    }
    // Its claims go back at once: nobody waits for a lease that will never be renewed.
    tx.execute(
        r#"UPDATE claim_job SET state = 'open', claim_id = NULL, device_id = NULL, lease_until = NULL,
                  updated_at = now()
           WHERE account_id = $1 AND device_id = $2 AND state = 'claimed'"#,
        &[(&authed.account_id, Type::UUID), (&device_id, Type::UUID)],
    )
    .await?;
    let registered = quota::devices(&tx, authed.account_id).await?;
    tx.commit().await?;
    let mut headers = HeaderMap::new();
    app.quotas.header(&mut headers, Quota::Devices, registered);
    Ok((StatusCode::NO_CONTENT, headers))
}

/// Every device of the account, oldest first.
pub async fn list(State(app): State<App>, authed: Authed) -> HubResult<Json<DevicesResponse>> {
    let client = app.pool.get().await?;
    let rows = client
        .query(
            &format!(
                "SELECT {DEVICE_COLUMNS} FROM device WHERE account_id = $1 ORDER BY created_at, device_id"
            ),
            &[(&authed.account_id, Type::UUID)],
        )
        .await?;
    Ok(Json(DevicesResponse {
        devices: rows.iter().map(device_info).collect(),
    }))
}
