//! The history view: keyset pages of visits with search and filters, and the user's say over a
//! website's category.

use serde::Deserialize;
use sitetrail::history::{CategoryFilter, HistoryPage, HistoryQuery, MAX_PAGE};
use sitetrail::ids::VisitId;
use sitetrail::websites::{Reclassify, Website};
use sitetrail::Category;
use tauri::{AppHandle, Runtime, State};

use super::{lib, parse_time, MAX_SEARCH_CHARS};
use crate::error::{CmdError, CmdResult};
use crate::state::AppState;

/// Rows per page when the UI does not say.
pub const DEFAULT_PAGE: usize = 100;

/// The UI's history query. Unknown fields are refused, so a typo in the UI fails loudly.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryArgs {
    /// Words to find in the domain, title or URL (every word, as a word or its beginning).
    pub search: Option<String>,
    /// A category id, `uncategorized`, or nothing for all.
    pub category: Option<String>,
    /// Earliest visit time (RFC 3339).
    pub from: Option<String>,
    /// Latest visit time (RFC 3339).
    pub to: Option<String>,
    /// The previous page's `next_cursor`.
    pub before: Option<String>,
    /// Rows per page (1..=500).
    pub limit: Option<usize>,
    /// Only visits recorded on the device of this name (sync).
    pub device: Option<String>,
}

impl HistoryArgs {
    /// Checks every field and builds the library's query.
    pub fn to_query(&self) -> CmdResult<HistoryQuery> {
        let search = self.search.as_deref().map(str::trim).filter(|s| !s.is_empty());
        if search.is_some_and(|s| s.chars().count() > MAX_SEARCH_CHARS) {
            return Err(CmdError::invalid(format!(
                "Search for at most {MAX_SEARCH_CHARS} characters."
            )));
        }
        let category = match self.category.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
            None => None,
            Some("uncategorized") => Some(CategoryFilter::Uncategorized),
            Some(id) => Some(CategoryFilter::Is(id.parse::<Category>()?)),
        };
        let before = match self.before.as_deref().filter(|b| !b.is_empty()) {
            None => None,
            Some(b) => Some(
                b.parse::<VisitId>()
                    .map_err(|_| CmdError::invalid("The page cursor is not valid; reload the history."))?,
            ),
        };
        let limit = self.limit.unwrap_or(DEFAULT_PAGE);
        if limit == 0 || limit > MAX_PAGE {
            return Err(CmdError::invalid(format!(
                "A page holds 1 to {MAX_PAGE} rows, not {limit}."
            )));
        }
        let from = parse_time("from", self.from.as_deref())?;
        let to = parse_time("to", self.to.as_deref())?;
        if let (Some(f), Some(t)) = (from, to) {
            if f > t {
                return Err(CmdError::invalid("The date range ends before it starts."));
            }
        }
        let device = self.device.as_deref().map(str::trim).filter(|d| !d.is_empty());
        if device.is_some_and(|d| d.chars().count() > sitetrail::sync::engine::MAX_DEVICE_NAME) {
            return Err(CmdError::invalid("That device name is too long."));
        }
        Ok(HistoryQuery {
            search: search.map(str::to_owned),
            category,
            from,
            to,
            before,
            limit,
            device: device.map(str::to_owned),
            ..HistoryQuery::default()
        })
    }
}

/// One page of history, newest first.
#[tauri::command]
pub async fn list_history(state: State<'_, AppState>, query: HistoryArgs) -> CmdResult<HistoryPage> {
    let q = query.to_query()?;
    lib(state.store.run(move |s| s.history(&q)).await)
}

/// Sets the user's own category for a website (never overwritten by a classifier).
#[tauri::command]
pub async fn set_category(
    state: State<'_, AppState>,
    domain: String,
    category: String,
) -> CmdResult<Website> {
    let category: Category = category.parse()?;
    lib(state
        .store
        .run(move |s| s.set_user_category(&domain, category))
        .await)
}

/// Clears a website's category and queues it to be classified again; with `ai`, the remote
/// provider is asked even where the built-in answer is certain ("classify again with the AI").
#[tauri::command]
pub async fn reclassify_website(
    state: State<'_, AppState>,
    domain: String,
    ai: Option<bool>,
) -> CmdResult<Website> {
    let how = Reclassify {
        ai: ai.unwrap_or(false),
    };
    lib(state.store.run(move |s| s.reclassify_with(&domain, how)).await)
}

/// Most domains one `get_favicons` call may name.
pub const MAX_FAVICON_DOMAINS: usize = 500;

/// The icons of those of `domains` that have one, as `data:` URLs (the CSP allows `img-src data:`;
/// nothing is fetched), by domain.
#[tauri::command]
pub async fn get_favicons(
    state: State<'_, AppState>,
    domains: Vec<String>,
) -> CmdResult<std::collections::HashMap<String, String>> {
    use base64::Engine;
    if domains.len() > MAX_FAVICON_DOMAINS {
        return Err(CmdError::invalid(format!(
            "Ask for at most {MAX_FAVICON_DOMAINS} icons at a time."
        )));
    }
    if domains.iter().any(|d| d.is_empty() || d.chars().count() > 253) {
        return Err(CmdError::invalid(
            "A domain is empty or longer than 253 characters.",
        ));
    }
    let icons = lib(state.store.run(move |s| s.favicons(&domains)).await)?;
    Ok(icons
        .into_iter()
        .map(|f| {
            let data = base64::engine::general_purpose::STANDARD.encode(&f.data);
            (f.domain, format!("data:{};base64,{data}", f.mime))
        })
        .collect())
}

/// How far the search index is built (an upgraded database builds it at the app's first start).
#[tauri::command]
pub async fn get_search_index(state: State<'_, AppState>) -> CmdResult<sitetrail::search::IndexStatus> {
    lib(state.store.run(sitetrail::Store::search_index_status).await)
}

/// Longest URL `open_url` accepts (characters; browsers cut long before).
pub const MAX_URL_CHARS: usize = 8_192;

/// Checks that `url` is a web address a browser should be handed: `http` or `https` only, so a
/// recorded `file:`, `javascript:` or custom-scheme URL never launches anything else.
pub fn check_web_url(url: &str) -> CmdResult<String> {
    let url = url.trim();
    if url.is_empty() || url.chars().count() > MAX_URL_CHARS {
        return Err(CmdError::invalid(format!(
            "A web address is 1 to {MAX_URL_CHARS} characters."
        )));
    }
    let scheme = url.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("http" | "https") if url.contains("://") => Ok(url.to_owned()),
        _ => Err(CmdError::invalid(
            "Only web addresses (http or https) are opened in the browser.",
        )),
    }
}

/// Opens `url` in the system's default browser (the opener plugin), off the UI thread.
#[tauri::command]
pub async fn open_url<R: Runtime>(app: AppHandle<R>, url: String) -> CmdResult<()> {
    use tauri_plugin_opener::OpenerExt;
    let url = check_web_url(&url)?;
    let opened = sitetrail::blocking::run(move || Ok(app.opener().open_url(url, None::<&str>))).await?;
    opened.map_err(|e| {
        CmdError::unavailable(format!(
            "The default browser could not be opened ({e}); copy the address instead."
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::check_web_url;

    #[test]
    fn only_web_addresses_are_handed_to_the_browser() {
        assert_eq!(check_web_url(" https://a.test/x ").unwrap(), "https://a.test/x");
        assert!(check_web_url("HTTP://a.test/").is_ok());
        for bad in [
            "file:///etc/passwd",
            "javascript:alert(1)",
            "mailto:x@a.test",
            "https:no-slashes",
            "",
            "a.test",
        ] {
            assert!(check_web_url(bad).is_err(), "{bad}");
        }
    }
}
