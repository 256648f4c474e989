//! Storing the extension's events: visits through `record_visit_in` (website, outbox job and
//! visit in one transaction) and updates of a visit's title and active time.
//!
//! Invariants:
//! - One batch is one `BEGIN IMMEDIATE` transaction; the caller acknowledges its events only
//!   after this returns, i.e. after COMMIT. A database error rolls the whole batch back and no
//!   event of it is acknowledged, so the extension sends them all again.
//! - Every event is idempotent: a visit is stored under (`extension:<browser>`, its event id),
//!   the partial unique index `visit_source_visit_idx`, so sending it again finds the stored one;
//!   a title is set, not appended; an active time is a running total kept with `max`.
//! - An event that can never be stored (bad URL, time out of range, malformed) is rejected alone,
//!   inside a savepoint, so it leaves nothing half-written and does not hold up its batch.

use rusqlite::Transaction;

use crate::error::{Error, Result};
use crate::store::{Change, Store};
use crate::time::Timestamp;
use crate::time_spent::{set_active_ms_in, MAX_ACTIVE_MS};
use crate::visits::{
    get_visit_id_by_source_in, get_visit_url_and_time_by_source_in, record_visit_in, update_title_in,
    NewVisit,
};
use crate::visits::{MAX_VISIT_MICROS, MIN_VISIT_MICROS};

use super::protocol::{valid_id, Event, EventKind, Rejected};

/// Most events one batch may carry.
pub const MAX_EVENTS_PER_BATCH: usize = 1_000;

/// What storing a batch did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchOutcome {
    /// Ids of events now stored (newly, or already before).
    pub stored: Vec<String>,
    /// Events that will never be stored, with the reason.
    pub rejected: Vec<Rejected>,
    /// Visits newly inserted by this batch.
    pub new_visits: usize,
}

/// An event that passed the checks that need no database.
enum Checked {
    Visit {
        id: String,
        url: String,
        title: Option<String>,
        at: Timestamp,
        active_ms: Option<i64>,
    },
    Update {
        id: String,
        visit: String,
        title: Option<String>,
        active_ms: Option<i64>,
    },
}

impl Checked {
    fn id(&self) -> &str {
        match self {
            Checked::Visit { id, .. } | Checked::Update { id, .. } => id,
        }
    }
}

fn reject(id: Option<&str>, reason: impl Into<String>) -> Rejected {
    Rejected {
        id: id.filter(|i| valid_id(i)).map(str::to_owned),
        reason: super::protocol::bounded(reason),
    }
}

fn check_active(active_ms: Option<i64>) -> std::result::Result<Option<i64>, String> {
    match active_ms {
        Some(ms) if !(0..=MAX_ACTIVE_MS).contains(&ms) => {
            Err(format!("active_ms {ms} is outside 0..={MAX_ACTIVE_MS}"))
        }
        other => Ok(other),
    }
}

/// The checks that need no database: shape, ids, URL scheme and length, time range.
fn check(value: &serde_json::Value) -> std::result::Result<Checked, Rejected> {
    let raw_id = value.get("id").and_then(|v| v.as_str());
    let event: Event =
        serde_json::from_value(value.clone()).map_err(|e| reject(raw_id, format!("not an event: {e}")))?;
    let id = event.id.as_str();
    if !valid_id(id) {
        return Err(reject(None, "an event id is 1 to 64 letters, digits, - or _"));
    }
    let active_ms = check_active(event.active_ms).map_err(|r| reject(Some(id), r))?;
    match event.kind {
        EventKind::Visit => {
            let url = event.url.ok_or_else(|| reject(Some(id), "a visit needs a url"))?;
            // The URL's own checks (scheme, length, host) run in record_visit_in; failing them
            // there is rejected the same way.
            let at_ms = event
                .at
                .ok_or_else(|| reject(Some(id), "a visit needs its time (at)"))?;
            let micros = at_ms.checked_mul(1000).unwrap_or(i64::MAX);
            if !(MIN_VISIT_MICROS..MAX_VISIT_MICROS).contains(&micros) {
                return Err(reject(
                    Some(id),
                    format!("visit time {at_ms} ms is outside 1990..2200"),
                ));
            }
            Ok(Checked::Visit {
                id: id.to_owned(),
                url,
                title: event.title,
                at: Timestamp(micros),
                active_ms,
            })
        }
        EventKind::Update => {
            let visit = event
                .visit
                .filter(|v| valid_id(v))
                .ok_or_else(|| reject(Some(id), "an update needs the id of its visit"))?;
            Ok(Checked::Update {
                id: id.to_owned(),
                visit,
                title: event.title,
                active_ms,
            })
        }
    }
}

/// Errors that are the event's fault (reject it) rather than the database's (retry the batch).
fn is_event_fault(e: &Error) -> bool {
    matches!(
        e,
        Error::InvalidUrl { .. }
            | Error::InvalidDomain { .. }
            | Error::InvalidInput(_)
            | Error::InvalidConfig(_)
            | Error::UnknownCategory(_)
            | Error::NotFound { .. }
            | Error::Conflict(_)
            // A blocked domain, or a time the user forgot: never recorded, dropped (not retried).
            | Error::Blocked { .. }
            | Error::Forgotten { .. }
            | Error::Forgetting { .. }
    )
}

/// What applying one event did.
#[derive(Clone, Copy, Default)]
struct Applied {
    /// A visit was inserted.
    inserted: bool,
    /// Its website is new (with its outbox job).
    new_website: bool,
}

/// Applies one checked event.
fn apply(tx: &Transaction<'_>, source: &str, ev: &Checked, now: Timestamp) -> Result<Applied> {
    match ev {
        Checked::Visit {
            id,
            url,
            title,
            at,
            active_ms,
        } => {
            // An id is the visit's for good: sent again it must be the same page at the same
            // time, or a title meant for one page would land on another.
            if let Some((stored_url, stored_at)) = get_visit_url_and_time_by_source_in(tx, source, id)? {
                // Compared in the form URLs are stored in.
                if stored_url != crate::page_url::normalise(url)? || stored_at != *at {
                    return Err(Error::Conflict(format!(
                        "event id {id} was already stored for another page or time; the stored visit is kept"
                    )));
                }
            }
            let rec = record_visit_in(
                tx,
                &NewVisit {
                    url,
                    title: title.as_deref(),
                    visited_at: *at,
                    source,
                    source_visit_id: Some(id),
                },
                now,
            )?;
            let Some(visit_id) = rec.visit_id else {
                // Not recorded on purpose (a forgotten or blocked site): nothing to update.
                return Ok(Applied {
                    inserted: false,
                    new_website: rec.new_website,
                });
            };
            if !rec.inserted && title.is_some() {
                // Sent again, maybe with a newer title merged in while it waited.
                update_title_in(tx, visit_id, title.as_deref())?;
            }
            if let Some(ms) = active_ms {
                set_active_ms_in(tx, visit_id, *ms, now)?;
            }
            Ok(Applied {
                inserted: rec.inserted,
                new_website: rec.new_website,
            })
        }
        Checked::Update {
            visit,
            title,
            active_ms,
            ..
        } => {
            let Some(visit_id) = get_visit_id_by_source_in(tx, source, visit)? else {
                // The visit was never stored (refused, or dropped by the extension's bounded
                // queue) or has been forgotten since: an update has nothing to apply to.
                tracing::debug!(visit = %visit, "update for an unknown visit; nothing to do");
                return Ok(Applied::default());
            };
            if title.is_some() {
                update_title_in(tx, visit_id, title.as_deref())?;
            }
            if let Some(ms) = active_ms {
                set_active_ms_in(tx, visit_id, *ms, now)?;
            }
            Ok(Applied::default())
        }
    }
}

/// Why a batch of `n` events is refused, if it is: more than [`MAX_EVENTS_PER_BATCH`].
pub fn too_many_events(n: usize) -> Option<String> {
    (n > MAX_EVENTS_PER_BATCH)
        .then(|| format!("a batch holds at most {MAX_EVENTS_PER_BATCH} events, not {n}"))
}

/// Stores one batch of events from the extension of `browser` in one transaction.
#[tracing::instrument(level = "debug", skip_all, fields(source, events = events.len()))]
pub fn store_events(store: &Store, source: &str, events: &[serde_json::Value]) -> Result<BatchOutcome> {
    if let Some(why) = too_many_events(events.len()) {
        return Err(Error::InvalidInput(why));
    }
    let mut outcome = BatchOutcome::default();
    // (position in the batch, refusal), so refusals are reported in the batch's order.
    let mut refusals: Vec<(usize, Rejected)> = Vec::new();
    let mut checked = Vec::with_capacity(events.len());
    for (i, value) in events.iter().enumerate() {
        match check(value) {
            Ok(c) => checked.push((i, c)),
            Err(r) => refusals.push((i, r)),
        }
    }
    if checked.is_empty() {
        outcome.rejected = refusals.into_iter().map(|(_, r)| r).collect();
        return Ok(outcome);
    }
    let now = store.now();
    // Visits, their titles and times are what history views show (visit_time is visit data);
    // a new website also changes the websites and the outbox.
    let applied = store.write_changes(|tx, changes| {
        let mut done = Vec::with_capacity(checked.len());
        let mut refused = Vec::new();
        let mut new_visits = 0;
        for (i, ev) in &checked {
            // A savepoint per event: an event that fails its own checks leaves nothing behind;
            // a database error leaves the savepoint open and the whole transaction rolls back.
            tx.execute_batch("SAVEPOINT capture_event")?;
            match apply(tx, source, ev, now) {
                Ok(a) => {
                    tx.execute_batch("RELEASE capture_event")?;
                    *changes |= Change::Visits;
                    if a.new_website {
                        *changes |= Change::Websites | Change::Outbox;
                    }
                    new_visits += usize::from(a.inserted);
                    done.push(ev.id().to_owned());
                }
                Err(e) if is_event_fault(&e) => {
                    tx.execute_batch("ROLLBACK TO capture_event; RELEASE capture_event")?;
                    refused.push((*i, reject(Some(ev.id()), e.to_string())));
                }
                Err(e) => return Err(e),
            }
        }
        Ok((done, refused, new_visits))
    })?;
    let (done, refused, new_visits) = applied;
    outcome.stored = done;
    refusals.extend(refused);
    refusals.sort_by_key(|(i, _)| *i);
    outcome.rejected = refusals.into_iter().map(|(_, r)| r).collect();
    outcome.new_visits = new_visits;
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn checks_refuse_what_can_never_be_stored() {
        let reason = |v: serde_json::Value| match check(&v) {
            Err(r) => r.reason,
            Ok(_) => panic!("accepted {v}"),
        };
        assert!(reason(json!({"id": "a", "kind": "visit", "at": 1_800_000_000_000i64})).contains("url"));
        assert!(reason(json!({"id": "a", "kind": "visit", "url": "https://a.test/"})).contains("time"));
        assert!(
            reason(json!({"id": "a", "kind": "visit", "url": "https://a.test/", "at": 5})).contains("1990")
        );
        assert!(reason(json!({"id": "a", "kind": "update"})).contains("visit"));
        assert!(
            reason(json!({"id": "a", "kind": "update", "visit": "v", "active_ms": -1})).contains("active_ms")
        );
        assert!(reason(json!({"id": "a b", "kind": "update", "visit": "v"})).contains("id"));
        assert!(reason(json!({"id": "a", "kind": "teleport"})).contains("not an event"));
        assert!(reason(json!("just a string")).contains("not an event"));
        assert!(check(
            &json!({"id": "a", "kind": "visit", "url": "https://a.test/", "at": 1_800_000_000_000i64})
        )
        .is_ok());
    }
}
