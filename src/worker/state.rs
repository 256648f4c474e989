//! The worker's pause state, persisted so that every process (the CLI's `status`, the app) sees
//! why classification is not moving and until when, and every worker on the file respects it.
//!
//! One row in `worker_state`. A worker writes it when it pauses (offline, rate limited, needs the
//! user), naming the provider it calls (`paused_provider`, never a credential). The pause holds
//! every worker that uses that provider, including one that starts while it lasts, and is lifted
//! only by the user (`sitetrail resume`, the app's button or new settings saved in the app), by
//! its own end time, or by a successful call to the same provider: a worker never clears another
//! provider's pause, and starting a worker clears nothing. A worker that sees the pause cleared
//! tries again at once. The row also counts the worker's crashes (panics caught by the
//! supervisor) and keeps the last one. Subscribers hear [`Change::Worker`] after each commit that
//! changed it.

use std::time::Duration;

use rusqlite::{named_params, Connection, Transaction};

use crate::error::Result;
use crate::store::{Change, Store};
use crate::time::Timestamp;

/// Why the worker is paused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PauseKind {
    /// The provider cannot be reached; retried with growing backoff, resumes by itself.
    Offline,
    /// The provider asked to slow down; resumes at `paused_until`.
    RateLimited,
    /// Bad API key, no quota or unknown model: waits for `sitetrail resume` or new settings.
    NeedsUser,
}

crate::names::named!(PauseKind {
    Offline = "offline",
    RateLimited = "rate_limited",
    NeedsUser = "needs_user",
});

crate::sql_enum::sql_text!(PauseKind, "pause kind", as_str, parse);

/// The longest pause a worker respects: a `paused_until` further ahead than this was written by
/// a clock that has since moved back (or is garbage), and the pause counts as over. The provider
/// code caps the waits it reads from a server below this.
pub const MAX_PAUSE: Duration = Duration::from_secs(86_400);

/// The worker's pause state as stored.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WorkerState {
    /// Why the worker is paused; `None` while it runs normally.
    pub paused_kind: Option<PauseKind>,
    /// The message shown to the user (never contains a secret).
    pub paused_reason: Option<String>,
    /// When the worker will try again by itself; `None` if it waits for the user (or runs).
    pub paused_until: Option<Timestamp>,
    /// The provider the pause belongs to (`<provider> <base URL> <model>`, no credentials);
    /// `None` for a pause written before pauses had an owner: it holds every worker.
    pub paused_provider: Option<String>,
    /// When the state last changed.
    pub updated_at: Option<Timestamp>,
    /// How many times a worker on this file crashed (a panic caught by its supervisor).
    pub worker_crashes: i64,
    /// When the last crash happened.
    pub last_crash_at: Option<Timestamp>,
    /// What the last crash said.
    pub last_crash_message: Option<String>,
}

impl WorkerState {
    /// True while paused.
    pub fn is_paused(&self) -> bool {
        self.paused_kind.is_some()
    }

    /// True if the pause holds a worker calling `provider` at `now`: a pause of that provider (or
    /// of no recorded provider) that waits for the user or has not reached its end time. An end
    /// time more than [`MAX_PAUSE`] ahead counts as reached.
    pub fn holds(&self, provider: &str, now: Timestamp) -> bool {
        self.is_paused()
            && self.paused_provider.as_deref().is_none_or(|p| p == provider)
            && self
                .paused_until
                .is_none_or(|until| until > now && until <= now.plus(MAX_PAUSE))
    }
}

/// The worker's pause and crashes as people are shown them: `sitetrail status` (its flat JSON
/// keys and its lines) and the app's overview both build from this, so what counts as a pause
/// and a crash, which facts each has and how a time is written (RFC 3339, [`Timestamp`]'s
/// serialization) are decided here once.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WorkerStatus {
    /// The pause, while the worker is paused.
    pub pause: Option<PauseStatus>,
    /// The crashes, once a worker on this file crashed.
    pub crash: Option<CrashStatus>,
}

/// Why the worker is paused and until when.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PauseStatus {
    /// `offline`, `rate_limited` or `needs_user`.
    pub kind: PauseKind,
    /// The message for the user (never a secret).
    pub reason: String,
    /// When it tries again by itself; `None`: it waits for the user.
    pub until: Option<Timestamp>,
    /// The provider it belongs to (no credentials); `None`: every provider.
    pub provider: Option<String>,
}

/// The worker's crashes: panics its supervisor caught, after which it restarted.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CrashStatus {
    /// How many times a worker on this file crashed.
    pub count: i64,
    /// When the last crash happened.
    pub at: Timestamp,
    /// What the last crash said.
    pub message: Option<String>,
}

impl WorkerState {
    /// What to show of this state: a pause while `paused_kind` is set (the table keeps its reason
    /// with it), and crashes once one was recorded with its time (the count and the time are
    /// written together).
    pub fn status(&self) -> WorkerStatus {
        WorkerStatus {
            pause: self.paused_kind.map(|kind| PauseStatus {
                kind,
                reason: self.paused_reason.clone().unwrap_or_default(),
                until: self.paused_until,
                provider: self.paused_provider.clone(),
            }),
            crash: self.last_crash_at.map(|at| CrashStatus {
                count: self.worker_crashes,
                at,
                message: self.last_crash_message.clone(),
            }),
        }
    }
}

/// Reads the state row.
pub fn get_worker_state(conn: &Connection) -> Result<WorkerState> {
    Ok(conn
        .prepare_cached(
            r#"SELECT paused_kind, paused_reason, paused_until, paused_provider, updated_at,
                      crash_count, last_crash_at, last_crash_message
               FROM worker_state WHERE id = 1"#,
        )?
        .query_row([], |r| {
            let updated_at: Timestamp = r.get("updated_at")?;
            Ok(WorkerState {
                paused_kind: r.get("paused_kind")?,
                paused_reason: r.get("paused_reason")?,
                paused_until: r.get("paused_until")?,
                paused_provider: r.get("paused_provider")?,
                updated_at: (updated_at.as_micros() > 0).then_some(updated_at),
                worker_crashes: r.get("crash_count")?,
                last_crash_at: r.get("last_crash_at")?,
                last_crash_message: r.get("last_crash_message")?,
            })
        })?)
}

/// Records a pause of `provider`.
pub fn update_worker_paused(
    tx: &Transaction<'_>,
    kind: PauseKind,
    reason: &str,
    until: Option<Timestamp>,
    provider: Option<&str>,
    now: Timestamp,
) -> Result<()> {
    tx.prepare_cached(
        r#"UPDATE worker_state
           SET paused_kind = :kind, paused_reason = :reason, paused_until = :until,
               paused_provider = :provider, updated_at = :now
           WHERE id = 1"#,
    )?
    .execute(named_params! {
        ":kind": kind,
        ":reason": crate::error::truncate_chars(reason, crate::outbox::MAX_ERROR_CHARS),
        ":until": until, ":provider": provider, ":now": now,
    })?;
    Ok(())
}

/// Clears the pause; returns the state it cleared, or `None` if the worker was not paused. With
/// `provider`, only a pause of that provider (or of no recorded provider) is cleared: a worker's
/// successful call lifts its own provider's pause, never another's.
pub fn update_worker_running(
    tx: &Transaction<'_>,
    provider: Option<&str>,
    now: Timestamp,
) -> Result<Option<WorkerState>> {
    let before = get_worker_state(tx)?;
    if !before.is_paused() {
        return Ok(None);
    }
    if let (Some(mine), Some(theirs)) = (provider, before.paused_provider.as_deref()) {
        if mine != theirs {
            return Ok(None);
        }
    }
    tx.prepare_cached(
        r#"UPDATE worker_state
           SET paused_kind = NULL, paused_reason = NULL, paused_until = NULL, paused_provider = NULL,
               updated_at = :now
           WHERE id = 1"#,
    )?
    .execute(named_params! { ":now": now })?;
    Ok(Some(before))
}

/// Records a worker crash: one more in `crash_count`, and `message` as the last one.
pub fn insert_worker_crash(tx: &Transaction<'_>, message: &str, now: Timestamp) -> Result<()> {
    tx.prepare_cached(
        r#"UPDATE worker_state
           SET crash_count = crash_count + 1, last_crash_at = :now, last_crash_message = :message
           WHERE id = 1"#,
    )?
    .execute(named_params! {
        ":now": now,
        ":message": crate::error::truncate_chars(message, crate::outbox::MAX_ERROR_CHARS),
    })?;
    Ok(())
}

impl Store {
    /// The worker's pause state.
    pub fn worker_state(&self) -> Result<WorkerState> {
        self.with_conn(get_worker_state)
    }

    /// The worker's pause and crashes as they are shown ([`WorkerState::status`]).
    pub fn worker_status(&self) -> Result<WorkerStatus> {
        Ok(self.worker_state()?.status())
    }

    /// Records that the worker paused for `pause_for` (`None`: until the user resumes it), for
    /// every provider, and tells subscribers. Workers record their own pauses with
    /// [`Store::pause_provider`].
    pub fn pause_worker(&self, kind: PauseKind, reason: &str, pause_for: Option<Duration>) -> Result<()> {
        self.pause_provider(None, kind, reason, pause_for)
    }

    /// Records that the worker calling `provider` paused for `pause_for` (`None`: until the user
    /// resumes it), and tells subscribers.
    pub fn pause_provider(
        &self,
        provider: Option<&str>,
        kind: PauseKind,
        reason: &str,
        pause_for: Option<Duration>,
    ) -> Result<()> {
        let now = self.now();
        let until = pause_for.map(|d| now.plus(d));
        self.write(Some(Change::Worker), |tx| {
            update_worker_paused(tx, kind, reason, until, provider, now)
        })
    }

    /// Clears the pause whoever set it (the user resumed); returns the state it cleared.
    /// Subscribers hear of it only if there was a pause.
    pub fn resume_worker(&self) -> Result<Option<WorkerState>> {
        self.resume_provider(None)
    }

    /// Clears the pause if it belongs to `provider` (a call to it succeeded); `None` clears any
    /// pause. Returns the state it cleared; subscribers hear of it only if there was one.
    pub fn resume_provider(&self, provider: Option<&str>) -> Result<Option<WorkerState>> {
        let now = self.now();
        self.write(Change::Worker, |tx| update_worker_running(tx, provider, now))
    }

    /// Records a worker crash and tells subscribers.
    pub fn record_worker_crash(&self, message: &str) -> Result<()> {
        let now = self.now();
        self.write(Some(Change::Worker), |tx| insert_worker_crash(tx, message, now))
    }
}
