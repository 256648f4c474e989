//! Profile auto-detection on fake home directories laid out like Linux (native, Flatpak, Snap),
//! macOS and Windows, and importing everything detected.

use std::path::{Path, PathBuf};

use sitetrail::import::detect::{detect_profiles_in, Os, Roots};
use sitetrail::import::{import_detected, Browser, ImportOptions};

use crate::support::import::*;
use crate::support::{count, TempDb};

/// Creates an empty file at `home/rel` (detection only checks that history files exist).
fn touch(home: &Path, rel: &str) {
    let path = home.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, b"").unwrap();
}

/// (browser, product, profile, path relative to home) of everything detected.
fn detected(roots: &Roots) -> Vec<(Browser, String, String, PathBuf)> {
    detect_profiles_in(roots)
        .into_iter()
        .map(|p| {
            let rel = p.path.strip_prefix(&roots.home).unwrap().to_path_buf();
            (p.browser, p.product, p.profile, rel)
        })
        .collect()
}

fn row(b: Browser, product: &str, profile: &str, rel: &str) -> (Browser, String, String, PathBuf) {
    (b, product.into(), profile.into(), PathBuf::from(rel))
}

#[test]
fn linux_profiles_are_found_in_native_flatpak_and_snap_locations() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    touch(h, ".config/google-chrome/Default/History");
    touch(h, ".config/google-chrome/Profile 1/History");
    touch(h, ".config/google-chrome/Crashpad/settings.dat"); // no History: not a profile
    touch(h, ".config/opera/History"); // Opera's data dir is its profile
    touch(
        h,
        ".var/app/com.brave.Browser/config/BraveSoftware/Brave-Browser/Default/History",
    );
    touch(h, "snap/chromium/common/chromium/Default/History");
    touch(h, ".mozilla/firefox/abcd.default-release/places.sqlite");
    touch(h, ".mozilla/firefox/Crash Reports/events/x"); // no places.sqlite
    touch(
        h,
        ".var/app/org.mozilla.firefox/.mozilla/firefox/f1.default/places.sqlite",
    );
    touch(h, "snap/firefox/common/.mozilla/firefox/s1.default/places.sqlite");
    touch(h, "Library/Safari/History.db"); // macOS only: ignored on Linux

    let mut found = detected(&Roots::for_home(Os::Linux, h));
    found.sort_by(|a, b| a.3.cmp(&b.3));
    assert_eq!(
        found,
        vec![
            row(
                Browser::Chrome,
                "Google Chrome",
                "Default",
                ".config/google-chrome/Default/History"
            ),
            row(
                Browser::Chrome,
                "Google Chrome",
                "Profile 1",
                ".config/google-chrome/Profile 1/History"
            ),
            row(Browser::Chrome, "Opera", "opera", ".config/opera/History"),
            row(
                Browser::Firefox,
                "Firefox",
                "abcd.default-release",
                ".mozilla/firefox/abcd.default-release/places.sqlite"
            ),
            row(
                Browser::Chrome,
                "Brave (Flatpak)",
                "Default",
                ".var/app/com.brave.Browser/config/BraveSoftware/Brave-Browser/Default/History"
            ),
            row(
                Browser::Firefox,
                "Firefox (Flatpak)",
                "f1.default",
                ".var/app/org.mozilla.firefox/.mozilla/firefox/f1.default/places.sqlite"
            ),
            row(
                Browser::Chrome,
                "Chromium (Snap)",
                "Default",
                "snap/chromium/common/chromium/Default/History"
            ),
            row(
                Browser::Firefox,
                "Firefox (Snap)",
                "s1.default",
                "snap/firefox/common/.mozilla/firefox/s1.default/places.sqlite"
            ),
        ]
    );
}

#[test]
fn macos_profiles_include_safari() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    touch(h, "Library/Application Support/Google/Chrome/Default/History");
    touch(h, "Library/Application Support/Microsoft Edge/Profile 2/History");
    touch(
        h,
        "Library/Application Support/Firefox/Profiles/x.default-release/places.sqlite",
    );
    touch(h, "Library/Safari/History.db");
    touch(h, ".config/google-chrome/Default/History"); // Linux only: ignored on macOS

    let mut found = detected(&Roots::for_home(Os::MacOs, h));
    found.sort_by(|a, b| a.3.cmp(&b.3));
    assert_eq!(
        found,
        vec![
            row(
                Browser::Firefox,
                "Firefox",
                "x.default-release",
                "Library/Application Support/Firefox/Profiles/x.default-release/places.sqlite"
            ),
            row(
                Browser::Chrome,
                "Google Chrome",
                "Default",
                "Library/Application Support/Google/Chrome/Default/History"
            ),
            row(
                Browser::Chrome,
                "Microsoft Edge",
                "Profile 2",
                "Library/Application Support/Microsoft Edge/Profile 2/History"
            ),
            row(Browser::Safari, "Safari", "Safari", "Library/Safari/History.db"),
        ]
    );
}

#[test]
fn windows_profiles_are_found_in_local_and_roaming_app_data() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    touch(h, "AppData/Local/Google/Chrome/User Data/Default/History");
    touch(h, "AppData/Local/Microsoft/Edge/User Data/Default/History");
    touch(
        h,
        "AppData/Local/BraveSoftware/Brave-Browser/User Data/Profile 3/History",
    );
    touch(h, "AppData/Roaming/Opera Software/Opera Stable/History");
    touch(
        h,
        "AppData/Roaming/Mozilla/Firefox/Profiles/y.default/places.sqlite",
    );
    touch(h, "AppData/Roaming/librewolf/Profiles/z.default/places.sqlite");

    let mut found = detected(&Roots::for_home(Os::Windows, h));
    found.sort_by(|a, b| a.3.cmp(&b.3));
    assert_eq!(
        found,
        vec![
            row(
                Browser::Chrome,
                "Brave",
                "Profile 3",
                "AppData/Local/BraveSoftware/Brave-Browser/User Data/Profile 3/History"
            ),
            row(
                Browser::Chrome,
                "Google Chrome",
                "Default",
                "AppData/Local/Google/Chrome/User Data/Default/History"
            ),
            row(
                Browser::Chrome,
                "Microsoft Edge",
                "Default",
                "AppData/Local/Microsoft/Edge/User Data/Default/History"
            ),
            row(
                Browser::Firefox,
                "Firefox",
                "y.default",
                "AppData/Roaming/Mozilla/Firefox/Profiles/y.default/places.sqlite"
            ),
            row(
                Browser::Chrome,
                "Opera",
                "Opera Stable",
                "AppData/Roaming/Opera Software/Opera Stable/History"
            ),
            row(
                Browser::Firefox,
                "LibreWolf",
                "z.default",
                "AppData/Roaming/librewolf/Profiles/z.default/places.sqlite"
            ),
        ]
    );
}

#[test]
fn every_detected_profile_is_imported_and_one_bad_profile_does_not_stop_the_others() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let chrome_dir = h.join(".config/chromium/Default");
    let firefox_dir = h.join(".mozilla/firefox/p.default");
    std::fs::create_dir_all(&chrome_dir).unwrap();
    std::fs::create_dir_all(&firefox_dir).unwrap();
    copy_fixture("chromium-History", &chrome_dir, "History");
    copy_fixture("firefox-places.sqlite", &firefox_dir, "places.sqlite");
    touch(h, ".config/google-chrome/Default/History"); // empty: refused, others still imported

    let db = TempDb::new();
    let store = db.open();
    let profiles = detect_profiles_in(&Roots::for_home(Os::Linux, h));
    assert_eq!(profiles.len(), 3);
    let results = import_detected(&store, profiles, &ImportOptions::default(), &mut |_, _| {});
    let outcome: Vec<(String, Option<u64>)> = results
        .iter()
        .map(|r| {
            (
                r.profile.product.clone(),
                r.result.as_ref().ok().map(|rep| rep.imported),
            )
        })
        .collect();
    assert_eq!(
        outcome,
        vec![
            ("Chromium".to_owned(), Some(18)),
            ("Google Chrome".to_owned(), None),
            ("Firefox".to_owned(), Some(16)),
        ]
    );
    assert_eq!(count(&store, "website"), 16);
    assert_eq!(store.import_cursors().unwrap().len(), 2);
}
