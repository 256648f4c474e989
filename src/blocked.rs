//! The "never record" list: domains whose visits, and their subdomains' visits, are refused by
//! every path that records (`record_visit_in`: the CLI, the app, the browser extension's host;
//! and every import) and never reach a classifier.
//!
//! Invariants:
//! - A domain is blocked when it, or any domain it is a subdomain of (label by label), is on the
//!   list: `example.com` blocks `a.b.example.com`.
//! - No live job (PENDING, PROCESSING, FAILED) exists for a blocked website once the block commits:
//!   [`block_in`] settles them in the same transaction (COMPLETED, no category), no path creates a
//!   website for a blocked domain, and reclassifying a blocked website is refused. So no claim can
//!   hand a blocked domain to a classifier after the block (a call already in flight cannot be
//!   recalled). [`unblock_in`] queues such websites again.

use std::collections::HashSet;

use rusqlite::{named_params, Connection, OptionalExtension, Transaction};

use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::ids::WebsiteId;
use crate::outbox;
use crate::store::{Change, Store};
use crate::sync_log::ops::Op;
use crate::synced_list::SyncedList;
use crate::time::Timestamp;

/// An entry of the list.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BlockedDomain {
    /// The domain (its subdomains are blocked too).
    pub domain: String,
    /// When it was added.
    pub blocked_at: Timestamp,
}

/// The domain a block pattern as a person types it names: a domain (`tracker.example`, which
/// blocks its subdomains too), the same as a suffix pattern (`*.tracker.example`, the form the
/// exclusion list uses, meaning the same), or a URL. Anything else, such as a `*` elsewhere or an
/// empty label (`a..b`), is refused with a message: a pattern that is accepted always blocks what
/// it says.
pub fn parse_pattern(input: &str) -> Result<Domain> {
    let trimmed = input.trim();
    let host = trimmed.strip_prefix("*.").unwrap_or(trimmed);
    if host.contains('*') {
        return Err(Error::InvalidDomain {
            input: crate::error::truncate_chars(input, 200),
            reason: "a block pattern is a domain (`tracker.example`) or `*.` and a domain                      (`*.tracker.example`, the same: a domain is blocked with everything under it)"
                .into(),
        });
    }
    Domain::parse(host)
}

/// `domain` and every domain it is a subdomain of: `a.b.c` → `a.b.c`, `b.c`, `c`.
pub fn suffixes(domain: &str) -> impl Iterator<Item = &str> {
    std::iter::once(domain).chain(domain.match_indices('.').map(move |(i, _)| &domain[i + 1..]))
}

/// The entry that blocks `domain`, if any.
pub fn get_blocking_entry(conn: &Connection, domain: &str) -> Result<Option<String>> {
    let mut stmt = conn.prepare_cached(r#"SELECT domain FROM blocked_domain WHERE domain = :d"#)?;
    for d in suffixes(domain) {
        if let Some(found) = stmt
            .query_row(named_params! { ":d": d }, |r| r.get::<_, String>("domain"))
            .optional()?
        {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// `Err(Error::Blocked)` if `domain` is blocked.
pub fn refuse_if_blocked(conn: &Connection, domain: &str) -> Result<()> {
    match get_blocking_entry(conn, domain)? {
        Some(blocked) => Err(Error::Blocked {
            domain: domain.to_owned(),
            blocked,
        }),
        None => Ok(()),
    }
}

/// The list, read once, for a caller checking many domains in one transaction (an import batch).
#[derive(Clone, Debug, Default)]
pub struct BlockList(HashSet<String>);

impl BlockList {
    /// Reads the list.
    pub fn load(conn: &Connection) -> Result<BlockList> {
        let mut stmt = conn.prepare_cached(r#"SELECT domain FROM blocked_domain"#)?;
        let rows = stmt.query_map([], |r| r.get::<_, String>("domain"))?;
        Ok(BlockList(rows.collect::<rusqlite::Result<_>>()?))
    }

    /// True if `domain` or a domain it belongs to is on the list.
    pub fn blocks(&self, domain: &str) -> bool {
        !self.0.is_empty() && suffixes(domain).any(|d| self.0.contains(d))
    }
}

/// Every entry, by domain.
pub fn list_blocked(conn: &Connection) -> Result<Vec<BlockedDomain>> {
    let mut stmt = conn.prepare_cached(r#"SELECT domain, blocked_at FROM blocked_domain ORDER BY domain"#)?;
    let rows = stmt.query_map([], |r| {
        Ok(BlockedDomain {
            domain: r.get("domain")?,
            blocked_at: r.get("blocked_at")?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// `%.domain` for LIKE, with `%`, `_` and `\` matched literally.
fn subdomain_pattern(domain: &str) -> String {
    let mut p = String::from("%.");
    for c in domain.chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p
}

/// The websites of `domain` and its subdomains.
fn list_websites_under(conn: &Connection, domain: &str) -> Result<Vec<(WebsiteId, String, bool)>> {
    let mut stmt = conn.prepare_cached(
        r#"SELECT id, domain, category IS NULL AS uncategorized FROM website
           WHERE domain = :d OR domain LIKE :pattern ESCAPE '\'"#,
    )?;
    let rows = stmt.query_map(
        named_params! { ":d": domain, ":pattern": subdomain_pattern(domain) },
        |r| Ok((r.get("id")?, r.get("domain")?, r.get("uncategorized")?)),
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The list as it is synced: a register per domain (`block:<domain>`), [`Op::Block`] on the wire.
const LIST: SyncedList = SyncedList {
    insert: r#"INSERT INTO blocked_domain (domain, blocked_at) VALUES (:key, :now)
               ON CONFLICT (domain) DO NOTHING"#,
    delete: r#"DELETE FROM blocked_domain WHERE domain = :key"#,
    register_key: crate::sync_log::local::block_key,
    op: block_op,
};

fn block_op(domain: &str, blocked: bool) -> Op {
    Op::Block {
        domain: domain.to_owned(),
        blocked,
    }
}

/// Adds `domain` to the list (true if it was not on it) and settles the live jobs of its websites
/// and their subdomains' in the same transaction, so none is classified from now on.
pub fn block_in(tx: &Transaction<'_>, domain: &Domain, now: Timestamp) -> Result<bool> {
    let added = LIST.add_in(tx, domain.as_str(), now)?;
    for (id, _, _) in list_websites_under(tx, domain.as_str())? {
        outbox::settle_job_for_website(tx, id)?;
    }
    Ok(added)
}

/// Removes `domain` from the list (true if it was on it) and queues again the websites it kept
/// from being classified (not classified yet, and not blocked by another entry).
pub fn unblock_in(tx: &Transaction<'_>, domain: &Domain, now: Timestamp) -> Result<bool> {
    let removed = LIST.remove_in(tx, domain.as_str())?;
    if removed {
        for (id, site, uncategorized) in list_websites_under(tx, domain.as_str())? {
            if uncategorized && get_blocking_entry(tx, &site)?.is_none() {
                outbox::requeue_job_for_website(tx, id, now)?;
            }
        }
    }
    Ok(removed)
}

impl Store {
    /// Blocks `domain` (typed as a person would: [`parse_pattern`]) and its subdomains; true if
    /// newly added.
    pub fn block_domain(&self, domain: &str) -> Result<bool> {
        let domain = parse_pattern(domain)?;
        let now = self.now();
        self.write(Change::Websites | Change::Outbox, |tx| block_in(tx, &domain, now))
    }

    /// Takes `domain` off the list; true if it was on it.
    pub fn unblock_domain(&self, domain: &str) -> Result<bool> {
        let domain = parse_pattern(domain)?;
        let now = self.now();
        self.write(Change::Websites | Change::Outbox, |tx| {
            unblock_in(tx, &domain, now)
        })
    }

    /// The list.
    pub fn blocked_domains(&self) -> Result<Vec<BlockedDomain>> {
        self.with_conn(list_blocked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_domain_is_covered_by_itself_and_its_parents() {
        let all: Vec<&str> = suffixes("a.b.example.com").collect();
        assert_eq!(all, ["a.b.example.com", "b.example.com", "example.com", "com"]);
        let list = BlockList(["example.com".to_owned()].into_iter().collect());
        assert!(list.blocks("example.com"));
        assert!(list.blocks("mail.example.com"));
        assert!(!list.blocks("notexample.com"));
        assert!(!list.blocks("example.community"));
        assert!(!BlockList::default().blocks("example.com"));
        assert_eq!(subdomain_pattern("a_b.example"), "%.a\\_b.example");
    }
}
