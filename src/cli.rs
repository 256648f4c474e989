//! Command-line parsing and output. All work is done by the library; this module turns arguments
//! into calls and results into text or JSON.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use serde_json::json;

use sitetrail::classify::builtin::Builtin;
use sitetrail::classify::Classifier;
use sitetrail::export::{ExportFormat, ExportKind};
use sitetrail::ids::OutboxId;
use sitetrail::websites::WebsiteFilter;
use sitetrail::worker::{RetryPolicy, Worker, WorkerConfig};
use sitetrail::{Category, Error, NewVisit, Result, Store, Timestamp};

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
    /// Clears a website's category and queues it to be classified again.
    Reclassify {
        /// The website's domain.
        domain: String,
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
struct WorkerArgs {
    /// Exit once no job is PENDING or PROCESSING.
    #[arg(long)]
    until_idle: bool,
    /// The classifier.
    #[arg(long, env = "SITETRAIL_PROVIDER", default_value = "builtin", value_parser = ["builtin"])]
    provider: String,
    /// Sleep between ticks (ms).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    fixed_delay_ms: u64,
    /// Delay before a failed job is retried (ms).
    #[arg(long, value_name = "N", default_value_t = 30_000)]
    retry_delay_ms: u64,
    /// A job PROCESSING for longer than this is reclaimed (ms).
    #[arg(long, value_name = "N", default_value_t = 300_000)]
    processing_timeout_ms: u64,
    /// Attempts before a job is FAILED.
    #[arg(long, value_name = "N", default_value_t = 5)]
    max_attempts: u32,
    /// Jobs claimed and classified together per tick.
    #[arg(long, value_name = "N", default_value_t = 1)]
    batch_size: usize,
    /// Adds this much latency to every classifier call (ms): simulates a slow provider, for
    /// tests and demos.
    #[arg(long, value_name = "N", hide = true)]
    simulate_latency_ms: Option<u64>,
}

/// Runs the CLI and maps errors to a message on stderr and a non-zero exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let default_level = if matches!(cli.command, Command::Worker(_)) {
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
            ExitCode::FAILURE
        }
    }
}

fn open(db: Option<PathBuf>) -> Result<Store> {
    let path = match db {
        Some(p) => p,
        None => sitetrail::store::default_db_path()?,
    };
    Store::open(path)
}

fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value).map_err(|e| Error::Io(e.into()))?;
    writeln!(out)?;
    Ok(())
}

fn run(cli: Cli) -> Result<()> {
    let store = open(cli.db)?;
    match cli.command {
        Command::Visit {
            url,
            title,
            at,
            source,
            json,
        } => {
            let visited_at = match at {
                Some(s) => Timestamp::parse_rfc3339(&s).ok_or_else(|| {
                    Error::InvalidConfig(format!(
                        "--at {s:?} is not an RFC 3339 date-time (e.g. 2026-11-29T10:00:00Z)"
                    ))
                })?,
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
        Command::Worker(args) => run_worker(store, args)?,
        Command::Status { json } => {
            let s = store.queue_status()?;
            if json {
                print_json(&s)?;
            } else {
                println!(
                    "pending {}  processing {}  completed {}  failed {}",
                    s.pending, s.processing, s.completed, s.failed
                );
                if let Some(age) = s.oldest_pending_age_ms {
                    println!("oldest pending job: {:.1} s old", age as f64 / 1000.0);
                }
            }
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
                    println!(
                        "{}  {}  attempts {}  {}  {}",
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
                            Error::InvalidConfig(format!(
                                "{s:?} is not an outbox id (see `sitetrail failed`)"
                            ))
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
                    let cat = w.category.as_deref().unwrap_or("-");
                    let src = w
                        .category_source
                        .as_deref()
                        .map(|s| format!(" ({s})"))
                        .unwrap_or_default();
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
        Command::Reclassify { domain } => {
            let w = store.reclassify(&domain)?;
            println!("{} queued to be classified again", w.domain);
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

fn run_worker(store: Store, args: WorkerArgs) -> Result<()> {
    let config = WorkerConfig {
        fixed_delay: Duration::from_millis(args.fixed_delay_ms),
        retry: RetryPolicy::fixed(Duration::from_millis(args.retry_delay_ms)),
        processing_timeout: Duration::from_millis(args.processing_timeout_ms),
        max_attempts: args.max_attempts,
        batch_size: args.batch_size,
        ..WorkerConfig::default()
    };
    // `--provider` is checked by clap against the providers this build has.
    debug_assert_eq!(args.provider, "builtin");
    let mut classifier: Arc<dyn Classifier> = Arc::new(Builtin);
    if let Some(ms) = args.simulate_latency_ms {
        classifier = Arc::new(sitetrail::classify::WithLatency::new(
            classifier,
            Duration::from_millis(ms),
        ));
    }
    let worker = Worker::new(store, classifier, config)?;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            wait_for_signal().await;
            tracing::info!("stopping: finishing the job in flight (send the signal again to stop at once)");
            let _ = stop_tx.send(true);
            wait_for_signal().await;
            std::process::exit(130);
        });
        worker.run(stop_rx, args.until_idle).await
    })
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
