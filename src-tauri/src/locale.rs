//! The system's locale and clock, for the UI's dates and times: the web view's own default is US
//! English with a 12-hour clock whatever the machine says, while the CLI follows the machine. The
//! locale comes from `LC_ALL`, `LC_TIME` or `LANG` (the POSIX order), as a BCP 47 tag
//! (`de_DE.UTF-8` → `de-DE`); the clock from the desktop's own setting where the person set one
//! (GNOME's `clock-format`, read with `dconf`, which answers only for a value that was set), else
//! from the locale.

use std::process::{Command, Stdio};

/// What the UI formats dates and times with.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LocaleInfo {
    /// The locale as a BCP 47 tag (`de-DE`), or `None` for the C locale or none set (the web
    /// view's default then).
    pub locale: Option<String>,
    /// `Some(false)` for a 24-hour clock, `Some(true)` for 12-hour, as the desktop is set; `None`:
    /// as the locale has it.
    pub hour12: Option<bool>,
}

/// The BCP 47 tag of a POSIX locale name (`language[_territory][.codeset][@modifier]`); `None`
/// for `C`, `POSIX` or a name that is not one.
pub fn bcp47(posix: &str) -> Option<String> {
    let name = posix.split(['.', '@']).next()?.trim();
    if name.is_empty() || name == "C" || name == "POSIX" {
        return None;
    }
    let mut parts = name.split('_');
    let language = parts.next()?;
    if !(2..=3).contains(&language.len()) || !language.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let mut tag = language.to_ascii_lowercase();
    if let Some(territory) = parts.next() {
        if territory.is_empty() || !territory.chars().all(|c| c.is_ascii_alphanumeric()) {
            return None;
        }
        tag.push('-');
        tag.push_str(&territory.to_ascii_uppercase());
    }
    Some(tag)
}

/// The locale for dates and times of an environment read by `var`: the first of `LC_ALL`,
/// `LC_TIME`, `LANG` that is set and not empty.
pub fn locale_from(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    ["LC_ALL", "LC_TIME", "LANG"]
        .iter()
        .find_map(|v| var(v).filter(|s| !s.trim().is_empty()))
        .and_then(|s| bcp47(&s))
}

/// The 12-hour setting of a `dconf read` answer (`'24h'`, `'12h'`; nothing when never set).
pub fn hour12_from(dconf: &str) -> Option<bool> {
    match dconf.trim() {
        "'12h'" => Some(true),
        "'24h'" => Some(false),
        _ => None,
    }
}

/// The desktop's clock setting, if it has one the person set (blocking: runs `dconf`).
fn desktop_hour12() -> Option<bool> {
    let out = Command::new("dconf")
        .args(["read", "/org/gnome/desktop/interface/clock-format"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    hour12_from(&String::from_utf8_lossy(&out.stdout))
}

/// This process's locale and the desktop's clock (blocking: runs `dconf`).
pub fn system() -> LocaleInfo {
    LocaleInfo {
        locale: locale_from(|v| std::env::var(v).ok()),
        hour12: desktop_hour12(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posix_names_become_bcp47_tags() {
        assert_eq!(bcp47("de_DE.UTF-8").as_deref(), Some("de-DE"));
        assert_eq!(bcp47("en_GB.utf8@euro").as_deref(), Some("en-GB"));
        assert_eq!(bcp47("fr").as_deref(), Some("fr"));
        assert_eq!(bcp47("C.UTF-8"), None);
        assert_eq!(bcp47("POSIX"), None);
        assert_eq!(bcp47("../../etc"), None);
        assert_eq!(bcp47("de_<script>"), None);
    }

    #[test]
    fn lc_all_then_lc_time_then_lang() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |v: &str| pairs.iter().find(|(k, _)| *k == v).map(|(_, x)| (*x).to_owned())
        };
        assert_eq!(
            locale_from(env(&[("LANG", "en_US.UTF-8"), ("LC_TIME", "de_DE.UTF-8")])).as_deref(),
            Some("de-DE")
        );
        assert_eq!(
            locale_from(env(&[
                ("LANG", "en_US.UTF-8"),
                ("LC_ALL", "sv_SE.UTF-8"),
                ("LC_TIME", "de_DE")
            ]))
            .as_deref(),
            Some("sv-SE")
        );
        assert_eq!(
            locale_from(env(&[("LANG", "en_GB.UTF-8"), ("LC_ALL", "")])).as_deref(),
            Some("en-GB")
        );
        assert_eq!(locale_from(env(&[])), None);
    }

    #[test]
    fn only_a_clock_the_person_set_counts() {
        assert_eq!(hour12_from("'24h'\n"), Some(false));
        assert_eq!(hour12_from("'12h'"), Some(true));
        assert_eq!(hour12_from(""), None);
    }
}
