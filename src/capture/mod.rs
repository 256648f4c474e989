//! Live capture: the browser extension's native-messaging host and the browser links.
//!
//! The extension (`extension/` at the repository root) records each page the user sees and its
//! active time, keeps its events in `chrome.storage.local` until they are acknowledged, and sends
//! them to the host: this crate's `sitetrail native-host`, started by the browser.
//! - [`protocol`]: the wire format (length-prefixed JSON) and the messages.
//! - [`events`]: storing a batch of events in one transaction, idempotently.
//! - [`host`]: the host loop; acknowledges a batch only after it committed.
//! - [`link`]: `browser-link install|uninstall|status`: the host manifest and its launcher.
//! - [`contact`]: which browsers' extensions have talked to this database, and when.
//! - [`system_link`]: the same links for every user, written into a package's files.

pub mod contact;
pub mod events;
pub mod host;
pub mod link;
pub mod protocol;
pub mod system_link;
