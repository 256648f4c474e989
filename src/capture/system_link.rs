//! The browser links a system package installs for every user: a host manifest where each browser
//! reads system-wide native-messaging hosts, naming a launcher that runs the installed `sitetrail`
//! on the user's own database.
//!
//! The manifest and its JSON are the ones `browser-link install` writes ([`link::manifest_json`]);
//! only the launcher differs: it names no database, so the host opens the default one of whoever
//! runs the browser (`SITETRAIL_DB`, else `~/.local/share/sitetrail/sitetrail.db`). A browser
//! looks in its per-user folder first, so a link made with `browser-link install` (to another
//! database, say) wins over this one.
//!
//! Where each browser reads system-wide hosts on Linux: Chromium `/etc/chromium/...`, Google
//! Chrome `/etc/opt/chrome/...` (Brave and Vivaldi read that folder too), Microsoft Edge
//! `/etc/opt/edge/...`, Firefox `/usr/lib/mozilla/native-messaging-hosts/`. Chromium-family
//! browsers pass only the extension's origin, so the launcher tells Brave and Vivaldi from Chrome
//! by the program that started it (its parent process).
//!
//! Invariants: the files are written under a staging root (as if it were `/`) for a package,
//! never into the running system; each launcher is written before the manifest naming it.

use std::path::{Path, PathBuf};

use crate::capture::link::{self, LinkBrowser, HOST_NAME};
use crate::error::{Error, Result};

/// The browsers a package links, with the folder each reads system-wide host manifests from.
pub const SYSTEM_HOST_DIRS: [(LinkBrowser, &str); 4] = [
    (LinkBrowser::Chromium, "/etc/chromium/native-messaging-hosts"),
    (LinkBrowser::Chrome, "/etc/opt/chrome/native-messaging-hosts"),
    (LinkBrowser::Edge, "/etc/opt/edge/native-messaging-hosts"),
    (LinkBrowser::Firefox, "/usr/lib/mozilla/native-messaging-hosts"),
];

/// The launcher for `browser` that runs `exe` as the host on the user's default database.
///
/// A Chromium-family launcher names the browser that started it by its parent's program (a
/// Brave or Vivaldi reading Chrome's folder records its visits as its own), with `browser` as
/// the fallback.
pub fn system_launcher_script(browser: LinkBrowser, exe: &Path) -> Result<String> {
    let exe_word = link::shell_word("sitetrail binary", exe)?;
    let detect = if browser == LinkBrowser::Firefox {
        String::new()
    } else {
        // The browser starts the host itself, so the parent is the browser's own program.
        "case \"$(readlink \"/proc/$PPID/exe\" 2>/dev/null)\" in\n  \
         *brave*) browser=brave ;;\n  \
         *vivaldi*) browser=vivaldi ;;\n  \
         *msedge*) browser=edge ;;\n  \
         *google/chrome*) browser=chrome ;;\n  \
         *chromium*) browser=chromium ;;\n\
         esac\n"
            .to_owned()
    };
    Ok(format!(
        "#!/bin/sh\n\
         # Sitetrail's native-messaging host for {product}, installed for every user with the\n\
         # sitetrail package. The browser starts this script with the extension's origin as its\n\
         # only argument; it runs the sitetrail binary on the user's own database (SITETRAIL_DB,\n\
         # else ~/.local/share/sitetrail/sitetrail.db). A link made with `sitetrail browser-link\n\
         # install` is in the browser's per-user folder, which the browser reads first.\n\
         # sitetrail-exe: {exe}\n\
         browser={name}\n\
         {detect}\
         exec {exe_word} native-host --browser \"$browser\" \"$@\"\n",
        product = browser.product(),
        name = browser.as_str(),
        exe = exe.display(),
    ))
}

/// `path` (absolute, as installed) under `root`.
fn staged(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// Writes every browser's system-wide link under the staging `root`: for each browser of
/// [`SYSTEM_HOST_DIRS`], the launcher `<launcher_dir>/<browser>` running `exe`, then the
/// manifest naming it. `exe` and `launcher_dir` are the installed (absolute) paths. Returns the
/// installed paths of the files written, launchers first.
pub fn write_system_links(root: &Path, exe: &Path, launcher_dir: &Path) -> Result<Vec<PathBuf>> {
    if !exe.is_absolute() || !launcher_dir.is_absolute() {
        return Err(Error::InvalidInput(format!(
            "the installed paths must be absolute (got {} and {})",
            exe.display(),
            launcher_dir.display()
        )));
    }
    let mut written = Vec::new();
    for (browser, dir) in SYSTEM_HOST_DIRS {
        let launcher = launcher_dir.join(browser.as_str());
        let manifest = Path::new(dir).join(format!("{HOST_NAME}.json"));
        let json = serde_json::to_vec_pretty(&link::manifest_json(browser, &launcher))
            .map_err(|e| Error::Io(e.into()))?;
        let script = system_launcher_script(browser, exe)?;
        for (path, contents, mode) in [
            (&launcher, script.as_bytes(), 0o755),
            (&manifest, json.as_slice(), 0o644),
        ] {
            let at = staged(root, path);
            // Folders of a package are world-readable (0755), unlike Sitetrail's private ones.
            if let Some(parent) = at.parent() {
                std::fs::create_dir_all(parent)?;
            }
            link::write_atomic(&at, contents, mode)?;
            written.push(path.clone());
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_manifest_names_its_launcher_and_the_extension() {
        let root = tempfile::tempdir().unwrap();
        let exe = Path::new("/usr/bin/sitetrail");
        let written =
            write_system_links(root.path(), exe, Path::new("/usr/lib/sitetrail/native-host")).unwrap();
        assert_eq!(written.len(), 2 * SYSTEM_HOST_DIRS.len());
        for (browser, dir) in SYSTEM_HOST_DIRS {
            let manifest = staged(root.path(), &Path::new(dir).join("app.sitetrail.host.json"));
            let m: serde_json::Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
            let launcher = format!("/usr/lib/sitetrail/native-host/{}", browser.as_str());
            assert_eq!(m, link::manifest_json(browser, Path::new(&launcher)));
            let script = std::fs::read_to_string(staged(root.path(), Path::new(&launcher))).unwrap();
            assert!(script.contains("exec '/usr/bin/sitetrail' native-host --browser \"$browser\" \"$@\""));
            assert!(!script.contains("--db"), "the user's own database: {script}");
            // The line `browser-link status` reads the binary from, as in its own launchers.
            assert!(
                script.contains("\n# sitetrail-exe: /usr/bin/sitetrail\n"),
                "{script}"
            );
        }
    }

    #[test]
    fn every_browser_reads_a_folder_the_package_writes() {
        for browser in LinkBrowser::ALL {
            assert!(
                SYSTEM_HOST_DIRS
                    .iter()
                    .any(|(_, dir)| *dir == browser.system_hosts_dir()),
                "{browser:?}"
            );
        }
        for (browser, dir) in SYSTEM_HOST_DIRS {
            assert_eq!(browser.system_hosts_dir(), dir, "{browser:?}");
        }
    }

    #[test]
    fn the_launcher_tells_brave_and_vivaldi_from_chrome() {
        let dir = tempfile::tempdir().unwrap();
        let script = system_launcher_script(LinkBrowser::Chrome, Path::new("/bin/echo")).unwrap();
        let path = dir.path().join("launcher");
        std::fs::write(&path, &script).unwrap();
        // Run by this test, the parent is the test binary: no browser's name, so the folder's.
        let out = std::process::Command::new("sh")
            .arg(&path)
            .arg("chrome-extension://x/")
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            "native-host --browser chrome chrome-extension://x/\n"
        );
        for (program, name) in [
            ("/opt/brave.com/brave/brave", "brave"),
            ("/opt/vivaldi/vivaldi-bin", "vivaldi"),
            ("/opt/google/chrome/chrome", "chrome"),
        ] {
            // The case statement as the browser's child sees it, with the parent's program given.
            let probe = script
                .replace("$(readlink \"/proc/$PPID/exe\" 2>/dev/null)", program)
                .replace(
                    "exec '/bin/echo' native-host --browser \"$browser\" \"$@\"",
                    "echo $browser",
                );
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(&probe)
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap().trim(), name, "{program}");
        }
        let firefox = system_launcher_script(LinkBrowser::Firefox, Path::new("/usr/bin/sitetrail")).unwrap();
        assert!(firefox.contains("browser=firefox\nexec"));
    }

    #[test]
    fn relative_installed_paths_are_refused() {
        let root = tempfile::tempdir().unwrap();
        assert!(write_system_links(root.path(), Path::new("sitetrail"), Path::new("/usr/lib/x")).is_err());
        assert!(std::fs::read_dir(root.path()).unwrap().next().is_none());
    }
}
