//! One line of `tests/fixtures/builtin_answers.tsv.gz`: what the built-in classifier answers for
//! a domain. The recorder (`examples/record_builtin_answers.rs`) and the test that compares
//! (`tests/classify/builtin_answers.rs`) both include this file, so they write and check the same thing.

use sitetrail::classify::builtin::judge_domain;
use sitetrail::classify::hints;
use sitetrail::classify::model::Model;

/// `domain<TAB>category<TAB>confidence<TAB>rule<TAB>word rule's category or -<TAB>model's
/// category<TAB>model's probability as f32 bits (hex)`. The word rule is asked about the name
/// labels of `domain` as given, the model about `domain` normalised as the rules do it (trimmed,
/// lower case, no trailing dot, no `www.`).
pub fn answer_line(m: &Model, domain: &str) -> String {
    let j = judge_domain(domain);
    let labels: Vec<&str> = domain.split('.').collect();
    let word = hints::word_hint(hints::name_labels(&labels));
    let normalised = domain.trim().trim_end_matches('.').to_ascii_lowercase();
    let normalised = normalised.strip_prefix("www.").unwrap_or(&normalised);
    let p = m.predict(normalised, None);
    format!(
        "{domain}\t{}\t{}\t{}\t{}\t{}\t{:08x}",
        j.category.id(),
        j.confidence.as_str(),
        j.rule.as_str(),
        word.map_or("-", |c| c.id()),
        p.category.id(),
        p.probability.to_bits()
    )
}
