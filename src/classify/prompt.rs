//! What the AI providers are asked and how their answers are read, shared by every provider.
//!
//! The system message carries the instructions and the category list; the user message is the
//! hosts to classify, one per line, and nothing else: no URL path, no query, no title ever
//! leaves the machine. An answer is matched back to the hosts asked about one by one: a host
//! missing from the answer, or answered with a category outside the taxonomy, fails that host
//! only; an answer that is not the expected JSON fails the whole batch as transient.

use std::collections::HashMap;

use serde_json::{json, Value};

use super::secret::Secrets;
use super::{ClassifyError, DomainOutcome, Verdict};
use crate::category::{Category, CategorySource};
use crate::confidence::Confidence;
use crate::domain::Domain;

/// The name given to the JSON schema in `response_format`.
pub const SCHEMA_NAME: &str = "website_categories";

/// The user message: the hosts, one per line, and nothing else.
pub fn user_message(domains: &[String]) -> String {
    domains.join("\n")
}

/// The system message: instructions and the category list. With `describe_schema`, it also
/// spells out the JSON shape, for servers that only support `json_object` mode.
pub fn system_message(describe_schema: bool) -> String {
    let mut s = String::from(
        "You sort websites into categories. The user message lists website host names, one per \
         line. For each host, choose the single best category id from this list:\n",
    );
    for c in Category::ALL {
        s.push_str(&format!("- {}: {}\n", c.id(), c.name()));
    }
    s.push_str(
        "Use `other` only when no category fits. Answer for every host, copying each host exactly \
         as given, with a confidence between 0 and 1.",
    );
    if describe_schema {
        s.push_str(
            "\nReply with one JSON object and nothing else, of the form \
             {\"results\": [{\"domain\": \"<host>\", \"category\": \"<category id>\", \
             \"confidence\": <number>}]}.",
        );
    }
    s
}

/// The JSON schema of an answer: `{"results": [{"domain", "category", "confidence"}]}`, strict
/// (every property required, no others), with the category ids as an enum.
pub fn answer_schema() -> Value {
    let ids: Vec<&str> = Category::ALL.iter().map(|c| c.id()).collect();
    json!({
        "type": "object",
        "properties": {
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "domain": { "type": "string" },
                        "category": { "type": "string", "enum": ids },
                        "confidence": { "type": "number" }
                    },
                    "required": ["domain", "category", "confidence"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["results"],
        "additionalProperties": false
    })
}

/// Reads a model's answer (the message content) for `domains`: one outcome per domain, in order.
/// Server text in a message is cleaned with `secrets` (redacted, then cut).
pub fn parse_answer(
    content: &str,
    domains: &[String],
    secrets: &Secrets,
) -> Result<Vec<DomainOutcome>, ClassifyError> {
    let text = strip_code_fence(content);
    let value: Value = serde_json::from_str(text).map_err(|e| {
        ClassifyError::Transient(format!(
            "the model's answer is not valid JSON ({e}): {}",
            secrets.clean(content, 200)
        ))
    })?;
    let results = value.get("results").and_then(Value::as_array).ok_or_else(|| {
        ClassifyError::Transient(format!(
            "the model's answer has no `results` list: {}",
            secrets.clean(content, 200)
        ))
    })?;
    // The first answer for each host counts.
    let mut answers: HashMap<String, (Option<&str>, Option<f64>)> = HashMap::new();
    for r in results {
        if let Some(domain) = r.get("domain").and_then(Value::as_str) {
            answers.entry(normalise(domain)).or_insert_with(|| {
                (
                    r.get("category").and_then(Value::as_str),
                    r.get("confidence").and_then(Value::as_f64),
                )
            });
        }
    }
    Ok(domains
        .iter()
        .map(|d| {
            let (category, score) = answers
                .get(&normalise(d))
                .ok_or_else(|| format!("the model gave no answer for {d}"))?;
            let category = category.ok_or_else(|| format!("the model gave no category for {d}"))?;
            let category: Category = category.parse().map_err(|_| {
                format!(
                    "the model answered {:?} for {d}, which is not one of the categories",
                    secrets.clean(category, 60)
                )
            })?;
            Ok(Verdict {
                category,
                source: CategorySource::Ai,
                confidence: Confidence::from_score(*score),
            })
        })
        .collect())
}

/// A host as the model wrote it, normalised like every domain (`Domain::parse_host`), so that
/// `WWW.Example.com.` or `münchen.example` match the host asked about.
fn normalise(host: &str) -> String {
    match Domain::parse_host(host) {
        Ok(d) => d.as_str().to_owned(),
        Err(_) => host.trim().to_ascii_lowercase(),
    }
}

/// Some models wrap JSON in a Markdown code fence even in JSON mode; the fence is dropped.
fn strip_code_fence(s: &str) -> &str {
    let t = s.trim();
    match t.strip_prefix("```") {
        Some(rest) => {
            let rest = rest.strip_prefix("json").unwrap_or(rest);
            rest.strip_suffix("```").unwrap_or(rest).trim()
        }
        None => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(h: &[&str]) -> Vec<String> {
        h.iter().map(std::string::ToString::to_string).collect()
    }

    #[test]
    fn answers_are_matched_per_host_and_bad_ones_fail_alone() {
        let content = r#"{"results":[
            {"domain":"b.example","category":"news","confidence":0.9},
            {"domain":"A.example.","category":"shopping","confidence":0.8},
            {"domain":"c.example","category":"weather","confidence":0.5}]}"#;
        let out = parse_answer(
            content,
            &hosts(&["a.example", "b.example", "c.example", "d.example"]),
            &Secrets::default(),
        )
        .unwrap();
        assert_eq!(out[0].as_ref().unwrap().category, Category::Shopping);
        assert_eq!(out[1].as_ref().unwrap().category, Category::News);
        // The model's own confidence, in bands.
        assert_eq!(out[0].as_ref().unwrap().confidence, Confidence::High);
        assert_eq!(out[1].as_ref().unwrap().confidence, Confidence::High);
        assert!(out[2].as_ref().unwrap_err().contains("\"weather\""));
        assert!(out[3].as_ref().unwrap_err().contains("no answer for d.example"));
    }

    #[test]
    fn garbage_is_transient() {
        for bad in ["not json", "{\"results\": 3}", "{\"results\": ["] {
            let e = parse_answer(bad, &hosts(&["a.example"]), &Secrets::default()).unwrap_err();
            assert!(matches!(e, ClassifyError::Transient(_)), "{bad}: {e:?}");
        }
        let fenced = "```json\n{\"results\":[{\"domain\":\"a.example\",\"category\":\"games\",\"confidence\":1}]}\n```";
        assert_eq!(
            parse_answer(fenced, &hosts(&["a.example"]), &Secrets::default()).unwrap()[0]
                .as_ref()
                .unwrap()
                .category,
            Category::Games
        );
    }

    #[test]
    fn hosts_are_matched_in_their_normal_form_and_echoed_keys_are_redacted() {
        let key = crate::classify::secret::ApiKey::new("sk-echo-0123456789abcdef").unwrap();
        let secrets = Secrets::new(Some(&key), None);
        let echo = format!("{}sk-echo-0123456789abcdef", "x".repeat(45));
        let content = format!(
            r#"{{"results":[
            {{"domain":"MÜNCHEN.example.","category":"news","confidence":1}},
            {{"domain":"www.shop.example","category":"shopping","confidence":1}},
            {{"domain":"shop.example","category":"games","confidence":1}},
            {{"domain":"key.example","category":"{echo}","confidence":1}}]}}"#
        );
        let out = parse_answer(
            &content,
            &hosts(&["xn--mnchen-3ya.example", "shop.example", "key.example"]),
            &secrets,
        )
        .unwrap();
        assert_eq!(out[0].as_ref().unwrap().category, Category::News);
        assert_eq!(
            out[1].as_ref().unwrap().category,
            Category::Shopping,
            "the first answer counts"
        );
        let msg = out[2].as_ref().unwrap_err();
        assert!(!msg.contains("sk-echo-") && !msg.contains("0123456789"), "{msg}");
        let e = parse_answer(
            "not json sk-echo-0123456789abcdef",
            &hosts(&["a.example"]),
            &secrets,
        )
        .unwrap_err()
        .to_string();
        assert!(!e.contains("0123456789"), "{e}");
    }

    #[test]
    fn the_schema_lists_every_category_and_is_strict() {
        let s = answer_schema();
        let item = &s["properties"]["results"]["items"];
        assert_eq!(
            item["properties"]["category"]["enum"].as_array().unwrap().len(),
            Category::ALL.len()
        );
        assert_eq!(item["additionalProperties"], false);
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(
            user_message(&hosts(&["a.example", "b.example"])),
            "a.example\nb.example"
        );
    }
}
