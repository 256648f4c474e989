//! Websites and their categories: listing them, and the user's own choices.
//!
//! A category the user sets (`category_source = 'user'`) is final: the worker only writes a
//! category where there is none or a provisional built-in one, and setting one settles the
//! website's outbox job in the same transaction so a worker holding it is stale. Every category
//! carries a confidence (`category_confidence`; the user's are `high`). Categories other devices
//! gave (synced) are written here too, and a website new here gets the ones that waited for it
//! ([`apply_synced_categories_in`]).

use rusqlite::{named_params, Connection, OptionalExtension, Transaction};

use crate::category::{Category, CategorySource};
use crate::confidence::Confidence;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::ids::WebsiteId;
use crate::outbox;
use crate::store::{Change, Store};
use crate::sync_log::local;
use crate::time::Timestamp;

/// A website row.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Website {
    /// Its id.
    pub id: WebsiteId,
    /// Its normalised domain.
    pub domain: String,
    /// Its favicon, if known.
    pub favicon_url: Option<String>,
    /// Its category id, once classified.
    pub category: Option<Category>,
    /// Who set the category: `ai`, `builtin` or `user`.
    pub category_source: Option<CategorySource>,
    /// How sure the category is: `high`, `medium` or `low`.
    pub category_confidence: Option<Confidence>,
    /// Which built-in rule gave the category (`map`, `word`, `user`, ...), if one did.
    pub category_rule: Option<String>,
    /// When it was classified.
    pub classified_at: Option<Timestamp>,
    /// When it was first seen.
    pub created_at: Timestamp,
    /// Row version.
    pub version: i64,
}

/// How to classify a website again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reclassify {
    /// Ask the remote provider even where the built-in answer is certain.
    pub ai: bool,
}

/// Which websites to list.
#[derive(Clone, Debug, Default)]
pub struct WebsiteFilter {
    /// Only websites in this category.
    pub category: Option<Category>,
    /// Only websites without a category.
    pub uncategorized: bool,
}

fn website_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Website> {
    Ok(Website {
        id: r.get("id")?,
        domain: r.get("domain")?,
        favicon_url: r.get("favicon_url")?,
        category: r.get("category")?,
        category_source: r.get("category_source")?,
        category_confidence: r.get("category_confidence")?,
        category_rule: r.get("category_rule")?,
        classified_at: r.get("classified_at")?,
        created_at: r.get("created_at")?,
        version: r.get("version")?,
    })
}

/// Websites matching `filter`, by domain.
pub fn list_websites(conn: &Connection, filter: &WebsiteFilter) -> Result<Vec<Website>> {
    let mut stmt = conn.prepare_cached(
        r#"SELECT id, domain, favicon_url, category, category_source, category_confidence, category_rule,
                  classified_at, created_at, version
           FROM website
           WHERE (:category IS NULL OR category = :category)
             AND (:uncategorized = 0 OR category IS NULL)
           ORDER BY domain"#,
    )?;
    let rows = stmt.query_map(
        named_params! { ":category": filter.category, ":uncategorized": filter.uncategorized },
        website_from_row,
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The website with `domain`.
pub fn get_website_by_domain(conn: &Connection, domain: &Domain) -> Result<Website> {
    conn.prepare_cached(
        r#"SELECT id, domain, favicon_url, category, category_source, category_confidence, category_rule,
                  classified_at, created_at, version
           FROM website WHERE domain = :domain"#,
    )?
    .query_row(named_params! { ":domain": domain.as_str() }, website_from_row)
    .optional()?
    .ok_or_else(|| Error::NotFound {
        what: "website",
        key: domain.to_string(),
    })
}

/// The user's own categories (`category_source = 'user'`), `domain → category`, for the
/// built-in classifier's first rule. A stored value outside the taxonomy is an error.
pub fn list_user_categories(conn: &Connection) -> Result<std::collections::HashMap<String, Category>> {
    let mut stmt =
        conn.prepare_cached(r#"SELECT domain, category FROM website WHERE category_source = 'user'"#)?;
    let rows = stmt.query_map([], |r| {
        Ok((r.get::<_, String>("domain")?, r.get::<_, Category>("category")?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Sets the user's own category for `site` in the caller's transaction and settles its job.
pub fn set_user_category_in(
    tx: &Transaction<'_>,
    site: &Website,
    category: Category,
    now: Timestamp,
) -> Result<()> {
    tx.prepare_cached(
        r#"UPDATE website
           SET category = :category, category_source = :source, classified_at = :now,
               category_confidence = 'high', category_rule = 'user', version = version + 1
           WHERE id = :id"#,
    )?
    .execute(named_params! {
        ":id": site.id, ":category": category, ":source": CategorySource::User, ":now": now,
    })?;
    local::queue_register_in(
        tx,
        &local::user_key(&site.domain),
        Some(category.id()),
        &crate::sync_log::ops::Op::Category {
            domain: site.domain.clone(),
            category: category.id().to_owned(),
            source: CategorySource::User.as_str().to_owned(),
        },
    )?;
    outbox::settle_job_for_website(tx, site.id)
}

/// The id of the website of `domain` (a stored, normalised domain), if there is one.
pub fn find_website_id(conn: &Connection, domain: &str) -> Result<Option<WebsiteId>> {
    Ok(conn
        .prepare_cached(r#"SELECT id FROM website WHERE domain = :domain"#)?
        .query_row(named_params! { ":domain": domain }, |r| r.get("id"))
        .optional()?)
}

/// A website just created here: applies the categories other devices gave its domain before
/// (waiting in their sync registers since), the user's before an AI's.
pub fn apply_synced_categories_in(
    tx: &Transaction<'_>,
    website_id: WebsiteId,
    domain: &str,
    now: Timestamp,
) -> Result<()> {
    if !local::is_linked(tx)? {
        return Ok(());
    }
    if let Some(c) =
        local::get_register(tx, &local::user_key(domain))?.and_then(|r| parse_category(r.value.as_deref()))
    {
        set_synced_user_category_in(tx, website_id, domain, c, now)?;
    } else if let Some(c) =
        local::get_register(tx, &local::ai_key(domain))?.and_then(|r| parse_category(r.value.as_deref()))
    {
        write_synced_ai_category_in(tx, website_id, c, now)?;
    }
    Ok(())
}

fn parse_category(v: Option<&str>) -> Option<Category> {
    v?.parse().ok()
}

/// Another device's user category `c` for the website `id` of `domain`: set like the user's own
/// here, without queueing it again.
pub(crate) fn set_synced_user_category_in(
    tx: &Transaction<'_>,
    id: WebsiteId,
    domain: &str,
    c: Category,
    now: Timestamp,
) -> Result<()> {
    let site = get_website_by_domain(tx, &Domain::parse(domain)?)?;
    debug_assert_eq!(site.id, id);
    local::applying(|| set_user_category_in(tx, &site, c, now))
}

/// Another device's AI category `c` for the website `id`.
pub(crate) fn write_synced_ai_category_in(
    tx: &Transaction<'_>,
    id: WebsiteId,
    c: Category,
    now: Timestamp,
) -> Result<()> {
    // Only over no category or a built-in one (never the user's); the website's job is then
    // done: this device does not ask a provider again.
    if crate::provisional::write_classifier_category(
        tx,
        id,
        c,
        CategorySource::Ai,
        Confidence::Medium,
        None,
        now,
    )? {
        outbox::settle_job_for_website(tx, id)?;
    }
    Ok(())
}

impl Store {
    /// Websites matching `filter`.
    pub fn websites(&self, filter: &WebsiteFilter) -> Result<Vec<Website>> {
        self.with_conn(|c| list_websites(c, filter))
    }

    /// The website named by `domain` (typed as a person would: `WWW.Example.com` works).
    pub fn website(&self, domain: &str) -> Result<Website> {
        let domain = Domain::parse(domain)?;
        self.with_conn(|c| get_website_by_domain(c, &domain))
    }

    /// Sets the user's own category for `domain`; the AI never overwrites it. The website's
    /// classification job is settled in the same transaction.
    pub fn set_user_category(&self, domain: &str, category: Category) -> Result<Website> {
        let domain = Domain::parse(domain)?;
        let now = self.now();
        self.write(Change::Websites | Change::Outbox, |tx| {
            let site = get_website_by_domain(tx, &domain)?;
            set_user_category_in(tx, &site, category, now)?;
            get_website_by_domain(tx, &domain)
        })
    }

    /// Clears `domain`'s category (whoever set it) and queues it to be classified again: the
    /// worker gives it the built-in category at once, and asks the remote provider (if one is
    /// configured) only where that is not certain;
    /// refused for a blocked domain (it is never sent to a classifier).
    pub fn reclassify(&self, domain: &str) -> Result<Website> {
        self.reclassify_with(domain, Reclassify::default())
    }

    /// Like [`Store::reclassify`], with `how.ai`: the remote provider is asked even where the
    /// built-in answer is certain ("classify again with the AI").
    pub fn reclassify_with(&self, domain: &str, how: Reclassify) -> Result<Website> {
        let domain = Domain::parse(domain)?;
        let now = self.now();
        self.write(Change::Websites | Change::Outbox, |tx| {
            let site = get_website_by_domain(tx, &domain)?;
            crate::blocked::refuse_if_blocked(tx, &site.domain)?;
            tx.prepare_cached(
                r#"UPDATE website
                   SET category = NULL, category_source = NULL, category_confidence = NULL,
                       category_rule = NULL, classified_at = NULL, version = version + 1
                   WHERE id = :id"#,
            )?
            .execute(named_params! { ":id": site.id })?;
            outbox::requeue_job_for_website(tx, site.id, now)?;
            crate::provisional::set_remote_requested(tx, site.id, how.ai)?;
            get_website_by_domain(tx, &domain)
        })
    }
}
