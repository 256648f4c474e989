//! Deleting the whole account on the hub (`sitetrail sync delete-account`): every record, device
//! and claim of it, for every device. This device's history stays; its link and sync key are
//! removed afterwards, as `leave` removes them (the registers' clocks stay, as for `leave`). The other devices hear of it on their next sync
//! (the hub refuses their login: [`super::client::ACCOUNT_GONE`]) and keep what they recorded.
//!
//! Invariant: the local link is removed only once the hub said the account is deleted, so a
//! failed request (the hub unreachable, a refusal) leaves this device linked and the account
//! whole.

use std::path::Path;

use crate::error::Result;
use crate::store::Store;

use super::engine::{self, Link};

/// Deletes the account this device is linked to on its hub, then this device's link and key.
/// Returns the link as it was.
pub async fn delete_account(store: &Store, key_dir: &Path) -> Result<Link> {
    let session = engine::session(store, key_dir).await?;
    session.client.delete_account().await?;
    tracing::info!("the account was deleted on the hub");
    let link = session.link;
    super::link::unlink(store, key_dir, &link).await?;
    Ok(link)
}
