//! Work the app does once at start, in the background: finishing a forgetting that was
//! interrupted, and building the search index of a database from before it (upgraded), with
//! progress events for the history view.
//!
//! Both are the library's, in committed batches that hold the write lock a fraction of a second
//! each, so the app stays usable meanwhile (search results are incomplete until the index is).

use sitetrail::forget::ForgetOptions;
use sitetrail::search::{self, BackfillOptions};
use tauri::{AppHandle, Emitter, Manager, Runtime};

use crate::events::SEARCH_INDEX_PROGRESS;
use crate::state::AppState;

/// Resumes pending forgettings, then builds the rest of the search index.
pub async fn run<R: Runtime>(app: AppHandle<R>) {
    let store = app.state::<AppState>().store.clone();
    let emitter = app.clone();
    let result = store
        .run(move |s| {
            s.resume_forgetting(&ForgetOptions::default(), &mut |_| {})?;
            search::backfill(s, &BackfillOptions::default(), &mut |status| {
                let _ = emitter.emit(SEARCH_INDEX_PROGRESS, status);
            })
        })
        .await;
    match result {
        Ok(status) if status.total > 0 => {
            tracing::info!(visits = status.done, "search index complete");
        }
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(error = %e, "search index or forgetting upkeep failed; it resumes at the next start");
        }
    }
}
