//! Searching the index: the user's words as an FTS5 query, and the search pages.
//!
//! Words: the text is split into words exactly where the index's `unicode61` tokenizer splits
//! ([`super::unicode61`]: its token characters, from SQLite's own Unicode table, so a combining
//! vowel sign separates in Bengali as in the index), and every word must match (several words
//! mean all of them). A word is then one token, never a phrase (which the index refuses). A word
//! matches as a prefix (`lock` finds "Locking"), except a single letter and a word written next to
//! a dot, which is a domain label and matches whole (`github.com`, `docs.rs`):
//! a prefix costs FTS5 every posting of every word it expands to, and `com*` is most of the index.
//! The last word of the text, still being typed, stays a prefix after a dot when it is longer than
//! an ending (`en.wikip` finds en.wikipedia.org; `github.co` does not find github.com yet).
//! `http`, `https` and `www` are dropped (never indexed: a pasted URL still finds its page).
//! Every word is quoted in the query, so FTS5 syntax in the text (`OR`, `-`, `"`, `*`, `:`) is just
//! text. Case and accents are folded by the tokenizer on both sides.
//!
//! Pages: newest first straight off the index (`ORDER BY rowid DESC`, rowids being visit keys; a
//! test checks the plan has no sort), joined to the visit by a primary-key range seek and to its
//! website, with the category filter applied to the joined rows; the cursor and the date range are
//! a rowid range. Best first (`bm25`, a domain match weighing most, then the title, then the URL)
//! ranks the newest [`RANK_CANDIDATES`] matches from the index alone, then joins them in rank
//! order: ranking costs every candidate's score, so it is bounded there (docs/BENCHMARKS.md).

use rusqlite::{named_params, Connection};

use crate::error::Result;
use crate::history_page::HistoryPage;
use crate::ids::VisitId;

use super::key_of;

/// Most words of a search used (the rest are ignored).
pub const MAX_WORDS: usize = 16;
/// Longest word used (characters; longer ones are cut and match as a prefix).
pub const MAX_WORD_CHARS: usize = 64;
/// Best-first search ranks at most this many matches: the newest ones (the `LIMIT` in
/// [`RANK_SQL`]).
pub const RANK_CANDIDATES: usize = 10_000;

/// Words dropped from a search: never indexed (the scheme and `www.` are not part of the
/// indexed domain or path).
const DROPPED: [&str; 3] = ["http", "https", "www"];

/// The FTS5 query for what the user typed, or `None` if it holds no word (only punctuation, say).
pub fn match_expression(text: &str) -> Option<String> {
    // (word, written next to a dot)
    let mut words: Vec<(String, bool)> = Vec::new();
    for range in super::unicode61::words(text) {
        if words.len() == MAX_WORDS {
            break;
        }
        let word: String = text[range.clone()].chars().take(MAX_WORD_CHARS).collect();
        if DROPPED.iter().any(|d| word.eq_ignore_ascii_case(d)) {
            continue;
        }
        let label = text[..range.start].ends_with('.') || text[range.end..].starts_with('.');
        words.push((word, label));
    }
    let last = words.len().saturating_sub(1);
    let terms: Vec<String> = words
        .iter()
        .enumerate()
        .map(|(n, (word, label))| {
            let len = word.chars().count();
            // The last word may still be being typed (`en.wikip`), unless it is as short as an
            // ending (`github.com`, `docs.rs`: `com*` would expand to most of the index).
            let whole = len == 1 || (*label && !(n == last && len > 3));
            // A word is token characters only (no `"`): quoting it needs no escaping.
            if whole {
                format!("\"{word}\"")
            } else {
                format!("\"{word}\"*")
            }
        })
        .collect();
    (!terms.is_empty()).then(|| terms.join(" "))
}

/// The newest-first search page. The join order is fixed (`CROSS JOIN`): the index drives, in
/// rowid order, and each match is joined to its visit (a primary-key range: the visits whose id
/// starts with the rowid's 8 bytes, of which there is one) and its website.
pub const SEARCH_SQL: &str = concat!(
    r#"SELECT v.id, v.url, v.title, v.visited_at, v.source,
           w.id AS website_id, w.domain, w.category, w.category_source, w.category_confidence, "#,
    crate::history_page::device_name_of_v!(),
    r#" AS device
    FROM visit_fts CROSS JOIN visit v CROSS JOIN website w
    WHERE visit_fts MATCH :match
      AND visit_fts.rowid >= :low AND visit_fts.rowid < :below
      AND v.id >= unhex(printf('%016X0000000000000000', visit_fts.rowid))
      AND v.id <= unhex(printf('%016XFFFFFFFFFFFFFFFF', visit_fts.rowid))
      AND w.id = v.website_id
      AND (:category IS NULL OR w.category = :category)
      AND (:uncategorized = 0 OR w.category IS NULL)
      AND (:device IS NULL OR "#,
    crate::history_page::device_name_of_v!(),
    r#" = :device)
    ORDER BY visit_fts.rowid DESC"#
);

/// Best first, step one: the newest [`RANK_CANDIDATES`] (10,000) matches' keys, ranked. Only the
/// index is read (no join), so ranking costs the bm25 of each candidate and one sort.
pub const RANK_SQL: &str = r#"SELECT key, score FROM (
      SELECT visit_fts.rowid AS key, bm25(visit_fts, 4.0, 2.0, 1.0) AS score
      FROM visit_fts
      WHERE visit_fts MATCH :match AND visit_fts.rowid >= :low AND visit_fts.rowid < :below
      ORDER BY visit_fts.rowid DESC
      LIMIT 10000)
    ORDER BY score, key DESC"#;

/// Best first, step two: the visit of one ranked key, if it passes the filters.
const RANKED_ROW_SQL: &str = concat!(
    r#"SELECT v.id, v.url, v.title, v.visited_at, v.source,
           w.id AS website_id, w.domain, w.category, w.category_source, w.category_confidence, "#,
    crate::history_page::device_name_of_v!(),
    r#" AS device
    FROM visit v JOIN website w ON w.id = v.website_id
    WHERE v.id >= unhex(printf('%016X0000000000000000', :key))
      AND v.id <= unhex(printf('%016XFFFFFFFFFFFFFFFF', :key))
      AND (:category IS NULL OR w.category = :category)
      AND (:uncategorized = 0 OR w.category IS NULL)
      AND (:device IS NULL OR "#,
    crate::history_page::device_name_of_v!(),
    r#" = :device)"#
);

/// Where a search page may look, as index keys: `[low, below)`.
pub(crate) fn key_range(low: VisitId, below: VisitId) -> (i64, i64) {
    // `below` is exclusive: a cursor (a visit's id: its key is excluded, smaller keys are older
    // visits), the first id after a range's end (its key starts the next millisecond), or the
    // largest id (no bound).
    (end_key(low), end_key(below))
}

/// The index key of a range's end `id`, or `i64::MAX` for an id from the year 6429 on (its
/// millisecond has the top bit of 48 set, so its 8 bytes read as a negative key: `--until
/// 9999-12-31` would find nothing, `--since 7000-01-01` everything). No visit has such a key
/// (visit times end in 2199), so past every key is where those ends lie.
fn end_key(id: VisitId) -> i64 {
    let key = key_of(id);
    if key < 0 {
        i64::MAX
    } else {
        key
    }
}

/// Filters shared by both orders, already checked by `list_history`.
pub(crate) struct SearchPage<'a> {
    pub(crate) expression: &'a str,
    pub(crate) low: i64,
    pub(crate) below: i64,
    pub(crate) category: Option<crate::Category>,
    pub(crate) uncategorized: bool,
    pub(crate) device: Option<&'a str>,
}

/// One newest-first page of matches.
pub(crate) fn list_newest(conn: &Connection, p: &SearchPage<'_>, limit: usize) -> Result<HistoryPage> {
    let mut stmt = conn.prepare_cached(SEARCH_SQL)?;
    let rows = stmt.query_map(
        named_params! {
            ":match": p.expression, ":low": p.low, ":below": p.below,
            ":category": p.category, ":uncategorized": p.uncategorized, ":device": p.device,
        },
        crate::history_page::read_row,
    )?;
    HistoryPage::newest_first(rows, limit)
}

/// One best-first page of matches, `offset` rows in: the candidates ranked from the index alone,
/// then joined to their visits in rank order until the page is full.
pub(crate) fn list_ranked(
    conn: &Connection,
    p: &SearchPage<'_>,
    offset: usize,
    limit: usize,
) -> Result<HistoryPage> {
    let ranked: Vec<i64> = conn
        .prepare_cached(RANK_SQL)?
        .query_map(
            named_params! { ":match": p.expression, ":low": p.low, ":below": p.below },
            |r| r.get("key"),
        )?
        .collect::<rusqlite::Result<_>>()?;
    let mut row = conn.prepare_cached(RANKED_ROW_SQL)?;
    let mut rows = Vec::with_capacity(limit + 1);
    let mut passed = 0;
    for key in ranked {
        let found = row
            .query_map(
                named_params! {
                    ":key": key, ":category": p.category, ":uncategorized": p.uncategorized,
                    ":device": p.device,
                },
                crate::history_page::read_row,
            )?
            .next()
            .transpose()?;
        let Some(found) = found else { continue };
        passed += 1;
        if passed > offset {
            rows.push(found);
            if rows.len() > limit {
                break;
            }
        }
    }
    let next_offset = (rows.len() > limit).then(|| {
        rows.truncate(limit);
        offset + limit
    });
    Ok(HistoryPage {
        rows,
        next_cursor: None,
        next_offset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_become_quoted_prefixes() {
        assert_eq!(
            match_expression("SQLite lock").as_deref(),
            Some(r#""SQLite"* "lock"*"#)
        );
        assert_eq!(
            match_expression("github.com").as_deref(),
            Some(r#""github" "com""#)
        );
        assert_eq!(
            match_expression("https://www.github.com/rust-lang").as_deref(),
            Some(r#""github" "com" "rust"* "lang"*"#)
        );
        assert_eq!(match_expression("a b").as_deref(), Some(r#""a" "b""#));
        // FTS5 syntax is only text; punctuation separates words.
        assert_eq!(
            match_expression(r#"NOT "x" OR -y* col:z"#).as_deref(),
            Some(r#""NOT"* "x" "OR"* "y" "col"* "z""#)
        );
        assert_eq!(match_expression("München").as_deref(), Some(r#""München"*"#));
        assert_eq!(match_expression("en.wikip").as_deref(), Some(r#""en" "wikip"*"#));
        assert_eq!(
            match_expression("gist.github.com lock").as_deref(),
            Some(r#""gist" "github" "com" "lock"*"#)
        );
        assert_eq!(match_expression(" ?!. "), None);
        assert_eq!(match_expression("www"), None);
        let many = "word ".repeat(40);
        assert_eq!(
            match_expression(&many).unwrap().matches('"').count(),
            2 * MAX_WORDS
        );
        let long = "x".repeat(500);
        assert_eq!(match_expression(&long).unwrap().len(), MAX_WORD_CHARS + 3);
    }
}
