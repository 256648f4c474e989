//! The built-in classifier: local rules, no network.
//!
//! Order of evaluation: a table of well-known domains (matched on the domain and each parent
//! domain), subdomain hints (`mail.`, `shop.`, ...), words inside the domain (`bank`, `news`, ...),
//! top-level-domain hints (`.edu`, `.gov`), else `other`. It always answers.

use async_trait::async_trait;

use super::{Classifier, ClassifyError, DomainOutcome, Verdict};
use crate::category::{Category, CategorySource};

/// Well-known domains. Matched against the domain and each of its parents.
const KNOWN: &[(&str, Category)] = &[
    ("google.com", Category::SearchReference),
    ("bing.com", Category::SearchReference),
    ("duckduckgo.com", Category::SearchReference),
    ("wikipedia.org", Category::SearchReference),
    ("facebook.com", Category::Social),
    ("instagram.com", Category::Social),
    ("reddit.com", Category::Social),
    ("x.com", Category::Social),
    ("twitter.com", Category::Social),
    ("linkedin.com", Category::Social),
    ("gmail.com", Category::Communication),
    ("outlook.com", Category::Communication),
    ("slack.com", Category::Communication),
    ("youtube.com", Category::VideoStreaming),
    ("netflix.com", Category::VideoStreaming),
    ("twitch.tv", Category::VideoStreaming),
    ("spotify.com", Category::MusicAudio),
    ("amazon.com", Category::Shopping),
    ("ebay.com", Category::Shopping),
    ("github.com", Category::DevTech),
    ("stackoverflow.com", Category::DevTech),
    ("bbc.co.uk", Category::News),
    ("nytimes.com", Category::News),
    ("paypal.com", Category::Finance),
];

/// Leftmost labels that say what a site is for.
const SUBDOMAIN_HINTS: &[(&str, Category)] = &[
    ("mail", Category::Communication),
    ("webmail", Category::Communication),
    ("chat", Category::Communication),
    ("docs", Category::DevTech),
    ("developer", Category::DevTech),
    ("api", Category::DevTech),
    ("shop", Category::Shopping),
    ("store", Category::Shopping),
    ("news", Category::News),
    ("maps", Category::TravelMaps),
    ("jobs", Category::Jobs),
    ("careers", Category::Jobs),
    ("video", Category::VideoStreaming),
    ("music", Category::MusicAudio),
    ("search", Category::SearchReference),
    ("forum", Category::LifestyleHobbies),
    ("blog", Category::LifestyleHobbies),
    ("ads", Category::AdsInfra),
    ("cdn", Category::AdsInfra),
];

/// Words that, found anywhere in the domain, say what it is about.
const WORDS: &[(&str, Category)] = &[
    ("casino", Category::Gambling),
    ("poker", Category::Gambling),
    ("bet", Category::Gambling),
    ("bank", Category::Finance),
    ("news", Category::News),
    ("shop", Category::Shopping),
    ("game", Category::Games),
    ("travel", Category::TravelMaps),
    ("health", Category::Health),
    ("recipe", Category::LifestyleHobbies),
];

/// Top-level domains (and second-level ones like `gov.uk`) with a clear meaning.
const TLD_HINTS: &[(&str, Category)] = &[
    ("edu", Category::Education),
    ("gov", Category::GovernmentLaw),
    ("mil", Category::GovernmentLaw),
    ("gov.uk", Category::GovernmentLaw),
    ("ac.uk", Category::Education),
    ("tv", Category::VideoStreaming),
];

/// Classifies one domain by the rules. Always answers.
pub fn classify_domain(domain: &str) -> Category {
    let domain = domain.trim_end_matches('.').to_ascii_lowercase();
    // The domain itself, then each parent: `a.b.example.com`, `b.example.com`, `example.com`.
    let mut rest = domain.as_str();
    loop {
        if let Some((_, c)) = KNOWN.iter().find(|(d, _)| *d == rest) {
            return *c;
        }
        match rest.split_once('.') {
            Some((_, parent)) if parent.contains('.') => rest = parent,
            _ => break,
        }
    }
    let labels: Vec<&str> = domain.split('.').collect();
    if labels.len() > 2 {
        if let Some((_, c)) = SUBDOMAIN_HINTS.iter().find(|(l, _)| *l == labels[0]) {
            return *c;
        }
    }
    let registrable = labels.iter().rev().skip(1).copied().collect::<Vec<_>>().join(".");
    if let Some((_, c)) = WORDS.iter().find(|(w, _)| registrable.contains(w)) {
        return *c;
    }
    for (suffix, c) in TLD_HINTS {
        if domain.ends_with(&format!(".{suffix}")) {
            return *c;
        }
    }
    Category::Other
}

/// The built-in classifier.
#[derive(Clone, Debug, Default)]
pub struct Builtin;

#[async_trait]
impl Classifier for Builtin {
    fn name(&self) -> &str {
        "builtin"
    }

    async fn classify(&self, domains: &[String]) -> Result<Vec<DomainOutcome>, ClassifyError> {
        Ok(domains
            .iter()
            .map(|d| {
                Ok(Verdict {
                    category: classify_domain(d),
                    source: CategorySource::Builtin,
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_apply_in_order() {
        assert_eq!(classify_domain("en.wikipedia.org"), Category::SearchReference);
        assert_eq!(classify_domain("mail.example.org"), Category::Communication);
        assert_eq!(classify_domain("bank.example.co.uk"), Category::Finance);
        assert_eq!(classify_domain("mybank.com"), Category::Finance);
        assert_eq!(classify_domain("cs.stanford.edu"), Category::Education);
        assert_eq!(classify_domain("example.com"), Category::Other);
    }
}
