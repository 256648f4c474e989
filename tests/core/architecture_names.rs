//! ARCHITECTURE.md names only what exists: every backticked code name in it is looked up in the
//! code, so a renamed function, a moved file or a removed type fails here instead of leaving the
//! document wrong (issue 32).
//!
//! What counts as a code name, in a backticked span outside code blocks:
//! - a path (`src/visits.rs`, `ui/js/`, `tests/e2e*`, `batch.rs`): with a `/` or a source file's
//!   ending; it must exist from the repository's root, or end the path of a file or folder of the
//!   repository (`batch.rs` beside `src/import/rows.rs`, `lib/tracker.js` in `extension/`);
//! - an item path (`sync_log::local::queue_in`, `Store::run`, `Authed::account_id`): its longest
//!   leading part that is a module must be a file of `src/`, `src-tauri/src/`, `hub/` or the tests
//!   and benches, and each name after it must be defined there (`fn`, `struct`, `enum`, `const`,
//!   `static`, `type`, `trait`, `mod`, a variant or a field); without a module, the first name is
//!   a type defined anywhere and the next ones are defined beside it or in its `impl`s. Paths into
//!   the crates we depend on (`rusqlite::Connection`) are theirs;
//! - a call (`exit_code()`): a function defined in the code (Rust or JavaScript);
//! - a macro (`settings!`): a `macro_rules!`;
//! - a type-like name (`WorkerHandle`, `Confidence`): defined in the code, or imported by a `use`;
//! - a name with an underscore (`visit_time`, `paused_provider`, `MAX_BODY_BYTES`): a table, a
//!   column, a key or a constant, so a word of the code (Rust, SQL, JavaScript, scripts) outside
//!   comments.
//!
//! Anything else (`BEGIN IMMEDIATE`, `high`, `--pool-size`) is prose. [`NOT_CODE`] lists the few
//! code-like names that are not ours, each with why.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Backticked names in ARCHITECTURE.md that look like code but are not this repository's.
const NOT_CODE: &[(&str, &str)] = &[
    (
        "app.json",
        "an old version's file, moved into settings.json at start",
    ),
    ("Debug", "Rust's formatting trait (what `{:?}` shows)"),
    ("Authorization", "an HTTP header"),
    ("SQLITE_BUSY", "SQLite's result code"),
    ("Cli::command()", "the method clap's derive gives `Cli`"),
    ("print!", "Rust's macro"),
    ("println!", "Rust's macro"),
    ("eprint!", "Rust's macro"),
    ("eprintln!", "Rust's macro"),
];

/// Folders never looked into: build output, git's, downloaded and generated inputs.
const SKIPPED_DIRS: &[&str] = &["target", ".git", "node_modules", "corpus", "artifacts", "dist"];

/// The folders whose `.rs` files are modules, and where their module paths start.
const MODULE_ROOTS: &[&str] = &[
    "src",
    "src-tauri/src",
    "src-tauri/tests",
    "hub/src",
    "hub/tests",
    "hub/wire/src",
    "tests",
    "benches",
    "examples",
];

/// The repository as the checks see it.
struct Repo {
    /// Every file's path from the root, with `/`.
    files: Vec<String>,
    /// Every folder's path from the root.
    dirs: BTreeSet<String>,
    /// The code files' text without comment lines, by path.
    code: BTreeMap<String, String>,
    /// Every identifier-like word of that code.
    words: BTreeSet<String>,
    /// The crates the workspace depends on (with `_` for `-`), and Rust's own.
    externals: BTreeSet<String>,
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `text` without its comment lines (`//`, `/*`, ` *` in Rust and JavaScript, `--` in SQL, `#`
/// in scripts and TOML), so a name that lives on only in a comment does not count.
fn without_comments(path: &str, text: &str) -> String {
    let comment: &[&str] = if path.ends_with(".sql") {
        &["--"]
    } else if path.ends_with(".toml") || !path.contains('.') {
        &["#"]
    } else {
        &["//", "/*", "*"]
    };
    text.lines()
        .filter(|l| !comment.iter().any(|c| l.trim_start().starts_with(c)))
        .collect::<Vec<_>>()
        .join("\n")
}

impl Repo {
    fn read(root: &Path) -> Repo {
        let mut files = Vec::new();
        let mut dirs = BTreeSet::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                if p.is_dir() {
                    if !SKIPPED_DIRS.contains(&name.as_str()) {
                        dirs.insert(rel);
                        stack.push(p);
                    }
                } else {
                    files.push(rel);
                }
            }
        }
        files.sort();
        let is_code = |f: &str| {
            let code_ext = [".rs", ".sql", ".js", ".mjs", ".html", ".css", ".toml"]
                .iter()
                .any(|x| f.ends_with(x));
            let json = f.ends_with(".json") && !f.starts_with("tests/fixtures/");
            code_ext || json || f.starts_with("scripts/")
        };
        let mut code = BTreeMap::new();
        // This file names what does not exist, on purpose, to test the check.
        let this_test = file!().replace('\\', "/");
        for f in files.iter().filter(|f| is_code(f) && **f != this_test) {
            if let Ok(text) = std::fs::read_to_string(root.join(f)) {
                code.insert(f.clone(), without_comments(f, &text));
            }
        }
        let mut words = BTreeSet::new();
        for text in code.values() {
            words.extend(
                text.split(|c: char| !is_ident(c))
                    .filter(|w| !w.is_empty())
                    .map(str::to_owned),
            );
        }
        let mut externals: BTreeSet<String> =
            ["std", "core", "alloc"].iter().map(|s| (*s).to_owned()).collect();
        for manifest in files.iter().filter(|f| f.ends_with("Cargo.toml")) {
            let mut in_deps = false;
            for l in std::fs::read_to_string(root.join(manifest)).unwrap().lines() {
                let l = l.trim();
                if l.starts_with('[') {
                    in_deps = l.contains("dependencies");
                } else if in_deps {
                    if let Some((name, _)) = l.split_once('=') {
                        externals.insert(name.trim().replace('-', "_"));
                    }
                }
            }
        }
        Repo {
            files,
            dirs,
            code,
            words,
            externals,
        }
    }

    fn rust(&self) -> impl Iterator<Item = (&String, &String)> {
        self.code.iter().filter(|(f, _)| f.ends_with(".rs"))
    }

    /// The files whose module path ends with `segs` (`["sync", "apply"]` → `src/sync/apply.rs`).
    fn module_files(&self, segs: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        for (f, _) in self.rust() {
            for r in MODULE_ROOTS {
                let Some(rel) = f.strip_prefix(&format!("{r}/")) else {
                    continue;
                };
                let mut parts: Vec<&str> = rel.trim_end_matches(".rs").split('/').collect();
                if parts.last().is_some_and(|p| *p == "mod") {
                    parts.pop();
                }
                if parts.len() >= segs.len() && parts[parts.len() - segs.len()..] == *segs {
                    out.push(f.clone());
                }
            }
        }
        out
    }

    /// The files of a module: its own and those in its folder.
    fn module_scope(&self, files: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for f in files {
            out.push(f.clone());
            let dir = f.strip_suffix("/mod.rs").unwrap_or(f.trim_end_matches(".rs"));
            out.extend(
                self.rust()
                    .map(|(g, _)| g)
                    .filter(|g| g.starts_with(&format!("{dir}/")))
                    .cloned(),
            );
        }
        out
    }

    /// The files among `within` (all code if `None`) that define `name`.
    fn defining(&self, name: &str, within: Option<&[String]>) -> Vec<String> {
        self.code
            .iter()
            .filter(|(f, _)| within.is_none_or(|w| w.contains(f)))
            .filter(|(_, text)| defines(text, name))
            .map(|(f, _)| f.clone())
            .collect()
    }

    /// The Rust files with an `impl` of `ty`.
    fn impls_of(&self, ty: &str) -> Vec<String> {
        self.rust()
            .filter(|(_, text)| {
                text.lines()
                    .any(|l| l.trim_start().starts_with("impl") && has_word(l, ty))
            })
            .map(|(f, _)| f.clone())
            .collect()
    }

    fn path_exists(&self, path: &str) -> bool {
        let p = path.trim_end_matches('/');
        if p.contains('*') {
            return self
                .files
                .iter()
                .any(|f| glob(p, f) || glob(&format!("*/{p}"), f));
        }
        let suffix = format!("/{p}");
        self.files
            .iter()
            .chain(&self.dirs)
            .any(|f| f == p || f.ends_with(&suffix))
    }

    /// `a::b::c`, resolved as the module docs say.
    fn item_exists(&self, path: &str) -> bool {
        let mut segs: Vec<&str> = path.trim_end_matches("()").split("::").collect();
        if self.externals.contains(segs[0]) && segs[0] != "sitetrail" && !segs[0].starts_with("sitetrail_") {
            return true;
        }
        while segs.len() > 1
            && [
                "crate",
                "self",
                "super",
                "sitetrail",
                "sitetrail_app",
                "sitetrail_hub",
                "sitetrail_sync_wire",
            ]
            .contains(&segs[0])
        {
            segs.remove(0);
        }
        for k in (1..=segs.len()).rev() {
            let files = self.module_files(&segs[..k]);
            if files.is_empty() {
                continue;
            }
            let Some((first, rest)) = segs[k..].split_first() else {
                return true;
            };
            let scope = self.module_scope(&files);
            return self.members_exist(first, rest, Some(&scope));
        }
        self.members_exist(segs[0], &segs[1..], None)
    }

    /// `first` is defined (within `scope`), and each of `rest` beside the one before it or in
    /// that one's `impl`s (`Store::run`, `Error::ReadOnly`, `Pace::long_poll`).
    fn members_exist(&self, first: &str, rest: &[&str], scope: Option<&[String]>) -> bool {
        let mut owners = self.defining(first, scope);
        let mut owner = first;
        for name in rest {
            if owners.is_empty() {
                return false;
            }
            owners.extend(self.impls_of(owner));
            owners = self.defining(name, Some(&owners));
            owner = name;
        }
        !owners.is_empty()
    }
}

/// Whether `line` holds `word` as a whole word.
fn has_word(line: &str, word: &str) -> bool {
    line.split(|c: char| !is_ident(c)).any(|w| w == word)
}

/// A `*` glob over a whole path (`*` matches anything, `/` included).
fn glob(pattern: &str, path: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let mut rest = path;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else {
                return false;
            };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            let Some(at) = rest.find(part) else {
                return false;
            };
            rest = &rest[at + part.len()..];
        }
    }
    rest.is_empty()
}

/// Whether `text` defines `name`: after `fn`, `struct`, `enum`, `const`, `static`, `type`,
/// `trait`, `mod`, `union`, `macro_rules!`, `function` or `class`, or as a variant or field (the
/// name first on its line, maybe after `pub`, then `,`, `(`, `{`, `:`, `=` or the line's end).
fn defines(text: &str, name: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "fn",
        "struct",
        "enum",
        "const",
        "static",
        "type",
        "trait",
        "mod",
        "union",
        "macro_rules!",
        "function",
        "class",
    ];
    for (at, _) in text.match_indices(name) {
        let before = &text[..at];
        let after = &text[at + name.len()..];
        if before.chars().next_back().is_some_and(is_ident) || after.chars().next().is_some_and(is_ident) {
            continue;
        }
        let previous = before
            .trim_end()
            .rsplit(|c: char| c.is_whitespace())
            .next()
            .unwrap_or("");
        if KEYWORDS.contains(&previous) {
            return true;
        }
        let line_start = before.rsplit('\n').next().unwrap_or("").trim();
        let lead = ["", "pub", "pub(crate)", "pub(super)"].contains(&line_start);
        let next = after.trim_start_matches(' ').chars().next();
        if lead && next.is_none_or(|c| matches!(c, ',' | '(' | '{' | ':' | '=' | '\n')) {
            return true;
        }
    }
    false
}

/// What kind of code name `token` is, if it is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Path,
    Item,
    Call,
    Macro,
    Type,
    Word,
}

fn kind(token: &str) -> Option<Kind> {
    let ident =
        |s: &str| !s.is_empty() && s.chars().all(is_ident) && !s.starts_with(|c: char| c.is_ascii_digit());
    const SOURCE: &[&str] = &[
        ".rs", ".js", ".mjs", ".sql", ".json", ".html", ".css", ".toml", ".tsv", ".gz",
    ];
    if token.contains('<') || token.starts_with(['~', '/', '$', '.']) {
        return None;
    }
    if token.starts_with("target/") || token.starts_with("dist/") {
        return None;
    }
    let path_chars = token.chars().all(|c| is_ident(c) || "./-*".contains(c));
    if path_chars && (token.contains('/') || SOURCE.iter().any(|x| token.ends_with(x))) {
        return Some(Kind::Path);
    }
    let bare = token.trim_end_matches("()");
    if bare.contains("::") && bare.split("::").all(ident) {
        return Some(Kind::Item);
    }
    if !ident(bare) {
        return match token.strip_suffix('!') {
            Some(m) if ident(m) => Some(Kind::Macro),
            _ => None,
        };
    }
    if token.ends_with("()") {
        return Some(Kind::Call);
    }
    let first = token.chars().next().unwrap();
    if first.is_ascii_uppercase() && token.chars().any(|c| c.is_ascii_lowercase()) && !token.contains('_') {
        return Some(Kind::Type);
    }
    if token.contains('_') {
        return Some(Kind::Word);
    }
    None
}

/// The backticked spans of `md`'s prose (code blocks left out; a span may cross a line break).
fn code_spans(md: &str) -> Vec<String> {
    let mut fenced = false;
    let mut prose = String::new();
    for l in md.lines() {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            prose.push_str(l);
        }
        prose.push('\n');
    }
    prose
        .split("\n\n")
        .flat_map(|para| {
            let para = para.replace('\n', " ");
            para.split('`')
                .skip(1)
                .step_by(2)
                .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The code names of `md` that the repository does not have.
fn missing_names(repo: &Repo, md: &str) -> (usize, Vec<String>) {
    let mut checked = 0;
    let mut missing = Vec::new();
    let mut seen = BTreeSet::new();
    for token in code_spans(md) {
        if !seen.insert(token.clone()) || NOT_CODE.iter().any(|(n, _)| *n == token) {
            continue;
        }
        let Some(k) = kind(&token) else { continue };
        checked += 1;
        let found = match k {
            Kind::Path => repo.path_exists(&token),
            Kind::Item => repo.item_exists(&token),
            Kind::Call => !repo.defining(token.trim_end_matches("()"), None).is_empty(),
            Kind::Macro => !repo.defining(token.trim_end_matches('!'), None).is_empty(),
            Kind::Type => {
                !repo.defining(&token, None).is_empty()
                    || repo.code.values().any(|t| {
                        t.lines()
                            .any(|l| l.trim_start().starts_with("use ") && has_word(l, &token))
                    })
            }
            Kind::Word => repo.words.contains(&token),
        };
        if !found {
            missing.push(format!("`{token}` ({k:?})"));
        }
    }
    (checked, missing)
}

#[test]
fn every_code_name_in_architecture_exists() {
    let repo = Repo::read(root());
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let (checked, missing) = missing_names(&repo, &doc);
    assert!(
        checked > 300,
        "ARCHITECTURE.md's code names were found ({checked})"
    );
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names what the code does not have (correct the document, or add a \
         name that is not code to NOT_CODE with why):\n{}",
        missing.join("\n")
    );
    // The allow-list holds only what the document uses.
    for (name, _) in NOT_CODE {
        assert!(
            code_spans(&doc).iter().any(|t| t == name),
            "NOT_CODE lists `{name}`, which ARCHITECTURE.md no longer names"
        );
    }
}

/// The check itself: each kind of name found when it exists, and missing when it does not.
#[test]
fn a_name_that_does_not_exist_is_found() {
    let repo = Repo::read(root());
    let doc = "\
The `src/visits.rs` file, `batch.rs`, `lib/tracker.js`, `tests/e2e*`, `record_visit_in`, \
`visits::get_or_insert_website_in`, `sitetrail::blocking::run`, `Store::run`, `Pace::long_poll`, \
`Error::ReadOnly`, `exit_code()`, `named!`, `WorkerHandle`, `Notify`, `visit_time`, \
`MAX_BODY_BYTES`, `rusqlite::Connection`, `BEGIN IMMEDIATE` and `high`.

```
`src/in_a_code_block.rs`
```

Gone: `src/nothing.rs`, `apply::on_new_website_in`, `websites::no_such_fn`, `Store::no_such_method`, \
`no_such_call()`, `no_such_macro!`, `NoSuchType`, `no_such_table`, `ui/js/nothing.js`.
";
    let (checked, missing) = missing_names(&repo, doc);
    assert_eq!(
        missing,
        [
            "`src/nothing.rs` (Path)",
            "`apply::on_new_website_in` (Item)",
            "`websites::no_such_fn` (Item)",
            "`Store::no_such_method` (Item)",
            "`no_such_call()` (Call)",
            "`no_such_macro!` (Macro)",
            "`NoSuchType` (Type)",
            "`no_such_table` (Word)",
            "`ui/js/nothing.js` (Path)",
        ]
    );
    assert_eq!(
        checked,
        17 + 9,
        "every name but the prose and the code block was checked"
    );
}
