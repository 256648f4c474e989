//! Exporting history and categories to CSV or JSON files the user owns.
//!
//! Rows are streamed from the database to the file (memory stays flat at any history size), into a
//! private temporary file beside the target that is renamed over it only when complete
//! ([`crate::fsutil::write_atomically_with`]), so a failed export never leaves a half-written
//! file under the chosen name, nor a temporary file. A symlink is never replaced: its target is
//! (the temporary file goes beside the target), and a link to nothing is refused. A pipe, a FIFO
//! or a device (`/dev/stdout`, `/dev/fd/1`, a terminal) is written to directly: nothing is
//! renamed over it. An export never writes over the database
//! itself or its `-wal`, `-shm` or `-journal`, however the path is spelled (symlinks, `..`, hard
//! links: compared resolved and by device and inode).
//!
//! CSV cells are neutralised against CSV injection as OWASP recommends: page titles and URLs come
//! from websites, and a cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return is a
//! live formula in a spreadsheet. Such a cell gets a leading `'` and every text cell is quoted.
//! JSON is written as stored.

use std::io::Write;
use std::path::Path;

use rusqlite::Connection;

use crate::category::{Category, CategorySource};
use crate::error::{Error, Result};
use crate::ids::{VisitId, WebsiteId};
use crate::store::Store;
use crate::time::Timestamp;

/// File format of an export.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// Comma-separated values with a header row (RFC 4180 quoting).
    Csv,
    /// One JSON array of objects.
    Json,
}

/// What to export.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportKind {
    /// Every visit with its website and category.
    History,
    /// Every website with its category.
    Categories,
}

#[derive(serde::Serialize)]
struct VisitRecord {
    visit_id: VisitId,
    visited_at: Timestamp,
    url: String,
    title: Option<String>,
    domain: String,
    category: Option<Category>,
    category_source: Option<CategorySource>,
    source: String,
    // Added last, so CSV columns that scripts read by position keep their place.
    category_confidence: Option<crate::confidence::Confidence>,
    /// The domain as people read it (Unicode for an internationalised name); `domain` stays the
    /// stored form.
    domain_display: String,
}

#[derive(serde::Serialize)]
struct WebsiteRecord {
    website_id: WebsiteId,
    domain: String,
    category: Option<Category>,
    category_source: Option<CategorySource>,
    classified_at: Option<Timestamp>,
    created_at: Timestamp,
    category_confidence: Option<crate::confidence::Confidence>,
    /// The domain as people read it (added last, like `category_confidence`).
    domain_display: String,
}

/// A row of an export: serialised as is for JSON, as its text cells for CSV.
trait ExportRow: serde::Serialize {
    /// The CSV header: the field names, in the order of [`ExportRow::cells`].
    const HEADER: &'static [&'static str];
    /// The row's cells as text (empty for a missing value).
    fn cells(&self) -> Vec<String>;
}

impl ExportRow for VisitRecord {
    const HEADER: &'static [&'static str] = &[
        "visit_id",
        "visited_at",
        "url",
        "title",
        "domain",
        "category",
        "category_source",
        "source",
        "category_confidence",
        "domain_display",
    ];
    fn cells(&self) -> Vec<String> {
        vec![
            self.visit_id.to_string(),
            self.visited_at.to_rfc3339(),
            self.url.clone(),
            self.title.clone().unwrap_or_default(),
            self.domain.clone(),
            self.category.map(|c| c.id().to_owned()).unwrap_or_default(),
            self.category_source
                .map(|c| c.as_str().to_owned())
                .unwrap_or_default(),
            self.source.clone(),
            self.category_confidence
                .map(|c| c.as_str().to_owned())
                .unwrap_or_default(),
            self.domain_display.clone(),
        ]
    }
}

impl ExportRow for WebsiteRecord {
    const HEADER: &'static [&'static str] = &[
        "website_id",
        "domain",
        "category",
        "category_source",
        "classified_at",
        "created_at",
        "category_confidence",
        "domain_display",
    ];
    fn cells(&self) -> Vec<String> {
        vec![
            self.website_id.to_string(),
            self.domain.clone(),
            self.category.map(|c| c.id().to_owned()).unwrap_or_default(),
            self.category_source
                .map(|c| c.as_str().to_owned())
                .unwrap_or_default(),
            self.classified_at.map(Timestamp::to_rfc3339).unwrap_or_default(),
            self.created_at.to_rfc3339(),
            self.category_confidence
                .map(|c| c.as_str().to_owned())
                .unwrap_or_default(),
            self.domain_display.clone(),
        ]
    }
}

/// A CSV cell made safe for spreadsheets (OWASP, CSV injection): a cell starting with `=`, `+`,
/// `-`, `@`, a tab or a carriage return gets a leading `'`, so it is read as text.
pub fn neutralise_csv_cell(cell: &str) -> std::borrow::Cow<'_, str> {
    match cell.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{cell}").into(),
        _ => cell.into(),
    }
}

/// Writes rows one at a time in the chosen format.
struct RowWriter<W: Write> {
    format: ExportFormat,
    csv: Option<csv::Writer<W>>,
    json: Option<W>,
    first: bool,
}

impl<W: Write> RowWriter<W> {
    fn new(format: ExportFormat, out: W) -> Result<Self> {
        Ok(match format {
            ExportFormat::Csv => RowWriter {
                format,
                // Every cell quoted, as OWASP recommends with the `'` prefix.
                csv: Some(
                    csv::WriterBuilder::new()
                        .quote_style(csv::QuoteStyle::Always)
                        .from_writer(out),
                ),
                json: None,
                first: true,
            },
            ExportFormat::Json => {
                let mut out = out;
                out.write_all(b"[")?;
                RowWriter {
                    format,
                    csv: None,
                    json: Some(out),
                    first: true,
                }
            }
        })
    }

    fn write<T: ExportRow>(&mut self, row: &T) -> Result<()> {
        if let Some(w) = self.csv.as_mut() {
            if self.first {
                w.write_record(T::HEADER).map_err(csv_error)?;
            }
            let cells = row.cells();
            w.write_record(cells.iter().map(|c| neutralise_csv_cell(c).into_owned()))
                .map_err(csv_error)?;
        }
        if let Some(w) = self.json.as_mut() {
            w.write_all(if self.first { b"\n  " } else { b",\n  " })?;
            serde_json::to_writer(&mut *w, row).map_err(|e| Error::Io(e.into()))?;
        }
        self.first = false;
        Ok(())
    }

    /// Ends the file; `header` is written for a CSV export with no rows.
    fn finish(self, header: &[&str]) -> Result<()> {
        match self.format {
            ExportFormat::Csv => {
                if let Some(mut w) = self.csv {
                    if self.first {
                        w.write_record(header).map_err(csv_error)?;
                    }
                    w.flush()?;
                }
            }
            ExportFormat::Json => {
                if let Some(mut w) = self.json {
                    w.write_all(if self.first { b"]\n" } else { b"\n]\n" })?;
                    w.flush()?;
                }
            }
        }
        Ok(())
    }
}

fn csv_error(e: csv::Error) -> Error {
    Error::Io(std::io::Error::other(e.to_string()))
}

fn write_history<W: Write>(conn: &Connection, out: &mut RowWriter<W>) -> Result<u64> {
    let mut stmt = conn.prepare(
        r#"SELECT v.id, v.visited_at, v.url, v.title, v.source, w.domain, w.category, w.category_source,
                  w.category_confidence
           FROM visit v JOIN website w ON w.id = v.website_id
           ORDER BY v.id"#,
    )?;
    let mut rows = stmt.query([])?;
    let mut n = 0;
    while let Some(r) = rows.next()? {
        let domain: String = r.get("domain")?;
        out.write(&VisitRecord {
            visit_id: r.get("id")?,
            visited_at: r.get("visited_at")?,
            url: r.get("url")?,
            title: r.get("title")?,
            domain_display: crate::domain::unicode_form(&domain).into_owned(),
            domain,
            category: r.get("category")?,
            category_source: r.get("category_source")?,
            source: r.get("source")?,
            category_confidence: r.get("category_confidence")?,
        })?;
        n += 1;
    }
    Ok(n)
}

fn write_websites<W: Write>(conn: &Connection, out: &mut RowWriter<W>) -> Result<u64> {
    let mut stmt = conn.prepare(
        r#"SELECT id, domain, category, category_source, classified_at, created_at, category_confidence
           FROM website ORDER BY domain"#,
    )?;
    let mut rows = stmt.query([])?;
    let mut n = 0;
    while let Some(r) = rows.next()? {
        let domain: String = r.get("domain")?;
        out.write(&WebsiteRecord {
            website_id: r.get("id")?,
            domain_display: crate::domain::unicode_form(&domain).into_owned(),
            domain,
            category: r.get("category")?,
            category_source: r.get("category_source")?,
            classified_at: r.get("classified_at")?,
            created_at: r.get("created_at")?,
            category_confidence: r.get("category_confidence")?,
        })?;
        n += 1;
    }
    Ok(n)
}

impl Store {
    /// Exports `kind` as `format` to `path` (replacing it only once complete); returns the number
    /// of rows written. Refuses a `path` that is the database or one of its side files.
    pub fn export(&self, kind: ExportKind, format: ExportFormat, path: &Path) -> Result<u64> {
        if let Some(own) = self.own_file(path) {
            return Err(Error::InvalidInput(format!(
                "cannot export to {}: it is {own}, which the export would destroy; choose another file",
                path.display()
            )));
        }
        let header = match kind {
            ExportKind::History => VisitRecord::HEADER,
            ExportKind::Categories => WebsiteRecord::HEADER,
        };
        let write = |file: &mut std::fs::File| {
            let mut buffered = std::io::BufWriter::new(file);
            let mut out = RowWriter::new(format, &mut buffered)?;
            // One read transaction: the export is a consistent snapshot even while visits arrive.
            let n = self.with_conn(|c| {
                let tx = c.unchecked_transaction()?;
                let n = match kind {
                    ExportKind::History => write_history(&tx, &mut out)?,
                    ExportKind::Categories => write_websites(&tx, &mut out)?,
                };
                tx.finish()?;
                Ok(n)
            })?;
            out.finish(header)?;
            buffered.flush()?;
            Ok(n)
        };
        match export_target(path)? {
            Target::Replace(file) => crate::fsutil::write_atomically_with(&file, write),
            Target::Stream => {
                crate::blocking::note("file write");
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(|e| Error::InvalidInput(format!("cannot export to {}: {e}", path.display())))?;
                write(&mut file)
            }
        }
    }

    /// What `path` is, if it names the database or one of its side files (`-wal`, `-shm`,
    /// `-journal`).
    fn own_file(&self, path: &Path) -> Option<String> {
        let db = self.path();
        if crate::fsutil::same_file(path, db) {
            return Some(format!("the Sitetrail database {}", db.display()));
        }
        for suffix in ["-wal", "-shm", "-journal"] {
            let mut side = db.as_os_str().to_owned();
            side.push(suffix);
            if crate::fsutil::same_file(path, Path::new(&side)) {
                return Some(format!("the Sitetrail database's {suffix} file"));
            }
        }
        None
    }
}

/// How an export reaches `path`.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// A regular file (or a new one), replaced atomically: this path, or a symlink's target.
    Replace(std::path::PathBuf),
    /// A pipe, a FIFO, a terminal or another device (`/dev/stdout`, `/dev/fd/1`): written to
    /// directly, since nothing can be renamed over it.
    Stream,
}

/// Where an export of `path` writes. A symlink is never replaced: its target is (beside the
/// target, atomically), or, if it points nowhere, the export is refused.
fn export_target(path: &Path) -> Result<Target> {
    let refuse = |why: String| Error::InvalidInput(format!("cannot export to {}: {why}", path.display()));
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => return Err(refuse("it is a folder; name a file in it".into())),
        Ok(m) if !m.is_file() => return Ok(Target::Stream),
        _ => {}
    }
    let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if link {
        return match std::fs::canonicalize(path) {
            Ok(target) => Ok(Target::Replace(target)),
            Err(_) => {
                let to = std::fs::read_link(path).map_or_else(|_| "?".into(), |t| t.display().to_string());
                Err(refuse(format!(
                    "it is a symbolic link to {to}, which does not exist; the link is not replaced. \
                     Export to the file itself, or remove the link"
                )))
            }
        };
    }
    if !crate::fsutil::parent_dir(path).is_dir() {
        return Err(refuse("no such folder".into()));
    }
    Ok(Target::Replace(path.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_cells_get_a_leading_quote_and_others_stay() {
        for bad in [
            "=1+1",
            "+1",
            "-2",
            "@SUM(A1)",
            "\tx",
            "\rx",
            "=HYPERLINK(\"http://x\")",
        ] {
            assert_eq!(neutralise_csv_cell(bad), format!("'{bad}"), "{bad:?}");
        }
        for ok in ["", "news", "https://a.example/=x", "1+1", " =x", "'already"] {
            assert_eq!(neutralise_csv_cell(ok), ok, "{ok:?}");
        }
    }

    #[test]
    fn the_csv_header_names_the_serialised_fields_in_order() {
        fn fields<T: serde::Serialize>(row: &T) -> Vec<String> {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.serialize(row).unwrap();
            let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
            text.lines()
                .next()
                .unwrap()
                .split(',')
                .map(str::to_owned)
                .collect()
        }
        let visit = VisitRecord {
            visit_id: VisitId::new(),
            visited_at: Timestamp(0),
            url: "u".into(),
            title: None,
            domain: "d".into(),
            category: None,
            category_source: None,
            source: "s".into(),
            category_confidence: None,
            domain_display: "d".into(),
        };
        assert_eq!(fields(&visit), VisitRecord::HEADER);
        assert_eq!(visit.cells().len(), VisitRecord::HEADER.len());
        let site = WebsiteRecord {
            website_id: WebsiteId::new(),
            domain: "d".into(),
            category: None,
            category_source: None,
            classified_at: None,
            created_at: Timestamp(0),
            category_confidence: None,
            domain_display: "d".into(),
        };
        assert_eq!(fields(&site), WebsiteRecord::HEADER);
        assert_eq!(site.cells().len(), WebsiteRecord::HEADER.len());
    }

    #[test]
    fn exports_keep_the_stored_domain_and_add_the_one_people_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("t.db")).unwrap();
        store
            .record_visit(&crate::NewVisit {
                url: "https://xn--mnchen-3ya.example/stadt",
                title: Some("Stadt"),
                visited_at: store.now(),
                source: "test",
                source_visit_id: None,
            })
            .unwrap();
        for kind in [ExportKind::History, ExportKind::Categories] {
            let path = dir.path().join("out.csv");
            store.export(kind, ExportFormat::Csv, &path).unwrap();
            let mut reader = csv::Reader::from_path(&path).unwrap();
            let header = reader.headers().unwrap().clone();
            let row = reader.records().next().unwrap().unwrap();
            let col = |name: &str| row[header.iter().position(|h| h == name).unwrap()].to_owned();
            assert_eq!(col("domain"), "xn--mnchen-3ya.example");
            assert_eq!(col("domain_display"), "münchen.example");
            assert_eq!(header.iter().next_back(), Some("domain_display"), "added last");
        }
    }
}
