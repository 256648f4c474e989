//! The one integration-test binary; each module tests one area against real SQLite files.

// Test helpers may panic: a panic is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::cast_possible_truncation)]

mod chromium_harness;
mod common;

mod core_architecture;
mod core_architecture_names;
mod core_changes;
mod core_cli;
mod core_history;
mod core_outbox;
mod core_processes;
mod core_spans;
mod core_store;
mod core_worker;

mod cli_edges;
mod cli_human;
mod cli_worker;
mod history_blocked;
mod history_cli;
mod history_favicons;
mod history_forget;
mod history_import;
mod history_search;

mod limits_cli;

mod fake_ai;
mod raw_http;

mod classify_cli;
mod classify_providers;
mod worker_failures;

mod builtin_answers;
mod local_first;
mod local_first_user;
mod local_titles;
mod review;

mod hardening_files;
mod hardening_workers;
mod outbox_model;

mod privacy_exclusions;
mod provider_answers;
mod provider_leaks;
mod provider_tls;

#[path = "support/builtin_answer.rs"]
mod builtin_answer;
mod import_bad_input;
mod import_cli;
mod import_cost;
mod import_detect;
mod import_fixtures;
mod import_support;

mod capture_browser;
mod capture_firefox;
mod capture_host;
mod capture_hostile;
mod capture_link;
mod extension_unit;
mod time_spent;

mod limits_sync;
mod sync_account;
mod sync_apply_batch;
mod sync_claims;
mod sync_clock;
mod sync_devices;
mod sync_faults;
mod sync_keyring;
mod sync_life;
mod sync_model;
mod sync_rotate;
mod sync_support;

mod docs_links;
mod sync_transport;
mod sync_unreadable;
