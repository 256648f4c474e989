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

/// Which top-level library modules each one names (`crate::x` outside comments and unit tests).
fn module_graph() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    use std::collections::{BTreeMap, BTreeSet};
    let files: Vec<PathBuf> = rust_files(&root().join("src"))
        .into_iter()
        .filter(|f| {
            let m = module_of(f);
            m != "lib" && m != "main" && m != "cli" && !m.starts_with("cli::")
        })
        .collect();
    let top = |f: &Path| module_of(f).split("::").next().unwrap().to_owned();
    let modules: BTreeSet<String> = files.iter().map(|f| top(f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> =
        modules.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for f in &files {
        let from = top(f);
        for line in code_of(f).lines() {
            let code = line.split("//").next().unwrap_or("");
            for part in code.split("crate::").skip(1) {
                let name: String = part
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if name != from && modules.contains(&name) {
                    graph.get_mut(&from).unwrap().insert(name);
                }
            }
        }
    }
    graph
}

/// The groups of modules that depend on each other in a ring (Tarjan's strongly connected
/// components with more than one member).
fn cycles(
    graph: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Vec<std::collections::BTreeSet<String>> {
    use std::collections::{BTreeMap, BTreeSet};
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        for w in &t.g[v] {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                t.low.insert(v, t.low[v].min(lw));
            } else if t.stack.contains(&w) {
                let iw = t.index[w];
                t.low.insert(v, t.low[v].min(iw));
            }
        }
        if t.low[v] == t.index[v] {
            let mut group = BTreeSet::new();
            while let Some(w) = t.stack.pop() {
                group.insert(w.to_owned());
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                t.out.push(group);
            }
        }
    }
    let mut t = T {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn the_library_modules_form_no_import_cycle() {
    let doc = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    assert!(
        doc.contains("**The library's top-level modules form no import cycle**"),
        "ARCHITECTURE.md states the invariant this test checks"
    );
    let graph = module_graph();
    assert!(
        graph.len() > 20,
        "the library's modules were found: {:?}",
        graph.keys()
    );
    // The write paths sit above the sync outbox, sync above them.
    assert!(graph["visits"].contains("sync_log") && graph["sync"].contains("visits"));
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "import cycles between {found:?} (break each by moving what both sides need lower)"
    );
    // The ground floor names nothing above it, and the sync outbox the write paths queue into
    // rests on the ground floor alone.
    let ground = [
        "error",
        "store",
        "domain",
        "page_url",
        "category",
        "confidence",
        "sql_enum",
        "time",
        "ids",
        "names",
        "blocking",
        "changes",
        "fsutil",
    ];
    for m in ground.iter().chain(&["sync_log"]) {
        let above: Vec<&String> = graph[*m]
            .iter()
            .filter(|d| !ground.contains(&d.as_str()))
            .collect();
        assert!(above.is_empty(), "{m} names {above:?}, above the ground floor");
    }
}

/// The files directly in `dir` that name each other: `prefix` then a sibling's name (`super::`
/// inside a module's folder, `crate::` in a crate's root folder), also inside `{…}` lists. The
/// module's own file (`mod.rs`, `lib.rs`, `main.rs`), which declares and re-exports them all,
/// is left out.
fn file_graph(
    dir: &Path,
    prefix: &str,
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    use std::collections::{BTreeMap, BTreeSet};
    let stem = |f: &Path| f.file_stem().unwrap().to_string_lossy().into_owned();
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
        .filter(|f| !["mod", "lib", "main"].contains(&stem(f).as_str()))
        .collect();
    let siblings: BTreeSet<String> = files.iter().map(|f| stem(f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let from = stem(f);
        let edges = graph.entry(from.clone()).or_default();
        for line in code_of(f).lines() {
            let code = line.split("//").next().unwrap_or("");
            for part in code.split(prefix).skip(1) {
                let names: Vec<String> = if let Some(list) = part.strip_prefix('{') {
                    list.split('}')
                        .next()
                        .unwrap_or("")
                        .split(',')
                        .map(|n| n.trim().split("::").next().unwrap_or("").to_owned())
                        .collect()
                } else {
                    vec![part
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect()]
                };
                for n in names {
                    if n != from && siblings.contains(&n) {
                        edges.insert(n);
                    }
                }
            }
        }
    }
    graph
}

#[test]
fn the_files_of_a_module_form_no_import_cycle() {
    let mut checked = 0;
    let mut found = Vec::new();
    // Every module folder of the library and the app, and the crates' root folders.
    let mut dirs: Vec<(PathBuf, &str)> = vec![
        (root().join("src-tauri/src"), "crate::"),
        (root().join("hub/src"), "crate::"),
    ];
    for base in ["src", "src-tauri/src", "hub/src"] {
        for e in std::fs::read_dir(root().join(base)).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push((p, "super::"));
            }
        }
    }
    for (dir, prefix) in &dirs {
        let graph = file_graph(dir, prefix);
        checked += graph.len();
        for ring in cycles(&graph) {
            found.push(format!(
                "{}: {ring:?}",
                dir.strip_prefix(root()).unwrap().display()
            ));
        }
    }
    assert!(checked > 80, "the modules' files were found: {checked}");
    assert!(
        found.is_empty(),
        "files that name each other in a ring (move what both need into a file below them): {found:?}"
    );
}

#[test]
fn a_ring_of_files_is_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.rs"), "use super::{b, c::X};\n").unwrap();
    std::fs::write(
        dir.path().join("b.rs"),
        "// super::a is only a comment\nfn f() { super::a::g() }\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("c.rs"), "use super::d;\n").unwrap();
    let graph = file_graph(dir.path(), "super::");
    let found = cycles(&graph);
    assert_eq!(found.len(), 1, "{graph:?}");
    assert!(found[0].contains("a") && found[0].contains("b") && !found[0].contains("c"));
}
