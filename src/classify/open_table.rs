//! The open domain table: about 140,000 domains with categories, derived from the UT1 blacklists
//! (Université Toulouse 1 Capitole, CC BY-SA 4.0) and Hipo's university list (MIT).
//!
//! The table is a separate data file (`data/open/domains.tsv.gz`, with its README and
//! attribution beside it), embedded in the binary as shipped: gzip, 0.8 MB. It stays under its
//! own licence; [`ATTRIBUTION`] is the text the README and the app's About show. It is decoded
//! once, on first use, into one sorted string arena with an end offset and a category byte per
//! domain (about 4 MB), and looked up by binary search.
//!
//! The built-in classifier asks it after the user's categories and the bundled map (see
//! [`super::builtin`]). A row labels that host and the names under it, never the domains above
//! it. If the embedded file could not be read (a broken build), the table is empty and says so
//! in the log; classification goes on without it.

use std::borrow::Cow;
use std::io::Read;
use std::sync::LazyLock;

use crate::category::Category;

/// The table as shipped (gzip of `domain<TAB>category` lines, sorted, one comment line first).
pub const TABLE_GZ: &[u8] = include_bytes!("data/open/domains.tsv.gz");

/// The attribution to show wherever the table, or data derived from it, is distributed.
pub const ATTRIBUTION: &str = include_str!("data/open/ATTRIBUTION.txt");

/// Domains in the table as shipped (a unit test checks it), for displays that should not decode
/// the table just to count it.
pub const ROWS: usize = 140_334;

/// Where the table comes from, in a few words (for short displays; [`ATTRIBUTION`] in full).
pub const SOURCE_SHORT: &str =
    "UT1 blacklists (Université Toulouse 1 Capitole), CC BY-SA 4.0; university domains from Hipo, MIT";

/// The decoded table.
pub struct OpenTable {
    /// Every domain, concatenated in sorted order.
    names: String,
    /// End offset of each domain in `names` (the start is the previous end).
    ends: Vec<u32>,
    /// Index into [`Category::ALL`] of each domain's category.
    categories: Vec<u8>,
}

static TABLE: LazyLock<OpenTable> = LazyLock::new(|| match OpenTable::decode(TABLE_GZ) {
    Ok(t) => t,
    Err(e) => {
        tracing::error!(error = %e, "the embedded open domain table cannot be read; classifying without it");
        OpenTable::empty()
    }
});

/// The embedded table, decoded on first use.
pub fn table() -> &'static OpenTable {
    &TABLE
}

/// Decodes the table now (it is otherwise decoded on first lookup): call before taking a lock
/// that lookups run under, so that no transaction waits for the decoding.
pub fn warm() {
    LazyLock::force(&TABLE);
}

impl OpenTable {
    fn empty() -> OpenTable {
        OpenTable {
            names: String::new(),
            ends: Vec::new(),
            categories: Vec::new(),
        }
    }

    /// Decodes a gzip table: `domain<TAB>category` lines, `#` comments and blank lines ignored.
    /// Domains are lower-cased and sorted here, so the file's order is not trusted; a domain
    /// listed twice keeps its first category. A line that is not `domain<TAB>known category` is
    /// an error naming it.
    pub fn decode(gz: &[u8]) -> Result<OpenTable, String> {
        let mut text = String::new();
        flate2::read::GzDecoder::new(gz)
            .read_to_string(&mut text)
            .map_err(|e| format!("not a gzip UTF-8 text: {e}"))?;
        OpenTable::parse(&text)
    }

    /// Parses the decompressed text (see [`OpenTable::decode`]).
    pub fn parse(text: &str) -> Result<OpenTable, String> {
        // The shipped table is lower case already: its rows are borrowed, not copied.
        let mut rows: Vec<(Cow<'_, str>, u8)> = Vec::with_capacity(text.len() / 24);
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let (domain, category) = line
                .split_once('\t')
                .ok_or_else(|| format!("line {}: no tab", n + 1))?;
            let domain = domain.trim();
            let domain = if domain.bytes().any(|b| b.is_ascii_uppercase()) {
                Cow::Owned(domain.to_ascii_lowercase())
            } else {
                Cow::Borrowed(domain)
            };
            if domain.is_empty() || domain.len() > 253 || !domain.contains('.') {
                return Err(format!("line {}: {domain:?} is not a domain", n + 1));
            }
            let category: Category = category.parse().map_err(|e| format!("line {}: {e}", n + 1))?;
            rows.push((domain, category_index(category)));
        }
        // Stable: of two rows for one domain the first stays first, and dedup keeps it.
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        rows.dedup_by(|b, a| a.0 == b.0);
        let mut table = OpenTable {
            names: String::with_capacity(rows.iter().map(|(d, _)| d.len()).sum()),
            ends: Vec::with_capacity(rows.len()),
            categories: Vec::with_capacity(rows.len()),
        };
        for (domain, category) in rows {
            table.names.push_str(&domain);
            let end = u32::try_from(table.names.len()).map_err(|_| "the table is too large".to_owned())?;
            table.ends.push(end);
            table.categories.push(category);
        }
        Ok(table)
    }

    /// Number of domains.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// True if the table has no domain.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn domain_at(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.names[start..self.ends[i] as usize]
    }

    /// The category of exactly `domain` (lower-case, no `www.`), if listed.
    pub fn get(&self, domain: &str) -> Option<Category> {
        let (mut lo, mut hi) = (0, self.ends.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.domain_at(mid).cmp(domain) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    return Category::ALL.get(usize::from(self.categories[mid])).copied()
                }
            }
        }
        None
    }

    /// Every `(domain, category)`, in sorted order (for checks and benchmarks).
    pub fn iter(&self) -> impl Iterator<Item = (&str, Category)> + '_ {
        (0..self.len()).filter_map(|i| {
            Category::ALL
                .get(usize::from(self.categories[i]))
                .map(|c| (self.domain_at(i), *c))
        })
    }

    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.names.capacity() + self.ends.capacity() * 4 + self.categories.capacity()
    }
}

fn category_index(c: Category) -> u8 {
    // 22 categories: the position always fits in a byte.
    Category::ALL
        .iter()
        .position(|x| *x == c)
        .and_then(|i| u8::try_from(i).ok())
        .unwrap_or(u8::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_table_decodes_whole() {
        let t = OpenTable::decode(TABLE_GZ).unwrap();
        assert_eq!(t.len(), ROWS);
        let mut prev = "";
        for (d, _) in t.iter() {
            assert!(prev < d, "sorted and without duplicates: {prev} then {d}");
            assert!(!d.starts_with("www."), "{d}");
            prev = d;
        }
        assert!(ATTRIBUTION.contains("CC BY-SA 4.0") && ATTRIBUTION.contains("Hipo"));
    }

    #[test]
    fn lookups_are_exact_and_bad_tables_are_refused() {
        let t = OpenTable::parse(
            "# comment\nzeta.example\tgames\nalpha.example\tnews\nAlpha.example\tshopping\nmid.example\tgambling\n",
        )
        .unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t.get("alpha.example"), Some(Category::News), "the first row wins");
        assert_eq!(t.get("zeta.example"), Some(Category::Games));
        assert_eq!(t.get("mid.example"), Some(Category::Gambling));
        assert_eq!(
            t.get("sub.mid.example"),
            None,
            "exact lookups only; parents are the caller's"
        );
        assert_eq!(t.get("example"), None);
        assert_eq!(t.get(""), None);
        assert!(OpenTable::parse("a.example\tweather\n").is_err());
        assert!(OpenTable::parse("a.example games\n").is_err());
        assert!(OpenTable::parse("nodot\tgames\n").is_err());
        assert!(OpenTable::decode(b"not gzip").is_err());
        assert!(OpenTable::parse("").unwrap().is_empty());
    }
}
