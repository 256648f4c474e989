//! Focus sessions from the app: start one (a duration, the categories and websites it holds back
//! in the browser on every synced device), stop it, and what is running.

use serde::Serialize;
use sitetrail::focus::Focus;
use sitetrail::{Store, Timestamp};
use tauri::State;

use super::limits::parse_target;
use crate::error::{CmdError, CmdResult};
use crate::state::AppState;

/// One category or website a session holds back.
#[derive(Clone, Debug, Serialize)]
pub struct Block {
    /// `category` or `domain`.
    pub target_type: &'static str,
    /// The category id or the domain.
    pub target: String,
    /// Its name as people read it.
    pub target_name: String,
}

/// The focus session, as `sitetrail focus status --json` says it.
#[derive(Clone, Debug, Serialize)]
pub struct FocusView {
    /// A session is running.
    pub active: bool,
    /// When it started (none if no session ran).
    pub started_at: Option<Timestamp>,
    /// When it ends on its own.
    pub ends_at: Option<Timestamp>,
    /// Milliseconds left (0 when none runs).
    pub remaining_ms: i64,
    /// What it holds back.
    pub blocks: Vec<Block>,
}

fn view_of(f: Option<Focus>, now: Timestamp) -> FocusView {
    match f.filter(|f| f.active(now)) {
        None => FocusView {
            active: false,
            started_at: None,
            ends_at: None,
            remaining_ms: 0,
            blocks: Vec::new(),
        },
        Some(f) => FocusView {
            active: true,
            started_at: Some(f.started_at),
            ends_at: Some(f.ends_at),
            remaining_ms: f.ends_at.millis_since(now),
            blocks: f
                .blocks
                .iter()
                .map(|t| Block {
                    target_type: t.type_str(),
                    target: t.key().to_owned(),
                    target_name: t.name(),
                })
                .collect(),
        },
    }
}

fn view(s: &Store) -> sitetrail::Result<FocusView> {
    Ok(view_of(s.focus()?, s.now()))
}

/// The session running, if any.
#[tauri::command]
pub async fn get_focus(state: State<'_, AppState>) -> CmdResult<FocusView> {
    state.blocking(|s| view(&s.store)).await
}

/// Starts a session of `duration` (50m, 1h30m, 1:30) holding back `blocks` (category ids and
/// domains), replacing the one running.
#[tauri::command]
pub async fn start_focus(
    state: State<'_, AppState>,
    duration: String,
    blocks: Vec<String>,
) -> CmdResult<FocusView> {
    let minutes = sitetrail::limits::parse_minutes(&duration)?;
    if blocks.is_empty() {
        return Err(CmdError::invalid(
            "Choose at least one category or website to hold back.",
        ));
    }
    if blocks.len() > sitetrail::focus::MAX_BLOCKS {
        return Err(CmdError::invalid(format!(
            "A focus session holds back at most {} categories and websites.",
            sitetrail::focus::MAX_BLOCKS
        )));
    }
    let targets = blocks
        .iter()
        .map(|b| parse_target(b))
        .collect::<CmdResult<Vec<_>>>()?;
    state
        .blocking(move |s| {
            s.store.start_focus(minutes, targets)?;
            view(&s.store)
        })
        .await
}

/// Stops the session running (nothing if none runs).
#[tauri::command]
pub async fn stop_focus(state: State<'_, AppState>) -> CmdResult<FocusView> {
    state
        .blocking(|s| {
            s.store.stop_focus()?;
            view(&s.store)
        })
        .await
}
