//! The one integration-test binary; each folder tests one area against real SQLite files, real
//! processes, a real PostgreSQL and real browsers; `support/` holds what the tests share.

// Test helpers may panic: a panic is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::cast_possible_truncation)]

mod support;

mod core {
    pub mod architecture;
    pub mod architecture_names;
    pub mod changes;
    pub mod cli;
    pub mod docs_links;
    pub mod hardening_files;
    pub mod hardening_workers;
    pub mod history;
    pub mod outbox;
    pub mod outbox_model;
    pub mod processes;
    pub mod spans;
    pub mod store;
    pub mod worker;
}

mod cli {
    pub mod edges;
    pub mod human;
    pub mod worker;
}

mod history {
    pub mod blocked;
    pub mod cli;
    pub mod favicons;
    pub mod forget;
    pub mod import;
    pub mod search;
}

mod classify {
    pub mod builtin_answers;
    pub mod cli;
    pub mod local_first;
    pub mod local_first_user;
    pub mod local_titles;
    pub mod national;
    pub mod privacy_exclusions;
    pub mod provider_answers;
    pub mod provider_leaks;
    pub mod provider_tls;
    pub mod providers;
    pub mod review;
    pub mod worker_failures;
}

mod import {
    pub mod bad_input;
    pub mod cli;
    pub mod cost;
    pub mod detect;
    pub mod fixtures;
    pub mod integrity;
    pub mod keys;
}

mod capture {
    pub mod browser;
    pub mod extension_unit;
    pub mod firefox;
    pub mod host;
    pub mod hostile;
    pub mod link;
    pub mod link_system;
    pub mod time_spent;
}

mod limits {
    pub mod browser;
    pub mod cli;
    pub mod continue_after_pause;
    pub mod firefox;
    pub mod reminders;
    pub mod sync;
}

mod sync {
    pub mod account;
    pub mod apply_batch;
    pub mod claims;
    pub mod clock;
    pub mod devices;
    pub mod faults;
    pub mod import;
    pub mod keyring;
    pub mod life;
    pub mod model;
    pub mod quota;
    pub mod rotate;
    pub mod transport;
    pub mod unreadable;
    pub mod writer_waits;
}
