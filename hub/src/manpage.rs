//! `sitetrail-hub package-files --root DIR` (hidden): the hub's man pages (`sitetrail-hub.1` and
//! one per command), made by clap_mangen from the real command line, with the sections clap has
//! no place for: EXAMPLES, EXIT STATUS, ENVIRONMENT and FILES. `scripts/package` installs them.

use std::io::Write;
use std::path::Path;

use clap::Command;

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

fn roff_text(out: &mut Vec<u8>, text: &str) {
    let mut s = text.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        s.insert_str(0, "\\&");
    }
    out.extend_from_slice(s.as_bytes());
    out.push(b'\n');
}

fn tagged_section<T: AsRef<str>>(out: &mut Vec<u8>, title: &str, entries: &[(T, &str)]) {
    out.extend_from_slice(format!(".SH {title}\n").as_bytes());
    for (tag, text) in entries {
        out.extend_from_slice(b".TP\n\\fB");
        let mut t = Vec::new();
        roff_text(&mut t, tag.as_ref());
        t.pop();
        out.extend_from_slice(&t);
        out.extend_from_slice(b"\\fR\n");
        roff_text(out, text);
    }
}

fn render(cmd: &Command) -> std::io::Result<Vec<u8>> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut out)?;
    }
    tagged_section(&mut out, "EXAMPLES", EXAMPLES);
    let codes: Vec<(String, &str)> = EXIT_CODES.iter().map(|(c, w)| (c.to_string(), *w)).collect();
    tagged_section(&mut out, "EXIT STATUS", &codes);
    tagged_section(&mut out, "ENVIRONMENT", ENVIRONMENT);
    tagged_section(&mut out, "FILES", FILES);
    if cmd.get_version().is_some() {
        man.render_version_section(&mut out)?;
    }
    Ok(out)
}

/// Writes the page of `cmd` (built) and of each visible subcommand into `dir`.
pub fn write_pages(cmd: &Command, dir: &Path) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir)?;
    }
    let name = cmd.get_display_name().unwrap_or_else(|| cmd.get_name());
    let mut file = std::fs::File::create(dir.join(format!("{name}.1")))?;
    file.write_all(&render(cmd)?)?;
    file.flush()
}
