//! The review view: websites whose category is not certain, most visited first, with "right"
//! (the shown category becomes the user's) and a picker (the existing `set_category`).

use serde::Deserialize;
use sitetrail::review::{ReviewItem, ReviewQuery};
use sitetrail::websites::Website;
use sitetrail::Category;
use tauri::State;

use super::lib;
use crate::error::CmdResult;
use crate::state::AppState;

/// The UI's review query. Unknown fields are refused.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewArgs {
    /// Rows at most (1..=1000).
    pub limit: Option<usize>,
    /// `low`, `medium`, or nothing for both.
    pub confidence: Option<String>,
}

impl ReviewArgs {
    /// Checks every field and builds the library's query.
    pub fn to_query(&self) -> CmdResult<ReviewQuery> {
        Ok(ReviewQuery::parse(self.limit, self.confidence.as_deref())?)
    }
}

/// The websites to review, most visited first.
#[tauri::command]
pub async fn list_review(
    state: State<'_, AppState>,
    query: Option<ReviewArgs>,
) -> CmdResult<Vec<ReviewItem>> {
    let q = query.unwrap_or_default().to_query()?;
    lib(state.store.run(move |s| s.review(&q)).await)
}

/// "Right": the category the view showed (`category`) becomes the user's own; refused if a
/// classifier changed it meanwhile.
#[tauri::command]
pub async fn confirm_category(
    state: State<'_, AppState>,
    domain: String,
    category: String,
) -> CmdResult<Website> {
    let category: Category = category.parse()?;
    lib(state
        .store
        .run(move |s| s.confirm_category(&domain, Some(category)))
        .await)
}
