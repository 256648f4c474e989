//! The IPC commands: plain functions, snake_case verbs, one file per view.
//!
//! Every command validates its arguments before touching anything (the UI is not trusted more
//! than a script would be), does its database work on a blocking thread through
//! [`sitetrail::Store::run`] (no async task ever holds a connection), and fails with a
//! [`CmdError`] that reaches the UI as `{kind, message}`.

pub mod capture;
pub mod export;
pub mod focus;
pub mod forget;
pub mod history;
pub mod import;
pub mod jobs;
pub mod limits;
pub mod overview;
pub mod period;
pub mod reminders;
pub mod review;
pub mod settings;
pub mod sync;
pub mod website;

use sitetrail::Timestamp;

use crate::error::{CmdError, CmdResult};

/// Longest search text accepted (characters).
pub const MAX_SEARCH_CHARS: usize = 200;
/// Most job ids one call may name.
pub const MAX_IDS: usize = 1_000;

/// Parses an optional RFC 3339 date-time argument named `what`.
pub(crate) fn parse_time(what: &str, value: Option<&str>) -> CmdResult<Option<Timestamp>> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => Timestamp::parse_rfc3339(v).map(Some).ok_or_else(|| {
            CmdError::invalid(format!(
                "{what} {v:?} is not a date-time (expected RFC 3339, e.g. 2026-11-29T10:00:00Z)"
            ))
        }),
    }
}

/// Parses a list of ids, refusing an empty or oversized list and naming a bad id.
pub(crate) fn parse_ids<T: std::str::FromStr>(what: &str, ids: &[String]) -> CmdResult<Vec<T>> {
    if ids.is_empty() {
        return Err(CmdError::invalid(format!("Name at least one {what}.")));
    }
    if ids.len() > MAX_IDS {
        return Err(CmdError::invalid(format!(
            "At most {MAX_IDS} {what}s at a time, not {}.",
            ids.len()
        )));
    }
    ids.iter()
        .map(|s| {
            s.parse::<T>().map_err(|_| {
                CmdError::invalid(format!(
                    "{:?} is not a valid {what} id.",
                    sitetrail::error::truncate_chars(s, 60)
                ))
            })
        })
        .collect()
}

/// Maps a failed blocking task or library error into a command error.
pub(crate) fn lib<T>(r: sitetrail::Result<T>) -> CmdResult<T> {
    r.map_err(CmdError::from)
}
