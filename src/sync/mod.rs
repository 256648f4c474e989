//! Sync across a person's devices through a hub (docs/SYNC.md for the protocol, ARCHITECTURE.md
//! "Sync" for the design).
//!
//! - [`crate::sync_log`] (below the write paths, not in here): every change is queued as an
//!   operation in the transaction of the change itself, and the operations a record carries;
//! - [`crypto`]: the account secret, the recovery key and the record encryption;
//! - [`engine`]: linking, sealing, pushing, pulling; [`apply`]: other devices' operations applied
//!   through the local write paths, deletions winning;
//! - [`unreadable`]: other devices' records that cannot be read, skipped and shown in status;
//! - [`client`]: the hub's HTTP API; [`keystore`]: where the secret is kept;
//! - [`background`]: syncing on its own (daemon, app); [`claims`]: one AI call per website for
//!   all of the devices.

pub mod apply;
pub mod background;
pub mod claims;
pub mod client;
pub mod crypto;
pub mod engine;
pub mod keystore;
mod pull;
pub mod unreadable;

pub use engine::{SyncReport, SyncStatus};
