//! The website page: one website's category (with who set it and how sure it is), whether it is
//! never recorded, its time on each of the last days and its newest visits.

use serde::Serialize;
use sitetrail::history::HistoryRow;
use sitetrail::time_spent::TimeRow;
use sitetrail::websites::Website;
use tauri::State;

use super::lib;
use crate::error::{CmdError, CmdResult};
use crate::state::AppState;

/// Days of the website page's time chart.
pub const PAGE_DAYS: u32 = 30;
/// Visits listed on the website page.
pub const PAGE_VISITS: usize = 200;

/// What the website page shows.
#[derive(Clone, Debug, Serialize)]
pub struct WebsitePage {
    /// The website and its category.
    pub website: Website,
    /// The domain as people read it (Unicode).
    pub display: String,
    /// Its time on each of the last [`PAGE_DAYS`] local days, oldest first.
    pub days: Vec<TimeRow>,
    /// Its newest visits over those days (at most [`PAGE_VISITS`]).
    pub visits: Vec<HistoryRow>,
}

/// The website page of `domain`.
#[tauri::command]
pub async fn get_website_page(state: State<'_, AppState>, domain: String) -> CmdResult<WebsitePage> {
    if domain.is_empty() || domain.chars().count() > 253 {
        return Err(CmdError::invalid("A domain is 1 to 253 characters."));
    }
    lib(state
        .store
        .run(move |s| {
            let website = s.website(&domain)?;
            let period = s.recent_period(PAGE_DAYS)?;
            Ok(WebsitePage {
                display: sitetrail::domain::unicode_form(&website.domain).into_owned(),
                days: s.website_days(&website.domain, period)?,
                visits: s.website_visits_in(&website.domain, period, PAGE_VISITS)?,
                website,
            })
        })
        .await)
}
