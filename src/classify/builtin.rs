//! The built-in classifier: local rules, no network. It always answers.
//!
//! Order of evaluation, first match wins:
//! 1. the user's own categories (`category_source = 'user'`), for the domain and each parent
//!    domain, so a category set on `example.com` also covers `docs.example.com`;
//! 2. a bundled map of about 1,000 well-known domains (`data/domains.tsv`, its source stated in
//!    its header), matched on the domain and each parent domain;
//!    and then on the site's name alone, so `kayak.de` is answered like `kayak.com`;
//! 3. subdomain hints: the leftmost label (`mail.`, `docs.`, `shop.`, ...);
//! 4. words in the site's name (`bank`, `news`, `casino`, ...; vocabulary in `data/words.tsv`),
//!    longest word first;
//! 5. ending hints (`.edu`, `.gov`, `.ac.uk`, `.gouv.fr`, `.nhs.uk`, `.bank`, ...);
//! 6. else `other`.
//!
//! Rules 3 to 5 live in [`super::hints`].

use std::collections::HashMap;
use std::sync::LazyLock;

use async_trait::async_trait;

use super::{hints, Classifier, ClassifyError, DomainOutcome, Verdict};
use crate::category::{Category, CategorySource};

/// The bundled domain map, as shipped.
pub const DOMAINS_TSV: &str = include_str!("data/domains.tsv");

static KNOWN: LazyLock<HashMap<&'static str, Category>> = LazyLock::new(|| {
    parse_domain_map(DOMAINS_TSV)
        .expect("src/classify/data/domains.tsv is valid (checked by a unit test)")
        .into_iter()
        .collect()
});

/// The bundled map by site name alone (`kayak` from `kayak.com`), for the same site under
/// another ending (`kayak.de`). Only names of at least [`MIN_BRAND_LEN`] letters, and only names
/// the map gives one category, so `op.gg` says nothing about `op.fi`.
static KNOWN_NAMES: LazyLock<HashMap<&'static str, Category>> = LazyLock::new(|| {
    let mut names: HashMap<&'static str, Option<Category>> = HashMap::new();
    for (domain, category) in KNOWN.iter() {
        let labels: Vec<&str> = domain.split('.').collect();
        if let [name] = *hints::name_labels(&labels) {
            if name.len() >= MIN_BRAND_LEN {
                let entry = names.entry(name).or_insert(Some(*category));
                if *entry != Some(*category) {
                    *entry = None;
                }
            }
        }
    }
    names.into_iter().filter_map(|(n, c)| Some((n, c?))).collect()
});

/// Shorter site names are too likely to be different sites under different endings.
const MIN_BRAND_LEN: usize = 5;

/// Parses a domain map: `domain<TAB>category` lines, `#` comments and blank lines ignored.
pub fn parse_domain_map(text: &str) -> Result<Vec<(&str, Category)>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|(n, l)| {
            let (d, c) = l
                .split_once('\t')
                .ok_or_else(|| format!("line {}: no tab in {l:?}", n + 1))?;
            let c = c.trim().parse().map_err(|e| format!("line {}: {e}", n + 1))?;
            Ok((d.trim(), c))
        })
        .collect()
}

/// Classifies one domain by the bundled rules (without any user categories). Always answers.
pub fn classify_domain(domain: &str) -> Category {
    let domain = domain.trim().trim_end_matches('.').to_ascii_lowercase();
    let domain = domain.strip_prefix("www.").unwrap_or(&domain);
    if let Some(c) = lookup_with_parents(domain, |d| KNOWN.get(d).copied()) {
        return c;
    }
    let labels: Vec<&str> = domain.split('.').collect();
    let names = hints::name_labels(&labels);
    if let Some(c) = names.last().and_then(|n| KNOWN_NAMES.get(n)) {
        return *c;
    }
    hints::subdomain_hint(names)
        .or_else(|| hints::word_hint(names))
        .or_else(|| hints::ending_hint(&labels))
        .unwrap_or(Category::Other)
}

/// The built-in classifier: the bundled rules only.
#[derive(Clone, Copy, Debug, Default)]
pub struct Builtin;

/// The built-in classifier with the user's own categories on top (rule 1): a category the user
/// set for a domain also answers for its subdomains.
#[derive(Clone, Debug, Default)]
pub struct BuiltinWithUser {
    user: HashMap<String, Category>,
}

impl BuiltinWithUser {
    /// The rules with the user's own categories, `domain → category`, on top.
    pub fn new(user: HashMap<String, Category>) -> BuiltinWithUser {
        BuiltinWithUser { user }
    }

    /// Classifies one domain. Always answers.
    pub fn classify_one(&self, domain: &str) -> Category {
        let d = domain.trim().trim_end_matches('.').to_ascii_lowercase();
        let d = d.strip_prefix("www.").unwrap_or(&d);
        lookup_with_parents(d, |p| self.user.get(p).copied()).unwrap_or_else(|| classify_domain(d))
    }
}

/// The first hit of `get` on `domain` and then each parent (`a.b.example.com`, `b.example.com`,
/// `example.com`); bare top-level domains are not looked up.
fn lookup_with_parents(domain: &str, get: impl Fn(&str) -> Option<Category>) -> Option<Category> {
    let mut rest = domain;
    loop {
        if let Some(c) = get(rest) {
            return Some(c);
        }
        match rest.split_once('.') {
            Some((_, parent)) if parent.contains('.') => rest = parent,
            _ => return None,
        }
    }
}

fn answer(domains: &[String], f: impl Fn(&str) -> Category) -> Vec<DomainOutcome> {
    domains
        .iter()
        .map(|d| {
            Ok(Verdict {
                category: f(d),
                source: CategorySource::Builtin,
            })
        })
        .collect()
}

#[async_trait]
impl Classifier for Builtin {
    fn name(&self) -> &str {
        "builtin"
    }

    async fn classify(&self, domains: &[String]) -> Result<Vec<DomainOutcome>, ClassifyError> {
        Ok(answer(domains, classify_domain))
    }
}

#[async_trait]
impl Classifier for BuiltinWithUser {
    fn name(&self) -> &str {
        "builtin"
    }

    async fn classify(&self, domains: &[String]) -> Result<Vec<DomainOutcome>, ClassifyError> {
        Ok(answer(domains, |d| self.classify_one(d)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_map_is_valid_large_and_without_duplicates() {
        let map = parse_domain_map(DOMAINS_TSV).unwrap();
        assert!(map.len() >= 500, "only {} domains", map.len());
        let mut seen = std::collections::HashSet::new();
        for (d, _) in &map {
            assert!(seen.insert(*d), "{d} is listed twice");
            assert_eq!(*d, d.to_ascii_lowercase(), "{d} must be lower case");
            assert!(!d.starts_with("www."), "{d}: domains are stored without www.");
        }
        assert!(DOMAINS_TSV.starts_with("#") && DOMAINS_TSV.contains("Source:"));
    }

    #[test]
    fn rules_apply_in_order() {
        assert_eq!(classify_domain("en.wikipedia.org"), Category::SearchReference);
        assert_eq!(classify_domain("www.ebay.de"), Category::Shopping);
        assert_eq!(classify_domain("mail.example.org"), Category::Communication);
        assert_eq!(classify_domain("bank.example.co.uk"), Category::Finance);
        assert_eq!(classify_domain("mybank.com"), Category::Finance);
        assert_eq!(classify_domain("cs.stanford-like.edu"), Category::Education);
        assert_eq!(classify_domain("bet365.example"), Category::Gambling);
        assert_eq!(classify_domain("alphabet.example"), Category::Other);
        assert_eq!(classify_domain("thedailynewspaper.example"), Category::News);
        assert_eq!(classify_domain("example.gouv.fr"), Category::GovernmentLaw);
        assert_eq!(classify_domain("example.com"), Category::Other);
        // Each rule beats the ones after it.
        assert_eq!(classify_domain("news.example-casino.example"), Category::News);
        assert_eq!(classify_domain("casino-news.example"), Category::Gambling);
        assert_eq!(classify_domain("mybank.gov.example"), Category::Finance);
        assert_eq!(classify_domain("shop.netflix.example"), Category::VideoStreaming);
    }

    #[test]
    fn the_same_site_under_another_ending_is_answered_by_the_map() {
        assert!(!KNOWN.contains_key("netflix.example"));
        assert_eq!(classify_domain("netflix.example"), Category::VideoStreaming);
        assert_eq!(
            classify_domain("www.netflix.co.example"),
            Category::VideoStreaming
        );
        // Short names are not trusted across endings.
        assert!(KNOWN.contains_key("bbc.com"));
        assert_eq!(classify_domain("bbc.example"), Category::Other);
    }

    #[test]
    fn user_categories_come_first_and_cover_subdomains() {
        let user = HashMap::from([("github.com".to_owned(), Category::Productivity)]);
        let b = BuiltinWithUser::new(user);
        assert_eq!(b.classify_one("github.com"), Category::Productivity);
        assert_eq!(b.classify_one("gist.github.com"), Category::Productivity);
        assert_eq!(classify_domain("gist.github.com"), Category::DevTech);
    }
}
