//! `sitetrail-hub`: the sync hub. It routes a person's end-to-end encrypted records between
//! their devices and hands out classification claims, on PostgreSQL, as `docs/SYNC.md` and the
//! wire crate (`sitetrail-sync-wire`, every route, shape and limit) define.
//!
//! What it keeps (ARCHITECTURE.md, "The sync hub"):
//! - **Stateless**: every fact lives in PostgreSQL (accounts, devices, records, claims, rate
//!   limits) and every time is the database's clock, so any number of hub processes over one
//!   database serve the same accounts at once.
//! - **Ciphertext only**: a record's payload is opaque bytes, stored and returned as sent; a
//!   login is kept as its SHA-256 and compared in constant time; neither, nor the
//!   `Authorization` header, is ever logged.
//! - **Bounded**: the body is capped before it is read, every limit is checked before the
//!   database is touched ([`request`]), requests and header reads have timeouts, and the number
//!   of connections and requests in flight is capped ([`server`]), in all and per account
//!   ([`turns`]).

pub mod accounts;
pub mod api;
pub mod app;
pub mod auth;
pub mod body;
pub mod db;
pub mod error;
pub mod log_json;
pub mod metrics;
pub mod migrate;
pub mod notify;
pub mod pace;
pub mod quota;
pub mod quota_words;
pub mod request;
pub mod server;
pub mod sql;
pub mod tls;
pub mod turns;
