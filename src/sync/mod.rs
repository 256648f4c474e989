//! Sync across a person's devices through a hub (docs/SYNC.md for the protocol, ARCHITECTURE.md
//! "Sync" for the design).
//!
//! - [`crate::sync_log`] (below the write paths, not in here): every change is queued as an
//!   operation in the transaction of the change itself, and the operations a record carries;
//! - [`crypto`]: the account secret, the recovery key and the record encryption;
//! - [`engine`]: one sync and its session; [`link`]: linking, leaving, names; [`reconcile`]: what
//!   this device holds queued again for the account; [`push`]: sealing and pushing; [`pull`]:
//!   pulling and applying; [`wait`]: the long-poll; [`status`]: what `sync status` shows;
//!   [`heal`]: a device whose series no longer matches the hub's goes on as a new one;
//!   [`apply`]: other devices' operations applied through the local write paths, deletions winning;
//! - [`unreadable`]: other devices' records that cannot be read, skipped and shown in status;
//! - [`client`]: the hub's HTTP API; [`keystore`]: where the secret is kept;
//! - [`account`]: deleting the whole account on the hub;
//! - [`background`]: syncing on its own (daemon, app); [`claims`]: one AI call per website for
//!   all of the devices.

pub mod account;
pub mod apply;
pub mod background;
pub mod claims;
pub mod client;
pub mod crypto;
pub mod engine;
pub mod heal;
pub mod keystore;
pub mod link;
pub mod pull;
pub mod push;
pub mod reconcile;
mod send;
mod session;
pub mod status;
pub mod unreadable;
pub mod wait;

pub use engine::{SyncReport, SyncStatus};
