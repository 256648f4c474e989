//! The built-in classifier's fallback rules, after the user's categories and the bundled map:
//! subdomain hints, words in the domain's name, and endings (top-level and second-level
//! domains). Each rule answers only when it is fairly sure: a wrong category is worse than
//! `other`, so short or ambiguous words only count as whole tokens, and words that contain a
//! misleading one (`alphabet`, `essex`) are masked out first.
//!
//! The vocabulary's word rules live in [`super::vocabulary`] (re-exported here); the rules were
//! tuned on `benches/data/dev_domains.tsv` and measured on a separate list (see
//! docs/BENCHMARKS.md).

use crate::category::Category;

pub use super::vocabulary::{parse_words, tokens, word_hint, Place, WordRule, WORDS_TSV};

/// Leftmost labels that say what a site is for (`mail.example.org`).
const SUBDOMAIN_HINTS: &[(&str, Category)] = &[
    ("mail", Category::Communication),
    ("webmail", Category::Communication),
    ("email", Category::Communication),
    ("owa", Category::Communication),
    ("chat", Category::Communication),
    ("meet", Category::Communication),
    ("docs", Category::DevTech),
    ("developer", Category::DevTech),
    ("developers", Category::DevTech),
    ("dev", Category::DevTech),
    ("api", Category::DevTech),
    ("sdk", Category::DevTech),
    ("git", Category::DevTech),
    ("gitlab", Category::DevTech),
    ("status", Category::DevTech),
    ("shop", Category::Shopping),
    ("store", Category::Shopping),
    ("checkout", Category::Shopping),
    ("news", Category::News),
    ("maps", Category::TravelMaps),
    ("map", Category::TravelMaps),
    ("jobs", Category::Jobs),
    ("careers", Category::Jobs),
    ("career", Category::Jobs),
    ("karriere", Category::Jobs),
    ("recruiting", Category::Jobs),
    ("video", Category::VideoStreaming),
    ("tv", Category::VideoStreaming),
    ("music", Category::MusicAudio),
    ("radio", Category::MusicAudio),
    ("podcast", Category::MusicAudio),
    ("podcasts", Category::MusicAudio),
    ("search", Category::SearchReference),
    ("wiki", Category::SearchReference),
    ("forum", Category::Social),
    ("forums", Category::Social),
    ("community", Category::Social),
    ("learn", Category::Education),
    ("courses", Category::Education),
    ("elearning", Category::Education),
    ("lms", Category::Education),
    ("moodle", Category::Education),
    ("ilias", Category::Education),
    ("library", Category::Education),
    ("banking", Category::Finance),
    ("onlinebanking", Category::Finance),
    ("ebanking", Category::Finance),
    ("netbank", Category::Finance),
    ("pay", Category::Finance),
    ("play", Category::Games),
    ("ads", Category::AdsInfra),
    ("ad", Category::AdsInfra),
    ("adserver", Category::AdsInfra),
    ("cdn", Category::AdsInfra),
    ("static", Category::AdsInfra),
    ("assets", Category::AdsInfra),
    ("img", Category::AdsInfra),
    ("images", Category::AdsInfra),
    ("fonts", Category::AdsInfra),
    ("analytics", Category::AdsInfra),
    ("tracking", Category::AdsInfra),
    ("track", Category::AdsInfra),
    ("pixel", Category::AdsInfra),
    ("metrics", Category::AdsInfra),
    ("stats", Category::AdsInfra),
    ("telemetry", Category::AdsInfra),
    ("consent", Category::AdsInfra),
    ("calendar", Category::Productivity),
    ("drive", Category::Productivity),
];

/// Whole endings with a clear meaning; checked before the per-label rules below.
const ENDING_HINTS: &[(&str, Category)] = &[
    ("nhs.uk", Category::Health),
    ("police.uk", Category::GovernmentLaw),
    ("bund.de", Category::GovernmentLaw),
    ("admin.ch", Category::GovernmentLaw),
    ("gv.at", Category::GovernmentLaw),
    ("gc.ca", Category::GovernmentLaw),
    ("europa.eu", Category::GovernmentLaw),
    // Zones only public bodies get: Japan's local governments, Brazil's legislatures and courts.
    ("lg.jp", Category::GovernmentLaw),
    ("leg.br", Category::GovernmentLaw),
    ("jus.br", Category::GovernmentLaw),
];

/// Second-level labels under a two-letter country code (`ac.uk`, `gob.es`, `go.jp`).
const COUNTRY_SECOND_LEVEL: &[(&str, Category)] = &[
    ("ac", Category::Education),
    ("edu", Category::Education),
    ("sch", Category::Education),
    ("school", Category::Education),
    ("k12", Category::Education),
    ("gov", Category::GovernmentLaw),
    ("gob", Category::GovernmentLaw),
    ("gouv", Category::GovernmentLaw),
    ("go", Category::GovernmentLaw),
    ("govt", Category::GovernmentLaw),
    ("gv", Category::GovernmentLaw),
    ("mil", Category::GovernmentLaw),
    ("gc", Category::GovernmentLaw),
];

/// Top-level domains with a clear meaning.
const TLD_HINTS: &[(&str, Category)] = &[
    ("edu", Category::Education),
    ("school", Category::Education),
    ("university", Category::Education),
    ("college", Category::Education),
    ("academy", Category::Education),
    ("courses", Category::Education),
    ("education", Category::Education),
    ("gov", Category::GovernmentLaw),
    ("mil", Category::GovernmentLaw),
    ("int", Category::GovernmentLaw),
    ("law", Category::GovernmentLaw),
    ("legal", Category::GovernmentLaw),
    ("lawyer", Category::GovernmentLaw),
    ("attorney", Category::GovernmentLaw),
    ("bank", Category::Finance),
    ("insurance", Category::Finance),
    ("finance", Category::Finance),
    ("money", Category::Finance),
    ("capital", Category::Finance),
    ("fund", Category::Finance),
    ("loans", Category::Finance),
    ("credit", Category::Finance),
    ("creditcard", Category::Finance),
    ("investments", Category::Finance),
    ("tax", Category::Finance),
    ("shop", Category::Shopping),
    ("store", Category::Shopping),
    ("shopping", Category::Shopping),
    ("boutique", Category::Shopping),
    ("fashion", Category::Shopping),
    ("clothing", Category::Shopping),
    ("shoes", Category::Shopping),
    ("sale", Category::Shopping),
    ("deals", Category::Shopping),
    ("news", Category::News),
    ("press", Category::News),
    ("radio", Category::MusicAudio),
    ("fm", Category::MusicAudio),
    ("music", Category::MusicAudio),
    ("band", Category::MusicAudio),
    ("audio", Category::MusicAudio),
    ("podcast", Category::MusicAudio),
    ("game", Category::Games),
    ("games", Category::Games),
    ("gg", Category::Games),
    ("casino", Category::Gambling),
    ("bet", Category::Gambling),
    ("poker", Category::Gambling),
    ("bingo", Category::Gambling),
    ("lotto", Category::Gambling),
    ("jobs", Category::Jobs),
    ("careers", Category::Jobs),
    ("travel", Category::TravelMaps),
    ("flights", Category::TravelMaps),
    ("hotel", Category::TravelMaps),
    ("hotels", Category::TravelMaps),
    ("tours", Category::TravelMaps),
    ("cruises", Category::TravelMaps),
    ("holiday", Category::TravelMaps),
    ("vacations", Category::TravelMaps),
    ("health", Category::Health),
    ("hospital", Category::Health),
    ("clinic", Category::Health),
    ("dental", Category::Health),
    ("doctor", Category::Health),
    ("pharmacy", Category::Health),
    ("healthcare", Category::Health),
    ("xxx", Category::Adult),
    ("porn", Category::Adult),
    ("sex", Category::Adult),
    ("adult", Category::Adult),
    ("sexy", Category::Adult),
    ("sport", Category::Sports),
    ("football", Category::Sports),
    ("soccer", Category::Sports),
    ("golf", Category::Sports),
    ("rugby", Category::Sports),
    ("tennis", Category::Sports),
    ("hockey", Category::Sports),
    ("basketball", Category::Sports),
    ("racing", Category::Sports),
    ("movie", Category::VideoStreaming),
    ("film", Category::VideoStreaming),
    ("tv", Category::VideoStreaming),
    ("recipes", Category::LifestyleHobbies),
    ("cooking", Category::LifestyleHobbies),
    ("garden", Category::LifestyleHobbies),
    ("photography", Category::LifestyleHobbies),
    ("pet", Category::LifestyleHobbies),
    ("pets", Category::LifestyleHobbies),
    ("cars", Category::LifestyleHobbies),
    ("fishing", Category::LifestyleHobbies),
    ("wiki", Category::SearchReference),
    ("dev", Category::DevTech),
    ("tech", Category::DevTech),
    ("software", Category::DevTech),
    ("codes", Category::DevTech),
    ("hosting", Category::DevTech),
    ("social", Category::Social),
    ("chat", Category::Communication),
    ("email", Category::Communication),
];

/// Second-level labels under a country code that are not part of the site's name
/// (`example.co.uk`, `example.com.au`): the words inside them are not looked at.
const SECOND_LEVEL: &[&str] = &[
    "co", "com", "org", "net", "ac", "gov", "edu", "gob", "go", "or", "ne", "gv", "govt", "gouv", "sch",
    "mil", "nhs", "police", "ltd", "plc", "nic", "gc", "k12",
];

/// The labels of a domain split into the site's name and its public ending, roughly: the last
/// label, or the last two when the second-to-last is a known second level (`co.uk`).
pub fn name_labels<'a, 'b>(labels: &'b [&'a str]) -> &'b [&'a str] {
    let n = labels.len();
    let suffix_len = if n >= 3 && labels[n - 1].len() == 2 && SECOND_LEVEL.contains(&labels[n - 2]) {
        2
    } else {
        1
    };
    &labels[..n.saturating_sub(suffix_len)]
}

/// Rule 3: the leftmost label of a domain with a subdomain (`mail.example.org`).
pub fn subdomain_hint(names: &[&str]) -> Option<Category> {
    if names.len() < 2 {
        return None;
    }
    SUBDOMAIN_HINTS
        .iter()
        .find(|(l, _)| *l == names[0])
        .map(|(_, c)| *c)
}

/// Rule 5: the domain's ending (`.edu`, `.ac.uk`, `.gouv.fr`, `.bank`, `.nhs.uk`).
pub fn ending_hint(labels: &[&str]) -> Option<Category> {
    ending(labels).map(|e| e.category)
}

/// What a domain's ending says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ending {
    /// The category.
    pub category: Category,
    /// True for endings only a vetted kind of body may register (government, university,
    /// school and military zones, `.bank`, `.insurance`): the answer is then certain. Other
    /// meaningful endings (`.shop`, `.tv`, `.gg`, ...) are open to anyone and only a hint.
    pub restricted: bool,
}

/// Top-level domains whose registrations are vetted (see [`Ending::restricted`]).
const RESTRICTED_TLDS: &[&str] = &["edu", "gov", "mil", "int", "bank", "insurance"];

/// True if the domain of `labels` ends in `.` + `ending` (one more label at least before it).
fn ends_with_labels(labels: &[&str], ending: &str) -> bool {
    let mut ours = labels.iter().rev();
    ending.rsplit('.').all(|e| ours.next() == Some(&e)) && ours.next().is_some()
}

/// Rule 5 with how much the ending can be trusted.
pub fn ending(labels: &[&str]) -> Option<Ending> {
    if let Some((_, c)) = ENDING_HINTS.iter().find(|(e, _)| ends_with_labels(labels, e)) {
        // Every whole ending listed is a government or health-service zone.
        return Some(Ending {
            category: *c,
            restricted: true,
        });
    }
    let n = labels.len();
    if n >= 3 && labels[n - 1].len() == 2 {
        if let Some((_, c)) = COUNTRY_SECOND_LEVEL.iter().find(|(l, _)| *l == labels[n - 2]) {
            return Some(Ending {
                category: *c,
                restricted: true,
            });
        }
    }
    let tld = labels.last()?;
    TLD_HINTS.iter().find(|(t, _)| t == tld).map(|(t, c)| Ending {
        category: *c,
        restricted: RESTRICTED_TLDS.contains(t),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(domain: &str) -> Vec<&str> {
        domain.split('.').collect()
    }

    #[test]
    fn the_site_name_leaves_out_the_public_ending() {
        assert_eq!(name_labels(&labels("example.co.uk")), ["example"]);
        assert_eq!(name_labels(&labels("a.example.com")), ["a", "example"]);
        assert_eq!(name_labels(&labels("co.example")), ["co"]);
    }

    #[test]
    fn subdomain_hints_need_a_subdomain() {
        assert_eq!(
            subdomain_hint(&["mail", "example"]),
            Some(Category::Communication)
        );
        assert_eq!(subdomain_hint(&["cdn", "example"]), Some(Category::AdsInfra));
        assert_eq!(subdomain_hint(&["careers", "example"]), Some(Category::Jobs));
        assert_eq!(subdomain_hint(&["mail"]), None);
        assert_eq!(subdomain_hint(&["www2", "example"]), None);
    }

    #[test]
    fn endings_say_what_a_site_is() {
        assert_eq!(
            ending_hint(&labels("cs.example.ac.uk")),
            Some(Category::Education)
        );
        assert_eq!(ending_hint(&labels("example.edu")), Some(Category::Education));
        assert_eq!(ending_hint(&labels("sat.gob.mx")), Some(Category::GovernmentLaw));
        assert_eq!(
            ending_hint(&labels("example.go.jp")),
            Some(Category::GovernmentLaw)
        );
        assert_eq!(ending_hint(&labels("example.nhs.uk")), Some(Category::Health));
        assert_eq!(ending_hint(&labels("bmj.bund.de")), Some(Category::GovernmentLaw));
        assert_eq!(ending_hint(&labels("example.bank")), Some(Category::Finance));
        assert_eq!(
            ending(&labels("example.gov.uk")).map(|e| e.restricted),
            Some(true)
        );
        assert_eq!(ending(&labels("example.edu")).map(|e| e.restricted), Some(true));
        assert_eq!(ending(&labels("example.shop")).map(|e| e.restricted), Some(false));
        assert_eq!(ending(&labels("example.tv")).map(|e| e.restricted), Some(false));
        // `go` means government only as a second level under a country code.
        assert_eq!(ending_hint(&labels("go.example.com")), None);
        assert_eq!(ending_hint(&labels("example.com")), None);
    }
}
