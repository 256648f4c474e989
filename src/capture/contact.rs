//! Which browsers' extensions have talked to this database, and when (`extension_contact`,
//! migration 0011). The native host records a contact when the extension says hello and, while it
//! sends pages, at most once a minute ([`CONTACT_EVERY`]); the app counts a browser as linked only
//! once its extension has connected, so "linked" is never claimed on the strength of a manifest
//! file alone, and a profile in any directory counts.

use std::time::Duration;

use rusqlite::{named_params, Connection, Transaction};

use crate::error::Result;
use crate::store::Store;
use crate::time::Timestamp;

/// How often a host that keeps sending pages records that it is still there.
pub const CONTACT_EVERY: Duration = Duration::from_secs(60);

/// Longest extension version kept (characters): it comes from outside.
const MAX_VERSION_CHARS: usize = 40;

/// One browser's extension and when it talked to this database.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Contact {
    /// The browser (`chromium`, `chrome`, `firefox`, ...), as its host was started for.
    pub browser: String,
    /// The first contact.
    pub first_seen_at: Timestamp,
    /// The latest contact.
    pub last_seen_at: Timestamp,
    /// The extension's version, as it said.
    pub extension_version: Option<String>,
}

/// Records that `browser`'s extension talked to the host at `now`.
pub fn record_contact_in(
    tx: &Transaction<'_>,
    browser: &str,
    extension_version: Option<&str>,
    now: Timestamp,
) -> Result<()> {
    let version = extension_version.map(|v| crate::error::truncate_chars(v, MAX_VERSION_CHARS));
    tx.prepare_cached(
        r#"INSERT INTO extension_contact (browser, first_seen_at, last_seen_at, extension_version)
           VALUES (:browser, :now, :now, :version)
           ON CONFLICT (browser) DO UPDATE
              SET last_seen_at = max(last_seen_at, excluded.last_seen_at),
                  extension_version = coalesce(excluded.extension_version, extension_version)"#,
    )?
    .execute(named_params! { ":browser": browser, ":now": now, ":version": version })?;
    Ok(())
}

/// Every browser whose extension has talked to this database, by browser.
pub fn list_contacts(conn: &Connection) -> Result<Vec<Contact>> {
    let mut stmt = conn.prepare_cached(
        r#"SELECT browser, first_seen_at, last_seen_at, extension_version
           FROM extension_contact ORDER BY browser"#,
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(Contact {
            browser: r.get("browser")?,
            first_seen_at: r.get("first_seen_at")?,
            last_seen_at: r.get("last_seen_at")?,
            extension_version: r.get("extension_version")?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

impl Store {
    /// Records that `browser`'s extension talked to this database now (no view is told: the
    /// settings view reads contacts when shown and after new visits).
    pub fn record_extension_contact(&self, browser: &str, extension_version: Option<&str>) -> Result<()> {
        let now = self.now();
        self.write(None, |tx| record_contact_in(tx, browser, extension_version, now))
    }

    /// Every browser whose extension has talked to this database.
    pub fn extension_contacts(&self) -> Result<Vec<Contact>> {
        self.with_conn(list_contacts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contact_keeps_its_first_time_and_moves_its_last() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("t.db")).unwrap();
        assert!(store.extension_contacts().unwrap().is_empty());
        let (t1, t2) = (Timestamp(1_000_000), Timestamp(5_000_000));
        store
            .write(None, |tx| record_contact_in(tx, "chromium", Some("0.1.0"), t2))
            .unwrap();
        // A late, older report does not move the time back; no version keeps the known one.
        store
            .write(None, |tx| record_contact_in(tx, "chromium", None, t1))
            .unwrap();
        store
            .write(None, |tx| {
                record_contact_in(tx, "firefox", Some(&"9".repeat(100)), t1)
            })
            .unwrap();
        let c = store.extension_contacts().unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(
            (c[0].browser.as_str(), c[0].first_seen_at, c[0].last_seen_at),
            ("chromium", t2, t2)
        );
        assert_eq!(c[0].extension_version.as_deref(), Some("0.1.0"));
        assert!(c[1].extension_version.as_ref().unwrap().chars().count() <= MAX_VERSION_CHARS);
    }
}
