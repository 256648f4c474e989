//! The worker's pause state, persisted so that every process (the CLI's `status`, the app) sees
//! why classification is not moving and until when.
//!
//! One row in `worker_state`. The worker writes it when it pauses (offline, rate limited, needs
//! the user) and clears it when a call succeeds again; `sitetrail resume` clears it from any
//! process, and a running worker that sees it cleared tries again at once. Subscribers hear
//! [`Change::Worker`] after each commit that changed it.

use std::time::Duration;

use rusqlite::{named_params, Connection, Transaction};

use crate::error::Result;
use crate::store::{Change, Store};
use crate::time::Timestamp;

/// Why the worker is paused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseKind {
    /// The provider cannot be reached; retried with growing backoff, resumes by itself.
    Offline,
    /// The provider asked to slow down; resumes at `paused_until`.
    RateLimited,
    /// Bad API key, no quota or unknown model: waits for `sitetrail resume` or new settings.
    NeedsUser,
}

impl PauseKind {
    /// The stored value.
    pub fn as_str(self) -> &'static str {
        match self {
            PauseKind::Offline => "offline",
            PauseKind::RateLimited => "rate_limited",
            PauseKind::NeedsUser => "needs_user",
        }
    }

    /// Parses the stored value.
    pub fn parse(s: &str) -> Option<PauseKind> {
        match s {
            "offline" => Some(PauseKind::Offline),
            "rate_limited" => Some(PauseKind::RateLimited),
            "needs_user" => Some(PauseKind::NeedsUser),
            _ => None,
        }
    }
}

crate::sql_enum::sql_text!(PauseKind, "pause kind", as_str, parse);

/// The worker's pause state as stored.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WorkerState {
    /// Why the worker is paused; `None` while it runs normally.
    pub paused_kind: Option<PauseKind>,
    /// The message shown to the user (never contains a secret).
    pub paused_reason: Option<String>,
    /// When the worker will try again by itself; `None` if it waits for the user (or runs).
    pub paused_until: Option<Timestamp>,
    /// When the state last changed.
    pub updated_at: Option<Timestamp>,
}

impl WorkerState {
    /// True while paused.
    pub fn is_paused(&self) -> bool {
        self.paused_kind.is_some()
    }
}

/// Reads the state row.
pub fn get_worker_state(conn: &Connection) -> Result<WorkerState> {
    Ok(conn
        .prepare_cached(
            r#"SELECT paused_kind, paused_reason, paused_until, updated_at FROM worker_state WHERE id = 1"#,
        )?
        .query_row([], |r| {
            let updated_at: Timestamp = r.get("updated_at")?;
            Ok(WorkerState {
                paused_kind: r.get("paused_kind")?,
                paused_reason: r.get("paused_reason")?,
                paused_until: r.get("paused_until")?,
                updated_at: (updated_at.as_micros() > 0).then_some(updated_at),
            })
        })?)
}

/// Records a pause.
pub fn update_worker_paused(
    tx: &Transaction<'_>,
    kind: PauseKind,
    reason: &str,
    until: Option<Timestamp>,
    now: Timestamp,
) -> Result<()> {
    tx.prepare_cached(
        r#"UPDATE worker_state
           SET paused_kind = :kind, paused_reason = :reason, paused_until = :until, updated_at = :now
           WHERE id = 1"#,
    )?
    .execute(named_params! {
        ":kind": kind,
        ":reason": crate::error::truncate_chars(reason, crate::outbox::MAX_ERROR_CHARS),
        ":until": until, ":now": now,
    })?;
    Ok(())
}

/// Clears the pause; returns the state it cleared, or `None` if the worker was not paused.
pub fn update_worker_running(tx: &Transaction<'_>, now: Timestamp) -> Result<Option<WorkerState>> {
    let before = get_worker_state(tx)?;
    if !before.is_paused() {
        return Ok(None);
    }
    tx.prepare_cached(
        r#"UPDATE worker_state
           SET paused_kind = NULL, paused_reason = NULL, paused_until = NULL, updated_at = :now
           WHERE id = 1"#,
    )?
    .execute(named_params! { ":now": now })?;
    Ok(Some(before))
}

impl Store {
    /// The worker's pause state.
    pub fn worker_state(&self) -> Result<WorkerState> {
        self.with_conn(get_worker_state)
    }

    /// Records that the worker paused for `pause_for` (`None`: until the user resumes it), and
    /// tells subscribers.
    pub fn pause_worker(&self, kind: PauseKind, reason: &str, pause_for: Option<Duration>) -> Result<()> {
        let now = self.now();
        let until = pause_for.map(|d| now.plus(d));
        self.write(Some(Change::Worker), |tx| {
            update_worker_paused(tx, kind, reason, until, now)
        })
    }

    /// Clears the pause (the user resumed, or a call succeeded); returns the state it cleared.
    /// Subscribers hear of it only if there was a pause.
    pub fn resume_worker(&self) -> Result<Option<WorkerState>> {
        let now = self.now();
        self.write(Change::Worker, |tx| update_worker_running(tx, now))
    }
}
