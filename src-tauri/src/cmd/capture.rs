//! Live capture and time spent: linking browsers to the extension's native host (the same as
//! `sitetrail browser-link`), the overview's time per category per day and top websites by time,
//! and the time of the visits a history page shows.

use serde::Serialize;
use sitetrail::capture::contact::Contact;
use sitetrail::capture::link::{self, LinkBrowser, LinkScope, LinkStatus, LinkTarget, EXTENSION_ID};
use sitetrail::ids::VisitId;
use sitetrail::time_spent::{DayTime, TimeRow, VisitTime};
use tauri::State;

use super::{lib, parse_ids};
use crate::error::{CmdError, CmdResult};
use crate::state::{AppPaths, AppState};

/// One browser's link as the settings view shows it.
#[derive(Clone, Debug, Serialize)]
pub struct LinkView {
    /// `chromium`, `chrome`, `brave`, `edge`, `vivaldi` or `firefox`.
    pub browser: &'static str,
    /// "Google Chrome".
    pub product: &'static str,
    /// True if the browser finds a host manifest: the user's own or the package's system-wide one.
    pub linked: bool,
    /// Which one it reads: `user`, `system` or `none`.
    pub scope: &'static str,
    /// The package's system-wide manifest for this browser, if there is one.
    pub system_manifest: Option<String>,
    /// True if the browser reads a working link to this app's database and its extension has
    /// talked to the host there.
    pub recording: bool,
    /// True if Link would change something: no link, or only a system-wide one that does not
    /// serve this database (another one, or broken). Not when the package's link already does.
    pub can_link: bool,
    /// True if there is a link of the user's own to remove (a system-wide one is the package's).
    pub can_unlink: bool,
    /// The database the link writes to.
    pub db: Option<String>,
    /// True if that is this app's database.
    pub this_db: bool,
    /// What is wrong with the link, if something is.
    pub problem: Option<String>,
    /// The manifest the browser reads (or where the user's own would go).
    pub manifest: String,
    /// When this browser's extension last talked to this database (RFC 3339); `None` until it
    /// has connected: a manifest alone does not make a browser "recording".
    pub heard_at: Option<String>,
    /// The extension's version, as it said.
    pub extension_version: Option<String>,
}

/// Every browser's link, and what the user needs to load the extension.
#[derive(Clone, Debug, Serialize)]
pub struct LinksView {
    /// One per browser.
    pub links: Vec<LinkView>,
    /// The `sitetrail` command the browsers would start, if found.
    pub cli: Option<String>,
    /// Why linking cannot work here, if it cannot (no `sitetrail` command, Windows).
    pub problem: Option<String>,
    /// The folder to choose in "Load unpacked", when this build knows it.
    pub extension_dir: Option<String>,
    /// The Firefox extension's package (`.xpi`), when it has been built beside this build's sources.
    pub firefox_package: Option<String>,
    /// The extension's id (the manifest names it).
    pub extension_id: &'static str,
}

fn view(mut status: LinkStatus, db: &std::path::Path, contacts: &[Contact]) -> LinkView {
    status.hear(contacts, db);
    let serves = status.serves(db);
    LinkView {
        heard_at: status.heard_at.map(sitetrail::Timestamp::to_rfc3339),
        extension_version: status.extension_version.clone(),
        browser: status.browser.as_str(),
        product: status.browser.product(),
        linked: status.linked,
        scope: status.scope.as_str(),
        system_manifest: status.system_manifest.as_ref().map(|m| m.display().to_string()),
        recording: status.recording,
        can_link: match status.scope {
            LinkScope::None => true,
            LinkScope::System => !serves,
            LinkScope::User => false,
        },
        can_unlink: status.scope == LinkScope::User,
        this_db: status.db.as_deref().is_some_and(|d| link::same_file(d, db)),
        db: status.db.map(|d| d.display().to_string()),
        problem: status.problem,
        manifest: status.manifest.display().to_string(),
    }
}

/// The links of every browser, with when each one's extension last talked to this database
/// (file-system and database work: run it on a blocking thread).
fn links(paths: &AppPaths, store: &sitetrail::Store) -> LinksView {
    // Without the contacts the links still show; they just claim nothing is recording.
    let contacts = store.extension_contacts().unwrap_or_else(|e| {
        tracing::warn!(error = %e, "could not read the extensions' contacts");
        Vec::new()
    });
    let roots = paths.roots();
    let problem = match (&roots, &paths.cli) {
        (None, _) => Some("No home directory was found, so no browser can be linked.".to_owned()),
        (_, None) => Some(
            "The sitetrail command, which the browsers start to store what the extension records, was not \
             found next to the app or on your PATH. Install Sitetrail's command-line tool with the app, then \
             try again."
                .to_owned(),
        ),
        _ if cfg!(windows) => Some("Linking browsers on Windows is not supported yet.".to_owned()),
        _ => None,
    };
    LinksView {
        links: roots
            .as_ref()
            .map(|r| {
                link::status_all(r)
                    .into_iter()
                    .map(|s| view(s, &paths.db, &contacts))
                    .collect()
            })
            .unwrap_or_default(),
        cli: paths.cli.as_ref().map(|c| c.display().to_string()),
        problem,
        extension_dir: sitetrail::capture::link::extension_dir().map(|d| d.display().to_string()),
        firefox_package: link::firefox_package().map(|p| p.display().to_string()),
        extension_id: EXTENSION_ID,
    }
}

fn target(paths: &AppPaths, browser: &str) -> CmdResult<LinkTarget> {
    let browser: LinkBrowser = browser.parse()?;
    let roots = paths
        .roots()
        .ok_or_else(|| CmdError::unavailable("No home directory was found."))?;
    Ok(LinkTarget::new(browser, None, &roots)?)
}

/// Runs file-system work on the blocking pool (`sitetrail::blocking::run`).
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> CmdResult<T> + Send + 'static) -> CmdResult<T> {
    sitetrail::blocking::run(move || Ok(f())).await?
}

/// Which browsers are linked, and to which database.
#[tauri::command]
pub async fn get_browser_links(state: State<'_, AppState>) -> CmdResult<LinksView> {
    let (paths, store) = (state.paths.clone(), state.store.clone());
    blocking(move || Ok(links(&paths, &store))).await
}

/// Links `browser` to this app's database (the host manifest where it looks for it).
#[tauri::command]
pub async fn link_browser(state: State<'_, AppState>, browser: String) -> CmdResult<LinksView> {
    let (paths, store) = (state.paths.clone(), state.store.clone());
    blocking(move || {
        let target = target(&paths, &browser)?;
        let cli = paths.cli.clone().ok_or_else(|| {
            CmdError::unavailable(
                "The sitetrail command was not found next to the app or on PATH; build or install it first.",
            )
        })?;
        link::install(&target, &cli, &paths.db)?;
        Ok(links(&paths, &store))
    })
    .await
}

/// Removes the link of `browser`.
#[tauri::command]
pub async fn unlink_browser(state: State<'_, AppState>, browser: String) -> CmdResult<LinksView> {
    let (paths, store) = (state.paths.clone(), state.store.clone());
    blocking(move || {
        link::uninstall(&target(&paths, &browser)?)?;
        Ok(links(&paths, &store))
    })
    .await
}

/// The overview's time charts.
#[derive(Clone, Debug, Serialize)]
pub struct TimeSummary {
    /// The last 30 local days, oldest first (the last 7 are the 7-day chart), each with its time
    /// per category; a day with no visits has `total.visits == 0`.
    pub days: Vec<DayTime>,
    /// The websites with the most time over the last 30 days.
    pub top_websites: Vec<TimeRow>,
}

/// Days in the overview's longest chart.
pub const SUMMARY_DAYS: u32 = 30;

/// Time per category per day (30 days) and the top websites by time.
#[tauri::command]
pub async fn get_time_summary(state: State<'_, AppState>) -> CmdResult<TimeSummary> {
    lib(state
        .store
        .run(|s| {
            Ok(TimeSummary {
                days: s.recent_days(SUMMARY_DAYS)?,
                top_websites: s.top_websites_by_time(SUMMARY_DAYS, super::overview::TOP_WEBSITES)?,
            })
        })
        .await)
}

/// The known time of each of these visits (those without one are left out).
#[tauri::command]
pub async fn get_visit_times(state: State<'_, AppState>, ids: Vec<String>) -> CmdResult<Vec<VisitTime>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<VisitId> = parse_ids("visit", &ids)?;
    lib(state.store.run(move |s| s.visit_times(&ids)).await)
}
