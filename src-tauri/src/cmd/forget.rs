//! Forgetting from the app: visits (a history row), a website (from the history and the
//! overview), the last hour, day or everything; and the never-record list.
//!
//! Every forgetting is the library's (`sitetrail::forget`): batched, resumable, and its words
//! leave the file. It runs on a blocking thread through `Store::run`; the UI hears of it through
//! the usual committed-change events.

use serde::Serialize;
use sitetrail::blocked::BlockedDomain;
use sitetrail::forget::{ForgetOptions, ForgetReport};
use sitetrail::ids::VisitId;
use sitetrail::Timestamp;
use tauri::State;

use super::{lib, parse_ids};
use crate::error::{CmdError, CmdResult};
use crate::state::AppState;

/// Longest domain accepted (characters): a DNS name is at most 253.
const MAX_DOMAIN_CHARS: usize = 253;

fn check_domain(domain: &str) -> CmdResult<String> {
    let d = domain.trim();
    if d.is_empty() || d.chars().count() > MAX_DOMAIN_CHARS {
        return Err(CmdError::invalid(
            "Name a website's domain (at most 253 characters).",
        ));
    }
    Ok(d.to_owned())
}

/// Forgets the visits `ids` (one history row may stand for several visits to the same page).
#[tauri::command]
pub async fn forget_visits(state: State<'_, AppState>, ids: Vec<String>) -> CmdResult<ForgetReport> {
    let ids: Vec<VisitId> = parse_ids("visit", &ids)?;
    lib(state.store.run(move |s| s.forget_visits(&ids)).await)
}

/// Forgets a website: every visit to it, its classification job and the website; with `block`,
/// it is never recorded again (nor its subdomains).
#[tauri::command]
pub async fn forget_website(
    state: State<'_, AppState>,
    domain: String,
    block: bool,
) -> CmdResult<ForgetReport> {
    let domain = check_domain(&domain)?;
    lib(state
        .store
        .run(move |s| s.forget_website(&domain, block, &ForgetOptions::default(), &mut |_| {}))
        .await)
}

/// The periods "forget the last …" offers.
fn since(period: &str, now: Timestamp) -> CmdResult<Timestamp> {
    let hour = std::time::Duration::from_secs(3600);
    match period {
        "hour" => Ok(now.minus(hour)),
        "day" => Ok(now.minus(hour * 24)),
        "all" => Ok(Timestamp(i64::MIN)),
        other => Err(CmdError::invalid(format!(
            "{:?} is not a period to forget (hour, day or all).",
            sitetrail::error::truncate_chars(other, 20)
        ))),
    }
}

/// Forgets every visit of the last hour, the last day, or all of them (`hour`, `day`, `all`):
/// up to now; from then on no visit of that time is recorded again.
#[tauri::command]
pub async fn forget_recent(state: State<'_, AppState>, period: String) -> CmdResult<ForgetReport> {
    let now = state.store.now();
    let from = since(&period, now)?;
    lib(state
        .store
        .run(move |s| s.forget_range(from, now, &ForgetOptions::default(), &mut |_| {}))
        .await)
}

/// The never-record list.
#[tauri::command]
pub async fn list_blocked(state: State<'_, AppState>) -> CmdResult<Vec<BlockedDomain>> {
    lib(state.store.run(sitetrail::Store::blocked_domains).await)
}

/// What a change to the list did.
#[derive(Clone, Debug, Serialize)]
pub struct BlockChange {
    /// The domain as stored.
    pub domain: String,
    /// False if the list already was that way.
    pub changed: bool,
}

/// Never records `domain` (and its subdomains) again; its websites are not classified.
#[tauri::command]
pub async fn block_domain(state: State<'_, AppState>, domain: String) -> CmdResult<BlockChange> {
    let domain = check_domain(&domain)?;
    let parsed = sitetrail::blocked::parse_pattern(&domain)?.to_string();
    let changed = lib(state.store.run(move |s| s.block_domain(&domain)).await)?;
    Ok(BlockChange {
        domain: parsed,
        changed,
    })
}

/// Records `domain` again.
#[tauri::command]
pub async fn unblock_domain(state: State<'_, AppState>, domain: String) -> CmdResult<BlockChange> {
    let domain = check_domain(&domain)?;
    let parsed = sitetrail::blocked::parse_pattern(&domain)?.to_string();
    let changed = lib(state.store.run(move |s| s.unblock_domain(&domain)).await)?;
    Ok(BlockChange {
        domain: parsed,
        changed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_are_an_hour_a_day_or_everything() {
        let now = Timestamp(10_000_000_000_000);
        assert_eq!(since("hour", now).unwrap(), Timestamp(now.0 - 3_600_000_000));
        assert_eq!(since("day", now).unwrap(), Timestamp(now.0 - 86_400_000_000));
        assert_eq!(since("all", now).unwrap(), Timestamp(i64::MIN));
        assert_eq!(
            since("week", now).unwrap_err().kind,
            sitetrail::error::ErrorKind::InvalidInput
        );
    }
}
