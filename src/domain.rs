//! From a URL to the website it belongs to.
//!
//! A website is identified by its domain: the URL's host, lower-cased, in IDNA (punycode) form,
//! without a trailing dot, without the port and without a leading `www.`. Only `http` and `https`
//! URLs are web visits; everything else is refused with an error that names the input.

use url::{Host, Url};

use crate::error::{truncate_chars, Error, Result};

/// Longest URL accepted (bytes). Browsers allow longer ones, but nothing that long is a page a
/// person visited: it is a `data:` payload or tracking garbage.
pub const MAX_URL_LEN: usize = 32 * 1024;

/// The domain that identifies a website, already normalised.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Domain(String);

impl Domain {
    /// The normalised domain.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The domain of an `http`/`https` URL.
    pub fn from_url(input: &str) -> Result<Domain> {
        Domain::from_url_parsed(input).map(|(domain, _)| domain)
    }

    /// [`Domain::from_url`], with the URL as parsed (`input` trimmed), for a caller that needs
    /// it too (an import makes its stored form with [`crate::page_url::stored_form`]) and would
    /// otherwise parse it twice.
    pub fn from_url_parsed(input: &str) -> Result<(Domain, Url)> {
        let bad = |reason: &str| Error::InvalidUrl {
            input: truncate_chars(&crate::page_url::redacted(input), 200),
            reason: reason.to_owned(),
        };
        if input.len() > MAX_URL_LEN {
            return Err(bad(&format!("longer than {MAX_URL_LEN} bytes")));
        }
        let url = Url::parse(input.trim()).map_err(|e| bad(&format!("not a URL ({e})")))?;
        match url.scheme() {
            "http" | "https" => {}
            other => {
                return Err(bad(&format!(
                    "only http and https URLs are recorded, not {other}:"
                )))
            }
        }
        let host = url.host().ok_or_else(|| bad("the URL has no host"))?;
        let name = match host {
            Host::Domain(d) => d.to_owned(),
            Host::Ipv4(ip) => ip.to_string(),
            // `[::ffff:127.0.0.1]` is 127.0.0.1: one host for blocking, exclusions and forgetting.
            Host::Ipv6(ip) => match ip.to_ipv4_mapped() {
                Some(v4) => v4.to_string(),
                None => format!("[{ip}]"),
            },
        };
        if let Host::Domain(d) = host {
            let d = d.strip_suffix('.').unwrap_or(d);
            if d.split('.').any(str::is_empty) {
                return Err(bad("the host has an empty label (`..`)"));
            }
            if d.contains('*') {
                return Err(bad("a host name has no `*`"));
            }
        }
        let domain = normalise(&name).ok_or_else(|| bad("the URL has an empty host"))?;
        Ok((domain, url))
    }

    /// The domain named by `input`, a host name as a person types it (`WWW.Example.com.`,
    /// `münchen.example`, with or without a port), or a whole URL.
    pub fn parse(input: &str) -> Result<Domain> {
        let trimmed = input.trim();
        if trimmed.contains("://") {
            return Domain::from_url(trimmed);
        }
        Domain::parse_typed(input, false)
    }

    /// The domain named by `input`, a bare host name (`WWW.Example.com.`, `münchen.example`,
    /// `[::1]`): no scheme, port, path, user, spaces or wildcards. This is the one normalisation
    /// of typed names (the same as [`Domain::from_url`]'s: IDNA, lower case, no trailing dot, no
    /// leading `www.`); exclusion patterns go through it, so they match domains as stored.
    pub fn parse_host(input: &str) -> Result<Domain> {
        Domain::parse_typed(input, true)
    }

    fn parse_typed(input: &str, host_only: bool) -> Result<Domain> {
        let trimmed = input.trim();
        let bad = |reason: String| Error::InvalidDomain {
            input: truncate_chars(input, 200),
            reason,
        };
        if trimmed.is_empty() {
            return Err(bad("it is empty".into()));
        }
        if trimmed.contains(['/', '?', '#', '@', ' ', '\\']) || trimmed.chars().any(char::is_whitespace) {
            return Err(bad("a domain has no path, query, user or spaces".into()));
        }
        if host_only {
            if trimmed.contains('*') {
                return Err(bad(
                    "a domain has no `*` (only a leading `*.` in an exclusion)".into()
                ));
            }
            if trimmed.contains(':') && !trimmed.starts_with('[') {
                return Err(bad("a domain has no scheme or port".into()));
            }
        }
        Domain::from_url(&format!("http://{trimmed}/")).map_err(|e| match e {
            Error::InvalidUrl { reason, .. } => bad(reason),
            other => other,
        })
    }
}

fn normalise(host: &str) -> Option<Domain> {
    let host = host.trim_end_matches('.');
    let host = host.strip_prefix("www.").unwrap_or(host);
    if host.is_empty() {
        return None;
    }
    Some(Domain(host.to_ascii_lowercase()))
}

impl std::fmt::Display for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A stored domain as people read it: internationalised labels in Unicode (`münchen.example` for
/// `xn--mnchen-3ya.example`). A domain without such labels, or one that does not decode, is
/// returned as stored.
pub fn unicode_form(domain: &str) -> std::borrow::Cow<'_, str> {
    if !domain.contains("xn--") {
        return std::borrow::Cow::Borrowed(domain);
    }
    match idna::domain_to_unicode(domain) {
        (unicode, Ok(())) if unicode != domain => std::borrow::Cow::Owned(unicode),
        _ => std::borrow::Cow::Borrowed(domain),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(url: &str) -> String {
        Domain::from_url(url).unwrap().0
    }

    #[test]
    fn host_is_normalised() {
        assert_eq!(d("https://WWW.Example.COM:8080/a?b#c"), "example.com");
        assert_eq!(d("http://news.example.com./x"), "news.example.com");
        assert_eq!(d("https://münchen.example/"), "xn--mnchen-3ya.example");
        assert_eq!(d("http://xn--mnchen-3ya.example/"), "xn--mnchen-3ya.example");
        assert_eq!(d("http://127.0.0.1:8766/"), "127.0.0.1");
        assert_eq!(d("http://[::1]:80/"), "[::1]");
        assert_eq!(d("http://www.www.example.com/"), "www.example.com");
        assert_eq!(d("http://user:pw@example.org/"), "example.org");
    }

    #[test]
    fn non_web_urls_are_rejected_naming_the_input() {
        for bad in [
            "ftp://example.com/",
            "chrome://settings",
            "about:blank",
            "not a url",
            "file:///etc/passwd",
            "http://",
        ] {
            let err = Domain::from_url(bad).unwrap_err().to_string();
            assert!(err.contains(bad), "{err} should name {bad}");
        }
        let huge = format!("https://example.com/{}", "a".repeat(MAX_URL_LEN));
        assert!(Domain::from_url(&huge).is_err());
    }

    #[test]
    fn typed_domains_parse_like_hosts() {
        assert_eq!(
            Domain::parse(" WWW.Example.com. ").unwrap().as_str(),
            "example.com"
        );
        assert_eq!(
            Domain::parse("https://shop.example.org/x").unwrap().as_str(),
            "shop.example.org"
        );
        assert!(Domain::parse("").is_err());
        assert!(Domain::parse("example.com/path").is_err());
        assert!(Domain::parse("exa mple.com").is_err());
    }

    #[test]
    fn bare_hosts_are_normalised_like_urls() {
        for (typed, stored) in [
            ("bücher.example", "xn--bcher-kva.example"),
            ("BÜCHER.Example.", "xn--bcher-kva.example"),
            ("www.münchen-bank.example", "xn--mnchen-bank-thb.example"),
            ("xn--bcher-kva.example", "xn--bcher-kva.example"),
            ("[::1]", "[::1]"),
        ] {
            assert_eq!(Domain::parse_host(typed).unwrap().as_str(), stored, "{typed}");
            let url = Domain::from_url(&format!("https://{typed}/x")).unwrap();
            assert_eq!(url.as_str(), stored, "the same as a URL's host");
        }
        for bad in [
            "",
            "a*.example",
            "x.example:80",
            "http://x.example",
            "x.example/p",
            "a b",
            "a\tb",
            "xn--a.example",
        ] {
            assert!(Domain::parse_host(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            Domain::parse("x.example:80").unwrap().as_str(),
            "x.example",
            "parse still takes a port"
        );
    }

    #[test]
    fn internationalised_domains_read_in_unicode() {
        assert_eq!(unicode_form("xn--mnchen-3ya.example"), "münchen.example");
        assert_eq!(unicode_form("shop.xn--bcher-kva.example"), "shop.bücher.example");
        assert_eq!(unicode_form("example.com"), "example.com");
        // Not valid punycode: shown as stored rather than as something it is not.
        assert_eq!(unicode_form("xn--a.example"), "xn--a.example");
    }
}
