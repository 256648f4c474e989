//! Exporting history and categories to CSV or JSON files the user owns.
//!
//! Rows are streamed from the database to the file (memory stays flat at any history size), into a
//! temporary file beside the target that is renamed over it only when complete, so a failed export
//! never leaves a half-written file under the chosen name.

use std::io::{BufWriter, Write};
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
                csv: Some(csv::Writer::from_writer(out)),
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

    fn write<T: serde::Serialize>(&mut self, row: &T) -> Result<()> {
        if let Some(w) = self.csv.as_mut() {
            w.serialize(row).map_err(csv_error)?;
        }
        if let Some(w) = self.json.as_mut() {
            w.write_all(if self.first { b"\n  " } else { b",\n  " })?;
            serde_json::to_writer(&mut *w, row).map_err(|e| Error::Io(e.into()))?;
        }
        self.first = false;
        Ok(())
    }

    fn finish(self) -> Result<()> {
        match self.format {
            ExportFormat::Csv => {
                if let Some(mut w) = self.csv {
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
        out.write(&VisitRecord {
            visit_id: r.get("id")?,
            visited_at: r.get("visited_at")?,
            url: r.get("url")?,
            title: r.get("title")?,
            domain: r.get("domain")?,
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
        out.write(&WebsiteRecord {
            website_id: r.get("id")?,
            domain: r.get("domain")?,
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
    /// of rows written.
    pub fn export(&self, kind: ExportKind, format: ExportFormat, path: &Path) -> Result<u64> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            return Err(Error::InvalidInput(format!(
                "cannot export to {}: no such folder",
                path.display()
            )));
        }
        let tmp = tempfile::NamedTempFile::new_in(dir)?;
        let mut out = RowWriter::new(format, BufWriter::new(tmp.as_file()))?;
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
        out.finish()?;
        tmp.as_file().sync_all()?;
        tmp.persist(path).map_err(|e| Error::Io(e.error))?;
        Ok(n)
    }
}
