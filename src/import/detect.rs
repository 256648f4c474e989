//! Finding the installed browsers' history files.
//!
//! Knows where each browser keeps its profiles on Linux (native packages, Flatpak and Snap),
//! macOS and Windows, relative to a few base directories ([`Roots`]). Detection only lists
//! directories and checks that a history file exists; it never opens one. [`detect_profiles`]
//! uses the real user's directories; [`detect_profiles_in`] takes any [`Roots`], so tests can build
//! a fake home for each operating system.

use std::path::{Path, PathBuf};

use super::Browser;

/// An operating system's profile layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Os {
    /// Linux and the BSDs: XDG directories, Flatpak (`~/.var/app`) and Snap (`~/snap`).
    Linux,
    /// macOS: `~/Library/Application Support` and `~/Library/Safari`.
    MacOs,
    /// Windows: `%LOCALAPPDATA%` and `%APPDATA%`.
    Windows,
}

impl Os {
    /// The operating system this program was built for.
    pub fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::MacOs
        } else if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }
}

/// The base directories profiles are found under.
#[derive(Clone, Debug)]
pub struct Roots {
    /// The layout to look for.
    pub os: Os,
    /// The home directory.
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME` (Linux; default `~/.config`).
    pub config: PathBuf,
    /// `%LOCALAPPDATA%` (Windows; default `~\AppData\Local`).
    pub local_app_data: PathBuf,
    /// `%APPDATA%` (Windows; default `~\AppData\Roaming`).
    pub roaming_app_data: PathBuf,
    /// The root the system-wide folders are read under (`/etc/chromium/...`, where a package
    /// links every user's browsers): `/`, or in a debug build [`SYSTEM_ROOT_ENV`] if set (tests
    /// point it at a temp dir).
    pub system: PathBuf,
    /// The database a native host opens when its launcher names none (the package's system-wide
    /// link): `None` for the user's default ([`crate::store::default_db_path`]); the app sets its
    /// own, which is that default unless a test says otherwise.
    pub default_db: Option<PathBuf>,
}

/// A debug build reads the system-wide folders under this directory instead of `/`: for tests,
/// which cannot write to `/etc`. A released build ignores it.
pub const SYSTEM_ROOT_ENV: &str = "SITETRAIL_SYSTEM_ROOT";

/// `/`, or in a debug build [`SYSTEM_ROOT_ENV`] if set and not empty.
fn system_root() -> PathBuf {
    let test_root = std::env::var_os(SYSTEM_ROOT_ENV).filter(|v| cfg!(debug_assertions) && !v.is_empty());
    test_root.map_or_else(|| PathBuf::from("/"), PathBuf::from)
}

impl Roots {
    /// The usual directories under `home` for `os`.
    pub fn for_home(os: Os, home: &Path) -> Roots {
        Roots {
            os,
            home: home.to_path_buf(),
            config: home.join(".config"),
            local_app_data: home.join("AppData").join("Local"),
            roaming_app_data: home.join("AppData").join("Roaming"),
            system: PathBuf::from("/"),
            default_db: None,
        }
    }

    /// The current user's directories, or `None` without a home directory.
    pub fn current() -> Option<Roots> {
        let base = directories::BaseDirs::new()?;
        let mut roots = Roots::for_home(Os::current(), base.home_dir());
        roots.system = system_root();
        match roots.os {
            Os::Linux => roots.config = base.config_dir().to_path_buf(),
            Os::Windows => {
                roots.local_app_data = base.data_local_dir().to_path_buf();
                roots.roaming_app_data = base.config_dir().to_path_buf();
            }
            Os::MacOs => {}
        }
        Some(roots)
    }
}

/// A browser profile with a history file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DetectedProfile {
    /// The schema family, which picks the importer.
    pub browser: Browser,
    /// The product ("Google Chrome", "Firefox (Flatpak)", ...).
    pub product: String,
    /// The profile's directory name ("Default", "abcd1234.default-release", ...).
    pub profile: String,
    /// The history file.
    pub path: PathBuf,
}

/// Every profile of every known browser in the current user's directories.
pub fn detect_profiles() -> Vec<DetectedProfile> {
    crate::blocking::note("profile detection");
    Roots::current()
        .map(|r| detect_profiles_in(&r))
        .unwrap_or_default()
}

/// Every profile of every known browser under `roots`, by path.
pub fn detect_profiles_in(roots: &Roots) -> Vec<DetectedProfile> {
    let mut found = Vec::new();
    for (product, dir) in chromium_dirs(roots) {
        // A user-data dir holds profiles ("Default", "Profile 1"...); Opera's is itself the profile.
        scan(&mut found, Browser::Chrome, &product, &dir, "History", 1);
    }
    for (product, dir) in firefox_dirs(roots) {
        // Profiles sit in the root (Linux) or in its `Profiles` subdirectory (macOS, Windows).
        scan(&mut found, Browser::Firefox, &product, &dir, "places.sqlite", 2);
    }
    if roots.os == Os::MacOs {
        let db = roots.home.join("Library").join("Safari").join("History.db");
        if db.is_file() {
            found.push(DetectedProfile {
                browser: Browser::Safari,
                product: "Safari".into(),
                profile: "Safari".into(),
                path: db,
            });
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found.dedup_by(|a, b| a.path == b.path);
    found
}

/// Adds `dir/<file>` and, `depth` levels down, `dir/<sub>/<file>`, for each that is a file.
fn scan(
    found: &mut Vec<DetectedProfile>,
    browser: Browser,
    product: &str,
    dir: &Path,
    file: &str,
    depth: u32,
) {
    let candidate = dir.join(file);
    if candidate.is_file() {
        let profile = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        found.push(DetectedProfile {
            browser,
            product: product.to_owned(),
            profile,
            path: candidate,
        });
    }
    if depth == 0 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut subdirs: Vec<PathBuf> = entries
        .filter_map(std::result::Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    for sub in subdirs {
        scan(found, browser, product, &sub, file, depth - 1);
    }
}

/// (product, user-data dir) of each Chromium-family browser.
fn chromium_dirs(r: &Roots) -> Vec<(String, PathBuf)> {
    // (product, Linux dir under ~/.config, Flatpak app id, Snap name, macOS dir, Windows dir).
    const BROWSERS: &[(&str, &str, &str, &str, &str, &str)] = &[
        (
            "Google Chrome",
            "google-chrome",
            "com.google.Chrome",
            "",
            "Google/Chrome",
            "Google/Chrome/User Data",
        ),
        (
            "Google Chrome Beta",
            "google-chrome-beta",
            "",
            "",
            "Google/Chrome Beta",
            "Google/Chrome Beta/User Data",
        ),
        (
            "Chromium",
            "chromium",
            "org.chromium.Chromium",
            "chromium",
            "Chromium",
            "Chromium/User Data",
        ),
        (
            "Ungoogled Chromium",
            "chromium",
            "io.github.ungoogled_software.ungoogled_chromium",
            "",
            "",
            "",
        ),
        (
            "Microsoft Edge",
            "microsoft-edge",
            "com.microsoft.Edge",
            "",
            "Microsoft Edge",
            "Microsoft/Edge/User Data",
        ),
        (
            "Brave",
            "BraveSoftware/Brave-Browser",
            "com.brave.Browser",
            "brave",
            "BraveSoftware/Brave-Browser",
            "BraveSoftware/Brave-Browser/User Data",
        ),
        (
            "Vivaldi",
            "vivaldi",
            "com.vivaldi.Vivaldi",
            "vivaldi",
            "Vivaldi",
            "Vivaldi/User Data",
        ),
        (
            "Opera",
            "opera",
            "com.opera.Opera",
            "opera",
            "com.operasoftware.Opera",
            "",
        ),
    ];
    let mut dirs = Vec::new();
    for &(product, linux, flatpak, snap, mac, windows) in BROWSERS {
        match r.os {
            Os::Linux => {
                dirs.push((product.to_owned(), r.config.join(linux)));
                if !flatpak.is_empty() {
                    let app = r.home.join(".var/app").join(flatpak);
                    dirs.push((format!("{product} (Flatpak)"), app.join("config").join(linux)));
                }
                if !snap.is_empty() {
                    let snap_dir = r.home.join("snap").join(snap);
                    // Chromium's snap keeps its data in `common`; most others in `current/.config`.
                    dirs.push((format!("{product} (Snap)"), snap_dir.join("common").join(linux)));
                    dirs.push((
                        format!("{product} (Snap)"),
                        snap_dir.join("current/.config").join(linux),
                    ));
                }
            }
            Os::MacOs if !mac.is_empty() => {
                dirs.push((
                    product.to_owned(),
                    r.home.join("Library/Application Support").join(mac),
                ));
            }
            Os::Windows if !windows.is_empty() => {
                dirs.push((product.to_owned(), r.local_app_data.join(windows)));
            }
            _ => {}
        }
    }
    if r.os == Os::Windows {
        // Opera keeps its profile in the roaming app data, not in a `User Data` dir.
        dirs.push((
            "Opera".into(),
            r.roaming_app_data.join("Opera Software/Opera Stable"),
        ));
    }
    dirs
}

/// (product, profiles dir) of each Firefox-family browser.
fn firefox_dirs(r: &Roots) -> Vec<(String, PathBuf)> {
    // (product, Linux dir under ~, Flatpak app id, Snap name, macOS/Windows dir).
    const BROWSERS: &[(&str, &str, &str, &str, &str)] = &[
        (
            "Firefox",
            ".mozilla/firefox",
            "org.mozilla.firefox",
            "firefox",
            "Firefox",
        ),
        (
            "LibreWolf",
            ".librewolf",
            "io.gitlab.librewolf-community",
            "",
            "librewolf",
        ),
        ("Waterfox", ".waterfox", "", "", "Waterfox"),
    ];
    let mut dirs = Vec::new();
    for &(product, linux, flatpak, snap, other) in BROWSERS {
        match r.os {
            Os::Linux => {
                dirs.push((product.to_owned(), r.home.join(linux)));
                if !flatpak.is_empty() {
                    let app = r.home.join(".var/app").join(flatpak);
                    dirs.push((format!("{product} (Flatpak)"), app.join(linux)));
                }
                if !snap.is_empty() {
                    dirs.push((
                        format!("{product} (Snap)"),
                        r.home.join("snap").join(snap).join("common").join(linux),
                    ));
                }
            }
            Os::MacOs => dirs.push((
                product.to_owned(),
                r.home.join("Library/Application Support").join(other),
            )),
            Os::Windows => {
                let vendor = if product == "Firefox" {
                    "Mozilla/Firefox"
                } else {
                    other
                };
                dirs.push((product.to_owned(), r.roaming_app_data.join(vendor)));
            }
        }
    }
    dirs
}
