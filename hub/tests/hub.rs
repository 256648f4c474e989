//! The hub's integration tests: the real `sitetrail-hub` binary against a real PostgreSQL
//! (`tests/support/postgres.rs`: one cluster for the whole binary, one database per test; the
//! tests that stop PostgreSQL start their own), over real HTTP on 127.0.0.1.

// Test helpers may panic: a panic is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::cast_possible_truncation)]

mod support;

/// The devices of the library's sync tests (a database, a key folder, the sync engine on a
/// runtime of their own): the device-side tests here drive a device the same way. Its own copy
/// of the PostgreSQL and polling helpers is never used here (its in-process hub is not started:
/// these tests run the hub's binary), hence the second load of those files.
#[allow(clippy::duplicate_mod)]
#[path = "../../tests/support/sync.rs"]
mod sync_support;

mod account_delete;
mod account_turns;
mod accounts;
mod auth;
mod claims;
mod cli;
mod device_faults;
mod device_quota;
mod devices;
mod docs;
mod faults;
mod limits;
mod long_poll;
mod metrics;
mod pgbouncer;
mod quotas;
mod records;
mod schema;
mod tls;
mod wait_caps;
mod wait_wakes;
