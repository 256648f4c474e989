//! Sitetrail: local-first browsing history with AI categories.
//!
//! The library behind the `sitetrail` CLI and the desktop app. See `ARCHITECTURE.md` for the
//! bird's-eye view. In short: [`Store`] is the SQLite file; [`Store::record_visit`] writes a
//! visit, its website and the website's classification job in one transaction; [`worker::Worker`]
//! drains the [`outbox`] through a [`classify::Classifier`]; [`import`] brings in the browsers' history.

#![warn(missing_docs)]

pub mod auto_import;
pub mod backlog;
pub mod blocked;
pub mod blocking;
pub mod capture;
pub mod category;
pub mod changes;
pub mod classify;
pub mod confidence;
pub mod domain;
pub mod error;
pub mod exclusions;
pub mod export;
pub mod favicon;
pub mod focus;
pub mod forget;
pub mod fsutil;
pub mod history;
pub mod history_page;
pub mod holds;
pub mod ids;
pub mod import;
pub mod limits;
mod names;
pub mod outbox;
pub mod page_url;
pub mod provisional;
pub mod reminders;
pub mod review;
pub mod search;
pub mod settings;
pub mod signal;
pub mod sources;
pub mod sql_enum;
pub mod store;
pub mod sync;
pub mod sync_log;
mod synced_list;
pub mod time;
pub mod time_spent;
pub mod title_judging;
pub mod visits;
pub mod websites;
pub mod worker;

pub use category::{Category, CategorySource};
pub use confidence::Confidence;
pub use error::{Error, ErrorKind, Result};
pub use store::{Change, Changes, Store, StoreOptions};
pub use time::Timestamp;
pub use visits::NewVisit;
