//! Command-line parsing and output. All work is done by the library; this module turns arguments
//! into calls and results into text or JSON.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use serde_json::json;

use crate::cli_settings::SettingFlags;

use sitetrail::classify::Classifier;
use sitetrail::domain::Domain;
use sitetrail::export::{ExportFormat, ExportKind};
use sitetrail::ids::OutboxId;
use sitetrail::settings::{Overrides, Resolved};
use sitetrail::websites::WebsiteFilter;
use sitetrail::worker::Worker;
use sitetrail::{Category, CategorySource, Error, NewVisit, Result, Store, Timestamp};

#[derive(Parser, Debug)]
#[command(
    name = "sitetrail",
    version,
    about = "Local-first browsing history, sorted into categories"
)]
struct Cli {
    /// The database file [default: sitetrail.db in the user's data directory].
    #[arg(long, global = true, env = "SITETRAIL_DB", value_name = "PATH")]
    db: Option<PathBuf>,
    /// The settings file [default: settings.json in the user's config directory].
    #[arg(long, global = true, env = "SITETRAIL_SETTINGS", value_name = "PATH")]
    settings: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Records a visit to URL (its website is queued for classification).
    Visit {
        /// An http or https URL.
        url: String,
        /// The page title.
        #[arg(long)]
        title: Option<String>,
        /// When the visit happened, RFC 3339 [default: now].
        #[arg(long, value_name = "RFC3339")]
        at: Option<String>,
        /// Where the visit came from.
        #[arg(long, value_name = "NAME", default_value = "cli")]
        source: String,
        /// Print the result as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Classifies queued websites, one batch per tick, until stopped (SIGINT/SIGTERM).
    Worker(WorkerArgs),
    /// Prints the queue's job counts.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Lists FAILED classification jobs.
    Failed {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Puts FAILED jobs back in the queue (attempts reset).
    Retry {
        /// Outbox job ids (as `failed` prints them).
        #[arg(
            value_name = "OUTBOX_ID",
            required_unless_present = "all_failed",
            conflicts_with = "all_failed"
        )]
        ids: Vec<String>,
        /// Retry every FAILED job.
        #[arg(long)]
        all_failed: bool,
    },
    /// Lists websites.
    Websites {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Only websites in this category.
        #[arg(long, value_name = "C")]
        category: Option<String>,
        /// Only websites without a category yet.
        #[arg(long, conflicts_with = "category")]
        uncategorized: bool,
    },
    /// Sets your own category for a website; classifiers never overwrite it.
    Categorize {
        /// The website's domain.
        domain: String,
        /// A category id (see `sitetrail categories`).
        category: String,
    },
    /// Clears a website's category and queues it to be classified again (the built-in category
    /// comes back at once; a remote provider is asked where it is not certain).
    Reclassify {
        /// The website's domain.
        domain: String,
        /// Classify again with the AI: ask the remote provider even where the built-in answer
        /// is certain.
        #[arg(long)]
        ai: bool,
    },
    /// Writes history or categories to a CSV or JSON file.
    Export {
        /// What to export.
        #[arg(value_enum)]
        what: ExportWhat,
        /// File format.
        #[arg(long, value_enum, default_value = "csv")]
        format: ExportAs,
        /// The file to write (replaced only once the export is complete).
        #[arg(long, short, value_name = "PATH")]
        output: PathBuf,
    },
    /// Lists the category ids and their names.
    Categories {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Prints the category a provider gives each domain, without touching the database (for
    /// trying settings). Private and excluded hosts are answered by the built-in rules.
    Classify(ClassifyArgs),
    /// Resumes a worker paused because the provider needs you (bad key, no quota, unknown
    /// model), or cuts short an offline or rate-limit pause.
    Resume,
    /// Imports browsing history from a browser's own database; only visits added since the last
    /// import are read.
    Import(crate::cli_import::ImportArgs),
    /// Runs the worker and re-imports every detected browser profile every few minutes, until
    /// SIGINT/SIGTERM.
    Daemon(crate::cli_import::DaemonArgs),
    /// Lists the websites whose category is not certain, most visited first, to confirm or
    /// correct them.
    Review(crate::cli_review::ReviewArgs),
    /// The browser extension's native-messaging host (the browser starts it; it speaks
    /// length-prefixed JSON on stdin/stdout).
    NativeHost(crate::cli_capture::NativeHostArgs),
    /// Links a browser to Sitetrail (the native-messaging host manifest), unlinks it, or says
    /// which browsers are linked.
    BrowserLink(crate::cli_capture::BrowserLinkArgs),
    /// Prints the time spent per website, category or day.
    Time(crate::cli_time::TimeArgs),
    /// Lists visits newest first, with search, category and date filters, in pages.
    History(crate::cli_history::HistoryArgs),
    /// Forgets visits, a website or a time range for good (and remembers only that it did).
    Forget(crate::cli_forget::ForgetArgs),
    /// Lists the domains never recorded, or adds or removes one.
    Blocked(crate::cli_forget::BlockedArgs),
}

#[derive(Args, Debug)]
struct ClassifyArgs {
    /// Domains (or URLs) to classify.
    #[arg(required = true, value_name = "DOMAIN")]
    domains: Vec<String>,
    /// Provider settings (each overrides the environment and the saved settings).
    #[command(flatten)]
    provider: SettingFlags<false>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ExportWhat {
    History,
    Categories,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum ExportAs {
    Csv,
    Json,
}

#[derive(Args, Debug)]
pub(crate) struct WorkerArgs {
    /// Exit once no job is PENDING or PROCESSING.
    #[arg(long)]
    pub(crate) until_idle: bool,
    /// Settings (each overrides the environment and the saved settings).
    #[command(flatten)]
    settings: SettingFlags<true>,
    /// Adds this much latency to every classifier call (ms): simulates a slow provider, for
    /// tests and demos.
    #[arg(long, value_name = "N", hide = true)]
    simulate_latency_ms: Option<u64>,
    /// Makes the classifier panic whenever it is asked about DOMAIN: simulates a crash, for tests
    /// of the worker's supervisor.
    #[arg(long, value_name = "DOMAIN", hide = true)]
    simulate_panic_on: Option<String>,
}

/// Runs the CLI and maps errors to a message on stderr and a non-zero exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let default_level = if matches!(cli.command, Command::Worker(_) | Command::Daemon(_)) {
        "info"
    } else {
        "warn"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("SITETRAIL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(format!("sitetrail={default_level}")));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .init();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            // The exit code says what kind of failure it was (`sitetrail::ErrorKind`).
            ExitCode::from(e.kind().exit_code())
        }
    }
}

fn open(db: Option<PathBuf>) -> Result<Store> {
    let path = match db {
        Some(p) => p,
        None => sitetrail::store::default_db_path()?,
    };
    Store::open_with(path, sitetrail::store::StoreOptions::from_env()?)
}

pub(crate) fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value).map_err(|e| Error::Io(e.into()))?;
    writeln!(out)?;
    Ok(())
}

/// Loads the settings file and applies the environment and `overrides` (CLI > env > file).
fn resolve_settings(path: Option<PathBuf>, overrides: &Overrides) -> Result<Resolved> {
    sitetrail::settings::load_and_resolve(path.as_deref(), overrides)
}

fn run(cli: Cli) -> Result<()> {
    // `classify` never opens the database.
    let command = match cli.command {
        Command::Classify(args) => return run_classify(cli.settings, args),
        Command::NativeHost(args) => return crate::cli_capture::run_native_host(cli.db, args),
        Command::BrowserLink(args) => return crate::cli_capture::run_browser_link(cli.db, args),
        other => other,
    };
    let store = open(cli.db)?;
    match command {
        Command::Visit {
            url,
            title,
            at,
            source,
            json,
        } => {
            let visited_at = match at {
                Some(s) => parse_visit_time(&s)?,
                None => store.now(),
            };
            let rec = store.record_visit(&NewVisit {
                url: &url,
                title: title.as_deref(),
                visited_at,
                source: &source,
                source_visit_id: None,
            })?;
            if json {
                print_json(&rec)?;
            } else {
                let new = if rec.new_website {
                    " (new website, queued for classification)"
                } else {
                    ""
                };
                println!("recorded visit to {}{new}", rec.domain);
            }
        }
        Command::Worker(args) => run_worker(store, cli.settings, args)?,
        Command::Import(args) => crate::cli_import::run_import(&store, args)?,
        Command::Daemon(args) => crate::cli_import::run_daemon(store, cli.settings, args)?,
        Command::Review(args) => crate::cli_review::run_review(&store, args)?,
        Command::Time(args) => crate::cli_time::run_time(&store, args)?,
        Command::History(args) => crate::cli_history::run_history(&store, args)?,
        Command::Forget(args) => crate::cli_forget::run_forget(&store, args)?,
        Command::Blocked(args) => crate::cli_forget::run_blocked(&store, args)?,
        Command::Status { json } => {
            let s = store.queue_status()?;
            let w = store.worker_state()?;
            // The backlog at the saved settings' pace (the app also knows the measured rate).
            let eta = resolve_settings(cli.settings, &Overrides::new())
                .ok()
                .and_then(|r| sitetrail::backlog::estimate(&s, &r.worker_config(), None));
            if json {
                let mut v = serde_json::to_value(&s).map_err(|e| Error::Io(e.into()))?;
                v["paused_kind"] = json!(w.paused_kind);
                v["paused_reason"] = json!(w.paused_reason);
                v["paused_until"] = json!(w.paused_until);
                v["eta_seconds"] = json!(eta.map(|e| e.seconds));
                v["paused_provider"] = json!(w.paused_provider);
                v["worker_crashes"] = json!(w.worker_crashes);
                v["last_crash"] = match (&w.last_crash_at, &w.last_crash_message) {
                    (Some(at), message) => json!({"at": at, "message": message}),
                    (None, _) => serde_json::Value::Null,
                };
                print_json(&v)?;
            } else {
                println!(
                    "pending {}  processing {}  completed {}  failed {}",
                    s.pending, s.processing, s.completed, s.failed
                );
                if let Some(age) = s.oldest_pending_age_ms {
                    println!("oldest pending job: {:.1} s old", age as f64 / 1000.0);
                }
                if let Some(e) = eta {
                    println!("backlog: about {:.0} s at the configured pace", e.seconds.ceil());
                }
                if let Some(reason) = &w.paused_reason {
                    let until = w
                        .paused_until
                        .map(|t| format!(" until {}", t.to_rfc3339()))
                        .unwrap_or_else(|| " until you run `sitetrail resume`".into());
                    let whose = w
                        .paused_provider
                        .as_deref()
                        .map(|p| format!(" (for {p})"))
                        .unwrap_or_default();
                    println!("worker paused{until}{whose}: {reason}");
                }
                if let (Some(at), Some(message)) = (&w.last_crash_at, &w.last_crash_message) {
                    println!(
                        "worker crashed {} time(s), last at {}: {message} (it restarted by itself)",
                        w.worker_crashes,
                        at.to_rfc3339()
                    );
                }
            }
        }
        Command::Resume => match store.resume_worker()? {
            Some(w) => println!(
                "worker resumed (it was paused: {})",
                w.paused_reason.unwrap_or_default()
            ),
            None => println!("the worker was not paused"),
        },
        Command::Classify(_) | Command::NativeHost(_) | Command::BrowserLink(_) => {
            unreachable!("handled before the database is opened")
        }
        Command::Failed { json } => {
            let jobs = store.failed_jobs()?;
            if json {
                print_json(&jobs)?;
            } else if jobs.is_empty() {
                println!("no failed jobs");
            } else {
                for j in jobs {
                    let at = j.attempted_at.map(Timestamp::to_rfc3339).unwrap_or_default();
                    let err = j.last_error_message.unwrap_or_default();
                    let keeps = match (j.category, j.category_source) {
                        (Some(c), Some(CategorySource::Builtin)) => {
                            format!("  (keeps its provisional category {c})")
                        }
                        (Some(c), Some(src)) => format!("  (category {c}, {})", src.as_str()),
                        _ => String::new(),
                    };
                    println!(
                        "{}  {}  attempts {}  {}  {}{keeps}",
                        j.id, j.domain, j.attempt_count, at, err
                    );
                }
            }
        }
        Command::Retry { ids, all_failed } => {
            if all_failed {
                let n = store.retry_all_failed()?;
                println!("{n} failed job(s) queued again");
            } else {
                let ids = ids
                    .iter()
                    .map(|s| {
                        s.parse::<OutboxId>().map_err(|_| {
                            Error::InvalidInput(format!("{s:?} is not an outbox id (see `sitetrail failed`)"))
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                store.retry_jobs(&ids)?;
                println!("{} job(s) queued again", ids.len());
            }
        }
        Command::Websites {
            json,
            category,
            uncategorized,
        } => {
            let category = category.map(|c| c.parse::<Category>()).transpose()?;
            let sites = store.websites(&WebsiteFilter {
                category,
                uncategorized,
            })?;
            if json {
                print_json(&sites)?;
            } else {
                for w in sites {
                    let cat = w.category.map_or("-", Category::id);
                    let src = match (w.category_source, w.category_confidence) {
                        (Some(s), Some(c)) => format!(" ({}, {c})", s.as_str()),
                        (Some(s), None) => format!(" ({})", s.as_str()),
                        _ => String::new(),
                    };
                    println!("{}  {cat}{src}", w.domain);
                }
            }
        }
        Command::Categorize { domain, category } => {
            let category: Category = category.parse()?;
            let w = store.set_user_category(&domain, category)?;
            println!(
                "{} is now {} (your choice; never overwritten)",
                w.domain, category
            );
        }
        Command::Reclassify { domain, ai } => {
            let w = store.reclassify_with(&domain, sitetrail::websites::Reclassify { ai })?;
            let with = if ai { " by the AI" } else { "" };
            println!("{} queued to be classified again{with}", w.domain);
        }
        Command::Export { what, format, output } => {
            let kind = match what {
                ExportWhat::History => ExportKind::History,
                ExportWhat::Categories => ExportKind::Categories,
            };
            let format = match format {
                ExportAs::Csv => ExportFormat::Csv,
                ExportAs::Json => ExportFormat::Json,
            };
            let n = store.export(kind, format, &output)?;
            println!("exported {n} row(s) to {}", output.display());
        }
        Command::Categories { json } => {
            if json {
                let list: Vec<_> = Category::ALL
                    .iter()
                    .map(|c| json!({"id": c.id(), "name": c.name()}))
                    .collect();
                print_json(&list)?;
            } else {
                for c in Category::ALL {
                    println!("{:<18} {}", c.id(), c.name());
                }
            }
        }
    }
    Ok(())
}

fn run_worker(store: Store, settings: Option<PathBuf>, args: WorkerArgs) -> Result<()> {
    let worker = build_worker(store, settings, &args)?;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            sitetrail::signal::stop_requested().await;
            tracing::info!("stopping: finishing the job in flight (send the signal again to stop at once)");
            let _ = stop_tx.send(true);
            sitetrail::signal::stop_requested().await;
            std::process::exit(130);
        });
        worker.run(stop_rx, args.until_idle).await
    })
}

/// The worker the `worker` and `daemon` commands run, from the settings and the worker options.
pub(crate) fn build_worker(store: Store, settings: Option<PathBuf>, args: &WorkerArgs) -> Result<Worker> {
    let resolved = resolve_settings(settings, &args.settings.overrides)?;
    // No user categories for the classifier: the worker judges every website with the built-in
    // rules and the user's categories as they are at each pass (worker::local), and asks its
    // classifier only about hosts for the remote provider.
    let (mut classifier, config) = resolved.build(Default::default())?;
    tracing::info!(
        provider = resolved.settings.provider.as_str(),
        base_url = resolved
            .settings
            .provider
            .is_remote()
            .then(|| sitetrail::classify::http::display_url(resolved.base_url())),
        model = resolved.settings.provider.is_remote().then(|| resolved.model()),
        batch_size = config.batch_size,
        max_requests_per_minute = config.max_requests_per_minute,
        "worker starting"
    );
    if let Some(ms) = args.simulate_latency_ms {
        classifier = Arc::new(sitetrail::classify::WithLatency::new(
            classifier,
            Duration::from_millis(ms),
        ));
    }
    if let Some(domain) = &args.simulate_panic_on {
        classifier = Arc::new(sitetrail::worker::PanicsOn::new(classifier, domain.clone()));
    }
    Worker::new(store, classifier, config)
}

/// Parses `--at`: an RFC 3339 date-time within the range the importers accept (1990–2200).
fn parse_visit_time(s: &str) -> Result<Timestamp> {
    let t = Timestamp::parse_rfc3339(s).ok_or_else(|| {
        Error::InvalidInput(format!(
            "--at {s:?} is not an RFC 3339 date-time (e.g. 2026-11-29T10:00:00Z)"
        ))
    })?;
    sitetrail::visits::check_visit_time(t)
        .map_err(|why| Error::InvalidInput(format!("--at {s:?}: {why}")))?;
    Ok(t)
}

fn run_classify(settings: Option<PathBuf>, args: ClassifyArgs) -> Result<()> {
    let resolved = resolve_settings(settings, &args.provider.overrides)?;
    let domains = args
        .domains
        .iter()
        .map(|d| Domain::parse(d).map(|d| d.as_str().to_owned()))
        .collect::<Result<Vec<_>>>()?;
    // The database is not opened, so the user's own categories do not apply here.
    let classifier: Arc<dyn Classifier> = resolved.classifier(Default::default())?;
    let batch = resolved.worker_config().batch_size;
    let rt = tokio::runtime::Runtime::new()?;
    let mut rows = Vec::with_capacity(domains.len());
    for chunk in domains.chunks(batch) {
        let outcomes = rt.block_on(classifier.classify(chunk))?;
        for (domain, outcome) in chunk.iter().zip(outcomes) {
            rows.push(match outcome {
                Ok(v) => json!({"domain": domain, "category": v.category, "source": v.source,
                                "confidence": v.confidence, "error": null}),
                Err(e) => json!({"domain": domain, "category": null, "source": null,
                                 "confidence": null, "error": e}),
            });
        }
    }
    if args.json {
        return print_json(&rows);
    }
    for r in &rows {
        match r["category"].as_str() {
            Some(c) => println!(
                "{}\t{c}\t({})",
                r["domain"].as_str().unwrap_or(""),
                r["source"].as_str().unwrap_or("")
            ),
            None => println!(
                "{}\t-\t{}",
                r["domain"].as_str().unwrap_or(""),
                r["error"].as_str().unwrap_or("")
            ),
        }
    }
    Ok(())
}
