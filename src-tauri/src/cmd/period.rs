//! The overview's chosen period: the headline (time, its split by category, the top websites, the
//! change against the period before), each day's time, and a day's timeline.
//!
//! Periods are whole local calendar days named by their first day (`YYYY-MM-DD`) and a length; the
//! UI picks them (today, this week, a day on the calendar), the library counts them.

use sitetrail::time_spent::period::{Period, PeriodOverview, Timeline};
use tauri::State;

use super::lib;
use crate::error::CmdResult;
use crate::state::AppState;

/// Most websites in each of the overview's top lists.
pub const TOP_WEBSITES: usize = 10;

/// The overview of `days` days from `first`, compared with as many days from `compare_first`
/// (by default the days just before).
#[tauri::command]
pub async fn get_period_overview(
    state: State<'_, AppState>,
    first: String,
    days: u32,
    compare_first: Option<String>,
) -> CmdResult<PeriodOverview> {
    let period = Period::parse(&first, days)?;
    let compare = match compare_first.as_deref() {
        Some(c) => Period::parse(c, days)?,
        None => period.previous()?,
    };
    crate::startup::mark("first overview query started");
    let started = std::time::Instant::now();
    let overview = lib(state
        .store
        .run(move |s| s.period_overview(period, compare, TOP_WEBSITES))
        .await);
    crate::startup::mark("first overview query done");
    tracing::debug!(
        days,
        ms = started.elapsed().as_secs_f64() * 1000.0,
        "period overview"
    );
    overview
}

/// The visits of the local day `day` (`YYYY-MM-DD`), oldest first, for the day timeline.
#[tauri::command]
pub async fn get_timeline(state: State<'_, AppState>, day: String) -> CmdResult<Timeline> {
    let period = Period::parse(&day, 1)?;
    lib(state.store.run(move |s| s.timeline(period)).await)
}
