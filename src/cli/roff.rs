//! Man pages from a clap command: clap_mangen's sections made from the real command line, then
//! the sections a man page reader looks for and clap has no place for (EXAMPLES, EXIT STATUS,
//! ENVIRONMENT, FILES: `.TP` entries, a bold tag and its text), then clap's notes and version.
//!
//! One file for both programs' pages: the `sitetrail` CLI (`cli/manpage.rs`) and the hub
//! (`hub/src/manpage.rs`, which includes this file by its path: the hub does not depend on the
//! library). Each says what its sections hold.

use std::io::Write;
use std::path::Path;

use clap::Command;

/// A section of `.TP` entries: its title and its (tag, text) entries.
pub struct Section {
    /// `EXAMPLES`, `EXIT STATUS`, ...
    pub title: &'static str,
    /// Each entry's tag (in bold) and text.
    pub entries: Vec<(String, &'static str)>,
}

impl Section {
    /// A section of `entries` given as string pairs.
    pub fn of(title: &'static str, entries: &[(&str, &'static str)]) -> Section {
        Section {
            title,
            entries: entries
                .iter()
                .map(|(tag, text)| ((*tag).to_owned(), *text))
                .collect(),
        }
    }
}

/// Writes `text` as roff text: backslashes, hyphens and a leading dot or quote escaped.
fn roff_text(out: &mut Vec<u8>, text: &str) {
    let mut s = text.replace('\\', "\\e").replace('-', "\\-");
    if s.starts_with('.') || s.starts_with('\'') {
        s.insert_str(0, "\\&");
    }
    out.extend_from_slice(s.as_bytes());
    out.push(b'\n');
}

/// A section of `.TP` entries: a bold tag, then its text.
fn tagged_section(out: &mut Vec<u8>, section: &Section) {
    out.extend_from_slice(format!(".SH {}\n", section.title).as_bytes());
    for (tag, text) in &section.entries {
        out.extend_from_slice(b".TP\n\\fB");
        let mut t = Vec::new();
        roff_text(&mut t, tag);
        t.pop();
        out.extend_from_slice(&t);
        out.extend_from_slice(b"\\fR\n");
        roff_text(out, text);
    }
}

/// One page: clap_mangen's sections, then `sections`, then clap's notes and version.
fn render(cmd: &Command, sections: &[Section]) -> std::io::Result<Vec<u8>> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut out)?;
    }
    for section in sections {
        tagged_section(&mut out, section);
    }
    if cmd.get_after_long_help().is_some() || cmd.get_after_help().is_some() {
        man.render_extra_section(&mut out)?;
    }
    if cmd.get_version().is_some() || cmd.get_long_version().is_some() {
        man.render_version_section(&mut out)?;
    }
    Ok(out)
}

/// Writes the page of `cmd` and of each of its visible subcommands into `dir` (`cmd` built, so
/// subcommands have their display names: `sitetrail-history.1`), each with the sections
/// `sections` gives for its name.
pub fn write_pages(
    cmd: &Command,
    dir: &Path,
    sections: &dyn Fn(&str) -> Vec<Section>,
) -> std::io::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, sections)?;
    }
    let name = cmd.get_display_name().unwrap_or_else(|| cmd.get_name());
    let mut file = std::fs::File::create(dir.join(format!("{name}.1")))?;
    file.write_all(&render(cmd, &sections(name))?)?;
    file.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roff_text_is_escaped() {
        let mut out = Vec::new();
        roff_text(&mut out, ".hidden --flag a\\b");
        assert_eq!(String::from_utf8(out).unwrap(), "\\&.hidden \\-\\-flag a\\eb\n");
    }
}
