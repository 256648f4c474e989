//! The hosts never sent to a remote provider, as the user keeps them on all of their devices:
//! the list in the database (`excluded_host`), edited with `sitetrail exclusions` and in the
//! app's Settings, and synced to the user's other devices like the never-record list (a
//! last-writer-wins register per pattern, [`crate::sync`]).
//!
//! The settings' `exclusions` (the file, `SITETRAIL_EXCLUSIONS`, `--exclude`) add to this list on
//! their machine only. The worker reads the list at each local pass and each claim
//! ([`crate::worker`]), so a host added here on any device is answered by the built-in rules from
//! the next claim on, on every device that has synced it. Patterns are stored normalised, in the
//! form they are matched in: `bank.example` (that domain) or `*.corp.example` (the suffix and
//! everything under it).

use rusqlite::{Connection, Transaction};

use crate::classify::privacy::{normalise_pattern, Exclusions};
use crate::domain::unicode_form;
use crate::error::Result;
use crate::store::{Change, Store};
use crate::sync_log::ops::Op;
use crate::synced_list::SyncedList;
use crate::time::Timestamp;

/// An entry of the list.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ExcludedHost {
    /// The pattern: a domain, or `*.` and a domain.
    pub pattern: String,
    /// When it was added (here, or on the device it came from when it was synced).
    pub excluded_at: Timestamp,
}

/// `raw` as it is stored and matched: `bank.example` or `*.corp.example`, normalised like a
/// domain. Refused, naming it, if it is not a host pattern.
pub fn canonical(raw: &str) -> Result<String> {
    let (suffix, host) = normalise_pattern(raw)?;
    Ok(if suffix { format!("*.{host}") } else { host })
}

/// `pattern` (as stored) as a person reads it: international names in their own script
/// (`*.münchen-bank.example`, not `*.xn--mnchen-bank-thb.example`).
pub fn display(pattern: &str) -> String {
    match pattern.strip_prefix("*.") {
        Some(host) => format!("*.{}", unicode_form(host)),
        None => unicode_form(pattern).into_owned(),
    }
}

/// True if `raw` (as typed, or as a settings file holds it) is on `list`, once normalised: how a
/// settings file's own exclusions are told apart from the shared list's.
pub fn is_listed(list: &[ExcludedHost], raw: &str) -> bool {
    canonical(raw).is_ok_and(|c| list.iter().any(|e| e.pattern == c))
}

/// Every entry, by pattern.
pub fn list_in(conn: &Connection) -> Result<Vec<ExcludedHost>> {
    let mut stmt =
        conn.prepare_cached(r#"SELECT pattern, excluded_at FROM excluded_host ORDER BY pattern"#)?;
    let rows = stmt.query_map([], |r| {
        Ok(ExcludedHost {
            pattern: r.get("pattern")?,
            excluded_at: r.get("excluded_at")?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The list as the router matches it. A stored pattern that no longer parses (written by a
/// newer build) is left out rather than refusing the whole list.
pub fn load(conn: &Connection) -> Result<Exclusions> {
    let patterns: Vec<String> = list_in(conn)?.into_iter().map(|e| e.pattern).collect();
    Ok(Exclusions::parse(&patterns).unwrap_or_else(|_| {
        let ok: Vec<&String> = patterns.iter().filter(|p| normalise_pattern(p).is_ok()).collect();
        Exclusions::parse(&ok).unwrap_or_default()
    }))
}

/// The list as it is synced: a register per pattern (`exclude:<pattern>`), [`Op::Exclude`] on
/// the wire.
const LIST: SyncedList = SyncedList {
    insert: r#"INSERT INTO excluded_host (pattern, excluded_at) VALUES (:key, :now)
               ON CONFLICT (pattern) DO NOTHING"#,
    delete: r#"DELETE FROM excluded_host WHERE pattern = :key"#,
    register_key: crate::sync_log::local::exclude_key,
    op: exclude_op,
};

fn exclude_op(pattern: &str, excluded: bool) -> Op {
    Op::Exclude {
        pattern: pattern.to_owned(),
        excluded,
    }
}

/// Adds `pattern` (already [`canonical`]); true if it was not on the list.
pub fn exclude_in(tx: &Transaction<'_>, pattern: &str, now: Timestamp) -> Result<bool> {
    LIST.add_in(tx, pattern, now)
}

/// Takes `pattern` (already [`canonical`]) off the list; true if it was on it. Websites answered
/// by the built-in rules while it was excluded keep their answer (`sitetrail reclassify` asks
/// the provider about one).
pub fn include_in(tx: &Transaction<'_>, pattern: &str) -> Result<bool> {
    LIST.remove_in(tx, pattern)
}

impl Store {
    /// Adds a pattern (as typed: [`canonical`]) to the list; returns it as stored and true if it
    /// was new.
    pub fn exclude_host(&self, raw: &str) -> Result<(String, bool)> {
        let pattern = canonical(raw)?;
        let now = self.now();
        let added = self.write(Change::Outbox, |tx| exclude_in(tx, &pattern, now))?;
        Ok((pattern, added))
    }

    /// Takes a pattern (as typed) off the list; returns it as stored and true if it was on it.
    pub fn include_host(&self, raw: &str) -> Result<(String, bool)> {
        let pattern = canonical(raw)?;
        let removed = self.write(Change::Outbox, |tx| include_in(tx, &pattern))?;
        Ok((pattern, removed))
    }

    /// Makes the list `wanted` (as typed) in one transaction: what is missing is added, what is
    /// not wanted removed, each change synced. Every pattern is checked before anything changes.
    /// Returns the list as stored.
    pub fn set_excluded_hosts<S: AsRef<str>>(&self, wanted: &[S]) -> Result<Vec<ExcludedHost>> {
        let mut patterns = wanted
            .iter()
            .map(|p| canonical(p.as_ref()))
            .collect::<Result<Vec<_>>>()?;
        patterns.sort();
        patterns.dedup();
        let now = self.now();
        self.write(Change::Outbox, |tx| {
            for old in list_in(tx)? {
                if patterns.binary_search(&old.pattern).is_err() {
                    include_in(tx, &old.pattern)?;
                }
            }
            for p in &patterns {
                exclude_in(tx, p, now)?;
            }
            list_in(tx)
        })
    }

    /// The list.
    pub fn excluded_hosts(&self) -> Result<Vec<ExcludedHost>> {
        self.with_conn(list_in)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_stored_as_they_are_matched() {
        assert_eq!(canonical(" *.Corp.Example. ").unwrap(), "*.corp.example");
        assert_eq!(canonical("www.Bank.example").unwrap(), "bank.example");
        assert!(canonical("*").is_err());
        assert!(canonical("a..b").is_err());
        let stored = canonical("*.MÜNCHEN-bank.example.").unwrap();
        assert_eq!(stored, "*.xn--mnchen-bank-thb.example");
        assert_eq!(display(&stored), "*.münchen-bank.example");
        assert_eq!(display(&canonical("Bücher.example").unwrap()), "bücher.example");
    }
}
