//! The man pages `sitetrail package-files` writes: clap_mangen's sections, made from the real
//! command line, plus the sections a man page reader looks for and clap has no place for:
//! EXAMPLES, EXIT STATUS (from `sitetrail::ErrorKind`, the one definition of the codes),
//! ENVIRONMENT and FILES. A unit test parses every example with the real parser, so an example
//! cannot name a flag that does not exist.

use std::path::Path;

use clap::Command;

use sitetrail::{ErrorKind, Result};

use super::roff::{self, Section};

/// Examples per page (the page's name: `sitetrail`, `sitetrail-history`, ...): the command line
/// and what it does.
pub(crate) const EXAMPLES: &[(&str, &[(&str, &str)])] = &[
    (
        "sitetrail",
        &[
            (
                "sitetrail import --auto",
                "Import the history of every browser profile found on this computer.",
            ),
            (
                "sitetrail history --search \"sqlite lock\"",
                "Visits whose title, address or domain has both words.",
            ),
            (
                "sitetrail time --by category --since week",
                "Time spent this week, per category.",
            ),
            (
                "sitetrail forget website example.com",
                "Forget a website, every visit to it and its category.",
            ),
            (
                "sitetrail sync status",
                "Whether this device syncs, with which hub and devices.",
            ),
        ],
    ),
    (
        "sitetrail-history",
        &[
            (
                "sitetrail history --since yesterday --until today",
                "Yesterday's visits, newest first.",
            ),
            (
                "sitetrail history --search rust --category dev_tech --limit 20",
                "Twenty visits about rust on development websites.",
            ),
            (
                "sitetrail history --search \"release notes\" --sort rank",
                "The best matches first.",
            ),
            (
                "sitetrail history --ids --since today --json",
                "Today as JSON, with the ids `forget visit` takes.",
            ),
        ],
    ),
    (
        "sitetrail-time",
        &[
            (
                "sitetrail time",
                "Time per website, most first, with each one's share and the total.",
            ),
            (
                "sitetrail time --by day --since 7d",
                "Time per day over the last seven days.",
            ),
            (
                "sitetrail time --by category --since month --json",
                "This month per category, as JSON.",
            ),
        ],
    ),
    (
        "sitetrail-forget",
        &[
            (
                "sitetrail forget website example.com --block",
                "Forget a website and never record it again.",
            ),
            (
                "sitetrail forget range --since 2026-11-29T10:00:00Z --until 2026-11-29T11:00:00Z",
                "Forget an hour.",
            ),
            (
                "sitetrail forget range --since today --until 2026-12-31 --yes",
                "Forget from this morning to the end of 2026, without the question.",
            ),
        ],
    ),
    (
        "sitetrail-import",
        &[
            (
                "sitetrail import --auto",
                "Import every detected browser profile (only what is new since the last import).",
            ),
            (
                "sitetrail import firefox ~/.mozilla/firefox/abcd.default/places.sqlite",
                "Import one history file.",
            ),
        ],
    ),
    (
        "sitetrail-sync",
        &[
            (
                "sitetrail sync setup --hub https://hub.example",
                "Start syncing: prints the recovery key, once.",
            ),
            (
                "sitetrail sync join --hub https://hub.example",
                "Join from another device (asks for the recovery key).",
            ),
            ("sitetrail sync now", "Send and receive what is waiting."),
        ],
    ),
    (
        "sitetrail-worker",
        &[
            (
                "sitetrail worker --until-idle",
                "Classify everything queued, then exit.",
            ),
            (
                "sitetrail worker",
                "Classify as websites are queued, until SIGINT or SIGTERM.",
            ),
        ],
    ),
    (
        "sitetrail-export",
        &[(
            "sitetrail export history --format csv --output history.csv",
            "Write the whole history to a CSV file.",
        )],
    ),
];

/// What each exit code means to the person who got it (the kinds are read from `ErrorKind`).
const EXIT_CODES: &[(u8, &str)] = &[
    (0, "It worked (also when the reader of its output went away, as with `| head`)."),
    (1, "A file that cannot be used as asked, a provider's refusal, or a failure of the disk, the database or Sitetrail."),
    (2, "Fix the argument, setting or environment variable the message names (also a malformed command line)."),
    (3, "The website, job or visit named does not exist."),
    (4, "The request does not fit the current state, or you answered no to a question."),
    (5, "The database is locked by another writer for longer than the busy timeout: try again."),
    (6, "The provider cannot be reached, asked to slow down, or failed: try again later."),
    (7, "The provider refuses until you act: key, quota, model or certificate."),
    (8, "Something this machine cannot do (no home directory: pass --db)."),
];

/// The environment variables the commands read.
pub(crate) const ENVIRONMENT: &[(&str, &str)] = &[
    ("SITETRAIL_DB", "The database file (as --db)."),
    ("SITETRAIL_SETTINGS", "The settings file (as --settings)."),
    ("SITETRAIL_LOG", "The log filter on standard error, e.g. sitetrail=debug (default: warnings; info for worker and daemon)."),
    ("SITETRAIL_PROVIDER", "The classifier: builtin, openai or ollama (a setting; every setting has its SITETRAIL_ variable)."),
    ("SITETRAIL_BASE_URL", "The AI provider's address (a setting)."),
    ("SITETRAIL_MODEL", "The AI provider's model (a setting)."),
    ("SITETRAIL_API_KEY", "The AI provider's key; read from the environment only, never stored or logged."),
    ("SITETRAIL_FIXED_DELAY_MS", "The worker's pause between jobs (a setting)."),
    ("SITETRAIL_BATCH_SIZE", "Websites per request to the provider (a setting)."),
    ("SITETRAIL_MAX_ATTEMPTS", "Tries before a job fails (a setting)."),
    ("SITETRAIL_EXCLUSIONS", "Hosts never sent to a remote provider, comma-separated (added to the setting)."),
    ("SITETRAIL_SYNCHRONOUS", "normal or full: how much a power cut can lose (a setting)."),
    ("SITETRAIL_AUTO_IMPORT_MINUTES", "The daemon's import interval (a setting)."),
    ("SITETRAIL_IMPORT_PROFILES", "The browser profiles the daemon imports (a setting)."),
    ("SITETRAIL_SYNC_HUB", "The hub of sync setup and sync join (as --hub)."),
    ("SITETRAIL_SYNC_KEYRING", "off keeps the sync key in a file instead of the OS keyring."),
    (
        "SITETRAIL_SYNC_CA_FILE",
        "A PEM file of certificate authorities trusted for the hub (as --ca-file).",
    ),
    ("TZ", "The time zone of dates and of the days of time --by day."),
    ("NO_COLOR", "Set: tables are never coloured (nor with TERM=dumb)."),
    ("XDG_DATA_HOME, XDG_CONFIG_HOME", "Where the default database and settings file are."),
];

/// The files the commands use.
const FILES: &[(&str, &str)] = &[
    (
        "$XDG_DATA_HOME/sitetrail/sitetrail.db (~/.local/share/sitetrail/sitetrail.db)",
        "The database, with its -wal and -shm files beside it (and -writers, an empty file locked by writers waiting for the database while a sync applies).",
    ),
    (
        "$XDG_CONFIG_HOME/sitetrail/settings.json (~/.config/sitetrail/settings.json)",
        "The settings the app writes and the commands read.",
    ),
    (
        "$XDG_CONFIG_HOME/sitetrail/sync/",
        "This device's sync key, when the OS keyring cannot keep it (readable by you only).",
    ),
    ("/usr/share/doc/sitetrail/", "The user guide."),
];

/// The EXIT STATUS entries: each code with its meaning and its kinds' names.
fn exit_entries() -> Vec<(String, &'static str)> {
    EXIT_CODES
        .iter()
        .map(|(code, what)| {
            let kinds: Vec<&str> = ErrorKind::ALL
                .iter()
                .filter(|k| k.exit_code() == *code)
                .map(|k| k.as_str())
                .collect();
            let tag = if kinds.is_empty() {
                code.to_string()
            } else {
                format!("{code} ({})", kinds.join(", "))
            };
            (tag, *what)
        })
        .collect()
}

/// Writes the page of `cmd` and of each of its visible subcommands into `dir` (`cmd` built, so
/// subcommands have their display names: `sitetrail-history.1`).
pub(crate) fn write_pages(cmd: &Command, dir: &Path) -> Result<()> {
    let exits = exit_entries();
    roff::write_pages(cmd, dir, &|name| {
        let mut sections = Vec::new();
        if let Some((_, examples)) = EXAMPLES.iter().find(|(page, _)| *page == name) {
            sections.push(Section::of("EXAMPLES", examples));
        }
        sections.push(Section {
            title: "EXIT STATUS",
            entries: exits.clone(),
        });
        sections.push(Section::of("ENVIRONMENT", ENVIRONMENT));
        sections.push(Section::of("FILES", FILES));
        sections
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_exit_code_of_an_error_kind_is_explained() {
        for kind in ErrorKind::ALL {
            assert!(EXIT_CODES.iter().any(|(c, _)| *c == kind.exit_code()), "{kind:?}");
        }
    }
}
