//! The hub's integration tests: the real `sitetrail-hub` binary against a real PostgreSQL
//! (`tests/support/postgres.rs`: one cluster for the whole binary, one database per test; the
//! tests that stop PostgreSQL start their own), over real HTTP on 127.0.0.1.

// Test helpers may panic: a panic is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::cast_possible_truncation)]

mod support;

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
mod quotas;
mod records;
mod schema;
mod tls;
mod wait_caps;
