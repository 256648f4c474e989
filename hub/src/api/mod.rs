//! The routes' handlers, one file per resource. Each reads and checks its request first
//! ([`crate::request`]), then does its database work in one short transaction keyed by the
//! authenticated account, and answers only after COMMIT.

pub mod accounts;
pub mod claims;
pub mod devices;
pub mod health;
pub mod push;
pub mod quota;
pub mod records;

use tokio_postgres::types::Type;
use uuid::Uuid;

use crate::error::{HubError, HubResult};
use crate::sql::{Queries, Transaction};

/// Refuses (403) a device that is not registered with this account, or has left.
async fn require_active_device(tx: &Transaction<'_>, account_id: Uuid, device_id: Uuid) -> HubResult<()> {
    let row = tx
        .query_opt(
            "SELECT left_at IS NOT NULL AS left FROM device WHERE account_id = $1 AND device_id = $2",
            &[(&account_id, Type::UUID), (&device_id, Type::UUID)],
        )
        .await?;
    match row.map(|r| r.get::<_, bool>("left")) {
        None => Err(not_registered()),
        Some(true) => Err(left()),
        Some(false) => Ok(()),
    }
}

fn not_registered() -> HubError {
    HubError::NotRegistered
}

fn left() -> HubError {
    HubError::Forbidden("this device left the account: it can push and claim no more".into())
}
