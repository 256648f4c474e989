//! The one writer of the CLI's output: every line a person reads (on stdout and stderr), every
//! table and every JSON document goes through here, so that three promises are kept in one place
//! and no command can forget them.
//!
//! - **A closed output is the normal end of it.** When stdout's reader goes away (`sitetrail
//!   history | head -1`), the first write that fails marks the output closed and returns an error
//!   that ends the command; `main` then exits 0 without a message, as `grep`, `ls` and ripgrep do.
//!   Commands finish their work before they print, so a reader that leaves never cuts work short.
//! - **Text from outside cannot steer the terminal.** URLs, titles, domains, paths and server
//!   messages may hold control characters (`ESC ] 0;…` sets the window title, a newline forges
//!   an output line) and bidirectional overrides (U+202E reorders the rest of the line): every
//!   human line is passed through [`escape`], which shows them as `\u{1b}`, `\n`, `\u{202e}`.
//!   JSON is written as serde_json writes it (it escapes control characters itself), unchanged.
//! - **Colour only on a terminal**, never with `NO_COLOR` set (<https://no-color.org>) or
//!   `TERM=dumb`; on a terminal, a table's one flexible column is cut to the window's width.
//!
//! Nothing else in the CLI writes to stdout: the binary denies `print!`, `println!`, `eprint!`
//! and `eprintln!` (clippy), and `std::io::stdout` is a disallowed method (clippy.toml) allowed
//! only here and in the native host, whose stdout is the browser's message channel.

use std::borrow::Cow;
use std::ffi::OsString;
use std::io::{self, BufRead, BufWriter, IsTerminal, Read, Write};
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use sitetrail::{Error, Result};

/// Standard output, buffered (a listing of 100,000 visits is a few writes, not 100,000), and
/// whether its reader has gone away.
struct Sink {
    out: BufWriter<io::Stdout>,
    closed: bool,
}

impl Sink {
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        if self.closed {
            return Err(broken_pipe());
        }
        match self.out.write_all(bytes) {
            Ok(()) => Ok(()),
            Err(e) => Err(self.failed(e)),
        }
    }

    fn flush(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.out.flush().map_err(|e| self.failed(e))
    }

    fn failed(&mut self, e: io::Error) -> Error {
        if e.kind() == io::ErrorKind::BrokenPipe {
            self.closed = true;
        }
        Error::Io(e)
    }
}

#[allow(clippy::disallowed_methods)] // the one place the CLI's human output reaches stdout
static STDOUT: LazyLock<Mutex<Sink>> = LazyLock::new(|| {
    Mutex::new(Sink {
        out: BufWriter::with_capacity(64 * 1024, io::stdout()),
        closed: false,
    })
});

fn sink() -> MutexGuard<'static, Sink> {
    STDOUT.lock().unwrap_or_else(PoisonError::into_inner)
}

fn broken_pipe() -> Error {
    Error::Io(io::Error::from(io::ErrorKind::BrokenPipe))
}

/// True if `e` ended the command because standard output's reader went away: the normal end of
/// the output, not a failure.
pub(crate) fn is_closed_output(e: &Error) -> bool {
    sink().closed && matches!(e, Error::Io(io) if io.kind() == io::ErrorKind::BrokenPipe)
}

/// Writes what is still buffered; called once, when the command is done.
pub(crate) fn finish() -> Result<()> {
    sink().flush()
}

/// Prints `text` as one line on stdout, escaped.
pub(crate) fn line(text: &str) -> Result<()> {
    let mut s = escape(text).into_owned();
    s.push('\n');
    sink().write(s.as_bytes())
}

/// Prints `value` as pretty JSON and a newline (the bytes `serde_json::to_writer_pretty` writes).
pub(crate) fn json(value: &impl serde::Serialize) -> Result<()> {
    let mut s = serde_json::to_string_pretty(value).map_err(|e| Error::Io(e.into()))?;
    s.push('\n');
    sink().write(s.as_bytes())
}

/// Prints `table` on stdout: aligned columns under their headers, coloured on a terminal.
pub(crate) fn table(table: &Table) -> Result<()> {
    let text = render(table, *TERMINAL_WIDTH, *COLOUR);
    sink().write(text.as_bytes())
}

/// Prints `text` as one line on stderr, escaped (notes beside the output: the next page's
/// cursor, an error). Stdout is flushed first, so on a terminal the two stay in order. A failing
/// stderr is ignored: there is nowhere left to say so.
pub(crate) fn note(text: &str) {
    let _ = sink().flush();
    let mut err = io::stderr().lock();
    let _ = writeln!(err, "{}", escape(text));
}

/// True if standard input is a terminal: a person is there to answer a question.
pub(crate) fn stdin_is_terminal() -> bool {
    io::stdin().is_terminal()
}

/// Asks `question` on stderr and reads the answer from stdin: true for `y` or `yes` (any case),
/// false for anything else, an empty line or the end of input.
pub(crate) fn confirm(question: &str) -> Result<bool> {
    let answer = ask(&format!("{question} [y/N]"))?;
    Ok(matches!(answer.to_lowercase().as_str(), "y" | "yes"))
}

/// Asks `question` on stderr and reads one line of answer from stdin (at most 1 KiB), trimmed;
/// empty at the end of input.
pub(crate) fn ask(question: &str) -> Result<String> {
    let _ = sink().flush();
    {
        let mut err = io::stderr().lock();
        write!(err, "{} ", escape(question))?;
        err.flush()?;
    }
    let mut answer = String::new();
    io::stdin().lock().take(1024).read_line(&mut answer)?;
    Ok(answer.trim().to_owned())
}

/// Whether tables are coloured: stdout is a terminal, `NO_COLOR` is unset or empty, and `TERM` is
/// not `dumb`.
static COLOUR: LazyLock<bool> = LazyLock::new(|| {
    colour_wanted(
        stdout_is_terminal(),
        std::env::var_os("NO_COLOR"),
        std::env::var_os("TERM"),
    )
});

#[allow(clippy::disallowed_methods)] // asking, not writing
fn stdout_is_terminal() -> bool {
    io::stdout().is_terminal()
}

fn colour_wanted(terminal: bool, no_color: Option<OsString>, term: Option<OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty()) && term.is_none_or(|t| t != "dumb")
}

/// The terminal's width in columns, when stdout is one.
static TERMINAL_WIDTH: LazyLock<Option<usize>> = LazyLock::new(|| {
    if !stdout_is_terminal() {
        return None;
    }
    console::Term::stdout()
        .size_checked()
        .map(|(_rows, cols)| usize::from(cols))
        .filter(|&c| c > 0)
});

/// True for the characters that must not reach a terminal raw: C0 and C1 controls and DEL
/// (`char::is_control`), the bidirectional formatting characters (embeddings, overrides,
/// isolates, marks) and the line and paragraph separators.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
                | '\u{2028}' | '\u{2029}'
        )
}

/// `text` with every character a terminal would act on shown as an escape: `\n`, `\r`, `\t`, and
/// `\u{…}` (hex) for the others.
pub(crate) fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_unsafe(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// How a column's cells line up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

/// How a cell is shown on a colour terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    Plain,
    Bold,
    Dim,
    Green,
    Yellow,
    Red,
}

impl Style {
    fn code(self) -> Option<&'static str> {
        match self {
            Style::Plain => None,
            Style::Bold => Some("1"),
            Style::Dim => Some("2"),
            Style::Green => Some("32"),
            Style::Yellow => Some("33"),
            Style::Red => Some("31"),
        }
    }
}

/// One cell: its text (escaped when printed) and its style.
#[derive(Clone, Debug)]
pub(crate) struct Cell {
    text: String,
    style: Style,
}

impl Cell {
    /// A cell shown in `style` on a colour terminal.
    pub(crate) fn styled(text: impl Into<String>, style: Style) -> Cell {
        Cell {
            text: text.into(),
            style,
        }
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell::styled(text, Style::Plain)
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell::styled(text, Style::Plain)
    }
}

#[derive(Clone, Debug)]
struct Column {
    header: &'static str,
    align: Align,
    flex: bool,
}

/// A table: headers, then rows, each column as wide as its widest cell. At most one column is
/// flexible: on a terminal too narrow for the table, its cells are cut (with `…`) to fit.
#[derive(Clone, Debug, Default)]
pub(crate) struct Table {
    columns: Vec<Column>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    /// A table without columns yet.
    pub(crate) fn new() -> Table {
        Table::default()
    }

    /// Adds a column.
    pub(crate) fn column(mut self, header: &'static str, align: Align) -> Table {
        self.columns.push(Column {
            header,
            align,
            flex: false,
        });
        self
    }

    /// Adds the flexible column (left-aligned; cut to fit a terminal).
    pub(crate) fn flex(mut self, header: &'static str) -> Table {
        self.columns.push(Column {
            header,
            align: Align::Left,
            flex: true,
        });
        self
    }

    /// Adds a row of one cell per column.
    pub(crate) fn row(&mut self, cells: Vec<Cell>) {
        debug_assert_eq!(cells.len(), self.columns.len(), "one cell per column");
        self.rows.push(cells);
    }
}

/// Narrowest a flexible column is cut to, however narrow the terminal.
const MIN_FLEX: usize = 12;

/// `text` cut to at most `width` columns, ending in `…` when cut.
fn cut(text: &str, width: usize) -> Cow<'_, str> {
    if text.width() <= width {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    Cow::Owned(out)
}

/// The table as text: headers and rows, columns two spaces apart, no trailing spaces.
fn render(table: &Table, terminal_width: Option<usize>, colour: bool) -> String {
    let n = table.columns.len();
    let mut cells: Vec<Vec<(String, Style)>> = Vec::with_capacity(table.rows.len() + 1);
    cells.push(
        table
            .columns
            .iter()
            .map(|c| (c.header.to_owned(), Style::Bold))
            .collect(),
    );
    for row in &table.rows {
        cells.push(
            row.iter()
                .map(|c| (escape(&c.text).into_owned(), c.style))
                .collect(),
        );
    }
    let mut widths = vec![0usize; n];
    for row in &cells {
        for (i, (text, _)) in row.iter().enumerate().take(n) {
            widths[i] = widths[i].max(text.width());
        }
    }
    if let (Some(total), Some(flex)) = (terminal_width, table.columns.iter().position(|c| c.flex)) {
        let others: usize = widths
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != flex)
            .map(|(_, w)| w)
            .sum::<usize>()
            + 2 * n.saturating_sub(1);
        let room = total
            .saturating_sub(others)
            .max(MIN_FLEX)
            .max(table.columns[flex].header.width());
        if widths[flex] > room {
            widths[flex] = room;
            for row in cells.iter_mut().skip(1) {
                if let Some((text, _)) = row.get_mut(flex) {
                    if let Cow::Owned(shorter) = cut(text, room) {
                        *text = shorter;
                    }
                }
            }
        }
    }
    let mut out = String::new();
    for row in &cells {
        let mut line = String::new();
        for (i, (text, style)) in row.iter().enumerate().take(n) {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = widths[i].saturating_sub(text.width());
            let last = i + 1 == n;
            if table.columns[i].align == Align::Right {
                line.push_str(&" ".repeat(pad));
            }
            match style.code().filter(|_| colour) {
                Some(code) => line.push_str(&format!("\x1b[{code}m{text}\x1b[0m")),
                None => line.push_str(text),
            }
            if table.columns[i].align == Align::Left && !last {
                line.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(line.trim_end_matches(' '));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new()
            .column("DOMAIN", Align::Left)
            .flex("TITLE")
            .column("SPENT", Align::Right);
        t.row(vec![
            "münchen.example".into(),
            "A long title here".into(),
            "12 min".into(),
        ]);
        t.row(vec!["b.example".into(), "-".into(), "45 s".into()]);
        t
    }

    #[test]
    fn tables_align_under_their_headers_by_display_width() {
        let text = render(&sample(), None, false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "DOMAIN           TITLE               SPENT");
        assert_eq!(lines[1], "münchen.example  A long title here  12 min");
        assert_eq!(lines[2], "b.example        -                    45 s");
    }

    #[test]
    fn the_flexible_column_is_cut_to_a_terminal() {
        let text = render(&sample(), Some(38), false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "münchen.example  A long title…  12 min");
        assert!(lines.iter().all(|l| l.width() <= 38), "{text}");
        // A wide character is never split, and never overflows.
        assert_eq!(cut("日本語のタイトル", 7), "日本語…");
    }

    #[test]
    fn colour_only_where_asked_for() {
        let mut t = Table::new().column("A", Align::Left);
        t.row(vec![Cell::styled("x", Style::Red)]);
        assert_eq!(render(&t, None, false), "A\nx\n");
        assert_eq!(render(&t, None, true), "\x1b[1mA\x1b[0m\n\x1b[31mx\x1b[0m\n");
        assert!(colour_wanted(true, None, None));
        assert!(colour_wanted(true, Some("".into()), Some("xterm".into())));
        assert!(!colour_wanted(true, Some("1".into()), None), "NO_COLOR");
        assert!(!colour_wanted(true, None, Some("dumb".into())));
        assert!(!colour_wanted(false, None, None), "not a terminal");
    }

    #[test]
    fn control_and_bidi_characters_are_shown_not_obeyed() {
        assert_eq!(escape("plain — ünïcode 日本"), "plain — ünïcode 日本");
        assert_eq!(escape("a\x1b]0;pwned\x07b"), "a\\u{1b}]0;pwned\\u{7}b");
        assert_eq!(escape("line\nforged\r\t"), "line\\nforged\\r\\t");
        assert_eq!(escape("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(
            escape("\u{2066}x\u{2069}\u{200f}\u{9b}\u{7f}"),
            "\\u{2066}x\\u{2069}\\u{200f}\\u{9b}\\u{7f}"
        );
        // Right-to-left letters are text, not overrides: kept.
        assert_eq!(escape("שלום"), "שלום");
        let mut t = Table::new().column("T", Align::Left);
        t.row(vec!["\x1b[2J".into()]);
        assert_eq!(render(&t, None, false), "T\n\\u{1b}[2J\n");
    }
}
