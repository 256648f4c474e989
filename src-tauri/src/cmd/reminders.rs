//! Reminders of limits and goals: off until the user turns them on (the app asks once, and an
//! answer either way is saved), a warning point, quiet hours. Shown by the app's reminder task
//! and the daemon (`sitetrail::reminders`).

use serde::Serialize;
use sitetrail::reminders::{parse_quiet, ReminderSettings};
use tauri::State;

use crate::error::{CmdError, CmdResult};
use crate::state::AppState;

/// The reminder settings as the UI shows them.
#[derive(Clone, Debug, Serialize)]
pub struct RemindersView {
    /// The user answered (on or off): the question is not asked again.
    pub asked: bool,
    /// Reminders are shown.
    pub enabled: bool,
    /// A warning at this share of a limit (1 to 99), if set.
    pub warn_percent: Option<u8>,
    /// Quiet hours as `22:00-07:00`, if set.
    pub quiet: Option<String>,
}

fn view(s: &sitetrail::Store) -> sitetrail::Result<RemindersView> {
    let stored = s.stored_reminder_settings()?;
    let r = stored.clone().unwrap_or_default();
    Ok(RemindersView {
        asked: stored.is_some(),
        enabled: r.enabled,
        warn_percent: r.warn_percent,
        quiet: r
            .quiet
            .map(|(a, b)| format!("{}-{}", a.format("%H:%M"), b.format("%H:%M"))),
    })
}

/// The reminder settings, and whether the user was asked.
#[tauri::command]
pub async fn get_reminders(state: State<'_, AppState>) -> CmdResult<RemindersView> {
    state.blocking(|s| view(&s.store)).await
}

/// Saves the reminder settings: on or off, a warning at `warn_percent` % of a limit (none if
/// absent), quiet hours `quiet` (`22:00-07:00`; none if absent or empty).
#[tauri::command]
pub async fn set_reminders(
    state: State<'_, AppState>,
    enabled: bool,
    warn_percent: Option<u32>,
    quiet: Option<String>,
) -> CmdResult<RemindersView> {
    let warn_percent = match warn_percent.map(u8::try_from) {
        None => None,
        Some(Ok(p @ 1..=99)) => Some(p),
        Some(_) => return Err(CmdError::invalid("A warning is at 1 to 99 % of a limit.")),
    };
    let quiet = match quiet.as_deref().map(str::trim).filter(|q| !q.is_empty()) {
        None => None,
        Some(q) => Some(parse_quiet(q)?),
    };
    let settings = ReminderSettings {
        enabled,
        warn_percent,
        quiet,
    };
    state
        .blocking(move |s| {
            s.store.set_reminder_settings(&settings)?;
            view(&s.store)
        })
        .await
}
