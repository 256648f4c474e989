//! A visited page's URL as Sitetrail stores it: the one form every write path (the CLI's
//! `visit`, the app, imports, the browser extension's host, sync) writes, made in one place.
//!
//! The form is the `url` crate's serialisation (the WHATWG URL standard, what browsers store in
//! their own history): control characters, spaces and non-ASCII characters in the path, query and
//! fragment percent-encoded (so `ESC ] 0;…BEL` is `%1B]0;…%07`), tabs and newlines removed, the
//! scheme and host in lower case, the host in punycode, a default port dropped. A user name and
//! password (`https://user:pw@host/`) are dropped, as browsers drop them from their history:
//! they are secrets, and were never part of the page. Normalising is idempotent, so a URL already
//! stored, or read back from an export, stays as it is.

use url::Url;

use crate::error::{truncate_chars, Error, Result};

/// The stored form of `raw`, a page's URL (see the module doc). A text that is not a URL is
/// refused as [`crate::domain::Domain::from_url`] refuses it, without its credentials.
pub fn normalise(raw: &str) -> Result<String> {
    let url = Url::parse(raw.trim()).map_err(|e| Error::InvalidUrl {
        input: truncate_chars(&redacted(raw), 200),
        reason: format!("not a URL ({e})"),
    })?;
    Ok(stored_form(url))
}

/// The stored form of a URL already parsed from its text trimmed (`Url::parse(raw.trim())`):
/// what [`normalise`] gives for that text.
pub fn stored_form(mut url: Url) -> String {
    // Both fail only for a URL that cannot hold credentials (no host): then it has none.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.into()
}

/// A visit's URL as it is stored, and as a forgotten visit's key hashes it
/// ([`crate::forget::visit_key`]): every write path and every check goes through this one form.
/// A text that is no URL (it could not be stored) is kept as given, trimmed.
pub fn stored_url(url: &str) -> std::borrow::Cow<'_, str> {
    match normalise(url) {
        Ok(u) if u == url => std::borrow::Cow::Borrowed(url),
        Ok(u) => std::borrow::Cow::Owned(u),
        Err(_) => std::borrow::Cow::Borrowed(url.trim()),
    }
}

/// `raw` with any user name and password shown as `***`: for messages about a URL that was
/// refused, which must not repeat a secret.
pub fn redacted(raw: &str) -> String {
    display_url(raw)
}

/// `url` as it may be shown or logged: user name and password replaced by `***`. Works on text
/// that is not a valid URL too (everything between `://` and the last `@` of the authority).
pub fn display_url(url: &str) -> String {
    if let Ok(mut u) = Url::parse(url) {
        if u.username().is_empty() && u.password().is_none() {
            return url.to_owned();
        }
        if u.set_username("***").is_ok() && u.set_password(None).is_ok() {
            return u.to_string();
        }
    }
    let Some(start) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let authority_end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| start + i);
    match url[start..authority_end].rfind('@') {
        Some(at) => format!("{}***{}", &url[..start], &url[start + at..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_percent_encoded_and_credentials_dropped() {
        assert_eq!(
            normalise("https://evil.example/\x1b]0;owned\x07\x1b[2J\nforged\r\u{9b}x").unwrap(),
            "https://evil.example/%1B]0;owned%07%1B[2Jforged%C2%9Bx"
        );
        assert_eq!(
            normalise("https://a.example/\u{202e}fdp.exe?q=\u{2066}#\u{7f}").unwrap(),
            "https://a.example/%E2%80%AEfdp.exe?q=%E2%81%A6#%7F"
        );
        assert_eq!(
            normalise(" https://user:pw@A.Example:443/x ").unwrap(),
            "https://a.example/x"
        );
        assert_eq!(normalise("http://user@b.example/").unwrap(), "http://b.example/");
        assert_eq!(
            normalise("https://münchen.example").unwrap(),
            "https://xn--mnchen-3ya.example/"
        );
        for stored in [
            "https://a.example/x%20y?b=%1B#c",
            "https://xn--mnchen-3ya.example/",
        ] {
            assert_eq!(normalise(stored).unwrap(), stored, "idempotent");
        }
        let refused = normalise("https://user:secret@[::1/").unwrap_err().to_string();
        assert!(!refused.contains("secret"), "{refused}");
    }
}
