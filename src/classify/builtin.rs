//! The built-in classifier: local rules, no network. It always answers, and says how sure it is
//! ([`Judgement`]: a category, a [`Confidence`] and the [`Rule`] that gave it).
//!
//! Order of evaluation, first match wins:
//! 1. the user's own categories (`category_source = 'user'`), for the domain and each parent
//!    domain, so a category set on `example.com` also covers `docs.example.com` (high);
//! 2. the user's categories by site name, so one set on `kayak.com` also answers `kayak.de`
//!    (medium);
//! 3. hosts on the user's own machine or network and test names (`localhost`, private
//!    addresses, `.local`, `.test`, `.internal`, ...; [`super::local`]): `local_dev` (high), never
//!    a guess from their letters;
//! 4. the bundled map of about 1,000 well-known domains (`data/domains.tsv`, its source stated in
//!    its header; high) and then the open domain table of about 140,000 domains
//!    ([`super::open_table`]; medium, university domains high), both for the domain and each
//!    parent, the most specific name first and the map before the table at the same name;
//! 5. the bundled map by site name alone, so `kayak.de` is answered like `kayak.com` (medium);
//! 6. the learned model ([`super::model`]) when it is sure (`high`: right ≥ 97 % of the time on
//!    its validation split): character n-grams, the words in the name, the ending and, on the
//!    device, the words of the site's page titles;
//! 7. subdomain hints: the leftmost label (`mail.`, `docs.`, `shop.`, ...; medium);
//! 8. words in the site's name (`bank`, `news`, `casino`, ...; vocabulary in `data/words.tsv`),
//!    longest word first (medium): a health agency's site under `.gov` is `health`;
//! 9. endings only a vetted kind of body may register: government, university, school and
//!    military zones and vetted top-level domains (`.gov`, `.edu`, `.ac.uk`, `.gouv.fr`,
//!    `.nhs.uk`, `.bank`, ...; high);
//! 10. the learned model at `medium`;
//! 11. other meaningful endings, open to anyone (`.shop`, `.tv`, `.gg`, ...; low);
//! 12. the learned model's best guess (low), else `other` (low).
//!
//! A `high` answer is certain: the worker does not ask a remote provider about it (unless the
//! user asks to classify again with the AI). Rules 7, 9 and 11 live in [`super::hints`], rule 8 in
//! [`super::vocabulary`]. The order was chosen by measurement (docs/BENCHMARKS.md): the
//! vocabulary's words are more often right than the model's `medium` answers on hand-labelled
//! long-tail sites, and without the model ([`RuleOptions::WITHOUT_MODEL`]) the order is the
//! rules' as before.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use async_trait::async_trait;

use super::model::features::TitleWords;
use super::user_rules::{self, UserCategories};
use super::{hints, model, open_table, vocabulary, Classifier, ClassifyError, DomainOutcome, Verdict};
use crate::category::{Category, CategorySource};
use crate::confidence::Confidence;

/// The bundled domain map, as shipped.
pub const DOMAINS_TSV: &str = include_str!("data/domains.tsv");

static KNOWN: LazyLock<HashMap<&'static str, Category>> = LazyLock::new(|| {
    // Checked by a unit test; a broken map would leave the rules without it, never panic.
    parse_domain_map(DOMAINS_TSV)
        .unwrap_or_default()
        .into_iter()
        .collect()
});

/// Well-known national websites (`data/national.tsv`, issue 28): looked up after the map, not by
/// site name, and skipped with [`RuleOptions::national`] off.
pub const NATIONAL_TSV: &str = include_str!("data/national.tsv");

static NATIONAL: LazyLock<HashMap<&'static str, Category>> = LazyLock::new(|| {
    // Checked by a unit test, as the map is.
    parse_domain_map(NATIONAL_TSV)
        .unwrap_or_default()
        .into_iter()
        .collect()
});

/// The bundled map by site name alone (`kayak` from `kayak.com`), for the same site under
/// another ending (`kayak.de`). Only names of at least [`user_rules::MIN_NAME_LEN`] letters, and
/// only names the map gives one category, so `op.gg` says nothing about `op.fi`.
static KNOWN_NAMES: LazyLock<HashMap<String, Category>> =
    LazyLock::new(|| user_rules::names_of(KNOWN.iter().map(|(d, c)| (*d, *c))));

/// Which rule gave a built-in answer; stored in `website.category_rule`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// The user's own category for the domain or a parent.
    User,
    /// The user's own category for the same site name under another ending.
    UserName,
    /// The bundled map, for the domain or a parent.
    Map,
    /// The open domain table, for the domain or a parent.
    OpenTable,
    /// The user's own machine or network, or a name reserved for tests.
    Local,
    /// The bundled map, for the same site name under another ending.
    MapName,
    /// The learned model, from the name.
    Model,
    /// The learned model, from the name and the titles of the site's pages.
    ModelTitles,
    /// The leftmost label (`mail.`, `shop.`).
    Subdomain,
    /// A word in the site's name.
    Word,
    /// The ending (`.gov`, `.ac.uk`, `.shop`).
    Ending,
    /// Nothing matched: `other`.
    Nothing,
}

impl Rule {
    /// The stored value.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::User => "user",
            Rule::UserName => "user_name",
            Rule::Map => "map",
            Rule::OpenTable => "open_table",
            Rule::Local => "local",
            Rule::MapName => "map_name",
            Rule::Model => "model",
            Rule::ModelTitles => "model_titles",
            Rule::Subdomain => "subdomain",
            Rule::Word => "word",
            Rule::Ending => "ending",
            Rule::Nothing => "nothing",
        }
    }
}

/// A built-in answer: the category, how sure the rules are, and which rule gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Judgement {
    /// The category.
    pub category: Category,
    /// How sure.
    pub confidence: Confidence,
    /// Which rule answered.
    pub rule: Rule,
}

impl Judgement {
    fn new(category: Category, confidence: Confidence, rule: Rule) -> Judgement {
        Judgement {
            category,
            confidence,
            rule,
        }
    }

    /// True if the answer is certain: no remote provider needs to be asked.
    pub fn is_certain(&self) -> bool {
        self.confidence == Confidence::High
    }
}

/// Which lookups the rules use (for measuring them apart; the defaults are what ships).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleOptions {
    /// Ask the open domain table (rule 4's second half).
    pub open_table: bool,
    /// Ask the learned model (rules 6, 10 and 12).
    pub model: bool,
    /// Ask the list of well-known national websites (`data/national.tsv`); off only to measure
    /// what a national site no list knows gets.
    pub national: bool,
}

impl Default for RuleOptions {
    fn default() -> Self {
        RuleOptions {
            open_table: true,
            model: true,
            national: true,
        }
    }
}

impl RuleOptions {
    /// The rules as they were before the learned model: for measuring it.
    pub const WITHOUT_MODEL: RuleOptions = RuleOptions {
        open_table: true,
        model: false,
        national: true,
    };
}

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

/// `domain` as the rules look it up: trimmed, lower case, no trailing dot, no `www.`.
fn normalise(domain: &str) -> String {
    let d = domain.trim().trim_end_matches('.').to_ascii_lowercase();
    match d.strip_prefix("www.") {
        Some(rest) => rest.to_owned(),
        None => d,
    }
}

/// Judges `domain` by the rules, with the user's own categories on top if given. Always answers.
pub fn judge(domain: &str, user: Option<&UserCategories>, opts: RuleOptions) -> Judgement {
    judge_with_titles(domain, user, opts, None)
}

/// [`judge`], with the words of the site's page titles and paths (counted on the device, never
/// sent anywhere) for the learned model. Titles change only the model's answers: a domain a list
/// knows is answered by the list.
pub fn judge_with_titles(
    domain: &str,
    user: Option<&UserCategories>,
    opts: RuleOptions,
    titles: Option<&TitleWords>,
) -> Judgement {
    let domain = normalise(domain);
    let labels: Vec<&str> = domain.split('.').collect();
    let names = hints::name_labels(&labels);
    let site_name = names.last().copied();
    if let Some(user) = user.filter(|u| !u.is_empty()) {
        if let Some(c) = parents(&domain).find_map(|d| user.exact(d)) {
            return Judgement::new(c, Confidence::High, Rule::User);
        }
        if let Some(c) = site_name.and_then(|n| user.by_name(n)) {
            return Judgement::new(c, Confidence::Medium, Rule::UserName);
        }
    }
    if super::local::is_local_host(&domain) {
        return Judgement::new(Category::LocalDev, Confidence::High, Rule::Local);
    }
    for d in parents(&domain) {
        if let Some(c) = KNOWN.get(d) {
            return Judgement::new(*c, Confidence::High, Rule::Map);
        }
        if let Some(c) = NATIONAL.get(d).filter(|_| opts.national) {
            return Judgement::new(*c, Confidence::High, Rule::Map);
        }
        if opts.open_table {
            if let Some(c) = open_table::table().get(d) {
                // The table's education rows are mostly Hipo's list of universities: as sure as
                // a university ending. The rest comes from filtering lists and is often right.
                let confidence = if c == Category::Education {
                    Confidence::High
                } else {
                    Confidence::Medium
                };
                return Judgement::new(c, confidence, Rule::OpenTable);
            }
        }
    }
    if let Some(c) = site_name.and_then(|n| KNOWN_NAMES.get(n)) {
        return Judgement::new(*c, Confidence::Medium, Rule::MapName);
    }
    let titles = titles.filter(|t| !t.is_empty());
    // The model's answer, and whether its probability is in the sure band (an answer from
    // titles is sure as often, but reported as `medium`: see `model`).
    let (guess, sure) = match model::model().filter(|_| opts.model) {
        Some(m) => {
            let p = m.predict(&domain, titles);
            let rule = if titles.is_some() {
                Rule::ModelTitles
            } else {
                Rule::Model
            };
            let sure = m.band(p.probability) == Confidence::High;
            (Some(Judgement::new(p.category, p.confidence, rule)), sure)
        }
        None => (None, false),
    };
    if let Some(j) = guess.filter(|_| sure) {
        return j;
    }
    if let Some(c) = hints::subdomain_hint(names) {
        return Judgement::new(c, Confidence::Medium, Rule::Subdomain);
    }
    if let Some(c) = hints::word_hint(names) {
        return Judgement::new(c, Confidence::Medium, Rule::Word);
    }
    let ending = hints::ending(&labels);
    if let Some(e) = ending.filter(|e| e.restricted) {
        return Judgement::new(e.category, Confidence::High, Rule::Ending);
    }
    if let Some(j) = guess.filter(|j| j.confidence == Confidence::Medium) {
        return j;
    }
    match (ending, guess) {
        (Some(e), _) => Judgement::new(e.category, Confidence::Low, Rule::Ending),
        (None, Some(j)) => j,
        (None, None) => Judgement::new(Category::Other, Confidence::Low, Rule::Nothing),
    }
}

/// Decodes and compiles everything the rules read (the open table, the learned model and its
/// word list, the vocabulary) now, once per process; they are otherwise made ready on first use.
/// Call before taking a lock that judgements run under.
pub fn warm() {
    open_table::warm();
    model::warm();
    vocabulary::warm();
}

/// Judges one domain by the bundled rules (without any user categories). Always answers.
pub fn judge_domain(domain: &str) -> Judgement {
    judge(domain, None, RuleOptions::default())
}

/// Classifies one domain by the bundled rules (without any user categories). Always answers.
pub fn classify_domain(domain: &str) -> Category {
    judge_domain(domain).category
}

/// `domain` and then each parent (`a.b.example.com`, `b.example.com`, `example.com`); bare
/// top-level domains are not looked up.
fn parents(domain: &str) -> impl Iterator<Item = &str> {
    std::iter::successors(Some(domain), |d| {
        d.split_once('.').map(|(_, p)| p).filter(|p| p.contains('.'))
    })
}

/// The built-in classifier: the bundled rules only.
#[derive(Clone, Copy, Debug, Default)]
pub struct Builtin;

/// The built-in classifier with the user's own categories on top (rules 1 and 2): a category
/// the user set for a domain also answers for its subdomains and for the same site name under
/// other endings.
#[derive(Clone, Debug, Default)]
pub struct BuiltinWithUser {
    user: Arc<UserCategories>,
}

impl BuiltinWithUser {
    /// The rules with the user's own categories, `domain → category`, on top.
    pub fn new(user: HashMap<String, Category>) -> BuiltinWithUser {
        BuiltinWithUser::with_categories(Arc::new(UserCategories::new(user)))
    }

    /// The rules with a snapshot of the user's categories on top.
    pub fn with_categories(user: Arc<UserCategories>) -> BuiltinWithUser {
        BuiltinWithUser { user }
    }

    /// Judges one domain. Always answers.
    pub fn judge(&self, domain: &str) -> Judgement {
        judge(domain, Some(&self.user), RuleOptions::default())
    }

    /// Classifies one domain. Always answers.
    pub fn classify_one(&self, domain: &str) -> Category {
        self.judge(domain).category
    }
}

fn answer(domains: &[String], f: impl Fn(&str) -> Judgement) -> Vec<DomainOutcome> {
    domains
        .iter()
        .map(|d| {
            let j = f(d);
            Ok(Verdict {
                category: j.category,
                source: CategorySource::Builtin,
                confidence: j.confidence,
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
        Ok(answer(domains, judge_domain))
    }
}

#[async_trait]
impl Classifier for BuiltinWithUser {
    fn name(&self) -> &str {
        "builtin"
    }

    async fn classify(&self, domains: &[String]) -> Result<Vec<DomainOutcome>, ClassifyError> {
        Ok(answer(domains, |d| self.judge(d)))
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
        let national = parse_domain_map(NATIONAL_TSV).unwrap();
        assert!(national.len() >= 300, "only {} national sites", national.len());
        for (d, _) in &national {
            assert!(
                seen.insert(*d),
                "{d} is in the map and the national list, or twice in it"
            );
            assert_eq!(*d, d.to_ascii_lowercase(), "{d} must be lower case");
            assert!(!d.starts_with("www."), "{d}: domains are stored without www.");
        }
    }

    #[test]
    fn local_hosts_get_their_own_category_unless_the_user_set_one() {
        for d in [
            "localhost",
            "127.0.0.1",
            "192.168.0.1",
            "[::1]",
            "nas.local",
            "app.test",
            "api.internal",
        ] {
            assert_eq!(
                judge_domain(d),
                Judgement::new(Category::LocalDev, Confidence::High, Rule::Local),
                "{d}"
            );
        }
        // The map does not reach them either: `test` names are never a well-known site's.
        assert_ne!(
            judge_domain("google.com.test").category,
            Category::SearchReference
        );
        let user = BuiltinWithUser::new(HashMap::from([("localhost".to_owned(), Category::DevTech)]));
        assert_eq!(user.judge("localhost").category, Category::DevTech);
        assert_eq!(user.judge("127.0.0.1").category, Category::LocalDev);
    }

    /// The rules without the learned model.
    fn rules(domain: &str) -> Judgement {
        judge(domain, None, RuleOptions::WITHOUT_MODEL)
    }

    #[test]
    fn rules_apply_in_order() {
        let classify_domain = |d: &str| rules(d).category;
        let judge_domain = rules;
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
        // Words in the name beat a government zone; the zone alone is certain.
        assert_eq!(judge_domain("healthcare.gov").rule, Rule::Word);
        assert_eq!(judge_domain("agency.gov").rule, Rule::Ending);
    }

    #[test]
    fn every_answer_says_how_sure_it_is() {
        let judge_domain = rules;
        let j = |d: &str| {
            let j = judge_domain(d);
            (j.category, j.confidence, j.rule)
        };
        use Confidence::*;
        assert_eq!(j("github.com"), (Category::DevTech, High, Rule::Map));
        assert_eq!(j("gist.github.com"), (Category::DevTech, High, Rule::Map));
        assert_eq!(
            j("netflix.example"),
            (Category::VideoStreaming, Medium, Rule::MapName)
        );
        assert_eq!(
            j("mail.example.org"),
            (Category::Communication, Medium, Rule::Subdomain)
        );
        assert_eq!(j("mybank.example"), (Category::Finance, Medium, Rule::Word));
        assert_eq!(j("example.gob.es"), (Category::GovernmentLaw, High, Rule::Ending));
        assert_eq!(j("example.edu"), (Category::Education, High, Rule::Ending));
        assert_eq!(j("example.shop"), (Category::Shopping, Low, Rule::Ending));
        assert_eq!(j("example.com"), (Category::Other, Low, Rule::Nothing));
        assert!(judge_domain("github.com").is_certain());
        assert!(!judge_domain("mybank.example").is_certain());
    }

    #[test]
    fn the_open_table_answers_after_the_map_for_the_domain_and_its_subdomains() {
        let table = open_table::table();
        // A domain only the table knows: exact, and for a name under it.
        let (only_table, c) = table
            .iter()
            .find(|(d, c)| {
                *c != Category::Education
                    && !KNOWN.contains_key(d)
                    && !parents(d).any(|p| KNOWN.contains_key(p))
                    && hints::name_labels(&d.split('.').collect::<Vec<_>>()).len() == 1
            })
            .unwrap();
        assert_eq!(
            judge_domain(only_table),
            Judgement::new(c, Confidence::Medium, Rule::OpenTable)
        );
        assert_eq!(
            judge_domain(&format!("deep.sub.{only_table}")),
            Judgement::new(c, Confidence::Medium, Rule::OpenTable)
        );
        let without = judge(
            only_table,
            None,
            RuleOptions {
                open_table: false,
                ..RuleOptions::default()
            },
        );
        assert_ne!(without.rule, Rule::OpenTable);
        // In both the map and the table, with different categories: the map wins.
        let (both, table_says) = table
            .iter()
            .find(|(d, c)| KNOWN.get(d).is_some_and(|m| m != c))
            .unwrap();
        let j = judge_domain(both);
        assert_eq!(j.rule, Rule::Map, "{both}");
        assert_eq!(Some(&j.category), KNOWN.get(both));
        assert_ne!(j.category, table_says);
        // A host the table lists under a domain of the map: the more specific name wins.
        assert_eq!(table.get("adservice.google.de"), Some(Category::AdsInfra));
        assert_eq!(judge_domain("adservice.google.de").category, Category::AdsInfra);
        assert_eq!(judge_domain("google.de").category, Category::SearchReference);
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
        assert_eq!(rules("bbc.example").category, Category::Other);
        assert_ne!(judge_domain("bbc.example").rule, Rule::MapName);
    }

    #[test]
    fn the_model_answers_after_the_lists_and_before_the_weak_rules() {
        // The lists first: the model never overrides the map or the table.
        assert_eq!(judge_domain("github.com").rule, Rule::Map);
        let (listed, c) = open_table::table()
            .iter()
            .find(|(d, _)| !parents(d).any(|p| KNOWN.contains_key(p)))
            .unwrap();
        assert_eq!(
            (judge_domain(listed).rule, judge_domain(listed).category),
            (Rule::OpenTable, c)
        );
        // A name no list knows, whose words say what it is: the model, sure of it.
        let j = judge_domain("casinobonus24.de");
        assert_eq!((j.category, j.rule), (Category::Gambling, Rule::Model));
        assert_eq!(rules("casinobonus24.de").rule, Rule::Word);
        // A name without meaning: the model's guess, as low, where the rules had nothing.
        assert_eq!(rules("qzxwv.com").rule, Rule::Nothing);
        let guess = judge_domain("qzxwv.com");
        assert_eq!(guess.confidence, Confidence::Low, "{guess:?}");
        // A vetted ending beats an unsure model; the model only answers when sure there.
        let gov = judge_domain("agency.gov");
        assert!(
            gov.rule == Rule::Ending || gov.confidence == Confidence::High,
            "{gov:?}"
        );
        // Titles change the model's answer only, never a list's.
        let mut titles = TitleWords::new();
        titles.add("Online Casino Bonus and Poker");
        let j = judge_with_titles("github.com", None, RuleOptions::default(), Some(&titles));
        assert_eq!(j.rule, Rule::Map);
        let j = judge_with_titles("qzxwv.com", None, RuleOptions::default(), Some(&titles));
        assert_eq!((j.category, j.rule), (Category::Gambling, Rule::ModelTitles));
        assert_ne!(j.confidence, Confidence::High);
    }

    #[test]
    fn user_categories_come_first_and_cover_subdomains_and_other_endings() {
        let user = HashMap::from([
            ("github.com".to_owned(), Category::Productivity),
            ("myfavouriteshop.example".to_owned(), Category::Games),
        ]);
        let b = BuiltinWithUser::new(user);
        assert_eq!(b.classify_one("github.com"), Category::Productivity);
        assert_eq!(b.judge("gist.github.com").rule, Rule::User);
        assert_eq!(b.judge("gist.github.com").confidence, Confidence::High);
        assert_eq!(classify_domain("gist.github.com"), Category::DevTech);
        // The same site name under another ending: the user's choice, as a medium guess.
        let other_ending = b.judge("myfavouriteshop.de");
        assert_eq!(
            (other_ending.category, other_ending.confidence, other_ending.rule),
            (Category::Games, Confidence::Medium, Rule::UserName)
        );
        assert_eq!(
            b.judge("github.de").rule,
            Rule::UserName,
            "beats the map's name rule"
        );
        assert_eq!(classify_domain("myfavouriteshop.de"), Category::Shopping);
    }
}
