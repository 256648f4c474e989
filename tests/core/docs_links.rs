//! The README, ARCHITECTURE.md and the user guide in `docs/` hold together: every relative link
//! leads to a file that exists and every `#anchor` to a heading of its page (GitHub's slugs); the
//! README stays a few screens long and links every page of the guide, and `sitetrail --help`
//! names every page. No network: links to http(s) addresses are not followed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::support::run_ok;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The README's limit: what a person reads to the end (issue 31).
const README_MAX_LINES: usize = 300;

/// The documents whose links are checked: README.md, ARCHITECTURE.md and every `docs/*.md`.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    out.extend(guide_pages(root));
    out
}

/// Every `docs/*.md`, sorted.
fn guide_pages(root: &Path) -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    pages
}

/// The text of `md` with fenced code blocks blanked (line numbers kept): nothing in them is a
/// link or a heading.
fn prose(md: &str) -> String {
    let mut fenced = false;
    md.lines()
        .map(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
                ""
            } else if fenced {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The targets of the inline links and images of `md` (`[text](target)`, `![alt](target)`), with
/// their line numbers; code spans (which may run over a line break, not over a blank line) are
/// not prose, so nothing in them is a link.
fn links(md: &str) -> Vec<(usize, String)> {
    let text = prose(md);
    let mut out = Vec::new();
    let mut line = 1;
    let mut in_code = false;
    let chars = text.char_indices();
    let mut previous_newline = false;
    for (i, c) in chars {
        match c {
            '\n' => {
                // A blank line ends a paragraph, and any code span left open in it.
                if previous_newline {
                    in_code = false;
                }
                previous_newline = true;
                line += 1;
                continue;
            }
            '`' => in_code = !in_code,
            ']' if !in_code && text[i..].starts_with("](") => {
                let rest = &text[i + 2..];
                if let Some(end) = rest.find(')') {
                    // A title after the address ("...) is not part of it.
                    let target = rest[..end].split_whitespace().next().unwrap_or("");
                    out.push((line, target.to_owned()));
                }
            }
            _ => {}
        }
        if !c.is_whitespace() {
            previous_newline = false;
        }
    }
    out
}

/// GitHub's anchor for a heading: the text as shown (no code ticks, emphasis or link targets),
/// lower-case, letters, digits, `-` and `_` kept, spaces turned into `-`, everything else dropped.
fn slug(heading: &str) -> String {
    // A link in a heading shows its text only.
    let mut shown = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find("](") {
        shown.push_str(&rest[..open]);
        rest = &rest[open + 2..];
        rest = rest.find(')').map_or("", |close| &rest[close + 1..]);
    }
    shown.push_str(rest);
    shown
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of `md`'s headings, the second and later of one name numbered (`-1`, `-2`) as
/// GitHub does.
fn anchors(md: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for l in prose(md).lines() {
        let hashes = l.chars().take_while(|c| *c == '#').count();
        if hashes == 0 || hashes > 6 || !l[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&l[hashes..]);
        let mut name = base.clone();
        let mut n = 0;
        while out.contains(&name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        out.insert(name);
    }
    out
}

/// What is wrong with the links of `doc`: each broken one with its line and why.
fn broken_links(doc: &Path) -> Vec<String> {
    let md = std::fs::read_to_string(doc).unwrap();
    let dir = doc.parent().unwrap();
    let mut out = Vec::new();
    for (line, target) in links(&md) {
        let lower = target.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target.as_str(), None),
        };
        let file = if path.is_empty() {
            doc.to_path_buf()
        } else {
            dir.join(path)
        };
        let at = format!("{}:{line}: ({target})", doc.display());
        if target.is_empty() || !file.exists() {
            out.push(format!("{at}: no such file"));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        if file.extension().is_none_or(|x| x != "md") {
            out.push(format!("{at}: an anchor into a file that is not Markdown"));
            continue;
        }
        let headings = anchors(&std::fs::read_to_string(&file).unwrap());
        if !headings.contains(anchor) {
            out.push(format!(
                "{at}: no heading with the anchor #{anchor} (there are: {headings:?})"
            ));
        }
    }
    out
}

#[test]
fn every_link_of_the_readme_architecture_and_the_guide_resolves() {
    let docs = documents(root());
    assert!(docs.len() > 10, "the guide's pages were found: {docs:?}");
    let mut checked = 0;
    let mut broken = Vec::new();
    for doc in &docs {
        checked += links(&std::fs::read_to_string(doc).unwrap()).len();
        broken.extend(broken_links(doc));
    }
    assert!(checked > 50, "the links were found ({checked})");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_fits_on_a_few_screens_and_links_every_page_of_the_guide() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md is {lines} lines; at most {README_MAX_LINES}: move the details to docs/"
    );
    let targets: BTreeSet<String> = links(&readme)
        .into_iter()
        .map(|(_, t)| t.split('#').next().unwrap().to_owned())
        .collect();
    for page in guide_pages(root()) {
        let name = format!("docs/{}", page.file_name().unwrap().to_string_lossy());
        assert!(targets.contains(&name), "README.md does not link {name}");
    }
}

#[test]
fn sitetrail_help_names_every_page_of_the_guide() {
    let help = run_ok(std::process::Command::new(env!("CARGO_BIN_EXE_sitetrail")).arg("--help"));
    let named: BTreeSet<&str> = help
        .split_whitespace()
        .filter(|w| w.starts_with("docs/") && w.ends_with(".md"))
        .collect();
    for page in guide_pages(root()) {
        let name = format!("docs/{}", page.file_name().unwrap().to_string_lossy());
        assert!(
            named.contains(name.as_str()),
            "`sitetrail --help` does not name {name}:\n{help}"
        );
    }
    for name in named {
        assert!(
            root().join(name).is_file(),
            "`sitetrail --help` names {name}, which does not exist"
        );
    }
}

#[test]
fn slugs_are_githubs() {
    for (heading, anchor) in [
        (" The `sitetrail` command", "the-sitetrail-command"),
        (" Firefox: keeping the extension", "firefox-keeping-the-extension"),
        (
            " Sync on the device (`src/sync`, `src/sync_log`)",
            "sync-on-the-device-srcsync-srcsync_log",
        ),
        (" A hub for 100,000 devices", "a-hub-for-100000-devices"),
        (" What's new — in Überblick", "whats-new--in-überblick"),
        (" See [the guide](docs/cli.md) first", "see-the-guide-first"),
    ] {
        assert_eq!(slug(heading), anchor, "{heading:?}");
    }
    assert_eq!(
        anchors("# Tests\n\n## Tests\n```\n# not a heading\n```\n#nor this\n"),
        ["tests", "tests-1"].map(str::to_owned).into(),
    );
}

/// The checker itself finds what it must: a missing file, a missing anchor, an anchor into a
/// file that has none, and not a link inside code or a good one.
#[test]
fn a_broken_link_is_found() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::write(dir.path().join("docs/page.md"), "# A page\n\n## Its part\n").unwrap();
    std::fs::write(dir.path().join("code.rs"), "fn main() {}\n").unwrap();
    let readme = dir.path().join("README.md");
    std::fs::write(
        &readme,
        "# Readme\n\n[good](docs/page.md#its-part), [here](#readme), \
         [gone](docs/gone.md)\n[no anchor](docs/page.md#its-whole)\n\
         [line](code.rs#L1) `[code](nowhere.md)` and `a span\nover a line [x](nowhere.md)`\n\
         ```\n[fenced](nowhere.md)\n```\n[web](https://example.org/#nothing)\n",
    )
    .unwrap();
    let broken = broken_links(&readme);
    assert_eq!(broken.len(), 3, "{broken:#?}");
    assert!(
        broken[0].contains(":3: (docs/gone.md): no such file"),
        "{broken:#?}"
    );
    assert!(
        broken[1].contains(":4: (docs/page.md#its-whole): no heading"),
        "{broken:#?}"
    );
    assert!(
        broken[2].contains(":5: (code.rs#L1): an anchor into a file"),
        "{broken:#?}"
    );
}
