//! Files and folders: where Sitetrail keeps its files, writing a file so that a crash never
//! leaves half of it, and telling whether two paths name the same file.
//!
//! A person's history is private, so what Sitetrail creates is readable by its owner only, as
//! browsers do for their profiles: folders `0700`, files `0600` (on Unix; elsewhere the OS
//! defaults apply). What already exists is never `chmod`ed: a folder the user chose (`--db
//! /tmp/x.db`) keeps its mode. A file is written to a temporary file beside its target (created
//! `0600`) and renamed over the target only once complete, so a failure at any point leaves the
//! old file (or none) and no temporary file behind: settings, the app's files and exports all go
//! through [`write_atomically_with`].

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Sitetrail's directories (`ProjectDirs("app", "Sitetrail", "sitetrail")`: on Linux
/// `~/.local/share/sitetrail` for data and `~/.config/sitetrail` for settings, honouring the XDG
/// variables). The one place they are named.
pub fn project_dirs() -> Result<directories::ProjectDirs> {
    directories::ProjectDirs::from("app", "Sitetrail", "sitetrail").ok_or_else(|| {
        Error::Unavailable(
            "no home directory found; set SITETRAIL_DB and SITETRAIL_SETTINGS to file paths".into(),
        )
    })
}

/// Writes `bytes` to `path` atomically and privately: into a `0600` temp file in the same
/// directory (created `0700` if missing), synced, then renamed over `path`. Readers see the old
/// file or the new one, never a part; on any error the temp file is removed.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomically_with(path, |w| w.write_all(bytes).map_err(Error::Io))
}

/// [`write_atomically`] with a writer: `write` streams the content into the temp file.
pub fn write_atomically_with<T>(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> Result<T>,
) -> Result<T> {
    crate::blocking::note("file write");
    let dir = parent_dir(path);
    create_private_dir_all(dir)?;
    // tempfile creates the file with mode 0600; dropping it on an early return deletes it.
    let mut tmp = tempfile::Builder::new()
        .prefix(".sitetrail-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    let out = write(tmp.as_file_mut())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| Error::Io(e.error))?;
    Ok(out)
}

/// Reads a small file the user names (settings): `Ok(None)` if it does not exist; `Err(why)` if
/// it is not a regular file (a FIFO would block for ever, `/dev/zero` never ends) or holds more
/// than `max` bytes. Checked before it is opened, and the read is capped too (it could grow).
pub fn read_small_file(path: &Path, max: u64) -> std::result::Result<Option<Vec<u8>>, String> {
    use std::io::Read;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    if let Some(what) = not_a_regular_file(&meta) {
        return Err(format!("it is {what}, not a file"));
    }
    let too_large = || format!("it is larger than {max} bytes, which no such file needs");
    if meta.len() > max {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(max + 1).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max {
        return Err(too_large());
    }
    Ok(Some(bytes))
}

/// Creates `dir` and any missing parents, each new one readable by its owner only (`0700`).
/// Folders that already exist are left as they are.
pub fn create_private_dir_all(dir: &Path) -> std::io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Creates `path` empty and private (`0600`) if it does not exist; an existing file is left as
/// it is. SQLite then creates the database's `-wal` and `-shm` with the same mode.
pub fn create_private_file_if_missing(path: &Path) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    match opts.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// The folder `path` is in (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// `path` made absolute with its folder resolved (symlinks, `..`), and its own name kept: what a
/// file that may not exist yet would be called once created.
pub fn resolved_path(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = std::fs::canonicalize(path) {
        return Some(p);
    }
    let name = path.file_name()?;
    let dir = std::fs::canonicalize(parent_dir(path)).ok()?;
    Some(dir.join(name))
}

/// True if `a` and `b` name the same file: the same resolved path, or (where both exist) the same
/// device and inode, which also catches hard links.
pub fn same_file(a: &Path, b: &Path) -> bool {
    if let (Some(x), Some(y)) = (resolved_path(a), resolved_path(b)) {
        if x == y {
            return true;
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
    }
    false
}

/// What `meta` is if it is not a regular file ("a folder", "a FIFO (named pipe)", ...): SQLite
/// must never open such a thing. Reading a FIFO blocks until someone writes to it, `/dev/zero`
/// never ends, and opening `/dev/null` as a database makes SQLite create `/dev/null-journal`.
pub fn not_a_regular_file(meta: &std::fs::Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_file() {
        return None;
    }
    if kind.is_dir() {
        return Some("a folder");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if kind.is_char_device() {
            return Some("a character device");
        }
        if kind.is_block_device() {
            return Some("a block device");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn mode(p: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[cfg(unix)]
    #[test]
    fn new_folders_and_files_are_private_and_existing_ones_keep_their_mode() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let deep = root.path().join("a/b");
        create_private_dir_all(&deep).unwrap();
        assert_eq!(mode(&root.path().join("a")), 0o700);
        assert_eq!(mode(&deep), 0o700);
        assert_eq!(mode(root.path()), 0o755, "an existing folder is not chmod-ed");

        let f = deep.join("f");
        create_private_file_if_missing(&f).unwrap();
        assert_eq!(mode(&f), 0o600);
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        create_private_file_if_missing(&f).unwrap();
        assert_eq!(mode(&f), 0o644, "an existing file is not chmod-ed");

        let out = deep.join("out.txt");
        write_atomically(&out, b"hello").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"hello");
        assert_eq!(mode(&out), 0o600);
    }

    #[test]
    fn the_same_file_is_recognised_under_other_spellings() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("db");
        std::fs::write(&f, "x").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        assert!(same_file(&f, &dir.path().join("sub/../db")));
        assert!(!same_file(&f, &dir.path().join("other")));
        assert!(
            same_file(&dir.path().join("new"), &dir.path().join("sub/../new")),
            "not yet created"
        );
        #[cfg(unix)]
        {
            let link = dir.path().join("link");
            std::os::unix::fs::symlink(&f, &link).unwrap();
            assert!(same_file(&f, &link));
            let hard = dir.path().join("hard");
            std::fs::hard_link(&f, &hard).unwrap();
            assert!(same_file(&f, &hard));
        }
    }

    #[test]
    fn an_atomic_write_replaces_the_file_or_leaves_it_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/file.json");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let failed = write_atomically_with(&path, |w| {
            w.write_all(b"half").map_err(Error::Io)?;
            Err::<(), _>(Error::InvalidInput("stop".into()))
        });
        assert!(failed.is_err());
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"two",
            "a failed write changes nothing"
        );
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temp file left behind");
    }
}
