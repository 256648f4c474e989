//! `GET /v1/health`: 200 with the schema version while PostgreSQL answers, 503 otherwise. No
//! login, so a load balancer can ask it.

use axum::extract::State;
use axum::Json;
use sitetrail_sync_wire::Health;

use crate::app::App;
use crate::error::HubResult;
use crate::migrate::MIGRATIONS_TABLE;
use crate::sql::Queries;

/// The hub's health.
pub async fn health(State(app): State<App>) -> HubResult<Json<Health>> {
    let client = app.pool.get().await?;
    let row = client
        .query_one(
            &format!("SELECT coalesce(max(version), 0) AS version FROM {MIGRATIONS_TABLE}"),
            &[],
        )
        .await?;
    crate::db::note_up();
    Ok(Json(Health {
        status: "ok".into(),
        schema_version: row.get("version"),
    }))
}
