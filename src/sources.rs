//! A visit's source as people say it. Visits are stored with a source id: `cli`,
//! `extension:<browser>` for the extension's, and `<browser>:<16 hex digits>` for an imported
//! profile (the digits hash the profile's path: `import::default_source`), or a name given with
//! `import --source`. The app's visit details show "Google Chrome, profile Default" or "the
//! Sitetrail extension in Firefox" instead of the id. Sits above `import` and `capture`, whose
//! names it reads.

use crate::capture::link::LinkBrowser;
use crate::import::{default_source, Browser, DetectedProfile};

/// What `source` is, as people say it, given the browser profiles found on this computer
/// (`import::detect_profiles`): the profile whose path hashes to it, the browser whose extension
/// recorded it, or, for an import from a profile no longer found, the browser family. A name
/// given with `import --source` is already a person's and is returned as it is.
pub fn describe_source(source: &str, profiles: &[DetectedProfile]) -> String {
    if source == "cli" {
        return "the sitetrail command".into();
    }
    if let Some(browser) = source.strip_prefix("extension:") {
        return match browser.parse::<LinkBrowser>() {
            Ok(b) => format!("the Sitetrail extension in {}", b.product()),
            Err(_) => "the Sitetrail extension".into(),
        };
    }
    if let Some(p) = profiles
        .iter()
        .find(|p| default_source(p.browser, &p.path) == source)
    {
        return match p.browser {
            // Safari has one history, no profiles.
            Browser::Safari => p.product.clone(),
            _ => format!("{}, profile {}", p.product, profile_name(p)),
        };
    }
    match source.split_once(':') {
        Some((family, hex)) if hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            match family {
                "chrome" => {
                    "a Chrome-family browser's history (a profile not found on this computer now)".into()
                }
                "firefox" => {
                    "a Firefox-family browser's history (a profile not found on this computer now)".into()
                }
                "safari" => "Safari's history (not found on this computer now)".into(),
                _ => source.to_owned(),
            }
        }
        _ => source.to_owned(),
    }
}

/// A profile's name as its browser shows it: Firefox's directories are `<8 random
/// characters>.<name>` ("abcd1234.default-release" is "default-release"); Chromium's are the
/// name ("Default", "Profile 1").
fn profile_name(p: &DetectedProfile) -> &str {
    if p.browser == Browser::Firefox {
        if let Some((salt, name)) = p.profile.split_once('.') {
            if salt.len() == 8 && salt.bytes().all(|b| b.is_ascii_alphanumeric()) && !name.is_empty() {
                return name;
            }
        }
    }
    &p.profile
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(
        dir: &std::path::Path,
        browser: Browser,
        product: &str,
        profile: &str,
        file: &str,
    ) -> DetectedProfile {
        let path = dir.join(profile).join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"").unwrap();
        DetectedProfile {
            browser,
            product: product.into(),
            profile: profile.into(),
            path,
        }
    }

    #[test]
    fn sources_are_named_as_people_say_them() {
        let dir = tempfile::tempdir().unwrap();
        let chrome = profile(dir.path(), Browser::Chrome, "Google Chrome", "Default", "History");
        let fx = profile(
            dir.path(),
            Browser::Firefox,
            "Firefox",
            "x1y2z3w4.default-release",
            "places.sqlite",
        );
        let profiles = [chrome.clone(), fx.clone()];
        let id = |p: &DetectedProfile| default_source(p.browser, &p.path);
        assert_eq!(
            describe_source(&id(&chrome), &profiles),
            "Google Chrome, profile Default"
        );
        assert_eq!(
            describe_source(&id(&fx), &profiles),
            "Firefox, profile default-release"
        );
        assert_eq!(
            describe_source("extension:firefox", &profiles),
            "the Sitetrail extension in Firefox"
        );
        assert_eq!(
            describe_source("extension:netscape", &profiles),
            "the Sitetrail extension"
        );
        assert_eq!(describe_source("cli", &profiles), "the sitetrail command");
        // A profile no longer found: its browser family, never the id.
        assert_eq!(
            describe_source("chrome:70633d67b821a9ec", &profiles),
            "a Chrome-family browser's history (a profile not found on this computer now)"
        );
        // A name the user gave stays theirs.
        assert_eq!(describe_source("old-laptop", &profiles), "old-laptop");
    }
}
