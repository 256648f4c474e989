//! Words as the index's tokenizer (FTS5 `unicode61`, `remove_diacritics 2`) sees them, so that a
//! search splits what the user typed exactly where the index split the visits' text.
//!
//! The tokenizer's rules (SQLite's `fts5_tokenize.c`): a word starts at a token character and
//! runs over token characters and diacritical marks; everything else separates. Token characters
//! are ASCII letters and digits, and the characters SQLite's own Unicode table puts in the
//! categories `L*`, `N*` and `Co` (below U+100000). Combining marks (`M*`: Bengali, Tamil and
//! Hindi vowel signs, Arabic harakat) separate, except the few diacritics (in U+0300..U+0331) that
//! `remove_diacritics` folds away inside a word. Rust's `char::is_alphanumeric` counts many marks
//! as letters (Unicode's `Alphabetic` property): a word split by it can hold two tokens, which
//! FTS5 reads as a phrase, and the index (`detail = column`) refuses phrases with an SQL error.
//!
//! SQLite's table is from its own Unicode version, not Rust's, so it is copied here
//! (`unicode61_tables.rs`, made from the bundled SQLite by a test) and a test checks every code
//! point against the bundled SQLite's tokenizer: an upgrade that changes it fails that test,
//! which writes the new table.

#[rustfmt::skip] // generated: four ranges a line
#[path = "unicode61_tables.rs"]
mod tables;

/// True if `c` starts (and continues) a token: an ASCII letter or digit, or a non-ASCII character
/// in SQLite's categories `L*`, `N*`, `Co`.
pub fn is_token_char(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    in_ranges(tables::TOKEN_CHARS, c)
}

/// True if `c` continues a token that has started: a token character, or one of the diacritical
/// marks the tokenizer folds away inside a word.
pub fn continues_token(c: char) -> bool {
    is_token_char(c) || in_ranges(tables::DIACRITICS, c)
}

fn in_ranges(ranges: &[(u32, u32)], c: char) -> bool {
    let c = u32::from(c);
    let i = ranges.partition_point(|&(_, last)| last < c);
    ranges.get(i).is_some_and(|&(first, _)| first <= c)
}

/// The words of `text` as the tokenizer splits it: the byte range of each, in order.
pub fn words(text: &str) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let mut chars = text.char_indices().peekable();
    std::iter::from_fn(move || {
        let start = loop {
            let (i, c) = chars.next()?;
            if is_token_char(c) {
                break i;
            }
        };
        let mut end = text.len();
        while let Some(&(i, c)) = chars.peek() {
            if !continues_token(c) {
                end = i;
                break;
            }
            chars.next();
        }
        Some(start..end)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    /// What the bundled SQLite's tokenizer does with each code point: (starts a token, continues
    /// one). Probed through FTS5 itself: per code point `c` and number `n`, the text `c q<n>q`
    /// glued (one token iff `c` starts one) and `z<n>q c x` glued (one token iff `c` continues
    /// one), many code points per row.
    fn probe() -> Vec<(u32, bool, bool)> {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE VIRTUAL TABLE p USING fts5(s, m, tokenize = 'unicode61 remove_diacritics 2');
             CREATE VIRTUAL TABLE pv USING fts5vocab(p, 'row');",
        )
        .unwrap();
        let points: Vec<char> = (0x80u32..=0x10ffff).filter_map(char::from_u32).collect();
        let tx = db.unchecked_transaction().unwrap();
        for (b, chunk) in points.chunks(8192).enumerate() {
            let (mut s, mut m) = (String::new(), String::new());
            for (k, c) in chunk.iter().enumerate() {
                let n = b * 8192 + k;
                s.push_str(&format!("{c}q{n}q "));
                m.push_str(&format!("z{n}q{c}x "));
            }
            tx.execute("INSERT INTO p (s, m) VALUES (?1, ?2)", [s, m])
                .unwrap();
        }
        tx.commit().unwrap();
        let mut starts = vec![false; points.len()];
        let mut continues = vec![false; points.len()];
        let mut stmt = db.prepare("SELECT term FROM pv").unwrap();
        let terms = stmt.query_map([], |r| r.get::<_, String>(0)).unwrap();
        for term in terms {
            let term = term.unwrap();
            if let Some(rest) = term.strip_prefix('z').filter(|t| t.ends_with('x')) {
                // z<n>q<c folded>x: c continued the token.
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                if let Ok(n) = digits.parse::<usize>() {
                    if rest[digits.len()..].starts_with('q') {
                        continues[n] = true;
                    }
                }
            } else if let Some(rest) = term.strip_suffix('q') {
                // <c folded>q<n>q: c started the token (nothing before `q<n>q` otherwise).
                let digits = rest.len() - rest.trim_end_matches(|c: char| c.is_ascii_digit()).len();
                let head = &rest[..rest.len() - digits];
                if let (Ok(n), Some(folded)) = (rest[head.len()..].parse::<usize>(), head.strip_suffix('q')) {
                    if !folded.is_empty() {
                        starts[n] = true;
                    }
                }
            }
        }
        points
            .iter()
            .enumerate()
            .map(|(n, &c)| (u32::from(c), starts[n], continues[n]))
            .collect()
    }

    fn ranges(points: impl Iterator<Item = u32>) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = Vec::new();
        for p in points {
            match out.last_mut() {
                Some((_, last)) if *last + 1 == p => *last = p,
                _ => out.push((p, p)),
            }
        }
        out
    }

    fn source(name: &str, doc: &str, ranges: &[(u32, u32)]) -> String {
        let mut s = format!("/// {doc}\npub(super) const {name}: &[(u32, u32)] = &[\n");
        for chunk in ranges.chunks(4) {
            let row: Vec<String> = chunk
                .iter()
                .map(|(a, b)| format!("(0x{a:04x}, 0x{b:04x})"))
                .collect();
            s.push_str(&format!("    {},\n", row.join(", ")));
        }
        s.push_str("];\n");
        s
    }

    /// Every non-ASCII code point, against the bundled SQLite's tokenizer; on a difference, the
    /// right table is written to `target/unicode61_tables.rs` to copy over the stored one.
    #[test]
    fn the_tables_are_the_bundled_sqlites_for_every_code_point() {
        let probed = probe();
        let token: Vec<(u32, u32)> = ranges(probed.iter().filter(|p| p.1).map(|p| p.0));
        let diacritics: Vec<(u32, u32)> = ranges(probed.iter().filter(|p| p.2 && !p.1).map(|p| p.0));
        assert!(
            probed.iter().all(|p| !p.1 || p.2),
            "a token character that does not continue a token"
        );
        // Bengali, Tamil, Devanagari and Arabic letters are token characters; their vowel signs
        // and harakat are not.
        for c in ['ব', 'த', 'ह', 'ع', '日', 'é'] {
            assert!(probed.iter().any(|p| p.0 == u32::from(c) && p.1), "{c}");
        }
        for c in ['\u{9be}', '\u{bbf}', '\u{93f}', '\u{64e}'] {
            assert!(probed.iter().any(|p| p.0 == u32::from(c) && !p.2), "{c:?}");
        }
        if token != tables::TOKEN_CHARS || diacritics != tables::DIACRITICS {
            let text = format!(
                "//! Generated by `search::unicode61`'s test from the bundled SQLite's `unicode61` tokenizer: do not\n\
                 //! edit (the test writes a new copy to `target/unicode61_tables.rs` when SQLite's table changes).\n\n{}\n{}",
                source("TOKEN_CHARS", "The non-ASCII code points that start a token (SQLite's `L*`, `N*`, `Co`).", &token),
                source(
                    "DIACRITICS",
                    "The code points that are not token characters but continue a token (diacritics folded away).",
                    &diacritics
                )
            );
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/unicode61_tables.rs");
            std::fs::write(&path, text).unwrap();
            panic!(
                "src/search/unicode61_tables.rs differs from the bundled SQLite's tokenizer: the right one is in {}",
                path.display()
            );
        }
    }

    /// ASCII: letters and digits only, as SQLite's `sqlite3Fts5UnicodeAscii` sets them.
    #[test]
    fn ascii_token_characters_are_letters_and_digits() {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE VIRTUAL TABLE p USING fts5(s, tokenize = 'unicode61 remove_diacritics 2');
             CREATE VIRTUAL TABLE pv USING fts5vocab(p, 'instance');",
        )
        .unwrap();
        for b in 0u8..0x80 {
            let c = char::from(b);
            db.execute(
                "INSERT INTO p (rowid, s) VALUES (?1, ?2)",
                rusqlite::params![i64::from(b) + 1, format!("a{c}a")],
            )
            .unwrap();
        }
        for b in 0u8..0x80 {
            let c = char::from(b);
            let tokens: i64 = db
                .query_row(
                    "SELECT count(*) FROM pv WHERE doc = ?1",
                    [i64::from(b) + 1],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(tokens == 1, is_token_char(c), "{c:?}");
            assert_eq!(is_token_char(c), continues_token(c), "{c:?}");
        }
    }

    #[test]
    fn words_split_where_the_tokenizer_splits() {
        let split = |s: &str| words(s).map(|r| s[r].to_owned()).collect::<Vec<_>>();
        assert_eq!(split("SQLite lock-free"), ["SQLite", "lock", "free"]);
        // Bengali: the vowel sign া and the anusvara ং separate (Rust calls them alphabetic).
        assert_eq!(split("বাংলা"), ["ব", "ল"]);
        assert_eq!(split("தமிழ்"), ["தம", "ழ"]);
        assert_eq!(split("हिन्दी"), ["ह", "न", "द"]);
        assert_eq!(split("عَرَبِيّ"), ["ع", "ر", "ب", "ي"]);
        // A combining acute inside a word is folded away, not a separator; at the start it is.
        assert_eq!(split("cafe\u{301}s \u{301}x"), ["cafe\u{301}s", "x"]);
        assert_eq!(split("日本語 München"), ["日本語", "München"]);
        assert_eq!(split(" ?!. "), Vec::<String>::new());
    }
}
