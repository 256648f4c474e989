//! Titles on the device: which websites the worker's local pass judges again from their pages'
//! titles and paths, and reading those titles (migration 0009, `website_title_judging`).
//!
//! A website gets a row when the local pass writes a built-in answer that a list did not give
//! (the learned model's, or the weak rules'), and only if that answer is not certain. Its titled
//! visits are counted: an inserted one by the code that inserts it ([`TitledVisits`], once per
//! transaction and website), a title set later by a trigger; at [`FIRST_JUDGING`] and again at
//! [`SECOND_JUDGING`] the pass reads the titles (at most [`MAX_PAGES`] of the newest visits, found through the search
//! index: there is no index of visits by website, on purpose) and judges the website with them;
//! after the second judging the row is deleted. A new row is due at once, so a website that came
//! with many titled visits (an import) is judged with them at the next pass.
//!
//! Invariants kept here:
//! - only a `builtin` category is ever replaced (the pass writes it with
//!   `provisional::write_classifier_category`, guarded like every classifier write): never the
//!   user's, never an AI's, and [`list_due`] lists only websites whose category is `builtin`;
//! - titles are read, never copied: what the pass sees of a forgotten visit is nothing;
//! - the rows due are found through `website_title_judging_due_idx`, so the look costs the same at
//!   any history size.

use std::collections::HashMap;

use rusqlite::{named_params, Connection, Transaction};

use crate::classify::builtin::Judgement;
use crate::classify::hints;
use crate::error::Result;
use crate::ids::WebsiteId;

/// Titled visits at which a website is first judged with its titles.
pub const FIRST_JUDGING: i64 = 3;
/// Titled visits at which it is judged again, for the last time.
pub const SECOND_JUDGING: i64 = 30;
/// Most visits whose titles one judging reads (the newest).
pub const MAX_PAGES: usize = 200;
/// Most index matches looked at to find them (names shared with other websites match too).
const MAX_SCANNED: usize = 2_000;
/// Most websites one pass judges with titles.
pub const TITLE_BATCH: usize = 100;

/// A website due for a judging with its titles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Due {
    /// The website.
    pub website_id: WebsiteId,
    /// Its domain.
    pub domain: String,
    /// Titled visits counted when it was last judged (0 for a new row).
    pub titled: i64,
}

/// The titled visits a transaction inserted, per website, counted as they are inserted and added
/// to `website_title_judging` together before it commits ([`TitledVisits::flush_in`]): one
/// statement a transaction where a trigger ran one a visit (and made each insert keep a statement
/// journal). Every visit insert counts here (`visits::insert_visit_batched_in`,
/// `visits::insert_synced_visit_in`); a title set later is counted by the `visit_titled_updated`
/// trigger. A website's row counts while `titled < due_at` and stops at `due_at`, as the trigger
/// that counted inserts did (migration 0022).
#[derive(Debug, Default)]
pub struct TitledVisits {
    counts: HashMap<WebsiteId, i64>,
}

impl TitledVisits {
    /// Counts a visit of `website_id` inserted with a title (`None`: without, not counted).
    pub fn add(&mut self, website_id: WebsiteId, title: Option<&str>) {
        if title.is_some() {
            *self.counts.entry(website_id).or_default() += 1;
        }
    }

    /// Adds the counts to the websites' rows, in the transaction that inserted the visits, and
    /// empties them.
    pub fn flush_in(&mut self, tx: &Transaction<'_>) -> Result<()> {
        if self.counts.len() <= 1 {
            // None, or one website (a visit recorded on its own): the plain update, no JSON.
            for (id, n) in self.counts.drain() {
                tx.prepare_cached(
                    r#"UPDATE website_title_judging SET titled = min(titled + :n, due_at)
                       WHERE website_id = :id AND titled < due_at"#,
                )?
                .execute(named_params! { ":id": id, ":n": n })?;
            }
            return Ok(());
        }
        // No website is being counted (a fresh database's import, most batches of any): nothing to
        // add, and no JSON of every website of the batch made and read (measured: 7 % of an
        // import's writing thread).
        let counting: bool = tx
            .prepare_cached(r#"SELECT EXISTS (SELECT 1 FROM website_title_judging WHERE titled < due_at)"#)?
            .query_row([], |r| r.get(0))?;
        if !counting {
            self.counts.clear();
            return Ok(());
        }
        let rows = crate::ids::id_number_rows(self.counts.drain().map(|(id, n)| (id.0, n)));
        tx.prepare_cached(
            r#"UPDATE website_title_judging AS j SET titled = min(j.titled + c.n, j.due_at)
               FROM (SELECT unhex(value ->> 0) AS id, value ->> 1 AS n FROM json_each(:rows)) AS c
               WHERE j.website_id = c.id AND j.titled < j.due_at"#,
        )?
        .execute(named_params! { ":rows": rows })?;
        Ok(())
    }
}

/// Puts a website on the list for judging with its titles (due at once), unless it is on it.
pub fn insert_candidate(tx: &Transaction<'_>, website_id: WebsiteId) -> Result<()> {
    tx.prepare_cached(
        r#"INSERT INTO website_title_judging (website_id, titled, due_at) VALUES (:id, 0, 0)
           ON CONFLICT (website_id) DO NOTHING"#,
    )?
    .execute(named_params! { ":id": website_id })?;
    Ok(())
}

/// True if a built-in answer may be judged again with titles: one the lists did not give, and
/// not certain.
pub fn is_candidate(j: &Judgement) -> bool {
    use crate::classify::builtin::Rule;
    !j.is_certain()
        && matches!(
            j.rule,
            Rule::Model | Rule::Subdomain | Rule::Word | Rule::Ending | Rule::Nothing
        )
}

/// Up to `limit` websites due for a judging with their titles, that still have a built-in category.
pub fn list_due(conn: &Connection, limit: usize) -> Result<Vec<Due>> {
    let mut stmt = conn.prepare_cached(
        r#"SELECT j.website_id, w.domain, j.titled
           FROM website_title_judging j INDEXED BY website_title_judging_due_idx
           JOIN website w ON w.id = j.website_id
           WHERE j.titled >= j.due_at AND w.category_source = 'builtin'"#,
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(Due {
            website_id: r.get("website_id")?,
            domain: r.get("domain")?,
            titled: r.get("titled")?,
        })
    })?;
    Ok(rows.take(limit.max(1)).collect::<rusqlite::Result<_>>()?)
}

/// The titles and URLs of up to [`MAX_PAGES`] of the newest visits of `website_id` (whose domain
/// is `domain`), found through the search index by the words of the site's name.
pub fn list_pages(
    conn: &Connection,
    website_id: WebsiteId,
    domain: &str,
) -> Result<Vec<(Option<String>, String)>> {
    let labels: Vec<&str> = domain.split('.').collect();
    let names = hints::name_labels(&labels);
    let words: Vec<&str> = if names.is_empty() { &labels[..] } else { names }
        .iter()
        .flat_map(|l| l.split(|c: char| !c.is_ascii_alphanumeric()))
        .filter(|w| !w.is_empty())
        .collect();
    if words.is_empty() {
        return Ok(Vec::new());
    }
    // Letters and digits only: quoting needs no escaping.
    let expression = words
        .iter()
        .map(|w| format!("domain : \"{w}\""))
        .collect::<Vec<_>>()
        .join(" AND ");
    let mut stmt = conn.prepare_cached(
        r#"SELECT v.title, v.url, v.website_id
           FROM visit_fts CROSS JOIN visit v
           WHERE visit_fts MATCH :match
             AND v.id >= unhex(printf('%016X0000000000000000', visit_fts.rowid))
             AND v.id <= unhex(printf('%016XFFFFFFFFFFFFFFFF', visit_fts.rowid))
           ORDER BY visit_fts.rowid DESC"#,
    )?;
    let mut rows = stmt.query(named_params! { ":match": expression })?;
    let mut out = Vec::new();
    let mut scanned = 0;
    while let Some(r) = rows.next()? {
        scanned += 1;
        let id: WebsiteId = r.get("website_id")?;
        if id == website_id {
            out.push((r.get("title")?, r.get("url")?));
        }
        if out.len() >= MAX_PAGES || scanned >= MAX_SCANNED {
            break;
        }
    }
    Ok(out)
}

/// Records a judging with `titled` titled visits read: the website is due next at
/// [`FIRST_JUDGING`] or [`SECOND_JUDGING`] titled visits, or never (its row is deleted). The
/// category itself is written by the caller, guarded like every classifier write.
pub fn reschedule(tx: &Transaction<'_>, website_id: WebsiteId, titled: i64) -> Result<()> {
    if titled >= SECOND_JUDGING {
        tx.prepare_cached(r#"DELETE FROM website_title_judging WHERE website_id = :id"#)?
            .execute(named_params! { ":id": website_id })?;
        return Ok(());
    }
    let due_at = if titled >= FIRST_JUDGING {
        SECOND_JUDGING
    } else {
        FIRST_JUDGING
    };
    tx.prepare_cached(
        r#"UPDATE website_title_judging SET titled = :titled, due_at = :due WHERE website_id = :id"#,
    )?
    .execute(named_params! { ":id": website_id, ":titled": titled, ":due": due_at })?;
    Ok(())
}

/// The website's row, for tests and diagnostics: (titled, due_at), if it has one.
pub fn get_state(conn: &Connection, website_id: WebsiteId) -> Result<Option<(i64, i64)>> {
    use rusqlite::OptionalExtension;
    Ok(conn
        .prepare_cached(r#"SELECT titled, due_at FROM website_title_judging WHERE website_id = :id"#)?
        .query_row(named_params! { ":id": website_id }, |r| {
            Ok((r.get("titled")?, r.get("due_at")?))
        })
        .optional()?)
}
