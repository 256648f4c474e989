//! `sitetrail-hub`: `serve` (migrate, then answer the sync API) and `migrate` (apply the schema
//! and exit). All the work is in the library; this file reads the flags and maps failures to
//! exit codes.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use sitetrail_hub::migrate::{self, MigrateError};
use sitetrail_hub::{db, notify, server};

mod manpage;

const AFTER_HELP: &str = "\
Every flag can be given as the environment variable named beside it; prefer the variable for
the database URL, which may hold a password (the process's arguments are visible to every user
of the machine). Logging goes to standard error; SITETRAIL_HUB_LOG sets its filter (default
`info`; `sitetrail_hub=debug` logs every request's route, status and time, never a login, a
header or a payload).

Exit codes: 0 done; 1 failed (the message says why); 2 bad arguments; 3 the database holds
tables that are not the hub's; 4 the database's schema is newer than this hub; 5 PostgreSQL
could not be reached within --startup-wait.

Run it behind a TLS-terminating proxy (it speaks plain HTTP/1.1); see docs/hub.md in Sitetrail's
source (installed as /usr/share/doc/sitetrail-hub/README).";

/// Sitetrail's sync hub: routes end-to-end encrypted records between a person's devices and
/// hands out classification claims, on PostgreSQL.
#[derive(Parser)]
#[command(name = "sitetrail-hub", version, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Bring the database's schema up to date, then serve the sync API until SIGINT or SIGTERM.
    #[command(after_help = AFTER_HELP)]
    Serve(ServeArgs),
    /// Bring the database's schema up to date and exit (serve does this too, on every start).
    #[command(after_help = AFTER_HELP)]
    Migrate(DatabaseArgs),
    /// Write the man pages under a package's staging root (scripts/package).
    #[command(hide = true)]
    PackageFiles {
        /// The staging root, written to as if it were /.
        #[arg(long, value_name = "DIR")]
        root: std::path::PathBuf,
    },
}

#[derive(Args)]
struct DatabaseArgs {
    /// The PostgreSQL database the hub keeps everything in, as a URL
    /// (postgres://USER:PASSWORD@HOST:PORT/DATABASE) or key=value pairs. It must be empty or
    /// the hub's own.
    #[arg(
        long,
        env = "SITETRAIL_HUB_DATABASE_URL",
        hide_env_values = true,
        value_name = "URL"
    )]
    database_url: String,

    /// How long to keep trying to reach PostgreSQL at start before giving up (exit code 5).
    #[arg(
        long,
        env = "SITETRAIL_HUB_STARTUP_WAIT",
        default_value_t = 30,
        value_name = "SECONDS"
    )]
    startup_wait: u64,
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    database: DatabaseArgs,

    /// The address and port to listen on (plain HTTP; put a TLS-terminating proxy in front).
    /// Port 0 picks a free port; the URL is printed on standard output.
    #[arg(
        long,
        env = "SITETRAIL_HUB_LISTEN",
        default_value = "127.0.0.1:8470",
        value_name = "ADDR"
    )]
    listen: SocketAddr,

    /// PostgreSQL connections this process keeps at most.
    #[arg(long, env = "SITETRAIL_HUB_POOL_SIZE", default_value_t = 16, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    pool_size: u16,

    /// Client connections open at once; past it new connections wait in the kernel's backlog.
    #[arg(long, env = "SITETRAIL_HUB_MAX_CONNECTIONS", default_value_t = 1024, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    max_connections: u32,

    /// Requests worked on at once; the others wait their turn. Bounds memory: each may hold a
    /// request body of up to 16 MiB.
    #[arg(long, env = "SITETRAIL_HUB_MAX_REQUESTS", default_value_t = 64, value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    max_requests: u32,

    /// Longest time to answer a request, reading its body included (503 `unavailable` past it).
    #[arg(long, env = "SITETRAIL_HUB_REQUEST_TIMEOUT", default_value_t = 30, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..=600))]
    request_timeout: u64,

    /// Longest time for a request's headers to arrive, also on an idle kept-alive connection
    /// (the bound on clients that open connections and send nothing, or send it slowly).
    #[arg(long, env = "SITETRAIL_HUB_HEADER_TIMEOUT", default_value_t = 10, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..=300))]
    header_timeout: u64,

    /// Behind a proxy: the header it writes the client's address in (e.g. x-forwarded-for; the
    /// right-most address counts). Without it, the TCP peer's address counts for the
    /// per-address limit on new accounts. Only set it when every request comes through that proxy.
    #[arg(long, env = "SITETRAIL_HUB_REAL_IP_HEADER", value_name = "HEADER")]
    real_ip_header: Option<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::PackageFiles { root } = &cli.command {
        return package_files(root);
    }
    init_logging();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("sitetrail-hub: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Migrate(args) => {
                let config = database_config(&args)?;
                let version = migrate_waiting(&config, &args).await?;
                tracing::info!(version, "the hub's schema is up to date");
                Ok(())
            }
            Command::Serve(args) => serve(args).await,
            Command::PackageFiles { .. } => Ok(()),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { message, code }) => {
            eprintln!("sitetrail-hub: {message}");
            ExitCode::from(code)
        }
    }
}

/// Writes the man pages into `root`/usr/share/man/man1 (uncompressed: the packaging script
/// compresses them).
fn package_files(root: &std::path::Path) -> ExitCode {
    use clap::CommandFactory;
    // No page for clap's `help` command: `--help` says the same.
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let dir = root.join("usr/share/man/man1");
    match std::fs::create_dir_all(&dir).and_then(|()| manpage::write_pages(&cmd, &dir)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!(
                "sitetrail-hub: cannot write the man pages under {}: {e}",
                root.display()
            );
            ExitCode::FAILURE
        }
    }
}

/// Logging to stderr, filtered by `SITETRAIL_HUB_LOG` (default `info`). Whatever the filter, the
/// PostgreSQL client's debug and trace records are dropped: they list every statement's
/// parameters, which are payloads and login hashes.
fn init_logging() {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let filter = tracing_subscriber::EnvFilter::try_from_env("SITETRAIL_HUB_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let no_parameters = tracing_subscriber::filter::filter_fn(|meta| {
        let client = meta.target().starts_with("tokio_postgres") || meta.target().starts_with("postgres");
        !(client && *meta.level() > tracing::Level::INFO)
    });
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .with_filter(filter)
                .with_filter(no_parameters),
        )
        .init();
}

/// Why the process ends unsuccessfully, and with which exit code.
struct Failure {
    message: String,
    code: u8,
}

impl From<MigrateError> for Failure {
    fn from(e: MigrateError) -> Failure {
        Failure {
            code: e.exit_code(),
            message: e.to_string(),
        }
    }
}

fn failure(message: String) -> Failure {
    Failure { message, code: 1 }
}

fn database_config(args: &DatabaseArgs) -> Result<tokio_postgres::Config, Failure> {
    db::config(&args.database_url).map_err(|why| Failure {
        message: format!("--database-url: {why}"),
        code: 2,
    })
}

/// Migrates, retrying while PostgreSQL is unreachable for up to `--startup-wait`.
async fn migrate_waiting(config: &tokio_postgres::Config, args: &DatabaseArgs) -> Result<i64, Failure> {
    let deadline = Instant::now() + Duration::from_secs(args.startup_wait);
    let mut pause = Duration::from_millis(250);
    loop {
        match migrate::migrate(config).await {
            Err(MigrateError::Unreachable { target, why }) if Instant::now() < deadline => {
                tracing::warn!(%target, %why, "PostgreSQL is not reachable yet; trying again");
                tokio::time::sleep(pause.min(deadline.saturating_duration_since(Instant::now()))).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
            other => return Ok(other?),
        }
    }
}

async fn serve(args: ServeArgs) -> Result<(), Failure> {
    let config = database_config(&args.database)?;
    let version = migrate_waiting(&config, &args.database).await?;
    let pool = db::pool(config.clone(), usize::from(args.pool_size)).map_err(failure)?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| failure(format!("cannot listen on {}: {e}", args.listen)))?;
    let address = listener
        .local_addr()
        .map_err(|e| failure(format!("cannot listen on {}: {e}", args.listen)))?;
    tracing::info!(%address, schema_version = version, "listening");
    announce(address);
    let notifier = Arc::new(notify::Notifier::default());
    let listener_task = tokio::spawn(notify::listen(config, notifier.clone()));
    let app = server::App {
        pool: pool.clone(),
        real_ip_header: args.real_ip_header,
        notifier: notifier.clone(),
    };
    let limits = server::Limits {
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        max_requests: usize::try_from(args.max_requests).unwrap_or(usize::MAX),
        request_timeout: Duration::from_secs(args.request_timeout),
        header_timeout: Duration::from_secs(args.header_timeout),
    };
    let stop = async {
        stop_signal().await;
        // Waiting long-polls answer now instead of holding the shutdown for their wait.
        notifier.close();
    };
    server::serve(listener, server::router(app), limits, stop).await;
    listener_task.abort();
    pool.close();
    tracing::info!("stopped");
    Ok(())
}

/// The one line the hub writes on stdout: where it listens (scripts and tests read it). A closed
/// stdout is no reason to stop serving, so a failed write is ignored.
#[allow(clippy::disallowed_methods)] // stdout carries nothing else
fn announce(address: SocketAddr) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "sitetrail-hub listening on http://{address}");
    let _ = out.flush();
}

/// SIGINT or SIGTERM.
async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
        _ => {
            tracing::warn!("cannot listen for SIGINT/SIGTERM; stop the hub with SIGKILL");
            std::future::pending::<()>().await;
        }
    }
}
