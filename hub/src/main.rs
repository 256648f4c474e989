//! `sitetrail-hub`: `serve` (migrate, then answer the sync API), `migrate` (apply the schema
//! and exit) and `accounts` (the operator's view of the accounts: list, show, delete). All the
//! work is in the library; this file reads the flags, prints, and maps failures to exit codes.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use sitetrail_hub::migrate::{self, MigrateError};
use sitetrail_hub::{accounts, db, notify, quota, server, sql, tls};
use uuid::Uuid;

mod manpage;

const AFTER_HELP: &str = "\
Every flag can be given as the environment variable named beside it; prefer the variable for
the database URL, which may hold a password (the process's arguments are visible to every user
of the machine). Logging goes to standard error (--log-format text or json); SITETRAIL_HUB_LOG sets its filter
(default `info`; `sitetrail_hub=debug` logs every request's route, status and time, never a
login, a header or a payload). Metrics for Prometheus: --metrics-listen.

Exit codes: 0 done; 1 failed (the message says why); 2 bad arguments; 3 the database holds
tables that are not the hub's; 4 the database's schema is newer than this hub; 5 PostgreSQL
could not be reached within --startup-wait.

Serve HTTPS with --tls-cert and --tls-key, or run it behind a TLS-terminating proxy (it then
speaks plain HTTP/1.1): devices refuse a plain http:// hub on another machine. See docs/hub.md in
Sitetrail's source (installed as /usr/share/doc/sitetrail-hub/README).";

/// Sitetrail's sync hub: routes end-to-end encrypted records between a person's devices and
/// hands out classification claims, on PostgreSQL.
#[derive(Parser)]
#[command(name = "sitetrail-hub", version, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,

    /// How log lines are written on standard error: `text` for people, `json` (one object a
    /// line: time, level, target, message, fields) for log shippers.
    #[arg(long, global = true, env = "SITETRAIL_HUB_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

/// `--log-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// Lines for people.
    Text,
    /// One JSON object a line.
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Bring the database's schema up to date, then serve the sync API until SIGINT or SIGTERM.
    #[command(after_help = AFTER_HELP)]
    Serve(Box<ServeArgs>),
    /// Bring the database's schema up to date and exit (serve does this too, on every start).
    #[command(after_help = AFTER_HELP)]
    Migrate(DatabaseArgs),
    /// The accounts this hub keeps: what each uses, and deleting one with everything of it.
    Accounts(AccountsArgs),
    /// Write the man pages under a package's staging root (scripts/package).
    #[command(hide = true)]
    PackageFiles {
        /// The staging root, written to as if it were /.
        #[arg(long, value_name = "DIR")]
        root: std::path::PathBuf,
    },
}

#[derive(Args)]
struct AccountsArgs {
    #[command(subcommand)]
    command: AccountsCommand,
}

#[derive(Subcommand)]
enum AccountsCommand {
    #[command(after_help = AFTER_HELP)]
    /// Every account, oldest first: id, created, devices (active/registered), records, bytes
    /// stored, last seen.
    List {
        #[command(flatten)]
        database: DatabaseArgs,
        /// Print JSON: {"accounts": [{account_id, created_at_ms, devices, active_devices,
        /// records, bytes, claim_jobs, last_seen_at_ms}]}.
        #[arg(long)]
        json: bool,
    },
    #[command(after_help = AFTER_HELP)]
    /// One account's usage (exit 1 if there is no such account).
    Show {
        #[command(flatten)]
        database: DatabaseArgs,
        /// The account's id (a UUID, as `accounts list` prints it).
        id: Uuid,
        /// Print JSON (one object, as in `accounts list --json`).
        #[arg(long)]
        json: bool,
    },
    #[command(after_help = AFTER_HELP)]
    /// Deletes the account and everything of it (records, devices, series, claims), in one
    /// transaction. Its devices keep their local history; their next sync is refused (401).
    Delete {
        #[command(flatten)]
        database: DatabaseArgs,
        /// The account's id (a UUID, as `accounts list` prints it).
        id: Uuid,
        /// Print JSON: {"deleted": true, account_id, devices, records, claim_jobs}.
        #[arg(long)]
        json: bool,
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

    /// Give it when --database-url leads to a pool in transaction mode (PgBouncer's
    /// `pool_mode = transaction`): a URL that reaches the same database on PostgreSQL itself.
    /// What needs a session of its own goes there: the one LISTEN connection of each process
    /// (which wakes long-polls when another process stores records), the migrations (a session
    /// lock) and the `accounts` commands. The requests' pool then keeps no prepared statements
    /// (each statement goes unnamed) and sends no settings at connect: set statement_timeout in
    /// PgBouncer's connect_query or on the role (docs/hub.md). Default: --database-url is
    /// PostgreSQL itself and serves all of it.
    #[arg(
        long,
        env = "SITETRAIL_HUB_DIRECT_DATABASE_URL",
        hide_env_values = true,
        value_name = "URL"
    )]
    direct_database_url: Option<String>,

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

    /// The address and port to listen on (HTTPS with --tls-cert and --tls-key, else plain HTTP:
    /// then put a TLS-terminating proxy in front). Port 0 picks a free port; the URL is printed
    /// on standard output.
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

    /// Requests of one account worked on at once (its others wait for one of these turns, before
    /// they take one of --max-requests or a database connection): one account cannot fill the
    /// queue every account shares. Keep it below --pool-size. A long-poll holds one only until it
    /// waits. 0 for no limit.
    #[arg(
        long,
        env = "SITETRAIL_HUB_MAX_REQUESTS_PER_ACCOUNT",
        default_value_t = 8,
        value_name = "N"
    )]
    max_requests_per_account: usize,

    /// Long-polls (`GET /v1/index/wait`) of one account waiting at once; past it a wait is
    /// answered at once with the index and Retry-After. 0 for no cap.
    #[arg(
        long,
        env = "SITETRAIL_HUB_MAX_WAITS_PER_ACCOUNT",
        default_value_t = 64,
        value_name = "N"
    )]
    max_waits_per_account: usize,

    /// Long-polls from one client address (an IPv6 address by its /64) waiting at once; 0 for no
    /// cap. Behind a proxy, set --real-ip-header, or every wait counts against the proxy's address.
    #[arg(
        long,
        env = "SITETRAIL_HUB_MAX_WAITS_PER_ADDRESS",
        default_value_t = 128,
        value_name = "N"
    )]
    max_waits_per_address: usize,

    /// Long-polls waiting at once in this process [default: three quarters of --max-connections,
    /// so a quarter of the connections stay for other requests]; 0 for no cap.
    #[arg(long, env = "SITETRAIL_HUB_MAX_WAITS", value_name = "N")]
    max_waits: Option<usize>,

    /// Serve Prometheus metrics (`GET /metrics`, text format) on this address, apart from the
    /// API: requests by route and status, latency, bytes pushed and pulled, waits open, the
    /// pool, PostgreSQL errors, quota refusals, records stored. Off unless given; keep it on a
    /// private address (it needs no login).
    #[arg(long, env = "SITETRAIL_HUB_METRICS_LISTEN", value_name = "ADDR")]
    metrics_listen: Option<SocketAddr>,

    /// Serve HTTPS with this certificate chain (PEM, the server's certificate first); with
    /// --tls-key. Reloaded when the file changes (see --tls-reload-interval): a renewal needs no
    /// restart.
    #[arg(
        long,
        env = "SITETRAIL_HUB_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    tls_cert: Option<std::path::PathBuf>,

    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1). Keep it readable by the hub
    /// only.
    #[arg(
        long,
        env = "SITETRAIL_HUB_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    tls_key: Option<std::path::PathBuf>,

    /// How often to look whether --tls-cert or --tls-key changed, and reload them if so.
    #[arg(long, env = "SITETRAIL_HUB_TLS_RELOAD_INTERVAL", default_value_t = 60, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    tls_reload_interval: u64,

    /// Payload bytes one account may store (a number of bytes, or with KiB, MiB, GiB, TiB); 0 for
    /// no limit. Past it a push is refused (507 `quota_exceeded`) and stores nothing.
    #[arg(long, env = "SITETRAIL_HUB_QUOTA_BYTES", default_value = "2GiB", value_name = "SIZE",
          value_parser = quota::parse_size)]
    quota_bytes: u64,

    /// Records one account may store; 0 for no limit.
    #[arg(long, env = "SITETRAIL_HUB_QUOTA_RECORDS", default_value_t = quota::DEFAULT_RECORDS, value_name = "N")]
    quota_records: u64,

    /// Devices one account may register, those that left included (until they are removed); 0
    /// for no limit. Beside it, at most 64 devices that have not left (MAX_DEVICES_PER_ACCOUNT).
    #[arg(long, env = "SITETRAIL_HUB_QUOTA_DEVICES", default_value_t = quota::DEFAULT_DEVICES, value_name = "N")]
    quota_devices: u64,

    /// Classification jobs one account may hold (one per website asked about); 0 for no limit.
    #[arg(long, env = "SITETRAIL_HUB_QUOTA_CLAIM_JOBS", default_value_t = quota::DEFAULT_CLAIM_JOBS, value_name = "N")]
    quota_claim_jobs: u64,

    /// Claims one account may hold at once with a live lease; 0 for no limit.
    #[arg(long, env = "SITETRAIL_HUB_QUOTA_LEASES", default_value_t = quota::DEFAULT_LEASES, value_name = "N")]
    quota_leases: u64,

    /// The longest lease the hub grants a claim, in milliseconds (default: the lease the device
    /// asks for, at most an hour). A device that dies mid-call blocks the websites it claimed
    /// for this long at most.
    #[arg(long, env = "SITETRAIL_HUB_MAX_LEASE_MS", value_name = "MS",
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    max_lease_ms: Option<u64>,

    /// New accounts this hub creates per hour over every address (beside the 10 per address and
    /// minute); 0 for no limit. Past it creations are refused 429 with Retry-After.
    #[arg(long, env = "SITETRAIL_HUB_MAX_NEW_ACCOUNTS_PER_HOUR",
          default_value_t = quota::DEFAULT_NEW_ACCOUNTS_PER_HOUR, value_name = "N")]
    max_new_accounts_per_hour: u32,
}

impl ServeArgs {
    fn quotas(&self) -> quota::Quotas {
        let limit = |n: u64| (n > 0).then_some(n);
        quota::Quotas {
            bytes: limit(self.quota_bytes),
            records: limit(self.quota_records),
            devices: limit(self.quota_devices),
            claim_jobs: limit(self.quota_claim_jobs),
            leases: limit(self.quota_leases),
            new_accounts_per_hour: (self.max_new_accounts_per_hour > 0)
                .then_some(self.max_new_accounts_per_hour),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::PackageFiles { root } = &cli.command {
        return package_files(root);
    }
    init_logging(cli.log_format);
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
            Command::Serve(args) => serve(*args).await,
            Command::Accounts(args) => run_accounts(args).await,
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
fn init_logging(format: LogFormat) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_from_env("SITETRAIL_HUB_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let no_parameters = tracing_subscriber::filter::filter_fn(|meta| {
        let client = meta.target().starts_with("tokio_postgres") || meta.target().starts_with("postgres");
        !(client && *meta.level() > tracing::Level::INFO)
    });
    let (text, json) = match format {
        LogFormat::Text => (
            Some(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())),
            ),
            None,
        ),
        LogFormat::Json => (None, Some(sitetrail_hub::log_json::JsonLines)),
    };
    // Both filters apply to every event, whichever format writes it.
    tracing_subscriber::registry()
        .with(filter)
        .with(no_parameters)
        .with(text)
        .with(json)
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

/// The connection settings of PostgreSQL itself: --direct-database-url if given, else
/// --database-url (migrations, the LISTEN connection, the `accounts` commands).
fn database_config(args: &DatabaseArgs) -> Result<tokio_postgres::Config, Failure> {
    let (flag, url) = match &args.direct_database_url {
        Some(url) => ("--direct-database-url", url),
        None => ("--database-url", &args.database_url),
    };
    db::config(url).map_err(|why| Failure {
        message: format!("{flag}: {why}"),
        code: 2,
    })
}

/// The requests' pool's settings and how it sends statements: through a transaction pool when
/// --direct-database-url is given, else straight to PostgreSQL.
fn pool_config(args: &DatabaseArgs) -> Result<(tokio_postgres::Config, sql::Statements), Failure> {
    let (config, statements) = if args.direct_database_url.is_some() {
        (db::pooled_config(&args.database_url), sql::Statements::Unnamed)
    } else {
        (db::config(&args.database_url), sql::Statements::Prepared)
    };
    let config = config.map_err(|why| Failure {
        message: format!("--database-url: {why}"),
        code: 2,
    })?;
    Ok((config, statements))
}

/// Migrates, retrying while PostgreSQL is unreachable for up to `--startup-wait`.
async fn migrate_waiting(config: &tokio_postgres::Config, args: &DatabaseArgs) -> Result<i64, Failure> {
    waiting(args, || migrate::migrate(config)).await
}

/// Runs `attempt`, again while PostgreSQL is unreachable, for up to `--startup-wait`.
async fn waiting<T, F: std::future::Future<Output = Result<T, MigrateError>>>(
    args: &DatabaseArgs,
    mut attempt: impl FnMut() -> F,
) -> Result<T, Failure> {
    let deadline = Instant::now() + Duration::from_secs(args.startup_wait);
    let mut pause = Duration::from_millis(250);
    loop {
        match attempt().await {
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
    let (pool_config, statements) = pool_config(&args.database)?;
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(tls::Tls::load(cert, key).map_err(|why| Failure {
            message: format!("--tls-cert/--tls-key: {why}"),
            code: 2,
        })?),
        _ => None,
    };
    let version = migrate_waiting(&config, &args.database).await?;
    let pool = db::pool(pool_config, usize::from(args.pool_size), statements).map_err(failure)?;
    if statements == sql::Statements::Unnamed {
        db::warn_without_statement_timeout(&pool).await;
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| failure(format!("cannot listen on {}: {e}", args.listen)))?;
    let address = listener
        .local_addr()
        .map_err(|e| failure(format!("cannot listen on {}: {e}", args.listen)))?;
    tracing::info!(%address, schema_version = version, tls = tls.is_some(), "listening");
    announce(address, tls.is_some());
    let reload = tls
        .clone()
        .map(|t| tokio::spawn(t.watch(Duration::from_secs(args.tls_reload_interval))));
    let metrics_listener = match args.metrics_listen {
        Some(at) => {
            let listener = tokio::net::TcpListener::bind(at)
                .await
                .map_err(|e| failure(format!("cannot listen on {at} (--metrics-listen): {e}")))?;
            let address = listener
                .local_addr()
                .map_err(|e| failure(format!("cannot listen on {at} (--metrics-listen): {e}")))?;
            tracing::info!(%address, "metrics at /metrics");
            Some((listener, address))
        }
        None => None,
    };
    let cap = |n: usize| (n > 0).then_some(n);
    let connections = usize::try_from(args.max_connections).unwrap_or(usize::MAX);
    let notifier = Arc::new(notify::Notifier::with_caps(notify::WaitCaps {
        per_account: cap(args.max_waits_per_account),
        per_address: cap(args.max_waits_per_address),
        total: args.max_waits.map_or(Some((connections / 4 * 3).max(1)), cap),
    }));
    let listener_task = tokio::spawn(notify::listen(config, notifier.clone()));
    let app = server::App {
        pool: pool.clone(),
        quotas: args.quotas(),
        real_ip_header: args.real_ip_header,
        notifier: notifier.clone(),
        max_lease_ms: args.max_lease_ms,
    };
    let limits = server::Limits {
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        max_requests: usize::try_from(args.max_requests).unwrap_or(usize::MAX),
        max_requests_per_account: args.max_requests_per_account,
        request_timeout: Duration::from_secs(args.request_timeout),
        header_timeout: Duration::from_secs(args.header_timeout),
    };
    let metrics_task = metrics_listener.map(|(listener, _)| {
        let router = sitetrail_hub::metrics::router(app.pool.clone());
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::warn!(error = %e, "the metrics listener stopped");
            }
        })
    });
    let stop = async {
        stop_signal().await;
        // Waiting long-polls answer now instead of holding the shutdown for their wait.
        notifier.close();
    };
    server::serve_with(listener, server::router(app), limits, tls, stop).await;
    listener_task.abort();
    if let Some(reload) = reload {
        reload.abort();
    }
    if let Some(metrics) = metrics_task {
        metrics.abort();
    }
    pool.close();
    tracing::info!("stopped");
    Ok(())
}

/// `sitetrail-hub accounts ...`: on a database whose schema is this binary's (nothing is
/// migrated).
async fn run_accounts(args: AccountsArgs) -> Result<(), Failure> {
    let database_args = match &args.command {
        AccountsCommand::List { database, .. }
        | AccountsCommand::Show { database, .. }
        | AccountsCommand::Delete { database, .. } => database,
    };
    let config = database_config(database_args)?;
    let mut client = waiting(database_args, || migrate::connect_current(&config)).await?;
    let database = |e: tokio_postgres::Error| {
        failure(match e.as_db_error() {
            Some(db) => format!("the database refused: {} ({})", db.message(), db.code().code()),
            None => format!("the database connection failed: {e}"),
        })
    };
    match args.command {
        AccountsCommand::List { json, .. } => {
            let all = accounts::list(&client).await.map_err(database)?;
            if json {
                return print(&serde_json::json!({ "accounts": all }).to_string());
            }
            let mut text = format!(
                "{:<36}  {:<20}  {:>7}  {:>9}  {:>10}  {}\n",
                "ACCOUNT", "CREATED", "DEVICES", "RECORDS", "BYTES", "LAST SEEN"
            );
            for a in &all {
                text.push_str(&format!(
                    "{:<36}  {:<20}  {:>7}  {:>9}  {:>10}  {}\n",
                    a.account_id,
                    accounts::utc_minute(a.created_at_ms),
                    format!("{}/{}", a.active_devices, a.devices),
                    a.records,
                    accounts::human_bytes(u64::try_from(a.bytes).unwrap_or(0)),
                    a.last_seen_at_ms
                        .map_or_else(|| "never".to_owned(), accounts::utc_minute),
                ));
            }
            text.push_str(&format!("{} account(s)", all.len()));
            print(&text)
        }
        AccountsCommand::Show { id, json, .. } => {
            let Some(a) = accounts::show(&client, id).await.map_err(database)? else {
                return Err(failure(format!("there is no account {id} on this hub")));
            };
            if json {
                return print(&serde_json::to_string(&a).unwrap_or_default());
            }
            print(&format!(
                "account:   {}\ncreated:   {}\ndevices:   {} active, {} registered (left ones included)\n\
                 records:   {}\nbytes:     {} ({} bytes)\nclaims:    {} job(s)\nlast seen: {}",
                a.account_id,
                accounts::utc_minute(a.created_at_ms),
                a.active_devices,
                a.devices,
                a.records,
                accounts::human_bytes(u64::try_from(a.bytes).unwrap_or(0)),
                a.bytes,
                a.claim_jobs,
                a.last_seen_at_ms
                    .map_or_else(|| "never".to_owned(), accounts::utc_minute),
            ))
        }
        AccountsCommand::Delete { id, json, .. } => {
            let tx = client.transaction().await.map_err(database)?;
            let Some(deleted) = accounts::delete(&tx, id).await.map_err(database)? else {
                return Err(failure(format!(
                    "there is no account {id} on this hub; nothing was deleted"
                )));
            };
            tx.commit().await.map_err(database)?;
            tracing::info!(
                devices = deleted.devices,
                records = deleted.records,
                claim_jobs = deleted.claim_jobs,
                "account deleted by the operator"
            );
            if json {
                return print(
                    &serde_json::json!({
                        "deleted": true,
                        "account_id": id,
                        "devices": deleted.devices,
                        "records": deleted.records,
                        "claim_jobs": deleted.claim_jobs,
                    })
                    .to_string(),
                );
            }
            print(&format!(
                "deleted account {id}: {} device(s), {} record(s), {} claim job(s)",
                deleted.devices, deleted.records, deleted.claim_jobs
            ))
        }
    }
}

/// Prints the operator commands' answer on stdout (a failed write is a failure: a script reads it).
#[allow(clippy::disallowed_methods)] // stdout is these commands' output
fn print(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| failure(format!("cannot write the answer: {e}")))
}

/// The one line the hub writes on stdout: where it listens (scripts and tests read it). A closed
/// stdout is no reason to stop serving, so a failed write is ignored.
#[allow(clippy::disallowed_methods)] // stdout carries nothing else
fn announce(address: SocketAddr, tls: bool) {
    let mut out = std::io::stdout().lock();
    let scheme = if tls { "https" } else { "http" };
    let _ = writeln!(out, "sitetrail-hub listening on {scheme}://{address}");
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
