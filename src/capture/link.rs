//! Linking a browser to Sitetrail: the native-messaging host manifest where the browser looks for
//! it, and the launcher script it names.
//!
//! A browser starts a host's `path` with only the caller's origin as argument (Chromium) or the
//! manifest path and extension id (Firefox), and has no field for more arguments. So the manifest
//! points at a small launcher script written next to it, which runs this `sitetrail` binary as
//! `sitetrail --db <DB> native-host --browser <BROWSER> "$@"`. The launcher also carries the
//! binary's and the database's paths as comment lines, which `status` reads back.
//!
//! Where the manifests go, per user: Linux `~/.config/<browser dir>/NativeMessagingHosts/`
//! (Firefox `~/.mozilla/native-messaging-hosts/`), macOS `~/Library/Application Support/<browser
//! dir>/NativeMessagingHosts/` (Firefox `.../Mozilla/NativeMessagingHosts/`). A Chromium started
//! with `--user-data-dir DIR` reads `DIR/NativeMessagingHosts/` instead. Windows finds hosts through
//! the registry, which is not written yet: linking there is refused with a clear error.
//!
//! A browser reads its per-user folder first and then a system-wide one (on Linux, where the
//! package links every user: [`super::system_link`]), so a link has a [`LinkScope`]: the user's
//! own, the system-wide one, or none; [`status`] says which one the browser will read. Whether
//! the extension really talks to Sitetrail is another matter, which only the database knows (the
//! host records each contact): [`LinkStatus::hear`].
//!
//! Invariants: the launcher is written before the manifest that names it, each atomically (temp
//! file, then rename), so a browser never finds a manifest pointing at nothing or half a file;
//! paths that a shell script cannot carry safely (newlines, not UTF-8) are refused.

use std::path::{Path, PathBuf};

use crate::capture::contact::Contact;
use crate::error::{Error, Result};
use crate::import::detect::{Os, Roots};
use crate::time::Timestamp;

/// The host's name, which is also the manifest's file name (without `.json`).
pub const HOST_NAME: &str = "app.sitetrail.host";

/// The extension's id in Chromium-family browsers, fixed by the public key in
/// `extension/manifest.json` (`key`): the first 128 bits of the key's SHA-256, written with the
/// letters a-p for the hex digits 0-f. A test recomputes it from the manifest.
pub const EXTENSION_ID: &str = "moioghcmhlpjcbgjdgkcoipanbaniimb";

/// The extension's id in Firefox (`browser_specific_settings.gecko.id` in
/// `extension/manifest.firefox.json`).
pub const FIREFOX_EXTENSION_ID: &str = "sitetrail@sitetrail.app";

/// The launcher's file name, next to the manifest.
pub const LAUNCHER_NAME: &str = "sitetrail-native-host.sh";

/// A browser that can be linked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkBrowser {
    /// Chromium.
    Chromium,
    /// Google Chrome.
    Chrome,
    /// Brave.
    Brave,
    /// Microsoft Edge.
    Edge,
    /// Vivaldi.
    Vivaldi,
    /// Firefox.
    Firefox,
}

impl LinkBrowser {
    /// Every browser, in the order `status` lists them.
    pub const ALL: [LinkBrowser; 6] = [
        LinkBrowser::Chromium,
        LinkBrowser::Chrome,
        LinkBrowser::Brave,
        LinkBrowser::Edge,
        LinkBrowser::Vivaldi,
        LinkBrowser::Firefox,
    ];

    /// The name on the command line and in the visits' source (`extension:<name>`).
    pub fn as_str(self) -> &'static str {
        match self {
            LinkBrowser::Chromium => "chromium",
            LinkBrowser::Chrome => "chrome",
            LinkBrowser::Brave => "brave",
            LinkBrowser::Edge => "edge",
            LinkBrowser::Vivaldi => "vivaldi",
            LinkBrowser::Firefox => "firefox",
        }
    }

    /// The product's name, as people say it.
    pub fn product(self) -> &'static str {
        match self {
            LinkBrowser::Chromium => "Chromium",
            LinkBrowser::Chrome => "Google Chrome",
            LinkBrowser::Brave => "Brave",
            LinkBrowser::Edge => "Microsoft Edge",
            LinkBrowser::Vivaldi => "Vivaldi",
            LinkBrowser::Firefox => "Firefox",
        }
    }

    /// The user-data directory (Chromium family) or profiles directory (Firefox) under `roots`;
    /// `None` where the browser is not supported.
    pub fn user_data_dir(self, roots: &Roots) -> Option<PathBuf> {
        let support = roots.home.join("Library/Application Support");
        Some(match (roots.os, self) {
            (Os::Linux, LinkBrowser::Chromium) => roots.config.join("chromium"),
            (Os::Linux, LinkBrowser::Chrome) => roots.config.join("google-chrome"),
            (Os::Linux, LinkBrowser::Brave) => roots.config.join("BraveSoftware/Brave-Browser"),
            (Os::Linux, LinkBrowser::Edge) => roots.config.join("microsoft-edge"),
            (Os::Linux, LinkBrowser::Vivaldi) => roots.config.join("vivaldi"),
            (Os::Linux, LinkBrowser::Firefox) => roots.home.join(".mozilla/firefox"),
            (Os::MacOs, LinkBrowser::Chromium) => support.join("Chromium"),
            (Os::MacOs, LinkBrowser::Chrome) => support.join("Google/Chrome"),
            (Os::MacOs, LinkBrowser::Brave) => support.join("BraveSoftware/Brave-Browser"),
            (Os::MacOs, LinkBrowser::Edge) => support.join("Microsoft Edge"),
            (Os::MacOs, LinkBrowser::Vivaldi) => support.join("Vivaldi"),
            (Os::MacOs, LinkBrowser::Firefox) => support.join("Firefox"),
            (Os::Windows, _) => return None,
        })
    }

    /// The folder where this browser reads system-wide host manifests on Linux (as installed,
    /// absolute): Chromium its own, Google Chrome, Brave and Vivaldi Chrome's, Microsoft Edge its
    /// own, Firefox Mozilla's. The package writes a link into each of these folders
    /// ([`super::system_link::SYSTEM_HOST_DIRS`]).
    pub fn system_hosts_dir(self) -> &'static str {
        match self {
            LinkBrowser::Chromium => "/etc/chromium/native-messaging-hosts",
            LinkBrowser::Chrome | LinkBrowser::Brave | LinkBrowser::Vivaldi => {
                "/etc/opt/chrome/native-messaging-hosts"
            }
            LinkBrowser::Edge => "/etc/opt/edge/native-messaging-hosts",
            LinkBrowser::Firefox => "/usr/lib/mozilla/native-messaging-hosts",
        }
    }

    /// Where this browser looks for the current user's host manifests under `roots`.
    pub fn hosts_dir(self, roots: &Roots) -> Result<PathBuf> {
        match (roots.os, self) {
            (Os::Windows, _) => Err(Error::Unavailable(
                "linking a browser on Windows needs registry entries, which Sitetrail does not write yet"
                    .into(),
            )),
            (Os::Linux, LinkBrowser::Firefox) => Ok(roots.home.join(".mozilla/native-messaging-hosts")),
            (Os::MacOs, LinkBrowser::Firefox) => Ok(roots
                .home
                .join("Library/Application Support/Mozilla/NativeMessagingHosts")),
            _ => self
                .user_data_dir(roots)
                .map(|d| d.join("NativeMessagingHosts"))
                .ok_or_else(|| Error::Unavailable(format!("{} is not supported here", self.product()))),
        }
    }
}

impl std::str::FromStr for LinkBrowser {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let lower = s.trim().to_ascii_lowercase();
        LinkBrowser::ALL
            .into_iter()
            .find(|b| b.as_str() == lower)
            .ok_or_else(|| {
                Error::InvalidInput(format!(
                    "unknown browser {s:?}; use chromium, chrome, brave, edge, vivaldi or firefox"
                ))
            })
    }
}

/// Where one browser's link lives: the directory of its host manifests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkTarget {
    /// The browser.
    pub browser: LinkBrowser,
    /// The directory holding `app.sitetrail.host.json`.
    pub dir: PathBuf,
    /// The system-wide folder the browser reads after `dir` (Linux; under [`Roots::system`]), if
    /// any.
    pub system_dir: Option<PathBuf>,
    /// [`Roots::system`]: the paths a system-wide manifest and launcher name are read under it.
    pub system_root: PathBuf,
    /// [`Roots::default_db`]: where a system-wide link's host writes.
    pub default_db: Option<PathBuf>,
}

impl LinkTarget {
    /// The target for `browser`: `<user_data_dir>/NativeMessagingHosts` if given (what Chromium
    /// reads when started with `--user-data-dir`), else the browser's per-user location.
    pub fn new(browser: LinkBrowser, user_data_dir: Option<&Path>, roots: &Roots) -> Result<LinkTarget> {
        let dir =
            match user_data_dir {
                Some(_) if browser == LinkBrowser::Firefox => return Err(Error::InvalidInput(
                    "Firefox reads host manifests only from its per-user location; leave out --user-data-dir"
                        .into(),
                )),
                Some(d) => absolute(d)?.join("NativeMessagingHosts"),
                None => browser.hosts_dir(roots)?,
            };
        let system_dir =
            (roots.os == Os::Linux).then(|| under_root(&roots.system, Path::new(browser.system_hosts_dir())));
        Ok(LinkTarget {
            browser,
            dir,
            system_dir,
            system_root: roots.system.clone(),
            default_db: roots.default_db.clone(),
        })
    }

    /// The manifest file.
    pub fn manifest(&self) -> PathBuf {
        self.dir.join(format!("{HOST_NAME}.json"))
    }

    /// The launcher script.
    pub fn launcher(&self) -> PathBuf {
        self.dir.join(LAUNCHER_NAME)
    }

    /// The system-wide manifest the browser would read after the per-user one (present or not).
    pub fn system_manifest(&self) -> Option<PathBuf> {
        self.system_dir
            .as_ref()
            .map(|d| d.join(format!("{HOST_NAME}.json")))
    }
}

/// The installed (absolute) path `p` as seen under `root` (`/` in a running system).
fn under_root(root: &Path, p: &Path) -> PathBuf {
    root.join(p.strip_prefix("/").unwrap_or(p))
}

/// `p` made absolute against the current directory (without requiring it to exist).
fn absolute(p: &Path) -> Result<PathBuf> {
    Ok(std::path::absolute(p)?)
}

/// Which link a browser reads: its per-user one comes first, then the system-wide one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkScope {
    /// The user's own (`browser-link install`, or Link in the app).
    User,
    /// The system-wide one a package installed for every user.
    System,
    /// None: the extension cannot reach Sitetrail.
    None,
}

impl LinkScope {
    /// `user`, `system` or `none`, as in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkScope::User => "user",
            LinkScope::System => "system",
            LinkScope::None => "none",
        }
    }
}

/// What a link points at. Serialized as `browser-link status --json` prints it: keys are only
/// ever added.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LinkStatus {
    /// The browser.
    pub browser: LinkBrowser,
    /// True if the browser finds a manifest: the user's own or a system-wide one ([`Self::scope`]).
    pub linked: bool,
    /// Which manifest the browser reads.
    pub scope: LinkScope,
    /// The manifest the browser reads; without a link, where the user's own would go.
    pub manifest: PathBuf,
    /// The system-wide manifest for this browser, if there is one (also when the user's own
    /// comes first).
    pub system_manifest: Option<PathBuf>,
    /// The `sitetrail` binary the launcher runs.
    pub exe: Option<PathBuf>,
    /// The database the host writes to (for a system-wide link: the user's default one).
    pub db: Option<PathBuf>,
    /// What is wrong with the link, if something is (the binary is gone, say).
    pub problem: Option<String>,
    /// When this browser's extension last talked to the host on the database asked about
    /// (`None` until it has, or when the database was not read).
    pub heard_at: Option<Timestamp>,
    /// The extension's version, as it said.
    pub extension_version: Option<String>,
    /// True only if the browser reads a working link to the database asked about and its
    /// extension has talked to the host there: a manifest alone records nothing.
    pub recording: bool,
}

impl LinkStatus {
    /// Fills in what the database `db` knows: when this browser's extension last talked to it
    /// (`contacts`, the host's record), and so whether the browser is recording into it.
    pub fn hear(&mut self, contacts: &[Contact], db: &Path) {
        let contact = contacts.iter().find(|c| c.browser == self.browser.as_str());
        self.heard_at = contact.map(|c| c.last_seen_at);
        self.extension_version = contact.and_then(|c| c.extension_version.clone());
        self.recording = self.linked
            && self.problem.is_none()
            && self.heard_at.is_some()
            && self.db.as_deref().is_some_and(|d| same_file(d, db));
    }

    /// True if the link serves the database `db`: the browser reads it, it works and it writes
    /// there.
    pub fn serves(&self, db: &Path) -> bool {
        self.linked && self.problem.is_none() && self.db.as_deref().is_some_and(|d| same_file(d, db))
    }
}

/// True if `a` and `b` name the same file (or the same path, when either is missing).
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// The host manifest's JSON for `browser`, naming `launcher`.
pub fn manifest_json(browser: LinkBrowser, launcher: &Path) -> serde_json::Value {
    let mut m = serde_json::json!({
        "name": HOST_NAME,
        "description": "Sitetrail: stores the pages you visit in your local Sitetrail database",
        "path": launcher,
        "type": "stdio",
    });
    if browser == LinkBrowser::Firefox {
        m["allowed_extensions"] = serde_json::json!([FIREFOX_EXTENSION_ID]);
    } else {
        // Exactly this form, trailing slash included, or Chromium refuses the connection.
        m["allowed_origins"] = serde_json::json!([format!("chrome-extension://{EXTENSION_ID}/")]);
    }
    m
}

/// `p` as a single-quoted shell word. Refuses what a script line cannot carry.
pub(crate) fn shell_word(what: &str, p: &Path) -> Result<String> {
    let s = p
        .to_str()
        .ok_or_else(|| Error::InvalidInput(format!("the {what} path {} is not UTF-8", p.display())))?;
    if s.contains(['\n', '\r', '\0']) {
        return Err(Error::InvalidInput(format!(
            "the {what} path {s:?} contains a line break"
        )));
    }
    Ok(format!("'{}'", s.replace('\'', r#"'\''"#)))
}

/// The launcher script: runs `exe` as the host for `browser` on `db`.
pub fn launcher_script(browser: LinkBrowser, exe: &Path, db: &Path) -> Result<String> {
    let (exe_word, db_word) = (shell_word("sitetrail binary", exe)?, shell_word("database", db)?);
    Ok(format!(
        "#!/bin/sh\n\
         # Sitetrail's native-messaging host for {product}, written by `sitetrail browser-link install`.\n\
         # The browser starts this script with the extension's origin as its only argument; it runs\n\
         # the sitetrail binary on the database below. Run the install again to change them.\n\
         # sitetrail-exe: {exe}\n\
         # sitetrail-db: {db}\n\
         exec {exe_word} --db {db_word} native-host --browser {name} \"$@\"\n",
        product = browser.product(),
        name = browser.as_str(),
        exe = exe.display(),
        db = db.display(),
    ))
}

/// Writes `contents` to `path` atomically (`fsutil`), with `mode` on Unix.
pub(crate) fn write_atomic(path: &Path, contents: &[u8], mode: u32) -> Result<()> {
    crate::fsutil::write_atomically_with(path, |file| {
        use std::io::Write;
        file.write_all(contents)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        #[cfg(not(unix))]
        let _ = mode;
        Ok(())
    })
}

/// Links the browser of `target` to `db`: writes the launcher running `exe`, then the manifest.
/// Replaces an earlier link. `exe` and `db` are made absolute.
pub fn install(target: &LinkTarget, exe: &Path, db: &Path) -> Result<LinkStatus> {
    crate::blocking::note("browser link");
    let (exe, db) = (absolute(exe)?, absolute(db)?);
    if !exe.is_file() {
        return Err(Error::InvalidInput(format!(
            "the sitetrail binary {} does not exist",
            exe.display()
        )));
    }
    let script = launcher_script(target.browser, &exe, &db)?;
    let launcher = target.launcher();
    write_atomic(&launcher, script.as_bytes(), 0o755)?;
    let manifest = serde_json::to_vec_pretty(&manifest_json(target.browser, &launcher))
        .map_err(|e| Error::Io(e.into()))?;
    write_atomic(&target.manifest(), &manifest, 0o644)?;
    Ok(status(target))
}

/// Removes the link of `target` (manifest first, then launcher). Returns whether there was one.
pub fn uninstall(target: &LinkTarget) -> Result<bool> {
    crate::blocking::note("browser link");
    let mut removed = false;
    for path in [target.manifest(), target.launcher()] {
        match std::fs::remove_file(&path) {
            Ok(()) => removed = true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(removed)
}

/// Reads `# sitetrail-<key>: <value>` from a launcher script.
fn launcher_field(script: &str, key: &str) -> Option<PathBuf> {
    let prefix = format!("# sitetrail-{key}: ");
    script
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .map(PathBuf::from)
}

/// What the link of `target` is: which manifest the browser reads (the user's own first, then the
/// system-wide one), and where it points. Knows nothing of the database: see [`LinkStatus::hear`].
pub fn status(target: &LinkTarget) -> LinkStatus {
    crate::blocking::note("browser link");
    let user = target.manifest();
    let system = target.system_manifest().filter(|m| m.is_file());
    let (scope, manifest) = match (user.is_file(), &system) {
        (true, _) => (LinkScope::User, user),
        (false, Some(m)) => (LinkScope::System, m.clone()),
        (false, None) => (LinkScope::None, user),
    };
    let mut st = LinkStatus {
        browser: target.browser,
        linked: scope != LinkScope::None,
        scope,
        manifest: manifest.clone(),
        system_manifest: system,
        exe: None,
        db: None,
        problem: None,
        heard_at: None,
        extension_version: None,
        recording: false,
    };
    if !st.linked {
        return st;
    }
    let launcher = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|m| m["path"].as_str().map(PathBuf::from));
    let Some(launcher) = launcher else {
        st.problem = Some(format!(
            "{} is not a host manifest Sitetrail wrote",
            manifest.display()
        ));
        return st;
    };
    // A system-wide manifest names installed paths: read them under the system root.
    let installed = |p: &Path| match scope {
        LinkScope::System => under_root(&target.system_root, p),
        _ => p.to_path_buf(),
    };
    match std::fs::read_to_string(installed(&launcher)) {
        Ok(script) => {
            st.exe = launcher_field(&script, "exe");
            st.db = launcher_field(&script, "db");
            if scope == LinkScope::System && st.db.is_none() {
                // The package's launcher names no database: the host opens the user's default.
                st.db = match &target.default_db {
                    Some(db) => Some(db.clone()),
                    None => crate::store::default_db_path().ok(),
                };
            }
            if let Some(exe) = st.exe.as_ref().filter(|e| !installed(e).is_file()) {
                st.problem = Some(match scope {
                    LinkScope::System => format!(
                        "the sitetrail binary {} of the system-wide link is gone; reinstall the sitetrail package",
                        exe.display()
                    ),
                    _ => format!(
                        "the sitetrail binary {} is gone; run the install again",
                        exe.display()
                    ),
                });
            }
        }
        Err(e) => {
            st.problem = Some(format!(
                "its launcher {} cannot be read ({e})",
                launcher.display()
            ));
        }
    }
    st
}

/// The link status of every browser at its default location under `roots`: the per-user link,
/// else the system-wide one.
pub fn status_all(roots: &Roots) -> Vec<LinkStatus> {
    LinkBrowser::ALL
        .into_iter()
        .filter_map(|b| LinkTarget::new(b, None, roots).ok())
        .map(|t| status(&t))
        .collect()
}

/// The user-data directories of the browsers linked at their per-user location to `db`: history
/// files under them are recorded live by the extension, so re-importing them would store every
/// visit twice. A system-wide link does not count: the package links every browser whether or not
/// its extension is loaded, and a browser without it would then never be imported.
pub fn live_profile_dirs(roots: &Roots, db: &Path) -> Vec<PathBuf> {
    status_all(roots)
        .into_iter()
        .filter(|s| s.scope == LinkScope::User && s.serves(db))
        .filter_map(|s| s.browser.user_data_dir(roots))
        .collect()
}

/// `profiles` without those whose history file lies under a browser linked to `db` at its
/// per-user location (see [`live_profile_dirs`]), and the ones left out.
pub fn without_live_profiles(
    profiles: Vec<crate::import::DetectedProfile>,
    roots: &Roots,
    db: &Path,
) -> (
    Vec<crate::import::DetectedProfile>,
    Vec<crate::import::DetectedProfile>,
) {
    let live = live_profile_dirs(roots, db);
    profiles
        .into_iter()
        .partition(|p| !live.iter().any(|d| p.path.starts_with(d)))
}

/// The Firefox extension's version (`extension/manifest.firefox.json`), which names its package.
fn firefox_extension_version() -> Option<String> {
    let manifest: serde_json::Value =
        serde_json::from_str(include_str!("../../extension/manifest.firefox.json")).ok()?;
    manifest["version"].as_str().map(str::to_owned)
}

/// The file name of the Firefox extension's package, `sitetrail-firefox-<version>.xpi`.
pub fn firefox_package_name() -> String {
    format!(
        "sitetrail-firefox-{}.xpi",
        firefox_extension_version().unwrap_or_else(|| "0".into())
    )
}

/// Where the package installs Sitetrail's shared files (`/usr/share/sitetrail` beside
/// `/usr/bin/sitetrail`): `../share/sitetrail` from the running program, if it is there.
fn installed_share_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?.parent()?.join("share").join("sitetrail");
    dir.is_dir().then_some(dir)
}

/// The source tree this binary was built from (where `scripts/run` builds it).
fn source_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The Chromium extension's folder, to choose in "Load unpacked": the installed one
/// (`/usr/share/sitetrail/extension`), else `extension/` of the source tree this binary was
/// built from, if either is there.
pub fn extension_dir() -> Option<PathBuf> {
    [
        installed_share_dir().map(|d| d.join("extension")),
        Some(source_dir().join("extension")),
    ]
    .into_iter()
    .flatten()
    .find(|d| d.join("manifest.json").is_file())
    .map(|d| std::fs::canonicalize(&d).unwrap_or(d))
}

/// The Firefox extension's package (`.xpi`): the installed one (`/usr/share/sitetrail/`), else
/// the one `scripts/firefox-extension` writes to `dist/` of the source tree this binary was
/// built from, if either is there. Firefox keeps an extension installed from it (about:addons,
/// Install Add-on From File) across restarts, unlike a temporary add-on.
pub fn firefox_package() -> Option<PathBuf> {
    let name = firefox_package_name();
    [
        installed_share_dir().map(|d| d.join(&name)),
        Some(source_dir().join("dist").join(&name)),
    ]
    .into_iter()
    .flatten()
    .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_id_follows_from_the_manifest_key() {
        use base64::Engine;
        use sha2::{Digest, Sha256};
        let manifest: serde_json::Value =
            serde_json::from_str(include_str!("../../extension/manifest.json")).unwrap();
        let der = base64::engine::general_purpose::STANDARD
            .decode(manifest["key"].as_str().unwrap())
            .unwrap();
        let digest = Sha256::digest(&der);
        let id: String = digest[..16]
            .iter()
            .flat_map(|b| [b >> 4, b & 0xf])
            .map(|n| char::from(b'a' + n))
            .collect();
        assert_eq!(id, EXTENSION_ID);
    }

    #[test]
    fn the_firefox_manifest_matches_the_chromium_one() {
        let chromium: serde_json::Value =
            serde_json::from_str(include_str!("../../extension/manifest.json")).unwrap();
        let firefox: serde_json::Value =
            serde_json::from_str(include_str!("../../extension/manifest.firefox.json")).unwrap();
        assert_eq!(
            firefox["browser_specific_settings"]["gecko"]["id"],
            FIREFOX_EXTENSION_ID
        );
        for key in [
            "name",
            "version",
            "manifest_version",
            "permissions",
            "action",
            "options_ui",
        ] {
            assert_eq!(chromium[key], firefox[key], "{key} differs between the manifests");
        }
        assert_eq!(
            chromium["background"]["service_worker"], firefox["background"]["scripts"][0],
            "both run the same background script"
        );
        assert!(firefox.get("key").is_none(), "Firefox does not take a key");
    }

    #[test]
    fn manifests_name_the_extension_exactly() {
        let m = manifest_json(LinkBrowser::Chromium, Path::new("/x/launch.sh"));
        assert_eq!(m["name"], HOST_NAME);
        assert_eq!(
            m["allowed_origins"][0],
            format!("chrome-extension://{EXTENSION_ID}/")
        );
        assert_eq!(m["path"], "/x/launch.sh");
        let f = manifest_json(LinkBrowser::Firefox, Path::new("/x/launch.sh"));
        assert_eq!(f["allowed_extensions"][0], FIREFOX_EXTENSION_ID);
        assert!(f.get("allowed_origins").is_none());
    }

    #[test]
    fn launcher_paths_are_quoted_for_the_shell() {
        let s = launcher_script(
            LinkBrowser::Brave,
            Path::new("/opt/it's here/sitetrail"),
            Path::new("/data/my db.sqlite"),
        )
        .unwrap();
        assert!(
            s.contains(r#"exec '/opt/it'\''s here/sitetrail' --db '/data/my db.sqlite' native-host --browser brave "$@""#),
            "{s}"
        );
        assert_eq!(
            launcher_field(&s, "db"),
            Some(PathBuf::from("/data/my db.sqlite"))
        );
        assert!(launcher_script(LinkBrowser::Brave, Path::new("/a\nb"), Path::new("/d")).is_err());
    }

    #[test]
    fn profiles_of_a_browser_linked_to_the_database_are_live_not_imported() {
        let home = tempfile::tempdir().unwrap();
        let roots = Roots::for_home(Os::Linux, home.path());
        let profile = |dir: &str| crate::import::DetectedProfile {
            browser: crate::import::Browser::Chrome,
            product: "x".into(),
            profile: "Default".into(),
            path: home.path().join(dir).join("Default/History"),
        };
        let exe = home.path().join("sitetrail");
        std::fs::write(&exe, b"").unwrap();
        let db = home.path().join("db.sqlite");
        std::fs::write(&db, b"").unwrap();
        let target = LinkTarget::new(LinkBrowser::Chromium, None, &roots).unwrap();
        install(&target, &exe, &db).unwrap();
        let all = vec![profile(".config/chromium"), profile(".config/google-chrome")];
        let (kept, live) = without_live_profiles(all.clone(), &roots, &db);
        assert_eq!(kept, vec![all[1].clone()]);
        assert_eq!(live, vec![all[0].clone()]);
        // Linked to another database: this one still needs the imports.
        let (kept, _) = without_live_profiles(all.clone(), &roots, &home.path().join("other.db"));
        assert_eq!(kept, all);
        uninstall(&target).unwrap();
        assert_eq!(without_live_profiles(all.clone(), &roots, &db).0, all);
    }

    /// A home and a system root of their own, with a `sitetrail` binary in the system.
    fn system_home() -> (tempfile::TempDir, Roots, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let mut roots = Roots::for_home(Os::Linux, &dir.path().join("home"));
        roots.system = dir.path().join("system");
        let exe = roots.system.join("usr/bin/sitetrail");
        std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
        std::fs::write(&exe, b"").unwrap();
        (dir, roots, exe)
    }

    #[test]
    fn a_browser_reads_the_users_link_first_then_the_system_wide_one() {
        let (_dir, roots, exe) = system_home();
        let chromium = LinkTarget::new(LinkBrowser::Chromium, None, &roots).unwrap();
        let none = status(&chromium);
        assert_eq!((none.linked, none.scope), (false, LinkScope::None));
        assert_eq!(none.manifest, chromium.manifest());
        assert_eq!(none.system_manifest, None);

        // The package's links, as it writes them, under the test's system root.
        crate::capture::system_link::write_system_links(
            &roots.system,
            Path::new("/usr/bin/sitetrail"),
            Path::new("/usr/lib/sitetrail/native-host"),
        )
        .unwrap();
        let system = status(&chromium);
        assert_eq!((system.linked, system.scope), (true, LinkScope::System));
        let installed = roots
            .system
            .join("etc/chromium/native-messaging-hosts/app.sitetrail.host.json");
        assert_eq!(system.manifest, installed);
        assert_eq!(system.system_manifest.as_deref(), Some(installed.as_path()));
        assert_eq!(system.problem, None, "{system:?}");
        assert_eq!(
            system.exe.as_deref(),
            Some(Path::new("/usr/bin/sitetrail")),
            "as installed"
        );
        assert_eq!(
            system.db,
            crate::store::default_db_path().ok(),
            "the user's default"
        );
        // Brave and Vivaldi read Chrome's folder; every browser has the package's link.
        for s in status_all(&roots) {
            assert_eq!(s.scope, LinkScope::System, "{s:?}");
        }

        // The user's own link comes first; the system-wide one is still named.
        let db = roots.home.join("mine.db");
        install(&chromium, &exe, &db).unwrap();
        let user = status(&chromium);
        assert_eq!(
            (user.scope, user.manifest.clone()),
            (LinkScope::User, chromium.manifest())
        );
        assert_eq!(user.system_manifest.as_deref(), Some(installed.as_path()));
        assert_eq!(user.db.as_deref(), Some(db.as_path()));
        uninstall(&chromium).unwrap();
        assert_eq!(status(&chromium).scope, LinkScope::System);

        // A system-wide link whose binary is gone says what to do.
        std::fs::remove_file(&exe).unwrap();
        let broken = status(&chromium);
        assert!(
            broken
                .problem
                .as_deref()
                .unwrap()
                .contains("reinstall the sitetrail package"),
            "{broken:?}"
        );
        // Not on macOS: the package is Linux's.
        let mut mac = Roots::for_home(Os::MacOs, &roots.home);
        mac.system = roots.system.clone();
        let t = LinkTarget::new(LinkBrowser::Chromium, None, &mac).unwrap();
        assert_eq!(status(&t).scope, LinkScope::None);
    }

    #[test]
    fn recording_needs_a_working_link_to_this_database_and_a_contact() {
        let (_dir, roots, exe) = system_home();
        let target = LinkTarget::new(LinkBrowser::Firefox, None, &roots).unwrap();
        let db = roots.home.join("this.db");
        let contact = |browser: &str| Contact {
            browser: browser.into(),
            first_seen_at: Timestamp(1),
            last_seen_at: Timestamp(2),
            extension_version: Some("0.1.0".into()),
        };
        let mut st = status(&target);
        st.hear(&[contact("firefox")], &db);
        assert!(!st.recording, "not linked: {st:?}");
        assert_eq!(st.heard_at, Some(Timestamp(2)), "when it last wrote, still told");
        install(&target, &exe, &db).unwrap();
        let mut st = status(&target);
        st.hear(&[contact("chromium")], &db);
        assert!(
            !st.recording && st.heard_at.is_none(),
            "another browser's contact: {st:?}"
        );
        st.hear(&[contact("firefox")], &db);
        assert!(st.recording, "{st:?}");
        assert_eq!(st.extension_version.as_deref(), Some("0.1.0"));
        st.hear(&[contact("firefox")], &roots.home.join("other.db"));
        assert!(!st.recording, "linked to another database");
    }

    #[test]
    fn a_system_wide_link_does_not_keep_a_profile_from_being_imported() {
        let (_dir, roots, _exe) = system_home();
        crate::capture::system_link::write_system_links(
            &roots.system,
            Path::new("/usr/bin/sitetrail"),
            Path::new("/usr/lib/sitetrail/native-host"),
        )
        .unwrap();
        let db = crate::store::default_db_path().unwrap();
        assert!(live_profile_dirs(&roots, &db).is_empty());
    }

    #[test]
    fn each_browser_has_its_own_place_per_os() {
        let linux = Roots::for_home(Os::Linux, Path::new("/home/u"));
        let dirs: Vec<PathBuf> = LinkBrowser::ALL
            .iter()
            .map(|b| b.hosts_dir(&linux).unwrap())
            .collect();
        assert_eq!(
            dirs[0],
            Path::new("/home/u/.config/chromium/NativeMessagingHosts")
        );
        assert_eq!(dirs[5], Path::new("/home/u/.mozilla/native-messaging-hosts"));
        let mut unique = dirs.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), dirs.len());
        let mac = Roots::for_home(Os::MacOs, Path::new("/Users/u"));
        assert_eq!(
            LinkBrowser::Chrome.hosts_dir(&mac).unwrap(),
            Path::new("/Users/u/Library/Application Support/Google/Chrome/NativeMessagingHosts")
        );
        let win = Roots::for_home(Os::Windows, Path::new("C:/Users/u"));
        assert!(LinkBrowser::Edge
            .hosts_dir(&win)
            .unwrap_err()
            .to_string()
            .contains("registry"));
        assert!(LinkTarget::new(LinkBrowser::Firefox, Some(Path::new("/p")), &linux).is_err());
        assert_eq!("Vivaldi".parse::<LinkBrowser>().unwrap(), LinkBrowser::Vivaldi);
        assert!("opera".parse::<LinkBrowser>().is_err());
    }
}
