//! Limits and goals, and the weekly report: each limit and goal with its progress in its period,
//! setting and removing one (targets and durations as people write them, parsed by the library),
//! and the report of a week (`sitetrail report --week`'s numbers).
//!
//! Every argument is checked before anything is stored: a bad duration, target, kind or period
//! is refused with the library's words and changes nothing.

use serde::Serialize;
use sitetrail::limits::progress::{Progress, WeekReport};
use sitetrail::limits::{Kind, Period, Target};
use tauri::State;

use crate::error::{CmdError, CmdResult};
use crate::state::AppState;

/// Longest target accepted (a domain is at most 253 characters).
const MAX_TARGET_CHARS: usize = 300;

/// A target as the UI sends it: a category id (`social`) or a domain (`youtube.com`, which
/// covers its subdomains).
pub(crate) fn parse_target(target: &str) -> CmdResult<Target> {
    if target.trim().is_empty() {
        return Err(CmdError::invalid(
            "Choose a category or type a website (youtube.com).",
        ));
    }
    if target.chars().count() > MAX_TARGET_CHARS {
        return Err(CmdError::invalid("A website is at most 253 characters."));
    }
    let typed = target.trim();
    if typed.contains("://") {
        // A page's address: its website.
        let d = sitetrail::domain::Domain::parse(typed)?;
        return Ok(Target::Domain(d.as_str().to_owned()));
    }
    sitetrail::focus::parse_target(typed.strip_prefix("*.").unwrap_or(typed)).map_err(CmdError::from)
}

fn parse_kind(kind: &str) -> CmdResult<Kind> {
    Kind::parse(kind)
        .ok_or_else(|| CmdError::invalid("A kind is max (a limit: at most) or min (a goal: at least)."))
}

fn parse_period(period: &str) -> CmdResult<Period> {
    Period::parse(period).ok_or_else(|| CmdError::invalid("A period is day or week."))
}

/// The limits and goals with their progress, and whether the user was asked about reminders.
#[derive(Clone, Debug, Serialize)]
pub struct LimitsView {
    /// Every limit and goal with its measured active time in its period so far.
    pub limits: Vec<Progress>,
    /// The reminders were offered and answered (on or off): they are not offered again.
    pub reminders_asked: bool,
}

fn view(s: &sitetrail::Store) -> sitetrail::Result<LimitsView> {
    Ok(LimitsView {
        limits: s.limit_progress()?,
        reminders_asked: s.stored_reminder_settings()?.is_some(),
    })
}

/// Every limit and goal with its progress today (daily) or this week (weekly).
#[tauri::command]
pub async fn list_limits(state: State<'_, AppState>) -> CmdResult<LimitsView> {
    state.blocking(|s| view(&s.store)).await
}

/// Sets a limit (`kind` max) or goal (`kind` min) of `duration` (30m, 2h, 1h30m, 1:30) on
/// `target` per `period`; setting it again changes it.
#[tauri::command]
pub async fn set_limit(
    state: State<'_, AppState>,
    target: String,
    kind: String,
    period: String,
    duration: String,
) -> CmdResult<LimitsView> {
    let target = parse_target(&target)?;
    let (kind, period) = (parse_kind(&kind)?, parse_period(&period)?);
    let minutes = sitetrail::limits::parse_minutes(&duration)?;
    sitetrail::limits::check_minutes(kind, period, minutes)?;
    state
        .blocking(move |s| {
            s.store.set_limit(&target, period, kind, minutes)?;
            view(&s.store)
        })
        .await
}

/// Removes the limit or goal of `target`, `kind` and `period` (the other kind stays).
#[tauri::command]
pub async fn remove_limit(
    state: State<'_, AppState>,
    target: String,
    kind: String,
    period: String,
) -> CmdResult<LimitsView> {
    let target = parse_target(&target)?;
    let (kind, period) = (parse_kind(&kind)?, parse_period(&period)?);
    state
        .blocking(move |s| {
            s.store.remove_limit(&target, period, kind)?;
            view(&s.store)
        })
        .await
}

/// The weekly report: each category this week against last week, each limit's state per day.
/// `day` (`YYYY-MM-DD`) picks a past week; without it, this week so far, as
/// `sitetrail report --week` has it.
#[tauri::command]
pub async fn get_week_report(state: State<'_, AppState>, day: Option<String>) -> CmdResult<WeekReport> {
    state
        .blocking(
            move |s| match day.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
                None => s.store.week_report(),
                Some(d) => s.store.week_report_of(d),
            },
        )
        .await
}
