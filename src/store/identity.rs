//! Is this file Sitetrail's? The checks made before anything is written to a database file.
//!
//! Sitetrail marks its databases with SQLite's `application_id` ([`APPLICATION_ID`], set by
//! migration 0004). Before the pool opens the file (and switches it to WAL, migrates it...),
//! [`check_database_file`] looks at it without changing it: the 100-byte header read as a plain
//! file, then, only if needed, the schema through a read-only SQLite connection that creates no
//! `-wal`/`-shm` (SQLite's `immutable` mode when the file has no live WAL, else plain read-only on
//! the WAL and shared memory that are already there). It refuses, with a message naming the file:
//! - a file that is not SQLite, or whose `application_id` belongs to another program;
//! - a non-empty database that is not Sitetrail's (no `schema_migrations` written by Sitetrail);
//! - a Sitetrail database with migrations this binary does not know (a newer version wrote it).
//!
//! A missing or empty file, or a database with no tables, is initialised as a new one; a
//! Sitetrail database from before the mark (application_id 0, Sitetrail's migration names) is
//! recognised and gets the mark when migration 0004 runs.

use std::io::Read;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use super::MIGRATIONS;

/// Sitetrail's SQLite `application_id`: the ASCII bytes `STTR`.
pub const APPLICATION_ID: i32 = 0x5354_5452;

/// What the check found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum FileState {
    /// Missing, empty, or a database without tables: initialise it.
    New,
    /// A Sitetrail database this binary can open.
    Ours,
}

/// Looks at `path` without writing to it; `Err(reason)` if Sitetrail must not open it.
pub(super) fn check_database_file(path: &Path) -> Result<FileState, String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(FileState::New),
        Err(e) => return Err(e.to_string()),
    };
    if let Some(what) = crate::fsutil::not_a_regular_file(&meta) {
        return Err(format!(
            "it is {what}, not a database file; nothing was opened or created. Pass the path of a \
             Sitetrail database, or a new file name"
        ));
    }
    if meta.len() == 0 {
        return Ok(FileState::New);
    }
    let mut header = [0u8; 100];
    let read = std::fs::File::open(path)
        .and_then(|mut f| read_up_to(&mut f, &mut header))
        .map_err(|e| e.to_string())?;
    if read < header.len() || &header[..16] != b"SQLite format 3\0" {
        return Err(
            "it is not a SQLite database; nothing was changed. Pass the path of a Sitetrail database, or a new file name"
                .into(),
        );
    }
    let application_id = i32::from_be_bytes([header[68], header[69], header[70], header[71]]);
    if application_id != 0 && application_id != APPLICATION_ID {
        return Err(format!(
            "it belongs to another program (SQLite application_id {application_id:#010x}); nothing was changed. \
             Pass the path of a Sitetrail database, or a new file name"
        ));
    }
    // Header bytes 18 and 19 are 2 in WAL mode.
    let wal_mode = header[18] == 2 || header[19] == 2;
    let conn = open_without_side_files(path, wal_mode).map_err(|e| format!("cannot read it ({e})"))?;
    inspect_schema(&conn, application_id == APPLICATION_ID)
}

fn read_up_to(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// A read-only connection that leaves no file behind. A WAL-mode database whose `-wal` and
/// `-shm` both exist is in use (or its last user crashed): read it through them, read-only. In
/// every other case the main file holds everything, and `immutable=1` reads it with no locking,
/// no journal and no shared-memory file.
fn open_without_side_files(path: &Path, wal_mode: bool) -> rusqlite::Result<Connection> {
    let live_wal = wal_mode && has_live_wal(path);
    let conn = Connection::open_with_flags(
        read_only_uri(path, live_wal)?,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    Ok(conn)
}

/// Why the database at `path` (an existing regular file) can only be read, if so: the file cannot
/// be opened for writing (read-only media, a read-only file), or its `-wal` and `-shm` cannot be
/// written or created beside it (a read-only folder: SQLite keeps the write-ahead log there).
/// Opening a file for writing, and a probe file created and removed at once, change nothing.
pub(super) fn read_only_reason(path: &Path) -> Option<String> {
    let refused = |e: &std::io::Error| {
        matches!(
            e.kind(),
            std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
        )
    };
    let open_rw = |p: &Path| std::fs::OpenOptions::new().write(true).open(p);
    match open_rw(path) {
        Ok(_) => {}
        Err(e) if refused(&e) => return Some(format!("the file cannot be written: {e}")),
        // Anything else is SQLite's to report.
        Err(_) => return None,
    }
    let mut missing_side_file = false;
    for suffix in ["-wal", "-shm"] {
        match open_rw(&side_file(path, suffix)) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => missing_side_file = true,
            Err(e) if refused(&e) => return Some(format!("its {suffix} file cannot be written: {e}")),
            Err(_) => return None,
        }
    }
    if missing_side_file {
        let dir = crate::fsutil::parent_dir(path);
        if let Err(e) = tempfile::Builder::new()
            .prefix(".sitetrail-probe-")
            .tempfile_in(dir)
        {
            if refused(&e) {
                return Some(format!(
                    "its folder {} cannot be written, and SQLite keeps its write-ahead log beside the file: {e}",
                    dir.display()
                ));
            }
        }
    }
    None
}

/// `path` with `suffix` appended to its name (`-wal`, `-shm`).
pub(super) fn side_file(path: &Path, suffix: &str) -> std::path::PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    std::path::PathBuf::from(p)
}

/// True if both the `-wal` and the `-shm` of `path` exist: the database is in use, or its last
/// user crashed, and its latest commits may be in the WAL.
pub(super) fn has_live_wal(path: &Path) -> bool {
    side_file(path, "-wal").exists() && side_file(path, "-shm").exists()
}

/// The URI that opens `path` read-only without creating any file: through the WAL and shared
/// memory that are there (`live_wal`), else `immutable=1` (no locking, no journal, no `-shm`).
pub(super) fn read_only_uri(path: &Path, live_wal: bool) -> rusqlite::Result<String> {
    let absolute = std::path::absolute(path).map_err(|e| {
        rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some(e.to_string()),
        )
    })?;
    let url = url::Url::from_file_path(&absolute).map_err(|()| {
        rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some(format!("{} is not a file path", absolute.display())),
        )
    })?;
    Ok(if live_wal {
        format!("{url}?mode=ro")
    } else {
        format!("{url}?mode=ro&immutable=1")
    })
}

/// Decides from the schema: no tables → new; Sitetrail's `schema_migrations` → ours (unless it
/// lists migrations this binary does not know); anything else → not ours.
fn inspect_schema(conn: &Connection, marked: bool) -> Result<FileState, String> {
    let read_err = |e: rusqlite::Error| format!("cannot read it ({e}); nothing was changed");
    let tables: Vec<String> = conn
        .prepare(r#"SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name"#)
        .and_then(|mut s| s.query_map([], |r| r.get::<_, String>(0))?.collect())
        .map_err(read_err)?;
    if tables.is_empty() {
        return Ok(FileState::New);
    }
    let not_ours = |why: &str| {
        let mut names = tables.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
        if tables.len() > 5 {
            names.push_str(", ...");
        }
        format!(
            "it is not a Sitetrail database ({why}; its tables: {names}); nothing was changed. \
             Pass the path of a Sitetrail database, or a new file name"
        )
    };
    if !tables.iter().any(|t| t == "schema_migrations") {
        return Err(not_ours("it has no Sitetrail schema"));
    }
    let applied: Vec<(i64, String)> = match conn
        .prepare(r#"SELECT version, name FROM schema_migrations ORDER BY version"#)
        .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect())
    {
        Ok(rows) => rows,
        Err(_) => {
            return Err(not_ours(
                "its schema_migrations table was not written by Sitetrail",
            ))
        }
    };
    let known = |v: i64| MIGRATIONS.iter().find(|(k, _, _)| *k == v).map(|(_, n, _)| *n);
    let mut unknown = Vec::new();
    for (version, name) in &applied {
        match known(*version) {
            Some(n) if n == name => {}
            Some(_) => {
                return Err(not_ours(
                    "its schema_migrations table was not written by Sitetrail",
                ))
            }
            None => unknown.push(format!("{version:04}_{name}")),
        }
    }
    // A file another process is creating right now has schema_migrations (created first) and
    // maybe some of our migrations; anything else without migration 1 is not ours.
    let has_core = applied.iter().any(|(v, _)| *v == 1);
    if !marked && !has_core && tables.len() > 1 {
        return Err(not_ours("it has no Sitetrail migrations"));
    }
    if !unknown.is_empty() {
        let newest = MIGRATIONS
            .last()
            .map(|(v, n, _)| format!("{v:04}_{n}"))
            .unwrap_or_default();
        return Err(format!(
            "it was written by a newer version of Sitetrail (it has migration {}, and this version knows \
             migrations up to {newest}); nothing was changed. Update Sitetrail to open it",
            unknown.join(", ")
        ));
    }
    Ok(FileState::Ours)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_application_id_spells_sttr() {
        assert_eq!(&APPLICATION_ID.to_be_bytes(), b"STTR");
    }

    #[test]
    fn new_empty_and_foreign_files_are_told_apart_without_writing() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.db");
        assert_eq!(check_database_file(&missing), Ok(FileState::New));
        let empty = dir.path().join("empty.db");
        std::fs::write(&empty, b"").unwrap();
        assert_eq!(check_database_file(&empty), Ok(FileState::New));
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "x".repeat(500)).unwrap();
        assert!(check_database_file(&text)
            .unwrap_err()
            .contains("not a SQLite database"));
        assert!(check_database_file(dir.path()).unwrap_err().contains("folder"));

        let other = dir.path().join("other.db");
        let c = Connection::open(&other).unwrap();
        c.execute_batch("CREATE TABLE notes (body TEXT); PRAGMA application_id = 7;")
            .unwrap();
        drop(c);
        assert!(check_database_file(&other)
            .unwrap_err()
            .contains("another program"));

        let rails = dir.path().join("rails.db");
        let c = Connection::open(&rails).unwrap();
        c.execute_batch("CREATE TABLE schema_migrations (version TEXT); CREATE TABLE users (id INTEGER);")
            .unwrap();
        drop(c);
        let err = check_database_file(&rails).unwrap_err();
        assert!(
            err.contains("not a Sitetrail database") && err.contains("users"),
            "{err}"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 4, "the checks created files: {names:?}");
    }
}
