//! docs/SYNC.md's two route tables (what each route does, and what it answers) list exactly the
//! routes the hub's router serves, with their methods: a route added, removed or renamed in the
//! code without the protocol's description fails here.

use std::collections::BTreeSet;
use std::path::Path;

fn read(rel: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// `routes::NAME` → its path, from `hub/wire`'s `routes` module.
fn route_paths() -> Vec<(String, String)> {
    read("hub/wire/src/lib.rs")
        .lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("pub const ")?;
            let (name, value) = rest.split_once(": &str = \"")?;
            Some((name.to_owned(), value.strip_suffix("\";")?.to_owned()))
        })
        .filter(|(_, v)| v.starts_with("/v1/"))
        .collect()
}

/// `METHOD path` of every route the router registers (`hub/src/server.rs`).
fn served() -> BTreeSet<String> {
    let src = read("hub/src/server.rs");
    let start = src.find("Router::new()").expect("the router");
    let end = src[start..].find(".fallback(").expect("its fallback") + start;
    let paths = route_paths();
    let mut out = BTreeSet::new();
    for chunk in src[start..end].split(".route(").skip(1) {
        let name = chunk
            .split("routes::")
            .nth(1)
            .and_then(|r| r.split(|c: char| !(c.is_ascii_uppercase() || c == '_')).next())
            .expect("a route constant");
        let path = &paths
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("routes::{name} is not a path constant"))
            .1;
        for method in ["get", "post", "put", "delete", "patch"] {
            let called = chunk
                .match_indices(&format!("{method}("))
                .any(|(i, _)| i == 0 || !chunk.as_bytes()[i - 1].is_ascii_alphanumeric());
            if called {
                out.insert(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    out
}

/// `METHOD path` of every route in the table under `heading` in docs/SYNC.md (a path's `{id}` is
/// `{device_id}`; query strings are left out).
fn documented(heading: &str) -> BTreeSet<String> {
    let doc = read("docs/SYNC.md");
    let start = doc
        .find(heading)
        .unwrap_or_else(|| panic!("docs/SYNC.md has {heading:?}"));
    let section = &doc[start + heading.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let mut out = BTreeSet::new();
    for row in section.lines().filter(|l| l.starts_with("| `")) {
        let first_cell = row.split(" | ").next().unwrap_or_default();
        for code in first_cell.split('`').skip(1).step_by(2) {
            let Some((method, path)) = code.split_once(' ') else {
                continue;
            };
            if !["GET", "POST", "PUT", "DELETE", "PATCH"].contains(&method) {
                continue;
            }
            let path = path
                .split('?')
                .next()
                .unwrap_or_default()
                .replace("{id}", "{device_id}");
            out.insert(format!("{method} {path}"));
        }
    }
    out
}

#[test]
fn the_protocols_route_tables_list_exactly_the_routes_the_hub_serves() {
    let served = served();
    assert!(served.len() >= 10, "the router's routes were read: {served:?}");
    for heading in [
        "## The HTTP API (version 1)",
        "## The hub's answers, route by route",
    ] {
        assert_eq!(documented(heading), served, "docs/SYNC.md, {heading}");
    }
}
