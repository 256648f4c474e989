//! How the hub's statements reach PostgreSQL: the pool ([`Pool`]), its connections ([`Client`])
//! and their transactions ([`Transaction`]), each running a statement given as SQL text and
//! typed parameters ([`Param`]), in one of two ways ([`Statements`]).
//!
//! Straight to PostgreSQL ([`Statements::Prepared`], the default) each statement is prepared
//! once per connection under a name and kept, so a request sends only its parameters. Behind a
//! pool in transaction mode (PgBouncer's `pool_mode = transaction`: `sitetrail-hub serve
//! --direct-database-url`) a client connection gets a server connection for one transaction at
//! a time, so a statement named on one server connection is missing on the next ("prepared
//! statement \"s3\" does not exist"), or, left behind by another hub process whose statement
//! counter gave the same name, is there already ("prepared statement \"s3\" already exists").
//! There ([`Statements::Unnamed`]) every statement goes as PostgreSQL's unnamed statement, parsed
//! and executed in one round trip (Parse, Bind, Execute, Sync: one message batch, so one
//! transaction's server connection sees all of it), whether or not it runs in a transaction;
//! nothing is left on the server connection for the next client. This is what PgBouncer's
//! documentation asks of clients before 1.21 and what other drivers' switches do (asyncpg's
//! `statement_cache_size=0`, pgx's `QueryExecModeExec`, psycopg's `prepare_threshold=None`).
//!
//! Invariant: the parameters' types are given with the SQL in both ways (a parameter is a
//! value and its PostgreSQL type), so the statement the server runs is the same either way, and
//! the hub's tests, which run the default way, check the types the transaction-mode way sends.

use std::future::Future;

use deadpool_postgres::{Object, PoolError, Status};
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Error, Row};

/// A statement's parameter: its value and its PostgreSQL type.
pub type Param<'a> = (&'a (dyn ToSql + Sync), Type);

/// How statements are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Statements {
    /// Prepared under a name once per connection and kept (straight to PostgreSQL).
    Prepared,
    /// Unnamed, parsed with each execution (behind a pool in transaction mode).
    Unnamed,
}

/// The hub's PostgreSQL pool.
#[derive(Clone)]
pub struct Pool {
    inner: deadpool_postgres::Pool,
    statements: Statements,
}

impl Pool {
    /// A pool whose connections send their statements the `statements` way.
    pub fn new(inner: deadpool_postgres::Pool, statements: Statements) -> Pool {
        Pool { inner, statements }
    }

    /// A connection, waiting for one up to the pool's wait.
    pub async fn get(&self) -> Result<Client, PoolError> {
        Ok(Client {
            object: self.inner.get().await?,
            statements: self.statements,
        })
    }

    /// The pool's size and use, for the metrics.
    pub fn status(&self) -> Status {
        self.inner.status()
    }

    /// Closes the pool: connections are closed as they come back.
    pub fn close(&self) {
        self.inner.close();
    }
}

/// A pooled connection (back to the pool when dropped).
pub struct Client {
    object: Object,
    statements: Statements,
}

impl Client {
    /// Begins a transaction (rolled back if dropped before [`Transaction::commit`]).
    pub async fn transaction(&mut self) -> Result<Transaction<'_>, Error> {
        Ok(Transaction {
            inner: self.object.transaction().await?,
            statements: self.statements,
        })
    }
}

/// A transaction on a pooled connection.
pub struct Transaction<'a> {
    inner: deadpool_postgres::Transaction<'a>,
    statements: Statements,
}

impl Transaction<'_> {
    /// Commits it.
    pub async fn commit(self) -> Result<(), Error> {
        self.inner.commit().await
    }

    /// The transaction as tokio-postgres's, for code shared with the operator's commands
    /// (`crate::accounts::delete`), which runs its statements inside it: behind a transaction
    /// pool a statement named and closed within one transaction stays on one server connection.
    pub fn as_postgres(&self) -> &tokio_postgres::Transaction<'_> {
        &self.inner
    }
}

/// Running statements, on a connection or in a transaction.
pub trait Queries: Sync {
    /// The rows of `sql`.
    fn query(&self, sql: &str, params: &[Param<'_>]) -> impl Future<Output = Result<Vec<Row>, Error>> + Send;

    /// The one row of `sql` (an error if there is none or more).
    fn query_one(&self, sql: &str, params: &[Param<'_>]) -> impl Future<Output = Result<Row, Error>> + Send;

    /// The row of `sql`, if any (an error if there are more).
    fn query_opt(
        &self,
        sql: &str,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<Option<Row>, Error>> + Send;

    /// Runs `sql`; the number of rows it changed.
    fn execute(&self, sql: &str, params: &[Param<'_>]) -> impl Future<Output = Result<u64, Error>> + Send;
}

/// Where a statement runs, and how it is sent.
#[derive(Clone, Copy)]
enum Conn<'a> {
    Client(&'a deadpool_postgres::ClientWrapper),
    Transaction(&'a deadpool_postgres::Transaction<'a>),
}

fn types(params: &[Param<'_>]) -> Vec<Type> {
    params.iter().map(|(_, t)| t.clone()).collect()
}

fn values<'a>(params: &[Param<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    params.iter().map(|(v, _)| *v).collect()
}

impl Conn<'_> {
    async fn prepared(self, sql: &str, params: &[Param<'_>]) -> Result<tokio_postgres::Statement, Error> {
        match self {
            Conn::Client(c) => c.prepare_typed_cached(sql, &types(params)).await,
            Conn::Transaction(t) => t.prepare_typed_cached(sql, &types(params)).await,
        }
    }

    async fn query(self, statements: Statements, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, Error> {
        match (statements, self) {
            (Statements::Prepared, conn) => {
                let statement = conn.prepared(sql, params).await?;
                match conn {
                    Conn::Client(c) => c.query(&statement, &values(params)).await,
                    Conn::Transaction(t) => t.query(&statement, &values(params)).await,
                }
            }
            (Statements::Unnamed, Conn::Client(c)) => c.query_typed(sql, params).await,
            (Statements::Unnamed, Conn::Transaction(t)) => t.query_typed(sql, params).await,
        }
    }

    async fn query_opt(
        self,
        statements: Statements,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Option<Row>, Error> {
        match (statements, self) {
            (Statements::Prepared, conn) => {
                let statement = conn.prepared(sql, params).await?;
                match conn {
                    Conn::Client(c) => c.query_opt(&statement, &values(params)).await,
                    Conn::Transaction(t) => t.query_opt(&statement, &values(params)).await,
                }
            }
            (Statements::Unnamed, Conn::Client(c)) => c.query_typed_opt(sql, params).await,
            (Statements::Unnamed, Conn::Transaction(t)) => t.query_typed_opt(sql, params).await,
        }
    }

    async fn query_one(self, statements: Statements, sql: &str, params: &[Param<'_>]) -> Result<Row, Error> {
        match (statements, self) {
            (Statements::Prepared, conn) => {
                let statement = conn.prepared(sql, params).await?;
                match conn {
                    Conn::Client(c) => c.query_one(&statement, &values(params)).await,
                    Conn::Transaction(t) => t.query_one(&statement, &values(params)).await,
                }
            }
            (Statements::Unnamed, Conn::Client(c)) => c.query_typed_one(sql, params).await,
            (Statements::Unnamed, Conn::Transaction(t)) => t.query_typed_one(sql, params).await,
        }
    }

    async fn execute(self, statements: Statements, sql: &str, params: &[Param<'_>]) -> Result<u64, Error> {
        match (statements, self) {
            (Statements::Prepared, conn) => {
                let statement = conn.prepared(sql, params).await?;
                match conn {
                    Conn::Client(c) => c.execute(&statement, &values(params)).await,
                    Conn::Transaction(t) => t.execute(&statement, &values(params)).await,
                }
            }
            (Statements::Unnamed, Conn::Client(c)) => c.execute_typed(sql, params).await,
            (Statements::Unnamed, Conn::Transaction(t)) => t.execute_typed(sql, params).await,
        }
    }
}

impl Queries for Client {
    fn query(&self, sql: &str, params: &[Param<'_>]) -> impl Future<Output = Result<Vec<Row>, Error>> + Send {
        Conn::Client(&self.object).query(self.statements, sql, params)
    }

    fn query_one(&self, sql: &str, params: &[Param<'_>]) -> impl Future<Output = Result<Row, Error>> + Send {
        Conn::Client(&self.object).query_one(self.statements, sql, params)
    }

    fn query_opt(
        &self,
        sql: &str,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<Option<Row>, Error>> + Send {
        Conn::Client(&self.object).query_opt(self.statements, sql, params)
    }

    fn execute(&self, sql: &str, params: &[Param<'_>]) -> impl Future<Output = Result<u64, Error>> + Send {
        Conn::Client(&self.object).execute(self.statements, sql, params)
    }
}

impl Queries for Transaction<'_> {
    fn query(&self, sql: &str, params: &[Param<'_>]) -> impl Future<Output = Result<Vec<Row>, Error>> + Send {
        Conn::Transaction(&self.inner).query(self.statements, sql, params)
    }

    fn query_one(&self, sql: &str, params: &[Param<'_>]) -> impl Future<Output = Result<Row, Error>> + Send {
        Conn::Transaction(&self.inner).query_one(self.statements, sql, params)
    }

    fn query_opt(
        &self,
        sql: &str,
        params: &[Param<'_>],
    ) -> impl Future<Output = Result<Option<Row>, Error>> + Send {
        Conn::Transaction(&self.inner).query_opt(self.statements, sql, params)
    }

    fn execute(&self, sql: &str, params: &[Param<'_>]) -> impl Future<Output = Result<u64, Error>> + Send {
        Conn::Transaction(&self.inner).execute(self.statements, sql, params)
    }
}
