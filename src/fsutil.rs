//! Files and folders: where Sitetrail keeps its files, and writing a file so that a crash never
//! leaves half of it.

use std::io::Write;
use std::path::Path;

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

/// Writes `bytes` to `path` atomically: into a temp file in the same directory (created if
/// missing), synced, then renamed over `path`. Readers see the old file or the new one, never a
/// part; on any error the temp file is removed.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomically_with(path, |w| w.write_all(bytes).map_err(Error::Io))
}

/// [`write_atomically`] with a writer: `write` streams the content into the temp file.
pub fn write_atomically_with<T>(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> Result<T>,
) -> Result<T> {
    crate::blocking::note("file write");
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    // Dropping the NamedTempFile on an early return deletes it.
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    let out = write(tmp.as_file_mut())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| Error::Io(e.error))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
