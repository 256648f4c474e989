//! The library's one error type.
//!
//! Every fallible function in the library returns [`Result`]. Messages are written for the person
//! who reads them: they say what happened and, where it helps, what to do. They never contain an
//! API key or any other secret.

use std::path::PathBuf;

/// Everything that can go wrong in the library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A URL that does not parse, or one whose scheme is not recorded.
    #[error("cannot record {input:?}: {reason}")]
    InvalidUrl {
        /// The input as given (shortened if very long).
        input: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A domain or host name that is not valid.
    #[error("{input:?} is not a valid domain: {reason}")]
    InvalidDomain {
        /// The input as given.
        input: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A category id outside the taxonomy.
    #[error("unknown category {0:?}; run `sitetrail categories` to list the valid ids")]
    UnknownCategory(String),
    /// A lookup by id or domain found nothing.
    #[error("{what} {key} not found")]
    NotFound {
        /// What was looked up ("website", "outbox job", ...).
        what: &'static str,
        /// The id or domain looked up.
        key: String,
    },
    /// A request that does not fit the current state (retrying a job in flight, say).
    #[error("{0}")]
    Conflict(String),
    /// A setting or argument with a value that cannot work.
    #[error("invalid setting: {0}")]
    InvalidConfig(String),
    /// The database file could not be opened or prepared.
    #[error("cannot open database {path}: {reason}")]
    Open {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A browser history file that cannot be imported as a whole (missing, unreadable, not an
    /// intact SQLite database, or not the named browser's schema). Nothing of it was imported.
    #[error("cannot import {path}: {problem}")]
    Import {
        /// The browser's file.
        path: PathBuf,
        /// What is wrong with it, and what to do where that helps.
        problem: String,
    },
    /// A SQL error.
    #[error("database error: {0}")]
    Sql(#[from] rusqlite::Error),
    /// No pooled connection could be had.
    #[error("database connection pool: {0}")]
    Pool(#[from] r2d2::Error),
    /// A file-system error.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// A classifier could not give an answer for a whole batch.
    #[error("classifier: {0}")]
    Classify(#[from] crate::classify::ClassifyError),
    /// A blocking task panicked or was cancelled.
    #[error("background task failed: {0}")]
    Task(String),
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// True for errors a caller may retry unchanged with a chance of success (a busy database, a
    /// transient classifier failure); false for bad input and missing rows.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Sql(rusqlite::Error::SqliteFailure(e, _)) => matches!(
                e.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ),
            Error::Pool(_) | Error::Task(_) => true,
            Error::Classify(e) => !e.consumes_attempt() || e.is_transient(),
            _ => false,
        }
    }

    /// A short stable name for the kind of error, used where errors cross into the UI as
    /// `{kind, message}`.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::InvalidUrl { .. } => "invalid_url",
            Error::InvalidDomain { .. } => "invalid_domain",
            Error::UnknownCategory(_) => "unknown_category",
            Error::NotFound { .. } => "not_found",
            Error::Conflict(_) => "conflict",
            Error::InvalidConfig(_) => "invalid_config",
            Error::Open { .. } => "open",
            Error::Import { .. } => "import",
            Error::Sql(_) | Error::Pool(_) => "database",
            Error::Io(_) => "io",
            Error::Classify(_) => "classifier",
            Error::Task(_) => "internal",
        }
    }
}

/// Shortens `s` to at most `max` characters (not bytes), marking the cut with an ellipsis.
pub fn truncate_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_counts_characters_not_bytes() {
        assert_eq!(truncate_chars("münchen", 10), "münchen");
        let cut = truncate_chars(&"ü".repeat(2000), 1000);
        assert_eq!(cut.chars().count(), 1000);
        assert!(cut.ends_with('…'));
    }
}
