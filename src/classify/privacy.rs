//! The privacy router: decides which hosts may be sent to a remote provider.
//!
//! [`PrivacyRouter`] wraps a remote classifier. Hosts that name something on the user's own
//! machine or network (`localhost`, IP addresses, single-label names, `.local`, `.internal`,
//! `.lan`, `.localdomain`, `.home.arpa`) and hosts on the user's exclusion list (exact domains and
//! `*.suffix` patterns) are classified by the local classifier (the built-in rules) instead and
//! never leave the machine. Only host names are ever passed on: the classifier trait carries no
//! path, query or title.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Arc;

use async_trait::async_trait;

use super::{Classifier, ClassifyError, DomainOutcome};
use crate::domain::Domain;
use crate::error::{truncate_chars, Error, Result};

/// Suffixes of names that only mean something inside a private network.
const PRIVATE_SUFFIXES: &[&str] = &[
    "local",
    "internal",
    "lan",
    "localdomain",
    "home.arpa",
    "localhost",
];

/// True if `host` names the user's machine or private network: it must never be sent out.
pub fn is_private_host(host: &str) -> bool {
    let h = host.trim().trim_end_matches('.').to_ascii_lowercase();
    let bare = h.trim_start_matches('[').trim_end_matches(']');
    if bare.parse::<IpAddr>().is_ok() {
        return true;
    }
    if h == "localhost" || !h.contains('.') {
        return true;
    }
    PRIVATE_SUFFIXES
        .iter()
        .any(|s| h == *s || h.ends_with(&format!(".{s}")))
}

/// The user's exclusion list: exact domains (`bank.example`) and suffix patterns
/// (`*.corp.example`, which matches `corp.example` itself and every name under it).
///
/// Patterns are normalised exactly like the domains they are matched against, by
/// [`Domain::parse_host`] (IDNA, lower case, no trailing dot, no leading `www.`), so
/// `*.münchen-bank.example` matches the stored `online.xn--mnchen-bank-thb.example`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exclusions {
    exact: HashSet<String>,
    suffixes: Vec<String>,
}

impl Exclusions {
    /// Parses `patterns`; a pattern that is not a host name, or a `*.` followed by one, is
    /// refused with an error naming it.
    pub fn parse<S: AsRef<str>>(patterns: &[S]) -> Result<Exclusions> {
        let mut out = Exclusions::default();
        for p in patterns {
            let (suffix, name) = normalise_pattern(p.as_ref())?;
            if suffix {
                out.suffixes.push(name);
            } else {
                out.exact.insert(name);
            }
        }
        Ok(out)
    }

    /// True if `host` is excluded: `host` as given (a stored domain) or normalised like a domain
    /// (a host as typed). Both are tried because normalising a stored domain again can change it
    /// (`www.www.x` is stored as `www.x`, which would become `x`).
    pub fn matches(&self, host: &str) -> bool {
        let given = host.trim().trim_end_matches('.').to_ascii_lowercase();
        let normal = Domain::parse_host(host).map(|d| d.as_str().to_owned());
        std::iter::once(given)
            .chain(normal.ok())
            .any(|h| self.matches_normal(&h))
    }

    fn matches_normal(&self, h: &str) -> bool {
        self.exact.contains(h)
            || self
                .suffixes
                .iter()
                .any(|s| h == s || h.ends_with(&format!(".{s}")))
    }

    /// True if there are no exclusions.
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.suffixes.is_empty()
    }
}

/// One exclusion pattern in the form it is matched in: whether it is a `*.` suffix pattern, and
/// its host normalised like a domain. Refused, naming the pattern, if it is not a host pattern.
pub fn normalise_pattern(raw: &str) -> Result<(bool, String)> {
    let trimmed = raw.trim();
    let (suffix, host) = match trimmed.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, trimmed),
    };
    let domain = Domain::parse_host(host).map_err(|e| {
        let why = match e {
            Error::InvalidDomain { reason, .. } | Error::InvalidUrl { reason, .. } => reason,
            other => other.to_string(),
        };
        Error::InvalidConfig(format!(
            "exclusion {:?} is not a host pattern ({why}): write a domain (`bank.example`) or a suffix pattern (`*.corp.example`)",
            truncate_chars(raw, 200)
        ))
    })?;
    Ok((suffix, domain.as_str().to_owned()))
}

/// Sends public hosts to `remote` and everything else to `local`.
pub struct PrivacyRouter {
    remote: Arc<dyn Classifier>,
    local: Arc<dyn Classifier>,
    exclusions: Exclusions,
}

impl PrivacyRouter {
    /// Routes between `remote` and `local` with the user's `exclusions`.
    pub fn new(remote: Arc<dyn Classifier>, local: Arc<dyn Classifier>, exclusions: Exclusions) -> Self {
        PrivacyRouter {
            remote,
            local,
            exclusions,
        }
    }

    /// True if `host` may be sent to the remote provider.
    pub fn may_send(&self, host: &str) -> bool {
        !is_private_host(host) && !self.exclusions.matches(host)
    }
}

#[async_trait]
impl Classifier for PrivacyRouter {
    fn name(&self) -> &str {
        self.remote.name()
    }

    async fn classify(&self, domains: &[String]) -> Result<Vec<DomainOutcome>, ClassifyError> {
        let (remote_idx, local_idx): (Vec<usize>, Vec<usize>) =
            (0..domains.len()).partition(|&i| self.may_send(&domains[i]));
        let pick = |idx: &[usize]| idx.iter().map(|&i| domains[i].clone()).collect::<Vec<_>>();
        let mut out: Vec<Option<DomainOutcome>> = vec![None; domains.len()];
        for (idx, classifier) in [(&local_idx, &self.local), (&remote_idx, &self.remote)] {
            if idx.is_empty() {
                continue;
            }
            let asked = pick(idx);
            let answers = classifier.classify(&asked).await?;
            if answers.len() != asked.len() {
                return Err(ClassifyError::Transient(format!(
                    "{} answered {} results for {} domains",
                    classifier.name(),
                    answers.len(),
                    asked.len()
                )));
            }
            for (&i, a) in idx.iter().zip(answers) {
                out[i] = Some(a);
            }
        }
        Ok(out
            .into_iter()
            .map(|o| o.unwrap_or_else(|| Err("no classifier answered".into())))
            .collect())
    }

    fn asks_remote(&self, domain: &str) -> bool {
        self.may_send(domain) && self.remote.asks_remote(domain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_hosts_are_recognised() {
        for h in [
            "localhost",
            "127.0.0.1",
            "[::1]",
            "::1",
            "10.1.2.3",
            "router",
            "nas.local",
            "git.internal",
            "printer.lan",
            "app.localhost",
            "box.home.arpa",
        ] {
            assert!(is_private_host(h), "{h}");
        }
        for h in [
            "example.com",
            "localhost.example.com",
            "internal.example.org",
            "lan.party",
        ] {
            assert!(!is_private_host(h), "{h}");
        }
    }

    #[test]
    fn exclusions_match_exact_and_suffix() {
        let ex = Exclusions::parse(&["Bank.Example", "*.corp.example", "www.clinic.example"]).unwrap();
        assert!(ex.matches("bank.example"));
        assert!(!ex.matches("online.bank.example"));
        assert!(ex.matches("corp.example"));
        assert!(ex.matches("wiki.eu.corp.example"));
        assert!(!ex.matches("notcorp.example"));
        assert!(ex.matches("clinic.example"));
        assert!(Exclusions::parse(&["a*.example"]).is_err());
        assert!(Exclusions::parse(&["https://x.example/"]).is_err());
    }

    #[test]
    fn exclusions_are_normalised_like_domains() {
        let ex =
            Exclusions::parse(&["bücher.example", "*.MÜNCHEN-bank.example.", "www.Straße.example"]).unwrap();
        for stored in [
            "xn--bcher-kva.example",
            "xn--mnchen-bank-thb.example",
            "online.xn--mnchen-bank-thb.example",
            "xn--strae-oqa.example",
        ] {
            assert!(ex.matches(stored), "{stored}");
            let d = Domain::parse_host(stored).unwrap();
            assert_eq!(d.as_str(), stored, "already the stored form");
        }
        assert!(
            ex.matches("Online.München-Bank.example"),
            "a host is normalised too"
        );
        assert!(!ex.matches("xn--bcher-kva.example.org"));
        // Found by fuzz/exclusions: `www.www.bank.example` is stored as `www.bank.example`, and the
        // pattern must still match it (normalising the stored domain again would give `bank.example`).
        let ex = Exclusions::parse(&["www.www.bank.example"]).unwrap();
        assert!(ex.matches(
            Domain::from_url("https://www.www.bank.example/")
                .unwrap()
                .as_str()
        ));
        for bad in [
            "",
            "*.",
            "*",
            "a*.example",
            "*.*.example",
            "x.example:443",
            "bank .example",
            "x.example/",
            "@x",
        ] {
            let e = Exclusions::parse(&[bad]).unwrap_err().to_string();
            assert!(
                e.contains("is not a host pattern") && e.contains(&format!("{bad:?}")),
                "{bad:?}: {e}"
            );
        }
    }
}
