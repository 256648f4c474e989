//! Command-line parsing and output, one module per command. All work is done by the library;
//! these modules turn arguments into calls and results into text or JSON. The commands, flags
//! and JSON keys are a contract for scripts: extend them, never rename or remove them.

mod capture;
mod classify;
mod clock;
mod exclusions;
mod export;
mod failed;
mod focus;
mod forget;
mod history;
mod human;
mod import;
mod limits;
mod manpage;
mod out;
mod package;
mod report;
mod review;
mod roff;
mod settings;
mod status;
mod sync;
mod time;
mod visit;
mod websites;
mod when;
mod worker;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use sitetrail::settings::{Overrides, Resolved};
use sitetrail::{Result, Store};

pub(crate) use worker::{build_worker, WorkerArgs};

/// The footer of `sitetrail --help`: where the user guide is. Every page of `docs/` is named
/// here (the integration test `docs_links` checks it against the folder).
const GUIDE: &str = "\
The user guide is in docs/ beside Sitetrail's source and README.md, which links every page
(installed in /usr/share/doc/sitetrail/); `man sitetrail-<command>` documents each command:
  docs/cli.md              the commands, output for people and for scripts, exit codes
  docs/history.md          history, search, forgetting, the never-record list, time spent
  docs/import.md           importing browser history; the daemon
  docs/classifiers.md      classifiers, settings and privacy: what is sent where
  docs/extension.md        the browser extension, live history, Firefox
  docs/app.md              the desktop app
  docs/limits.md           limits and goals, the weekly report
  docs/syncing.md          sync across your devices
  docs/hub.md              running a sync hub
  docs/troubleshooting.md  when things go wrong
  docs/durability.md       what a crash or a power cut can lose
  docs/development.md      building, testing, packaging, fuzzing
  docs/BENCHMARKS.md       the figures and how to measure them
  docs/SYNC.md             the sync protocol";

#[derive(Parser, Debug)]
#[command(
    name = "sitetrail",
    version,
    about = "Local-first browsing history, sorted into categories",
    after_help = GUIDE
)]
struct Cli {
    /// The database file [default: sitetrail.db in the user's data directory].
    #[arg(long, global = true, env = sitetrail::store::DB_ENV, value_name = "PATH")]
    db: Option<PathBuf>,
    /// The settings file [default: settings.json in the user's config directory].
    #[arg(long, global = true, env = "SITETRAIL_SETTINGS", value_name = "PATH")]
    settings: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

// The order is `--help`'s: what people use first (their history, its time, forgetting, import,
// sync, categories), then the plumbing that scripts, the daemon and the browser use.
#[derive(Subcommand, Debug)]
enum Command {
    /// Lists visits newest first, with search, category and date filters, in pages.
    History(history::HistoryArgs),
    /// Prints the time spent per website, category or day.
    Time(time::TimeArgs),
    /// Forgets visits, a website or a time range for good (and remembers only that it did).
    Forget(forget::ForgetArgs),
    /// Lists the domains never recorded, or adds or removes one.
    Blocked(forget::BlockedArgs),
    /// Lists your limits and goals of active time per category or website with how they stand
    /// today or this week, or adds or removes one (on all your devices).
    Limits(limits::LimitsArgs),
    /// Prints a report: --week, each category this week against last week and how your limits
    /// and goals were kept.
    Report(report::ReportArgs),
    /// Starts, stops or shows a focus session: pages of the categories and websites it blocks
    /// are held back in the browser, on all your devices, until it ends.
    Focus(focus::FocusArgs),
    /// Imports browsing history from a browser's own database; only visits added since the last
    /// import are read.
    Import(import::ImportArgs),
    /// Runs the worker and re-imports every detected browser profile every few minutes, until
    /// SIGINT/SIGTERM.
    Daemon(import::DaemonArgs),
    /// Syncs this history with your other devices through a hub, end-to-end encrypted.
    Sync(sync::SyncArgs),
    /// Lists websites.
    Websites(websites::WebsitesArgs),
    /// Sets your own category for a website; classifiers never overwrite it.
    Categorize(websites::CategorizeArgs),
    /// Clears a website's category and queues it to be classified again (the built-in category
    /// comes back at once; a remote provider is asked where it is not certain).
    Reclassify(websites::ReclassifyArgs),
    /// Lists the category ids and their names.
    Categories(websites::CategoriesArgs),
    /// Lists the websites whose category is not certain, most visited first, to confirm or
    /// correct them.
    Review(review::ReviewArgs),
    /// Writes history or categories to a CSV or JSON file.
    Export(export::ExportArgs),
    /// Lists the hosts never sent to a remote provider (on all your devices), or adds or removes one.
    Exclusions(exclusions::ExclusionsArgs),
    /// Links a browser to Sitetrail (the native-messaging host manifest), unlinks it, or says
    /// which browsers are linked.
    BrowserLink(capture::BrowserLinkArgs),
    /// Prints the category a provider gives each domain, changing no website or job (for
    /// trying settings). Private and excluded hosts (the settings' and, if the database exists,
    /// `sitetrail exclusions`') are answered by the built-in rules.
    Classify(classify::ClassifyArgs),
    /// Records a visit to URL (its website is queued for classification).
    Visit(visit::VisitArgs),
    /// Classifies queued websites, one batch per tick, until stopped (SIGINT/SIGTERM).
    Worker(WorkerArgs),
    /// Prints the queue's job counts.
    Status(status::StatusArgs),
    /// Lists FAILED classification jobs.
    Failed(failed::FailedArgs),
    /// Puts FAILED jobs back in the queue (attempts reset).
    Retry(failed::RetryArgs),
    /// Resumes a worker paused because the provider needs you (bad key, no quota, unknown
    /// model), or cuts short an offline or rate-limit pause.
    Resume,
    /// The browser extension's native-messaging host (the browser starts it; it speaks
    /// length-prefixed JSON on stdin/stdout).
    NativeHost(capture::NativeHostArgs),
}

/// Runs the CLI and maps errors to a message on stderr and a non-zero exit code.
pub fn main() -> ExitCode {
    // The hidden `package-files` is parsed beside `Cli`, not in it: the man pages and
    // completions it writes from `Cli::command()` must not list it.
    let mut matches = ignore_empty_env(Cli::command().subcommand(package::command())).get_matches();
    if let Some((package::NAME, m)) = matches.subcommand() {
        return report(package::run_package_files(Cli::command(), m));
    }
    let cli = Cli::from_arg_matches_mut(&mut matches).unwrap_or_else(|e| e.exit());
    let default_level = if matches!(cli.command, Command::Worker(_) | Command::Daemon(_)) {
        "info"
    } else {
        "warn"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("SITETRAIL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("sitetrail={default_level}")));
    // A span's end is logged with its time (`close time.busy=…`), so a slow import or sync says
    // where its time went at the level its spans are on (`SITETRAIL_LOG=sitetrail=debug`).
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
    report(run(cli))
}

/// `cmd` with the environment variables of its options (`SITETRAIL_DB`, ...) ignored where they
/// are set but empty (`SITETRAIL_DB= sitetrail ...`, the shell's way to unset one for a command):
/// clap would refuse the empty value, even beside an explicit `--db`.
fn ignore_empty_env(cmd: clap::Command) -> clap::Command {
    let names: Vec<String> = cmd.get_subcommands().map(|c| c.get_name().to_owned()).collect();
    let cmd = cmd.mut_args(|a| match a.get_env() {
        Some(var) if std::env::var_os(var).is_some_and(|v| v.is_empty()) => a.env(None::<&str>),
        _ => a,
    });
    names
        .iter()
        .fold(cmd, |cmd, name| cmd.mut_subcommand(name, ignore_empty_env))
}

/// The exit code of a command's result, with the error's message on stderr.
fn report(result: Result<()>) -> ExitCode {
    match result.and_then(|()| out::finish()) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader of stdout went away (`| head`): the normal end of the output.
        Err(e) if out::is_closed_output(&e) => ExitCode::SUCCESS,
        Err(e) => {
            out::note(&format!("error: {e}"));
            // The exit code says what kind of failure it was (`sitetrail::ErrorKind`).
            ExitCode::from(e.kind().exit_code())
        }
    }
}

fn open(db: Option<PathBuf>) -> Result<Store> {
    Store::open_with(
        db_path(db)?,
        with_clock(sitetrail::store::StoreOptions::from_env()?),
    )
}

/// `options` with the command's clock ([`clock`]: the system's, or a test's `SITETRAIL_NOW`).
fn with_clock(options: sitetrail::store::StoreOptions) -> sitetrail::store::StoreOptions {
    sitetrail::store::StoreOptions {
        clock: clock::store_clock(),
        ..options
    }
}

fn db_path(db: Option<PathBuf>) -> Result<PathBuf> {
    match db {
        Some(p) => Ok(p),
        None => sitetrail::store::default_db_path(),
    }
}

/// For the commands that build a worker from the settings (`worker`, `daemon`): resolves them
/// (flags > env > file) and opens the database with their `synchronous`, so the settings file's
/// value applies there too. `SITETRAIL_SYNCHRONOUS` is checked first, with the message every
/// command gives it. (The other commands never read the settings file to open the database: a
/// malformed file cannot stop them.)
fn open_with_settings(
    db: Option<PathBuf>,
    settings: Option<PathBuf>,
    overrides: &Overrides,
) -> Result<(Store, Resolved)> {
    sitetrail::store::StoreOptions::from_env()?;
    let resolved = resolve_settings(settings, overrides)?;
    let store = Store::open_with(db_path(db)?, with_clock(resolved.store_options()))?;
    Ok((store, resolved))
}

/// Loads the settings file and applies the environment and `overrides` (CLI > env > file).
fn resolve_settings(path: Option<PathBuf>, overrides: &Overrides) -> Result<Resolved> {
    sitetrail::settings::load_and_resolve(path.as_deref(), overrides)
}

/// Sends each command to its module; all but five open the database first (`worker` and
/// `daemon` open it after their settings: [`open_with_settings`]).
fn run(cli: Cli) -> Result<()> {
    clock::check()?;
    let db = cli.db;
    let store = || open(db.clone());
    match cli.command {
        Command::Classify(args) => classify::run_classify(db, cli.settings, args),
        Command::NativeHost(args) => capture::run_native_host(db, args),
        Command::BrowserLink(args) => capture::run_browser_link(db, args),
        Command::Visit(args) => visit::run_visit(&store()?, args),
        Command::Worker(args) => worker::run_worker(db, cli.settings, args),
        Command::Import(args) => import::run_import(&store()?, args),
        Command::Daemon(args) => import::run_daemon(db, cli.settings, args),
        Command::Review(args) => review::run_review(&store()?, args),
        Command::Time(args) => time::run_time(&store()?, args),
        Command::History(args) => history::run_history(&store()?, args),
        Command::Forget(args) => forget::run_forget(&store()?, args),
        Command::Blocked(args) => forget::run_blocked(&store()?, args),
        Command::Sync(args) => sync::run_sync(&store()?, cli.settings, args),
        Command::Exclusions(args) => exclusions::run_exclusions(&store()?, cli.settings, args),
        Command::Limits(args) => limits::run_limits(&store()?, args),
        Command::Report(args) => report::run_report(&store()?, args),
        Command::Focus(args) => focus::run_focus(&store()?, args),
        Command::Status(args) => status::run_status(&store()?, cli.settings, args),
        Command::Resume => status::run_resume(&store()?),
        Command::Failed(args) => failed::run_failed(&store()?, args),
        Command::Retry(args) => failed::run_retry(&store()?, args),
        Command::Websites(args) => websites::run_websites(&store()?, args),
        Command::Categorize(args) => websites::run_categorize(&store()?, args),
        Command::Reclassify(args) => websites::run_reclassify(&store()?, args),
        Command::Export(args) => export::run_export(&store()?, args),
        Command::Categories(args) => {
            // Opened for its check of `--db` only, as before.
            store()?;
            websites::run_categories(args)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `line` split into words as a shell would (double quotes group; no escapes in examples).
    fn words(line: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (i, part) in line.split('"').enumerate() {
            if i % 2 == 1 {
                out.push(part.to_owned());
            } else {
                out.extend(part.split_whitespace().map(str::to_owned));
            }
        }
        out
    }

    #[test]
    fn every_man_page_example_parses() {
        for (page, examples) in manpage::EXAMPLES {
            for (line, _) in *examples {
                let words = words(line);
                assert_eq!(words[0], "sitetrail", "{line}");
                // The page of the command the example runs.
                let command: Vec<&str> = words[1..]
                    .iter()
                    .take_while(|w| !w.starts_with('-'))
                    .map(String::as_str)
                    .take(1)
                    .collect();
                let expected = std::iter::once("sitetrail")
                    .chain(command)
                    .collect::<Vec<_>>()
                    .join("-");
                assert!(*page == "sitetrail" || *page == expected, "{line} is on {page}");
                if let Err(e) = Cli::try_parse_from(&words) {
                    panic!("{line}: {e}");
                }
            }
        }
    }
}
