//! The error every command returns, serialized for the UI as `{kind, message}`.
//!
//! `kind` is a short stable name the UI branches on (`invalid_input`, `not_found`, `database`, ...:
//! the library's [`sitetrail::Error::kind`] plus the shell's own); `message` is a sentence for a
//! person that says what happened and what to do. Neither ever contains a secret: library errors
//! are written that way, and the shell's own messages never include the API key.

use serde::Serialize;

/// A command's failure as the UI receives it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CmdError {
    /// Stable machine-readable kind.
    pub kind: &'static str,
    /// What happened, in plain words.
    pub message: String,
}

/// A command's result.
pub type CmdResult<T> = Result<T, CmdError>;

impl CmdError {
    /// Bad input from the UI: a missing, malformed or out-of-range argument.
    pub fn invalid(message: impl Into<String>) -> Self {
        CmdError {
            kind: "invalid_input",
            message: message.into(),
        }
    }

    /// Something this build or this machine cannot do (yet).
    pub fn unavailable(message: impl Into<String>) -> Self {
        CmdError {
            kind: "unavailable",
            message: message.into(),
        }
    }
}

impl From<sitetrail::Error> for CmdError {
    fn from(e: sitetrail::Error) -> Self {
        let kind = match &e {
            // Bad values the user typed are input errors, whatever layer found them.
            sitetrail::Error::InvalidConfig(_)
            | sitetrail::Error::InvalidDomain { .. }
            | sitetrail::Error::InvalidUrl { .. }
            | sitetrail::Error::UnknownCategory(_) => "invalid_input",
            other => other.kind(),
        };
        CmdError {
            kind,
            message: e.to_string(),
        }
    }
}

impl std::fmt::Display for CmdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for CmdError {}
