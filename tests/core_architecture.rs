//! ARCHITECTURE.md's claims about the code, checked against the source so they stay true.

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The module path of a library file: `src/outbox/claim.rs` → `outbox::claim`,
/// `src/forget/mod.rs` → `forget`.
fn module_of(file: &Path) -> String {
    let rel = file.strip_prefix(root().join("src")).unwrap();
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts.join("::")
}

/// The file's code without its unit tests (what tests do with SQLite is theirs).
fn code_of(file: &Path) -> String {
    let s = std::fs::read_to_string(file).unwrap();
    match s.find("#[cfg(test)]\nmod tests") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

/// True if `code` runs SQL through rusqlite.
fn runs_sql(code: &str) -> bool {
    [
        ".prepare(",
        ".prepare_cached(",
        ".execute(",
        ".execute_batch(",
        ".query_row(",
        ".pragma_update(",
        ".pragma_query_value(",
    ]
    .iter()
    .any(|call| code.contains(call))
}

/// The backticked module names of the ARCHITECTURE.md sentence that starts with `lead`, up to
/// its full stop.
fn listed(lead: &str) -> Vec<String> {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    // Lines are wrapped anywhere: one space for every run of white space.
    let doc = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    let start = doc
        .find(lead)
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no {lead:?}"));
    let rest = &doc[start + lead.len()..];
    let sentence = &rest[..rest.find(". ").unwrap()];
    sentence
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

fn covered_by(module: &str, list: &[String]) -> bool {
    list.iter()
        .any(|m| module == m || module.starts_with(&format!("{m}::")))
}

#[test]
fn only_the_modules_architecture_names_touch_rusqlite() {
    let sql = listed("**Only these modules run SQL**:");
    let types = listed("**These may name rusqlite's types but run no SQL**:");
    assert!(
        sql.contains(&"store".to_owned()) && !types.is_empty(),
        "{sql:?} {types:?}"
    );
    let mut seen_sql = Vec::new();
    let mut seen_types = Vec::new();
    for file in rust_files(&root().join("src")) {
        let code = code_of(&file);
        let module = module_of(&file);
        if runs_sql(&code) {
            assert!(
                covered_by(&module, &sql),
                "{module} runs SQL but ARCHITECTURE.md does not list it among the modules that do"
            );
            seen_sql.push(module);
        } else if code.contains("rusqlite") {
            assert!(
                covered_by(&module, &sql) || covered_by(&module, &types),
                "{module} uses rusqlite but ARCHITECTURE.md does not name it"
            );
            seen_types.push(module);
        }
    }
    // The lists name nothing that is not (or no longer) true.
    for m in &sql {
        assert!(
            seen_sql.iter().any(|s| covered_by(s, std::slice::from_ref(m))),
            "ARCHITECTURE.md lists {m} as running SQL, but it does not"
        );
    }
    for m in &types {
        assert!(
            seen_types.iter().any(|s| covered_by(s, std::slice::from_ref(m))),
            "ARCHITECTURE.md lists {m} as naming rusqlite's types, but it does not"
        );
    }
    // The app and the binary go through the library.
    for dir in ["src-tauri/src", "src/cli"] {
        for file in rust_files(&root().join(dir)) {
            assert!(
                !code_of(&file).contains("rusqlite"),
                "{} uses rusqlite; the app and the CLI go through the library",
                file.display()
            );
        }
    }
}

/// "The worker module does not know sync": the worker asks a `ClaimGate`; only `sync::claims`
/// implements it, so the worker never names the sync module (outside comments).
#[test]
fn the_worker_does_not_know_sync() {
    let mut files = rust_files(&root().join("src/worker"));
    files.push(root().join("src/worker.rs"));
    for file in files {
        let code: String = code_of(&file)
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            !code.contains("crate::sync") && !code.contains("sitetrail::sync"),
            "{} names the sync module; the worker only knows worker::gate::ClaimGate",
            file.display()
        );
    }
    let claims = std::fs::read_to_string(root().join("src/sync/claims.rs")).unwrap();
    assert!(claims.contains("impl ClaimGate for HubClaims"));
}
