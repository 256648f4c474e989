//! The hub's schema: numbered SQL migrations (`hub/migrations/`, embedded in the binary) applied
//! once each, in order, under a PostgreSQL advisory lock, so several hub processes starting at
//! once apply each migration exactly once.
//!
//! Invariant: the hub writes only to a database that is its own. Before anything is created it
//! looks at the schema: tables without [`MIGRATIONS_TABLE`] are someone else's ([`MigrateError::Foreign`]),
//! and a migration this binary does not know means a newer hub migrated it
//! ([`MigrateError::Newer`]); both are refused with nothing changed.

use tokio_postgres::NoTls;

/// One migration.
#[derive(Clone, Copy, Debug)]
pub struct Migration {
    /// Its number (the file's prefix).
    pub version: i64,
    /// Its name (the file's name after the number).
    pub name: &'static str,
    /// Its SQL.
    pub sql: &'static str,
}

/// Every migration, in order. Never edit one that has landed: add the next.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "hub",
        sql: include_str!("../migrations/0001_hub.sql"),
    },
    Migration {
        version: 2,
        name: "quotas",
        sql: include_str!("../migrations/0002_quotas.sql"),
    },
];

/// The table that records which migrations ran; its presence marks a database as the hub's.
pub const MIGRATIONS_TABLE: &str = "sitetrail_hub_migrations";

/// The advisory lock every hub process takes while it migrates ("SITEHUB1").
const LOCK_KEY: i64 = 0x5349_5445_4855_4231;

/// The newest schema version this binary knows.
pub fn latest_version() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Why the schema could not be brought up to date. Each has its own exit code
/// ([`MigrateError::exit_code`]), documented in `sitetrail-hub --help`.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    /// PostgreSQL could not be reached (or refused the login).
    #[error("cannot reach PostgreSQL ({target}): {why}")]
    Unreachable {
        /// Where, without a password.
        target: String,
        /// Why.
        why: String,
    },
    /// The database holds tables that are not the hub's.
    #[error("{0}")]
    Foreign(String),
    /// A newer hub migrated the database.
    #[error(
        "the database's hub schema is version {found}, newer than this sitetrail-hub knows ({known}): \
         run the newer sitetrail-hub that migrated it"
    )]
    Newer {
        /// The version found.
        found: i64,
        /// The newest version this binary knows.
        known: i64,
    },
    /// The database's schema is older than this hub's, and the command does not migrate.
    #[error(
        "the database's hub schema is version {found}, older than this sitetrail-hub's ({known}): \
         run `sitetrail-hub migrate` first"
    )]
    Older {
        /// The version found.
        found: i64,
        /// The newest version this binary knows.
        known: i64,
    },
    /// A migration failed (nothing of it was applied).
    #[error("migrating the hub's database failed: {0}")]
    Failed(String),
}

impl MigrateError {
    /// The process exit code for this error: 3 foreign database, 4 newer schema, 5 PostgreSQL
    /// unreachable, 1 a failed migration.
    pub fn exit_code(&self) -> u8 {
        match self {
            MigrateError::Foreign(_) => 3,
            MigrateError::Newer { .. } => 4,
            MigrateError::Unreachable { .. } => 5,
            MigrateError::Failed(_) | MigrateError::Older { .. } => 1,
        }
    }
}

fn failed(e: &tokio_postgres::Error) -> MigrateError {
    MigrateError::Failed(match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => e.to_string(),
    })
}

/// Why a connection to PostgreSQL itself failed. A pool such as PgBouncer refuses the
/// statement timeouts the hub sends at connect (a startup option): that is no outage to wait
/// out but a missing flag, said at once.
fn not_connected(config: &tokio_postgres::Config, e: &tokio_postgres::Error) -> MigrateError {
    let target = crate::db::describe(config);
    match e.as_db_error() {
        Some(db) if db.message().starts_with("unsupported startup parameter") => {
            MigrateError::Failed(format!(
                "{target} refused the hub's connection settings ({}): it looks like a connection pool \
             such as PgBouncer. Give --direct-database-url (SITETRAIL_HUB_DIRECT_DATABASE_URL) with \
             PostgreSQL's own address for the migrations and the LISTEN connection (docs/hub.md)",
                db.message()
            ))
        }
        _ => MigrateError::Unreachable {
            target,
            why: e.to_string(),
        },
    }
}

/// Brings the schema up to date (or checks it already is) and returns its version.
pub async fn migrate(config: &tokio_postgres::Config) -> Result<i64, MigrateError> {
    let (mut client, connection) = config
        .connect(NoTls)
        .await
        .map_err(|e| not_connected(config, &e))?;
    let connection = tokio::spawn(async move {
        // The connection's own error is the one the next query returns; nothing to do here.
        let _ = connection.await;
    });
    let result = migrate_locked(&mut client).await;
    drop(client);
    let _ = connection.await;
    result
}

/// A connection to a database whose hub schema is exactly this binary's, for the operator's
/// commands (`sitetrail-hub accounts`): nothing is created or migrated. A database that is not
/// the hub's is [`MigrateError::Foreign`], a newer schema [`MigrateError::Newer`], an older one
/// [`MigrateError::Older`].
pub async fn connect_current(
    config: &tokio_postgres::Config,
) -> Result<tokio_postgres::Client, MigrateError> {
    let (client, connection) = config
        .connect(NoTls)
        .await
        .map_err(|e| not_connected(config, &e))?;
    tokio::spawn(async move {
        // The connection's own error is the one the next query returns.
        let _ = connection.await;
    });
    let ours = client
        .query_one("SELECT to_regclass($1) IS NOT NULL AS ours", &[&MIGRATIONS_TABLE])
        .await
        .map_err(|e| failed(&e))?
        .get::<_, bool>("ours");
    if !ours {
        return Err(MigrateError::Foreign(format!(
            "the database has no {MIGRATIONS_TABLE} table: it is not a hub's database (or was never migrated)"
        )));
    }
    let version = check_applied(&client).await?;
    if version < latest_version() {
        return Err(MigrateError::Older {
            found: version,
            known: latest_version(),
        });
    }
    Ok(client)
}

async fn migrate_locked(client: &mut tokio_postgres::Client) -> Result<i64, MigrateError> {
    client
        .execute("SELECT pg_advisory_lock($1)", &[&LOCK_KEY])
        .await
        .map_err(|e| failed(&e))?;
    let result = check_and_apply(client).await;
    // The lock also ends with the session; unlocking here lets the next process go at once.
    let _ = client
        .execute("SELECT pg_advisory_unlock($1)", &[&LOCK_KEY])
        .await;
    result
}

async fn check_and_apply(client: &mut tokio_postgres::Client) -> Result<i64, MigrateError> {
    let relations: Vec<String> = client
        .query(
            r#"SELECT c.relname
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
               ORDER BY c.relname"#,
            &[],
        )
        .await
        .map_err(|e| failed(&e))?
        .iter()
        .map(|row| row.get("relname"))
        .collect();
    let ours = relations.iter().any(|r| r == MIGRATIONS_TABLE);
    if !ours && !relations.is_empty() {
        let shown: Vec<&str> = relations.iter().take(3).map(String::as_str).collect();
        return Err(MigrateError::Foreign(format!(
            "the database is not the hub's: it holds {} table(s) ({}{}) and no {MIGRATIONS_TABLE} table. \
             Give sitetrail-hub a database of its own (createdb sitetrail_hub); nothing was changed",
            relations.len(),
            shown.join(", "),
            if relations.len() > shown.len() {
                ", ..."
            } else {
                ""
            }
        )));
    }
    let applied = if ours {
        check_applied(client).await?
    } else {
        // An empty database: it becomes the hub's (the advisory lock keeps this to one process).
        client
            .batch_execute(&format!(
                "CREATE TABLE {MIGRATIONS_TABLE} (
                     version    bigint      PRIMARY KEY,
                     name       text        NOT NULL,
                     applied_at timestamptz NOT NULL DEFAULT now()
                 )"
            ))
            .await
            .map_err(|e| failed(&e))?;
        0
    };
    for migration in MIGRATIONS.iter().filter(|m| m.version > applied) {
        let tx = client.transaction().await.map_err(|e| failed(&e))?;
        tx.batch_execute(migration.sql).await.map_err(|e| failed(&e))?;
        tx.execute(
            &format!("INSERT INTO {MIGRATIONS_TABLE} (version, name) VALUES ($1, $2)"),
            &[&migration.version, &migration.name],
        )
        .await
        .map_err(|e| failed(&e))?;
        tx.commit().await.map_err(|e| failed(&e))?;
        tracing::info!(
            version = migration.version,
            name = migration.name,
            "applied migration"
        );
    }
    Ok(latest_version())
}

/// The applied migrations must be a prefix of [`MIGRATIONS`]: returns the last one's version.
async fn check_applied(client: &tokio_postgres::Client) -> Result<i64, MigrateError> {
    let rows = client
        .query(
            &format!("SELECT version, name FROM {MIGRATIONS_TABLE} ORDER BY version"),
            &[],
        )
        .await
        .map_err(|e| failed(&e))?;
    let mut last = 0;
    for row in rows {
        let version: i64 = row.get("version");
        let name: String = row.get("name");
        if version > latest_version() {
            return Err(MigrateError::Newer {
                found: version,
                known: latest_version(),
            });
        }
        match MIGRATIONS.iter().find(|m| m.version == version) {
            Some(m) if m.name == name => last = version,
            _ => {
                return Err(MigrateError::Foreign(format!(
                "the database's {MIGRATIONS_TABLE} lists migration {version} ({name:?}), which is not this \
                     hub's: nothing was changed"
            )))
            }
        }
    }
    Ok(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_from_one_without_gaps() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i64::try_from(i).unwrap() + 1, "{}", m.name);
            assert!(!m.sql.trim().is_empty());
        }
        let files: Vec<String> = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(
            files.len(),
            MIGRATIONS.len(),
            "every file in hub/migrations/ is in MIGRATIONS"
        );
        for m in MIGRATIONS {
            assert!(
                files.contains(&format!("{:04}_{}.sql", m.version, m.name)),
                "{}",
                m.name
            );
        }
    }
}
