//! `sitetrail-hub package-files --root DIR` (hidden): the hub's man pages (`sitetrail-hub.1` and
//! one per command), made by clap_mangen from the real command line, with the sections clap has
//! no place for: EXAMPLES, EXIT STATUS, ENVIRONMENT and FILES. `scripts/package` installs them.

use std::path::Path;

use clap::Command;

/// How the pages are made, shared with the `sitetrail` CLI's (the hub does not depend on the
/// library, so the file is included by its path).
#[path = "../../src/cli/roff.rs"]
mod roff;

use roff::Section;

/// The hub's examples (as in docs/hub.md).
const EXAMPLES: &[(&str, &str)] = &[
    (
        "SITETRAIL_HUB_DATABASE_URL=postgres://hub:PASSWORD@127.0.0.1:5432/sitetrail_hub sitetrail-hub serve",
        "Bring the schema up to date, then serve on 127.0.0.1:8470 until SIGINT or SIGTERM.",
    ),
    (
        "sitetrail-hub serve --listen 127.0.0.1:0",
        "Serve on a free port; the address is printed on standard output.",
    ),
    (
        "SITETRAIL_HUB_DATABASE_URL=postgres://hub:PASSWORD@127.0.0.1:6432/sitetrail_hub SITETRAIL_HUB_DIRECT_DATABASE_URL=postgres://hub:PASSWORD@127.0.0.1:5432/sitetrail_hub sitetrail-hub serve",
        "Serve through PgBouncer in transaction mode on port 6432; the LISTEN connection and the migrations go straight to PostgreSQL on 5432.",
    ),
    (
        "sitetrail-hub migrate",
        "Only bring the database's schema up to date (serve does it on every start).",
    ),
    (
        "systemctl enable --now sitetrail-hub",
        "Run the packaged hub as its system service, configured in /etc/sitetrail-hub/hub.env.",
    ),
];

/// The hub's exit codes (the codes `main` and `MigrateError::exit_code` return).
pub const EXIT_CODES: &[(u8, &str)] = &[
    (0, "Done (serve: stopped by SIGINT or SIGTERM)."),
    (1, "Failed; the message on standard error says why."),
    (2, "Bad arguments or environment variables."),
    (3, "The database holds tables that are not the hub's."),
    (4, "The database's schema is newer than this hub."),
    (5, "PostgreSQL could not be reached within --startup-wait."),
];

/// Variables read besides the flags' own (listed under OPTIONS with each flag).
const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "SITETRAIL_HUB_DATABASE_URL",
        "The database URL; prefer it to --database-url, which every user of the machine can see.",
    ),
    (
        "SITETRAIL_HUB_DIRECT_DATABASE_URL",
        "PostgreSQL itself when SITETRAIL_HUB_DATABASE_URL is PgBouncer in transaction mode (--direct-database-url); prefer it to the flag for the same reason.",
    ),
    (
        "SITETRAIL_HUB_LOG",
        "The log filter on standard error (default info; sitetrail_hub=debug logs each request's route, status and time, never a login, a header or a payload).",
    ),
    (
        "SITETRAIL_HUB_*",
        "Every flag of serve has its variable, named beside it under OPTIONS.",
    ),
];

const FILES: &[(&str, &str)] = &[
    (
        "/etc/sitetrail-hub/hub.env",
        "The packaged service's settings: its SITETRAIL_HUB_* variables (readable by root and the hub only).",
    ),
    (
        "/usr/lib/systemd/system/sitetrail-hub.service",
        "The packaged service: the unprivileged sitetrail-hub user, a hardened unit.",
    ),
    (
        "/usr/share/doc/sitetrail-hub/README",
        "Running a hub (docs/hub.md).",
    ),
];

/// Writes the page of `cmd` (built) and of each visible subcommand into `dir`.
pub fn write_pages(cmd: &Command, dir: &Path) -> std::io::Result<()> {
    let codes: Vec<(String, &str)> = EXIT_CODES.iter().map(|(c, w)| (c.to_string(), *w)).collect();
    roff::write_pages(cmd, dir, &|_| {
        vec![
            Section::of("EXAMPLES", EXAMPLES),
            Section {
                title: "EXIT STATUS",
                entries: codes.clone(),
            },
            Section::of("ENVIRONMENT", ENVIRONMENT),
            Section::of("FILES", FILES),
        ]
    })
}
