//! The built-in classifier: local rules, no network. It always answers.
//!
//! Order of evaluation, first match wins:
//! 1. the user's own categories (`category_source = 'user'`), for the domain and each parent
//!    domain, so a category set on `example.com` also covers `docs.example.com`;
//! 2. a bundled map of about 1,000 well-known domains (`data/domains.tsv`, its source stated in
//!    its header), matched on the domain and each parent domain;
//! 3. subdomain hints: the leftmost label (`mail.`, `docs.`, `shop.`, ...);
//! 4. words in the domain (`bank`, `news`, `casino`, ...), longest word first;
//! 5. top-level-domain hints (`.edu`, `.gov`, `.gouv.fr`, `.bank`, ...);
//! 6. else `other`.

use std::collections::HashMap;
use std::sync::LazyLock;

use async_trait::async_trait;

use super::{Classifier, ClassifyError, DomainOutcome, Verdict};
use crate::category::{Category, CategorySource};

/// The bundled domain map, as shipped.
pub const DOMAINS_TSV: &str = include_str!("data/domains.tsv");

static KNOWN: LazyLock<HashMap<&'static str, Category>> = LazyLock::new(|| {
    parse_domain_map(DOMAINS_TSV)
        .expect("src/classify/data/domains.tsv is valid (checked by a unit test)")
        .into_iter()
        .collect()
});

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

/// Leftmost labels that say what a site is for.
const SUBDOMAIN_HINTS: &[(&str, Category)] = &[
    ("mail", Category::Communication),
    ("webmail", Category::Communication),
    ("email", Category::Communication),
    ("chat", Category::Communication),
    ("meet", Category::Communication),
    ("docs", Category::DevTech),
    ("developer", Category::DevTech),
    ("developers", Category::DevTech),
    ("dev", Category::DevTech),
    ("api", Category::DevTech),
    ("git", Category::DevTech),
    ("gitlab", Category::DevTech),
    ("status", Category::DevTech),
    ("shop", Category::Shopping),
    ("store", Category::Shopping),
    ("news", Category::News),
    ("maps", Category::TravelMaps),
    ("jobs", Category::Jobs),
    ("careers", Category::Jobs),
    ("career", Category::Jobs),
    ("video", Category::VideoStreaming),
    ("tv", Category::VideoStreaming),
    ("music", Category::MusicAudio),
    ("radio", Category::MusicAudio),
    ("podcast", Category::MusicAudio),
    ("podcasts", Category::MusicAudio),
    ("search", Category::SearchReference),
    ("wiki", Category::SearchReference),
    ("forum", Category::LifestyleHobbies),
    ("forums", Category::LifestyleHobbies),
    ("community", Category::Social),
    ("blog", Category::LifestyleHobbies),
    ("learn", Category::Education),
    ("courses", Category::Education),
    ("library", Category::Education),
    ("banking", Category::Finance),
    ("pay", Category::Finance),
    ("play", Category::Games),
    ("ads", Category::AdsInfra),
    ("ad", Category::AdsInfra),
    ("cdn", Category::AdsInfra),
    ("static", Category::AdsInfra),
    ("analytics", Category::AdsInfra),
    ("tracking", Category::AdsInfra),
    ("pixel", Category::AdsInfra),
    ("calendar", Category::Productivity),
    ("drive", Category::Productivity),
];

/// Words that, found inside the domain's labels, say what it is about. Checked longest first,
/// so `newspaper` wins over `news` and `casino` over `sino`-like accidents. Short words that
/// would match inside unrelated words are in [`TOKEN_WORDS`] instead.
const WORDS: &[(&str, Category)] = &[
    // Gambling before finance and games: `pokerbank` is a casino, not a bank.
    ("casino", Category::Gambling),
    ("poker", Category::Gambling),
    ("betting", Category::Gambling),
    ("sportsbook", Category::Gambling),
    ("lottery", Category::Gambling),
    ("lotto", Category::Gambling),
    ("bingo", Category::Gambling),
    ("slots", Category::Gambling),
    ("jackpot", Category::Gambling),
    ("wager", Category::Gambling),
    ("porn", Category::Adult),
    ("xxx", Category::Adult),
    ("sexcam", Category::Adult),
    ("escort", Category::Adult),
    ("hentai", Category::Adult),
    ("bank", Category::Finance),
    ("finance", Category::Finance),
    ("financial", Category::Finance),
    ("invest", Category::Finance),
    ("credit", Category::Finance),
    ("loan", Category::Finance),
    ("mortgage", Category::Finance),
    ("insurance", Category::Finance),
    ("crypto", Category::Finance),
    ("coin", Category::Finance),
    ("trading", Category::Finance),
    ("stock", Category::Finance),
    ("money", Category::Finance),
    ("wallet", Category::Finance),
    ("tax", Category::Finance),
    ("capital", Category::Finance),
    ("newspaper", Category::News),
    ("news", Category::News),
    ("gazette", Category::News),
    ("tribune", Category::News),
    ("herald", Category::News),
    ("times", Category::News),
    ("journal", Category::News),
    ("daily", Category::News),
    ("post", Category::News),
    ("press", Category::News),
    ("shop", Category::Shopping),
    ("store", Category::Shopping),
    ("mart", Category::Shopping),
    ("deals", Category::Shopping),
    ("outlet", Category::Shopping),
    ("boutique", Category::Shopping),
    ("fashion", Category::Shopping),
    ("buy", Category::Shopping),
    ("market", Category::Shopping),
    ("game", Category::Games),
    ("gaming", Category::Games),
    ("arcade", Category::Games),
    ("esports", Category::Games),
    ("travel", Category::TravelMaps),
    ("hotel", Category::TravelMaps),
    ("flight", Category::TravelMaps),
    ("airline", Category::TravelMaps),
    ("airways", Category::TravelMaps),
    ("airport", Category::TravelMaps),
    ("tours", Category::TravelMaps),
    ("trip", Category::TravelMaps),
    ("booking", Category::TravelMaps),
    ("rail", Category::TravelMaps),
    ("transit", Category::TravelMaps),
    ("maps", Category::TravelMaps),
    ("vacation", Category::TravelMaps),
    ("holiday", Category::TravelMaps),
    ("health", Category::Health),
    ("medical", Category::Health),
    ("medicine", Category::Health),
    ("clinic", Category::Health),
    ("hospital", Category::Health),
    ("pharma", Category::Health),
    ("pharmacy", Category::Health),
    ("doctor", Category::Health),
    ("dental", Category::Health),
    ("fitness", Category::Health),
    ("nutrition", Category::Health),
    ("therapy", Category::Health),
    ("care", Category::Health),
    ("recipe", Category::LifestyleHobbies),
    ("cooking", Category::LifestyleHobbies),
    ("kitchen", Category::LifestyleHobbies),
    ("food", Category::LifestyleHobbies),
    ("garden", Category::LifestyleHobbies),
    ("craft", Category::LifestyleHobbies),
    ("knit", Category::LifestyleHobbies),
    ("photo", Category::LifestyleHobbies),
    ("home", Category::LifestyleHobbies),
    ("style", Category::LifestyleHobbies),
    ("beauty", Category::LifestyleHobbies),
    ("wedding", Category::LifestyleHobbies),
    ("pets", Category::LifestyleHobbies),
    ("dog", Category::LifestyleHobbies),
    ("cat", Category::LifestyleHobbies),
    ("auto", Category::LifestyleHobbies),
    ("motor", Category::LifestyleHobbies),
    ("sport", Category::Sports),
    ("football", Category::Sports),
    ("soccer", Category::Sports),
    ("baseball", Category::Sports),
    ("basketball", Category::Sports),
    ("hockey", Category::Sports),
    ("cricket", Category::Sports),
    ("tennis", Category::Sports),
    ("golf", Category::Sports),
    ("rugby", Category::Sports),
    ("league", Category::Sports),
    ("racing", Category::Sports),
    ("cycling", Category::Sports),
    ("stadium", Category::Sports),
    ("music", Category::MusicAudio),
    ("radio", Category::MusicAudio),
    ("podcast", Category::MusicAudio),
    ("lyrics", Category::MusicAudio),
    ("song", Category::MusicAudio),
    ("audio", Category::MusicAudio),
    ("sound", Category::MusicAudio),
    ("guitar", Category::MusicAudio),
    ("video", Category::VideoStreaming),
    ("movie", Category::VideoStreaming),
    ("film", Category::VideoStreaming),
    ("stream", Category::VideoStreaming),
    ("anime", Category::VideoStreaming),
    ("cinema", Category::VideoStreaming),
    ("series", Category::VideoStreaming),
    ("school", Category::Education),
    ("university", Category::Education),
    ("college", Category::Education),
    ("academy", Category::Education),
    ("learn", Category::Education),
    ("course", Category::Education),
    ("study", Category::Education),
    ("tutor", Category::Education),
    ("edu", Category::Education),
    ("science", Category::Education),
    ("math", Category::Education),
    ("jobs", Category::Jobs),
    ("career", Category::Jobs),
    ("hiring", Category::Jobs),
    ("recruit", Category::Jobs),
    ("resume", Category::Jobs),
    ("talent", Category::Jobs),
    ("staffing", Category::Jobs),
    ("government", Category::GovernmentLaw),
    ("council", Category::GovernmentLaw),
    ("parliament", Category::GovernmentLaw),
    ("ministry", Category::GovernmentLaw),
    ("court", Category::GovernmentLaw),
    ("legal", Category::GovernmentLaw),
    ("lawyer", Category::GovernmentLaw),
    ("attorney", Category::GovernmentLaw),
    ("police", Category::GovernmentLaw),
    ("election", Category::GovernmentLaw),
    ("mail", Category::Communication),
    ("chat", Category::Communication),
    ("messenger", Category::Communication),
    ("social", Category::Social),
    ("forum", Category::Social),
    ("community", Category::Social),
    ("dating", Category::Social),
    ("code", Category::DevTech),
    ("dev", Category::DevTech),
    ("cloud", Category::DevTech),
    ("tech", Category::DevTech),
    ("software", Category::DevTech),
    ("linux", Category::DevTech),
    ("python", Category::DevTech),
    ("javascript", Category::DevTech),
    ("programming", Category::DevTech),
    ("hosting", Category::DevTech),
    ("server", Category::DevTech),
    ("data", Category::DevTech),
    ("docs", Category::Productivity),
    ("office", Category::Productivity),
    ("calendar", Category::Productivity),
    ("task", Category::Productivity),
    ("notes", Category::Productivity),
    ("pdf", Category::Productivity),
    ("wiki", Category::SearchReference),
    ("dictionary", Category::SearchReference),
    ("encyclopedia", Category::SearchReference),
    ("search", Category::SearchReference),
    ("weather", Category::SearchReference),
    ("translate", Category::SearchReference),
    ("ads", Category::AdsInfra),
    ("adserver", Category::AdsInfra),
    ("analytics", Category::AdsInfra),
    ("tracker", Category::AdsInfra),
    ("cdn", Category::AdsInfra),
    ("metrics", Category::AdsInfra),
];

/// Short words that mean something only as a whole token of a label (split at `-` and at the
/// boundaries between letters and digits): `bet365`, `bet-at-home`, but not `alphabet`.
const TOKEN_WORDS: &[(&str, Category)] = &[
    ("bet", Category::Gambling),
    ("bets", Category::Gambling),
    ("tv", Category::VideoStreaming),
    ("fm", Category::MusicAudio),
    ("law", Category::GovernmentLaw),
    ("gov", Category::GovernmentLaw),
    ("job", Category::Jobs),
    ("car", Category::LifestyleHobbies),
    ("cars", Category::LifestyleHobbies),
    ("art", Category::LifestyleHobbies),
    ("fc", Category::Sports),
    ("med", Category::Health),
    ("api", Category::DevTech),
    ("js", Category::DevTech),
    ("ai", Category::DevTech),
];

/// Endings with a clear meaning, longest first within a category is not needed: first match wins.
const TLD_HINTS: &[(&str, Category)] = &[
    ("edu", Category::Education),
    ("ac.uk", Category::Education),
    ("ac.jp", Category::Education),
    ("edu.au", Category::Education),
    ("ac.at", Category::Education),
    ("ac.nz", Category::Education),
    ("ac.in", Category::Education),
    ("ac.kr", Category::Education),
    ("ac.za", Category::Education),
    ("ac.il", Category::Education),
    ("school", Category::Education),
    ("university", Category::Education),
    ("gov", Category::GovernmentLaw),
    ("mil", Category::GovernmentLaw),
    ("gov.uk", Category::GovernmentLaw),
    ("gov.au", Category::GovernmentLaw),
    ("gc.ca", Category::GovernmentLaw),
    ("gouv.fr", Category::GovernmentLaw),
    ("gob.es", Category::GovernmentLaw),
    ("gov.in", Category::GovernmentLaw),
    ("go.jp", Category::GovernmentLaw),
    ("govt.nz", Category::GovernmentLaw),
    ("gv.at", Category::GovernmentLaw),
    ("admin.ch", Category::GovernmentLaw),
    ("europa.eu", Category::GovernmentLaw),
    ("int", Category::GovernmentLaw),
    ("law", Category::GovernmentLaw),
    ("bank", Category::Finance),
    ("insurance", Category::Finance),
    ("shop", Category::Shopping),
    ("store", Category::Shopping),
    ("news", Category::News),
    ("radio", Category::MusicAudio),
    ("fm", Category::MusicAudio),
    ("music", Category::MusicAudio),
    ("game", Category::Games),
    ("games", Category::Games),
    ("casino", Category::Gambling),
    ("bet", Category::Gambling),
    ("poker", Category::Gambling),
    ("jobs", Category::Jobs),
    ("careers", Category::Jobs),
    ("travel", Category::TravelMaps),
    ("health", Category::Health),
    ("hospital", Category::Health),
    ("xxx", Category::Adult),
    ("porn", Category::Adult),
    ("sex", Category::Adult),
    ("adult", Category::Adult),
    ("dev", Category::DevTech),
];

/// Second-level endings under which the registrable name is one label further left
/// (`example.co.uk`), so the words inside `co` are not looked at.
const SECOND_LEVEL: &[&str] = &[
    "co", "com", "org", "net", "ac", "gov", "edu", "gob", "go", "or", "ne", "gv", "govt", "gouv",
];

/// Classifies one domain by the bundled rules (without any user categories). Always answers.
pub fn classify_domain(domain: &str) -> Category {
    let domain = domain.trim().trim_end_matches('.').to_ascii_lowercase();
    let domain = domain.strip_prefix("www.").unwrap_or(&domain);
    if let Some(c) = lookup_with_parents(domain, |d| KNOWN.get(d).copied()) {
        return c;
    }
    let labels: Vec<&str> = domain.split('.').collect();
    let suffix_len = if labels.len() >= 3 && SECOND_LEVEL.contains(&labels[labels.len() - 2]) {
        2
    } else {
        1
    };
    let name_labels = &labels[..labels.len().saturating_sub(suffix_len)];
    if name_labels.len() >= 2 {
        if let Some((_, c)) = SUBDOMAIN_HINTS.iter().find(|(l, _)| *l == name_labels[0]) {
            return *c;
        }
    }
    if let Some(c) = match_words(name_labels) {
        return c;
    }
    TLD_HINTS
        .iter()
        .find(|(suffix, _)| domain.ends_with(&format!(".{suffix}")))
        .map(|(_, c)| *c)
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

fn match_words(labels: &[&str]) -> Option<Category> {
    let tokens: Vec<String> = labels.iter().flat_map(|l| tokens(l)).collect();
    if let Some((_, c)) = TOKEN_WORDS.iter().find(|(w, _)| tokens.iter().any(|t| t == w)) {
        return Some(*c);
    }
    // The longest word found wins: `newspaper` over `news`, `football` over `foot`.
    WORDS
        .iter()
        .filter(|(w, _)| labels.iter().any(|l| l.contains(w)))
        .max_by_key(|(w, _)| w.len())
        .map(|(_, c)| *c)
}

/// Splits a label at `-` and at letter/digit boundaries: `bet365-live` → `bet`, `365`, `live`.
fn tokens(label: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_digit = None;
    for ch in label.chars() {
        if ch == '-' || ch == '_' {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_digit = None;
            continue;
        }
        let digit = ch.is_ascii_digit();
        if prev_digit.is_some_and(|p| p != digit) && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        cur.push(ch);
        prev_digit = Some(digit);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
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
    }

    #[test]
    fn user_categories_come_first_and_cover_subdomains() {
        let user = HashMap::from([("github.com".to_owned(), Category::Productivity)]);
        let b = BuiltinWithUser::new(user);
        assert_eq!(b.classify_one("github.com"), Category::Productivity);
        assert_eq!(b.classify_one("gist.github.com"), Category::Productivity);
        assert_eq!(classify_domain("gist.github.com"), Category::DevTech);
    }

    #[test]
    fn labels_split_into_tokens() {
        assert_eq!(tokens("bet365-live"), ["bet", "365", "live"]);
        assert_eq!(tokens("alphabet"), ["alphabet"]);
    }
}
