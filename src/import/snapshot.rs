//! A private, validated, read-only snapshot of a browser's history database.
//!
//! A browser keeps its database open (and, on some systems, locked), and a damaged or hostile file
//! must never reach the import loop. [`Snapshot::take`] checks the file's SQLite header and size
//! (so that a file that is not a database, however large, is never copied), copies the file with
//! its `-wal` and `-journal` companions into a private temp dir, checks the copy as a whole (header
//! and size again, `PRAGMA quick_check` over every page, the tables and columns the importer
//! reads) and opens it read-only. Only then does the importer read a single row.
//!
//! Invariants: the browser's own files are only ever read, by the copy (never opened by SQLite,
//! so no `-shm` or journal is ever created next to them); every refusal is an [`Error::Import`]
//! naming the browser's file and the problem; the temp dir is removed when the snapshot drops.
//!
//! The `-shm` companion is deliberately not copied: it is only an index of the WAL, SQLite
//! rebuilds it from the copied WAL (checking every frame's checksum), and a `-shm` copied a moment
//! after the WAL could describe frames the copy does not have.

use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};

/// The companions copied with a database file, by suffix.
const COMPANIONS: [&str; 2] = ["-wal", "-journal"];

/// The first 16 bytes of every SQLite 3 database file.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// How many times the copy is retried when the browser changed the file while it was copied.
const COPY_ATTEMPTS: usize = 3;

/// Page cache of the read-only connection to the copy (KiB).
const SNAPSHOT_CACHE_KIB: i64 = 16 * 1024;

/// The tables and columns an importer reads; a file without them is refused before any row is read.
pub(crate) type Schema = &'static [(&'static str, &'static [&'static str])];

/// A checked, read-only copy of a browser database; the copy is deleted on drop.
pub(crate) struct Snapshot {
    /// Declared before `_dir` so the connection closes before the directory is removed.
    conn: Connection,
    _dir: tempfile::TempDir,
}

impl Snapshot {
    /// Copies `path` (and its companions) to a private temp dir, validates the copy as a whole
    /// against `schema`, and opens it read-only. `hint` says which file the user should have
    /// given (e.g. "a Chrome-family `History` file").
    pub(crate) fn take(path: &Path, schema: Schema, hint: &str) -> Result<Snapshot> {
        let refuse = |problem: String| Error::Import {
            path: path.to_path_buf(),
            problem,
        };
        check_source(path, hint).map_err(refuse)?;
        // The header and size first, on the browser's file itself: a file that is not a database
        // (a sparse 30 GB file of zeros, say) is refused before a byte of it is copied.
        check_header(path).map_err(refuse)?;
        let dir = tempfile::Builder::new()
            .prefix("sitetrail-import-")
            .tempdir()
            .map_err(|e| refuse(format!("cannot create a temp dir for its copy: {e}")))?;
        let copy = dir.path().join("history.sqlite");
        copy_stable(path, &copy).map_err(|e| refuse(format!("cannot copy it: {e}")))?;
        // Again on the copy: the browser may have written the file meanwhile.
        check_header(&copy).map_err(refuse)?;
        recover_hot_journal(&copy).map_err(|e| refuse(describe_sqlite(&e)))?;
        let conn = Connection::open_with_flags(
            &copy,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| refuse(describe_sqlite(&e)))?;
        check_integrity(&conn).map_err(refuse)?;
        check_schema(&conn, schema, hint).map_err(refuse)?;
        // Visits are read in id order but their URLs are looked up all over the URL table: a
        // bounded cache keeps most of it in memory for a large history.
        conn.pragma_update(None, "cache_size", -SNAPSHOT_CACHE_KIB)
            .map_err(|e| refuse(describe_sqlite(&e)))?;
        Ok(Snapshot { conn, _dir: dir })
    }

    /// The read-only connection to the copy.
    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }
}

/// The user-facing checks on the browser's own file: it exists, is a file, and can be read.
fn check_source(path: &Path, hint: &str) -> std::result::Result<(), String> {
    let meta = fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("no such file (expected {hint})"),
        _ => format!("cannot read it: {e}"),
    })?;
    if meta.is_dir() {
        return Err(format!(
            "it is a directory, not a database file (expected {hint})"
        ));
    }
    // A pipe would block the copy forever, a device would never end: only regular files.
    if !meta.is_file() {
        return Err(format!("it is not a regular file (expected {hint})"));
    }
    let mut first = [0u8; 1];
    File::open(path)
        .and_then(|mut f| f.read(&mut first))
        .map_err(|e| format!("cannot read it: {e}"))?;
    Ok(())
}

/// The size and modification time of `path` and each companion, to notice a copy taken while the
/// browser was writing.
fn stamps(path: &Path) -> Vec<Option<(u64, SystemTime)>> {
    std::iter::once(path.to_path_buf())
        .chain(COMPANIONS.iter().map(|s| with_suffix(path, s)))
        .map(|p| {
            fs::metadata(&p)
                .ok()
                .and_then(|m| Some((m.len(), m.modified().ok()?)))
        })
        .collect()
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Copies `src` and its existing companions next to `dst`, again if the browser changed any of
/// them meanwhile (a torn copy would otherwise be refused as corrupted by the integrity check).
fn copy_stable(src: &Path, dst: &Path) -> std::io::Result<()> {
    for _ in 0..COPY_ATTEMPTS {
        let before = stamps(src);
        fs::copy(src, dst)?;
        for suffix in COMPANIONS {
            let (from, to) = (with_suffix(src, suffix), with_suffix(dst, suffix));
            match fs::copy(&from, &to) {
                Ok(_) => {}
                // No companion (the usual case for `-journal`): make sure no stale copy is left.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    let _ = fs::remove_file(&to);
                }
                Err(e) => return Err(e),
            }
        }
        if stamps(src) == before {
            break;
        }
    }
    Ok(())
}

/// Checks a file's 100-byte SQLite header against its size: empty, not SQLite, truncated.
fn check_header(copy: &Path) -> std::result::Result<(), String> {
    let len = fs::metadata(copy)
        .map_err(|e| format!("cannot read it: {e}"))?
        .len();
    if len == 0 {
        return Err("the file is empty (0 bytes), not a history database".into());
    }
    let mut header = Vec::with_capacity(100);
    File::open(copy)
        .and_then(|f| f.take(100).read_to_end(&mut header))
        .map_err(|e| format!("cannot read it: {e}"))?;
    let magic_len = header.len().min(SQLITE_MAGIC.len());
    if header[..magic_len] != SQLITE_MAGIC[..magic_len] {
        return Err("it is not a SQLite database (wrong file header)".into());
    }
    if header.len() < 100 {
        return Err(format!(
            "it is truncated: {len} bytes, shorter than a SQLite header"
        ));
    }
    let raw_page_size = u16::from_be_bytes([header[16], header[17]]);
    let page_size: u64 = if raw_page_size == 1 {
        65_536
    } else {
        u64::from(raw_page_size)
    };
    if !page_size.is_power_of_two() || !(512..=65_536).contains(&page_size) {
        return Err(format!(
            "it is corrupted: invalid page size {raw_page_size} in its header"
        ));
    }
    if len % page_size != 0 {
        return Err(format!(
            "it is truncated: {len} bytes is not a whole number of {page_size}-byte pages"
        ));
    }
    let be32 = |at: usize| u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]]);
    // The page count in the header is only meaningful when it was written by the same change as
    // the change counter (SQLite file format, "in-header database size").
    let (change_counter, pages, valid_for) = (be32(24), u64::from(be32(28)), be32(92));
    if pages > 0 && change_counter == valid_for && len < pages * page_size {
        return Err(format!(
            "it is truncated: its header says {pages} pages, but the file holds only {}",
            len / page_size
        ));
    }
    Ok(())
}

/// A `-journal` next to the copy is a transaction the browser had not finished: SQLite must roll
/// it back before the file can be read, and a read-only connection cannot. The copy is private, so
/// it is opened read-write once for that (the browser's own files are untouched).
fn recover_hot_journal(copy: &Path) -> rusqlite::Result<()> {
    if !with_suffix(copy, "-journal").exists() {
        return Ok(());
    }
    let conn = Connection::open_with_flags(copy, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
    conn.query_row(r#"SELECT count(*) FROM sqlite_master"#, [], |r| {
        r.get::<_, i64>(0)
    })?;
    conn.close().map_err(|(_, e)| e)
}

/// Runs `PRAGMA quick_check`, which reads every page of every table and index (but does not
/// compare index contents with their tables, which `integrity_check` would, at several times the
/// cost): damage anywhere in the b-trees or the freelist is found here, before any row is imported.
fn check_integrity(conn: &Connection) -> std::result::Result<(), String> {
    let mut stmt = conn
        .prepare(r#"PRAGMA quick_check(5)"#)
        .map_err(|e| describe_sqlite(&e))?;
    let problems: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .and_then(|rows| rows.collect())
        .map_err(|e| describe_sqlite(&e))?;
    match problems.as_slice() {
        [ok] if ok == "ok" => Ok(()),
        _ => Err(format!(
            "it is corrupted (SQLite integrity check: {})",
            crate::error::truncate_chars(&problems.join("; "), 300)
        )),
    }
}

/// Refuses a file without the tables and columns the importer reads.
fn check_schema(conn: &Connection, schema: Schema, hint: &str) -> std::result::Result<(), String> {
    for (table, columns) in schema {
        let mut stmt = conn
            .prepare(r#"SELECT name FROM pragma_table_info(:table)"#)
            .map_err(|e| describe_sqlite(&e))?;
        let present: Vec<String> = stmt
            .query_map(rusqlite::named_params! { ":table": table }, |r| r.get("name"))
            .and_then(|rows| rows.collect())
            .map_err(|e| describe_sqlite(&e))?;
        if present.is_empty() {
            return Err(format!("it has no `{table}` table: it is not {hint}"));
        }
        let missing: Vec<&str> = columns
            .iter()
            .copied()
            .filter(|c| !present.iter().any(|p| p.eq_ignore_ascii_case(c)))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "its `{table}` table lacks column(s) {}: it is not {hint}, or a version this importer does not know",
                missing.join(", ")
            ));
        }
    }
    Ok(())
}

/// A SQLite error as a sentence about the file.
fn describe_sqlite(e: &rusqlite::Error) -> String {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => "it is not a SQLite database".into(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt) => format!("it is corrupted ({e})"),
        _ => format!("SQLite cannot read it ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header_check(bytes: &[u8]) -> std::result::Result<(), String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        fs::write(&p, bytes).unwrap();
        check_header(&p)
    }

    #[test]
    fn header_problems_are_named() {
        assert!(header_check(b"").unwrap_err().contains("empty"));
        assert!(header_check(b"hello world, definitely not sqlite")
            .unwrap_err()
            .contains("not a SQLite database"));
        assert!(header_check(b"SQLite format 3\0abc")
            .unwrap_err()
            .contains("truncated"));
        let mut page = vec![0u8; 4096];
        page[..16].copy_from_slice(SQLITE_MAGIC);
        page[16..18].copy_from_slice(&4096u16.to_be_bytes());
        // Two pages promised by a valid in-header size, one present.
        page[24..28].copy_from_slice(&7u32.to_be_bytes());
        page[28..32].copy_from_slice(&2u32.to_be_bytes());
        page[92..96].copy_from_slice(&7u32.to_be_bytes());
        assert!(header_check(&page).unwrap_err().contains("says 2 pages"));
        assert!(header_check(&page[..3000]).unwrap_err().contains("whole number"));
        page[28..32].copy_from_slice(&1u32.to_be_bytes());
        assert_eq!(header_check(&page), Ok(()));
    }
}
