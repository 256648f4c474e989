//! The error every command returns, serialized for the UI as `{kind, message}`.
//!
//! `kind` is a short stable name the UI branches on (`invalid_input`, `not_found`, `offline`, ...:
//! the library's one vocabulary, [`sitetrail::ErrorKind`]); `message` is a sentence for a
//! person that says what happened and what to do. Neither ever contains a secret: library errors
//! are written that way, and the shell's own messages never include the API key.

use serde::Serialize;
use sitetrail::ErrorKind;

/// A command's failure as the UI receives it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CmdError {
    /// Stable machine-readable kind, the library's vocabulary ([`sitetrail::ErrorKind`]).
    pub kind: ErrorKind,
    /// What happened, in plain words.
    pub message: String,
}

/// A command's result.
pub type CmdResult<T> = Result<T, CmdError>;

impl CmdError {
    /// A failure of `kind`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        CmdError {
            kind,
            message: message.into(),
        }
    }

    /// Bad input from the UI: a missing, malformed or out-of-range argument.
    pub fn invalid(message: impl Into<String>) -> Self {
        CmdError::new(ErrorKind::InvalidInput, message)
    }

    /// Something this build or this machine cannot do (yet).
    pub fn unavailable(message: impl Into<String>) -> Self {
        CmdError::new(ErrorKind::Unavailable, message)
    }
}

impl From<sitetrail::Error> for CmdError {
    fn from(e: sitetrail::Error) -> Self {
        CmdError::new(e.kind(), e.to_string())
    }
}

impl std::fmt::Display for CmdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for CmdError {}
