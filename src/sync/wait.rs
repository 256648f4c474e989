//! Waiting on the hub (a long-poll) until another device has pushed.

use std::path::Path;
use std::time::Duration;

use rusqlite::{named_params, Connection};
use uuid::Uuid;

use sitetrail_sync_wire as wire;

use super::link::get_link;
use super::session::{series, session, Session, SERIES};
use crate::blocking;
use crate::error::Result;
use crate::store::Store;

/// How many records of the other devices' series this device has applied (the count the hub's
/// long-poll compares).
fn applied_total(conn: &Connection, me: Uuid) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached(
            r#"SELECT coalesce(sum(last_idx), 0) FROM sync_applied WHERE series = :s AND device_id <> :me"#,
        )?
        .query_row(
            named_params! { ":s": SERIES, ":me": me.as_bytes().as_slice() },
            |r| r.get(0),
        )?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// What a long-poll found: whether the other devices hold records this one has not applied, and
/// how many this one had applied when it asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waited {
    /// True if a pull would bring something.
    pub more: bool,
    /// This device's count of the others' records when it asked.
    pub seen: u64,
}

/// Long-polls the hub for the other devices' records (`GET /v1/index/wait`), keeping its session
/// (the key, and the HTTP client with its open connection) from one wait to the next while the
/// link stays the same: a device waits every 25 s, and a new client each time would be a new
/// connection (and TLS handshake) each time.
#[derive(Default)]
pub struct Waiter {
    session: Option<Session>,
}

impl Waiter {
    /// A waiter with no session yet.
    pub fn new() -> Waiter {
        Waiter::default()
    }

    /// Waits on the hub (a long-poll of at most `wait`) until the other devices' records add up
    /// to more than this one has applied; `None` at once when this device is not linked. Holds
    /// no database connection while it waits. A failure drops the session, so the next wait
    /// builds it again (a key that moved, a hub that changed).
    pub async fn wait(&mut self, store: &Store, key_dir: &Path, wait: Duration) -> Result<Option<Waited>> {
        let r = self.wait_once(store, key_dir, wait).await;
        if !matches!(r, Ok(Some(_))) {
            self.session = None;
        }
        r
    }

    async fn wait_once(&mut self, store: &Store, key_dir: &Path, wait: Duration) -> Result<Option<Waited>> {
        // The link and what this device has applied, in one read.
        let st = store.clone();
        let read = blocking::run(move || {
            st.with_conn(|c| {
                Ok(match get_link(c)? {
                    Some(link) => {
                        let seen = applied_total(c, link.device_id)?;
                        Some((link, seen))
                    }
                    None => None,
                })
            })
        })
        .await?;
        let Some((link, seen)) = read else {
            return Ok(None);
        };
        let same = |s: &Session| {
            (&s.link.hub, s.link.account_id, s.link.device_id) == (&link.hub, link.account_id, link.device_id)
        };
        let s = match self.session.take() {
            Some(s) if same(&s) => s,
            _ => session(store, key_dir).await?,
        };
        let s = self.session.insert(s);
        let series = series();
        let heads = s.client.wait_index(&series, seen, wait).await?;
        let others = wire::records_of_others(&heads, Some(link.device_id), &series);
        Ok(Some(Waited {
            more: others > seen,
            seen,
        }))
    }
}
