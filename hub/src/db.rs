//! PostgreSQL: the connection settings the hub adds to the URL it is given, the pool, and what a
//! database failure becomes for the client.
//!
//! Invariants: the pool never waits longer than [`WAIT`] for a connection, so a request during
//! an outage is answered 503 `unavailable` within seconds, and a connection that broke is
//! replaced on its next checkout, so the hub recovers by itself when PostgreSQL is back. A
//! database error is logged by its SQLSTATE and PostgreSQL's message only, never its detail
//! (which can quote a row, and so a payload) or the URL's password.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, PoolError, RecyclingMethod, Runtime};
use tokio_postgres::error::SqlState;
use tokio_postgres::NoTls;

use crate::error::HubError;

/// Longest wait for a pooled connection (or a new one) before a request is answered 503.
pub const WAIT: Duration = Duration::from_secs(5);
/// Longest a statement may run on the server; under the request timeout, so the server stops
/// what the hub has stopped waiting for.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(20);

/// Reads a PostgreSQL URL (`postgres://user:password@host:port/db?...` or key=value pairs) and
/// adds the hub's settings: a connect timeout, TCP keepalives, its application name and a
/// statement timeout. The error never repeats the URL (it may hold a password).
pub fn config(url: &str) -> Result<tokio_postgres::Config, String> {
    let mut config = client_config(url)?;
    let options = config.get_options().unwrap_or("").to_owned();
    config.options(format!(
        "{options} -c statement_timeout={}ms -c idle_in_transaction_session_timeout=60000",
        STATEMENT_TIMEOUT.as_millis()
    ));
    Ok(config)
}

/// [`config`] for a URL that leads to a pool in transaction mode (PgBouncer): the same settings
/// but the statement timeouts, which travel as a startup option (`options=-c ...`) that
/// PgBouncer refuses ("unsupported startup parameter"), and which would hold for one
/// transaction's server connection only. Behind it they are PgBouncer's to set (its
/// `connect_query`, see docs/hub.md) or the role's (`ALTER ROLE ... SET statement_timeout`).
pub fn pooled_config(url: &str) -> Result<tokio_postgres::Config, String> {
    client_config(url)
}

/// The URL with the settings every connection gets: a connect timeout, keepalives, a name.
fn client_config(url: &str) -> Result<tokio_postgres::Config, String> {
    let mut config: tokio_postgres::Config = url.parse().map_err(|_| {
        "the database URL is not a PostgreSQL connection string (postgres://user:password@host:port/database)"
            .to_owned()
    })?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(WAIT);
    }
    config.keepalives(true).keepalives_idle(Duration::from_secs(30));
    if config.get_application_name().is_none() {
        config.application_name("sitetrail-hub");
    }
    Ok(config)
}

/// Behind a transaction pool the hub cannot set the statement timeout itself ([`pooled_config`]):
/// says so in the log at start if the pool's server connections have none, since a statement
/// the hub stopped waiting for would then run on. A failed read is left to the requests' own
/// errors.
pub async fn warn_without_statement_timeout(pool: &crate::sql::Pool) {
    use crate::sql::Queries;
    let Ok(client) = pool.get().await else { return };
    let Ok(row) = client
        .query_one("SELECT current_setting('statement_timeout') AS timeout", &[])
        .await
    else {
        return;
    };
    let timeout: String = row.get("timeout");
    if timeout == "0" {
        tracing::warn!(
            "no statement_timeout behind the transaction pool: set one in PgBouncer's connect_query \
             (SET statement_timeout = 20000) or on the hub's role (ALTER ROLE ... SET statement_timeout = '20s'); see docs/hub.md"
        );
    } else {
        tracing::info!(statement_timeout = %timeout, "through a transaction pool: statements are sent unnamed");
    }
}

/// Where the database is, for messages: host(s), port(s) and database name, never a password.
pub fn describe(config: &tokio_postgres::Config) -> String {
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = config.get_ports().iter().map(u16::to_string).collect();
    format!(
        "database {:?} on {} port {}",
        config.get_dbname().unwrap_or("(default)"),
        if hosts.is_empty() {
            "localhost".to_owned()
        } else {
            hosts.join(",")
        },
        if ports.is_empty() {
            "5432".to_owned()
        } else {
            ports.join(",")
        }
    )
}

/// The pool: at most `size` connections, each made on demand, sending their statements the
/// `statements` way.
pub fn pool(
    config: tokio_postgres::Config,
    size: usize,
    statements: crate::sql::Statements,
) -> Result<crate::sql::Pool, String> {
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    deadpool_postgres::Pool::builder(manager)
        .max_size(size)
        .wait_timeout(Some(WAIT))
        .create_timeout(Some(WAIT))
        .recycle_timeout(Some(WAIT))
        .runtime(Runtime::Tokio1)
        .build()
        .map(|pool| crate::sql::Pool::new(pool, statements))
        .map_err(|e| format!("could not set up the database pool: {e}"))
}

/// Whether the last database call failed because PostgreSQL was unreachable: only so that an
/// outage is logged when it starts and when it ends, not once per request.
static DOWN: AtomicBool = AtomicBool::new(false);

/// A database call succeeded: if PostgreSQL was unreachable before, say it is back.
pub fn note_up() {
    if DOWN.swap(false, Ordering::Relaxed) {
        tracing::info!("PostgreSQL answers again");
    }
}

fn note_down(why: &dyn std::fmt::Display) {
    if !DOWN.swap(true, Ordering::Relaxed) {
        tracing::warn!(error = %why, "PostgreSQL is unreachable: answering 503 until it is back");
    }
}

/// SQLSTATE classes that mean "the database is not there right now" rather than "this request
/// is wrong": connection exceptions, insufficient resources, operator intervention (shutdown,
/// cannot connect now), and a statement cancelled by its timeout.
fn is_unavailable(state: &SqlState) -> bool {
    let code = state.code();
    code.starts_with("08")
        || code.starts_with("53")
        || code.starts_with("57")
        || code == "40001"
        || code == "40P01"
}

impl From<tokio_postgres::Error> for HubError {
    fn from(e: tokio_postgres::Error) -> HubError {
        match e.as_db_error() {
            // The only foreign keys lead to an account and its devices: a row that lost its
            // account mid-request means the account was deleted meanwhile; its login opens
            // nothing any more.
            Some(db) if *db.code() == SqlState::FOREIGN_KEY_VIOLATION => HubError::Unauthorized,
            Some(db) if is_unavailable(db.code()) => {
                crate::metrics::METRICS.postgres_error(true);
                note_down(&format_args!("{}: {}", db.code().code(), db.message()));
                HubError::database_unavailable()
            }
            Some(db) => {
                crate::metrics::METRICS.postgres_error(false);
                tracing::error!(
                    sqlstate = db.code().code(),
                    message = db.message(),
                    "database error"
                );
                HubError::Internal
            }
            // No answer from the server: the connection broke, or never was.
            None => {
                crate::metrics::METRICS.postgres_error(true);
                note_down(&e);
                HubError::database_unavailable()
            }
        }
    }
}

impl From<PoolError> for HubError {
    fn from(e: PoolError) -> HubError {
        match e {
            PoolError::Backend(e) => e.into(),
            // Every connection busy for the whole wait: the hub is overloaded, PostgreSQL is fine.
            PoolError::Timeout(deadpool_postgres::TimeoutType::Wait) => {
                HubError::Unavailable("the hub is busy; try again in a few seconds".into())
            }
            PoolError::Timeout(_) => {
                note_down(&"no new database connection within the wait");
                HubError::database_unavailable()
            }
            PoolError::Closed | PoolError::NoRuntimeSpecified | PoolError::PostCreateHook(_) => {
                note_down(&e);
                HubError::database_unavailable()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_gets_the_hub_settings_and_is_never_repeated() {
        let config = config("postgres://hub:s3cret-pw@db.example:6543/hubdb").unwrap();
        assert_eq!(config.get_connect_timeout(), Some(&WAIT));
        assert!(config
            .get_options()
            .unwrap()
            .contains("statement_timeout=20000ms"));
        let shown = describe(&config);
        assert_eq!(shown, "database \"hubdb\" on db.example port 6543");
        assert!(!shown.contains("s3cret"));
        let e = super::config("postgres://hub:s3cret-pw@db.example:notaport/x").unwrap_err();
        assert!(!e.contains("s3cret"), "{e}");
    }
}
