//! The library's one error type.
//!
//! Every fallible function in the library returns [`Result`]. Messages are written for the person
//! who reads them: they say what happened and, where it helps, what to do. They never contain an
//! API key or any other secret.

use std::path::PathBuf;

/// What kind of failure an error is: the one vocabulary the library, the CLI's exit codes and the
/// app's UI share. The UI branches on it (`{kind, message}`), scripts on the exit code.
///
/// | kind | exit code | meaning |
/// |---|---|---|
/// | `invalid_input` | 2 | a bad argument, setting, URL, domain or category: fix the input |
/// | `not_found` | 3 | the website, job or visit named does not exist |
/// | `conflict` | 4 | the request does not fit the current state (retrying a job in flight) |
/// | `busy` | 5 | the database or the app is busy (another writer, an import running): try again |
/// | `offline` | 6 | the provider cannot be reached: try again later |
/// | `rate_limited` | 6 | the provider asked to slow down: try again later |
/// | `provider_failed` | 6 | the provider failed (5xx, timeout, bad answer): try again later |
/// | `provider_refused` | 1 | the provider refused these domains |
/// | `needs_user` | 7 | the provider refuses until you act (key, quota, model, certificate) |
/// | `unavailable` | 8 | something this build or this machine cannot do |
/// | `bad_file` | 1 | a file that cannot be used as asked (not an intact history file, not a Sitetrail database) |
/// | `database`, `io`, `internal` | 1 | the database, the file system or Sitetrail itself failed |
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A bad argument, setting, URL, domain or category.
    InvalidInput,
    /// What was named does not exist.
    NotFound,
    /// The request does not fit the current state.
    Conflict,
    /// The database or the app is busy; the same request may work in a moment.
    Busy,
    /// The provider cannot be reached.
    Offline,
    /// The provider asked to slow down.
    RateLimited,
    /// The provider failed in a way that may pass.
    ProviderFailed,
    /// The provider refused these domains.
    ProviderRefused,
    /// The provider refuses until the user acts.
    NeedsUser,
    /// Something this build or this machine cannot do.
    Unavailable,
    /// A file that cannot be used as asked.
    BadFile,
    /// The database failed.
    Database,
    /// The file system failed.
    Io,
    /// Sitetrail itself failed (a task panicked or was cancelled).
    Internal,
}

// The stable names the UI and scripts branch on.
crate::names::named!(ErrorKind {
    InvalidInput = "invalid_input",
    NotFound = "not_found",
    Conflict = "conflict",
    Busy = "busy",
    Offline = "offline",
    RateLimited = "rate_limited",
    ProviderFailed = "provider_failed",
    ProviderRefused = "provider_refused",
    NeedsUser = "needs_user",
    Unavailable = "unavailable",
    BadFile = "bad_file",
    Database = "database",
    Io = "io",
    Internal = "internal",
});

impl ErrorKind {
    /// Every kind, for documentation and tests.
    pub const ALL: [ErrorKind; 14] = [
        ErrorKind::InvalidInput,
        ErrorKind::NotFound,
        ErrorKind::Conflict,
        ErrorKind::Busy,
        ErrorKind::Offline,
        ErrorKind::RateLimited,
        ErrorKind::ProviderFailed,
        ErrorKind::ProviderRefused,
        ErrorKind::NeedsUser,
        ErrorKind::Unavailable,
        ErrorKind::BadFile,
        ErrorKind::Database,
        ErrorKind::Io,
        ErrorKind::Internal,
    ];

    /// The `sitetrail` CLI's exit code for an error of this kind (see the table above). 2 is also
    /// what the argument parser exits with for a malformed command line.
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorKind::InvalidInput => 2,
            ErrorKind::NotFound => 3,
            ErrorKind::Conflict => 4,
            ErrorKind::Busy => 5,
            ErrorKind::Offline | ErrorKind::RateLimited | ErrorKind::ProviderFailed => 6,
            ErrorKind::NeedsUser => 7,
            ErrorKind::Unavailable => 8,
            ErrorKind::ProviderRefused
            | ErrorKind::BadFile
            | ErrorKind::Database
            | ErrorKind::Io
            | ErrorKind::Internal => 1,
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    /// An argument with a value that cannot work (the message says which and why).
    #[error("{0}")]
    InvalidInput(String),
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
    /// Something busy that may be free in a moment (an import already running, say).
    #[error("{0}")]
    Busy(String),
    /// Something this build or this machine cannot do (no home directory, say).
    #[error("{0}")]
    Unavailable(String),
    /// A setting with a value that cannot work.
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
    /// A change asked of a database that could only be opened read-only (on read-only media, in
    /// a read-only folder, or a read-only file). Reading it works.
    #[error(
        "{path} is read-only ({reason}), and this changes the database. Reading works (history, search, \
         status, export, time); to change it, copy it somewhere writable and open the copy"
    )]
    ReadOnly {
        /// The database file.
        path: PathBuf,
        /// Why it can only be read.
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
    /// A visit to a blocked domain (or one of its subdomains): never recorded. Not retryable; a
    /// sender (the browser extension's host, a script) should drop the visit.
    #[error("not recorded: {domain} is blocked (`sitetrail blocked remove {blocked}` allows it again)")]
    Blocked {
        /// The visit's domain.
        domain: String,
        /// The entry of the blocked list that covers it.
        blocked: String,
    },
    /// A visit whose time lies in a range the user asked to forget, or that very visit (its URL at
    /// that time) forgotten: never recorded again.
    #[error("not recorded: {}", if *visit {
        format!("you asked to forget this visit (of {at})")
    } else {
        format!("{at} lies in a time range you asked to forget")
    })]
    Forgotten {
        /// The visit's time (RFC 3339).
        at: String,
        /// True if this very visit (its URL at that time) was forgotten, false for a range.
        visit: bool,
    },
    /// A visit to a website that is being forgotten right now (`forget website`): not recorded,
    /// so that the forgetting ends however fast visits arrive. Recorded again once it is done.
    #[error("not recorded: {domain} is being forgotten right now; its visits are recorded again once that is done")]
    Forgetting {
        /// The website's domain.
        domain: String,
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
    Classify(#[from] ClassifyError),
    /// A blocking task panicked or was cancelled.
    #[error("background task failed: {0}")]
    Task(String),
    /// Sync with a hub failed; `kind` says how (offline, the key does not open the account, ...).
    #[error("sync: {message}")]
    Sync {
        /// What kind of failure it is.
        kind: ErrorKind,
        /// A sentence for the user (never a key, a login or a record's contents).
        message: String,
    },
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

impl Error {
    /// True for errors a caller may retry unchanged with a chance of success (a busy database, a
    /// transient classifier failure); false for bad input and missing rows.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Sql(e) => is_busy(e),
            Error::Pool(_) | Error::Task(_) | Error::Busy(_) => true,
            Error::Sync { kind, .. } => matches!(kind, ErrorKind::Offline | ErrorKind::Busy),
            Error::Classify(e) => !e.consumes_attempt() || e.is_transient(),
            _ => false,
        }
    }

    /// The kind of error, shared with the CLI's exit codes and the UI (`{kind, message}`).
    pub fn kind(&self) -> ErrorKind {
        use ClassifyError as C;
        match self {
            Error::InvalidUrl { .. }
            | Error::InvalidDomain { .. }
            | Error::UnknownCategory(_)
            | Error::InvalidInput(_)
            | Error::InvalidConfig(_) => ErrorKind::InvalidInput,
            Error::NotFound { .. } => ErrorKind::NotFound,
            // A visit the user asked never to record: it does not fit what the database holds
            // (a sender drops it, it is not its input's fault nor worth retrying).
            Error::Conflict(_)
            | Error::Blocked { .. }
            | Error::Forgotten { .. }
            | Error::Forgetting { .. } => ErrorKind::Conflict,
            Error::Busy(_) | Error::Pool(_) => ErrorKind::Busy,
            Error::Sql(e) if is_busy(e) => ErrorKind::Busy,
            Error::Unavailable(_) => ErrorKind::Unavailable,
            Error::Open { .. } | Error::ReadOnly { .. } | Error::Import { .. } => ErrorKind::BadFile,
            Error::Sql(_) => ErrorKind::Database,
            Error::Io(_) => ErrorKind::Io,
            Error::Classify(C::Offline(_)) => ErrorKind::Offline,
            Error::Classify(C::RateLimited { .. }) => ErrorKind::RateLimited,
            Error::Classify(C::NeedsUser(_)) => ErrorKind::NeedsUser,
            Error::Classify(C::Transient(_)) => ErrorKind::ProviderFailed,
            Error::Classify(C::Permanent(_)) => ErrorKind::ProviderRefused,
            Error::Task(_) => ErrorKind::Internal,
            Error::Sync { kind, .. } => *kind,
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

/// Why a whole batch could not be classified.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ClassifyError {
    /// The provider could not be reached (DNS, connection refused, no route). Not the job's fault.
    #[error("offline: {0}")]
    Offline(String),
    /// The provider asked us to slow down. Not the job's fault; the whole worker waits.
    #[error("rate limited: {message}")]
    RateLimited {
        /// How long the provider asked us to wait, if it said.
        retry_after: Option<std::time::Duration>,
        /// What it said.
        message: String,
    },
    /// The provider refuses until the user acts (bad API key, no quota, unknown model).
    #[error("{0}")]
    NeedsUser(String),
    /// A failure that may pass (5xx, timeout, garbage body): costs an attempt, retried later.
    #[error("{0}")]
    Transient(String),
    /// A failure that will not pass for these domains: costs an attempt.
    #[error("{0}")]
    Permanent(String),
}

impl ClassifyError {
    /// True if the failure counts as an attempt of each job in the batch.
    pub fn consumes_attempt(&self) -> bool {
        matches!(self, ClassifyError::Transient(_) | ClassifyError::Permanent(_))
    }

    /// True for failures that may pass by themselves.
    pub fn is_transient(&self) -> bool {
        !matches!(self, ClassifyError::Permanent(_) | ClassifyError::NeedsUser(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_distinct_name_and_an_exit_code() {
        let names: std::collections::HashSet<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), ErrorKind::ALL.len());
        for k in ErrorKind::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
            assert!(k.exit_code() >= 1, "{k}: 0 is success");
        }
        assert_eq!(Error::InvalidInput("x".into()).kind().exit_code(), 2);
        assert_eq!(Error::InvalidConfig("x".into()).kind(), ErrorKind::InvalidInput);
        assert_eq!(
            Error::NotFound {
                what: "website",
                key: "a.example".into()
            }
            .kind()
            .exit_code(),
            3
        );
    }

    #[test]
    fn truncate_counts_characters_not_bytes() {
        assert_eq!(truncate_chars("münchen", 10), "münchen");
        let cut = truncate_chars(&"ü".repeat(2000), 1000);
        assert_eq!(cut.chars().count(), 1000);
        assert!(cut.ends_with('…'));
    }
}
