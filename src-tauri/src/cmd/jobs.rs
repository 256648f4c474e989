//! The failed-classifications panel: FAILED jobs, Retry, and the live state of retried jobs.

use sitetrail::ids::OutboxId;
use sitetrail::outbox::{FailedJob, JobView};
use tauri::State;

use super::{lib, parse_ids};
use crate::error::CmdResult;
use crate::state::AppState;

/// Every FAILED job, most recently attempted first.
#[tauri::command]
pub async fn list_failed_jobs(state: State<'_, AppState>) -> CmdResult<Vec<FailedJob>> {
    lib(state.store.run(sitetrail::Store::failed_jobs).await)
}

/// Puts the named FAILED jobs back in the queue (all or none).
#[tauri::command]
pub async fn retry_jobs(state: State<'_, AppState>, ids: Vec<String>) -> CmdResult<usize> {
    let ids: Vec<OutboxId> = parse_ids("job", &ids)?;
    let n = ids.len();
    lib(state.store.run(move |s| s.retry_jobs(&ids)).await)?;
    Ok(n)
}

/// Puts every FAILED job back in the queue; returns how many.
#[tauri::command]
pub async fn retry_all_failed(state: State<'_, AppState>) -> CmdResult<usize> {
    lib(state.store.run(sitetrail::Store::retry_all_failed).await)
}

/// The current state of the named jobs (to follow retried rows live).
#[tauri::command]
pub async fn get_jobs(state: State<'_, AppState>, ids: Vec<String>) -> CmdResult<Vec<JobView>> {
    let ids: Vec<OutboxId> = parse_ids("job", &ids)?;
    lib(state
        .store
        .run(move |s| ids.iter().map(|&id| s.job(id)).collect())
        .await)
}
