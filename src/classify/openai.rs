//! The `openai` provider: any OpenAI-compatible `chat/completions` server (OpenAI, OpenRouter,
//! Groq, LM Studio, vLLM, llama.cpp server).
//!
//! Asks with `temperature: 0` and a strict `json_schema` response format. A server that rejects
//! `json_schema` (HTTP 400/422 naming `response_format` or `json_schema`) is asked again at once
//! in `json_object` mode with the schema described in the system message, and this classifier
//! keeps using `json_object` from then on. A refusal or a content-filter stop fails the batch as
//! permanent; an answer cut off by `finish_reason: "length"` as transient.
//!
//! Invariant: the request carries only the hosts (user message) and fixed instructions; the API
//! key goes only into the `Authorization` header and is redacted out of every error.

use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use serde_json::{json, Value};

use super::http::{self, Answer, AnswerContext, Endpoint, HttpOptions};
use super::prompt;
use super::secret::ApiKey;
use super::{Classifier, ClassifyError, DomainOutcome};

/// The default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The default model.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";

/// How to reach an OpenAI-compatible server.
#[derive(Clone, Debug)]
pub struct OpenAiConfig {
    /// Base URL, e.g. `https://api.openai.com/v1`; `/chat/completions` is appended.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// API key, if the server needs one.
    pub api_key: Option<ApiKey>,
    /// Timeouts.
    pub http: HttpOptions,
}

/// The OpenAI-compatible classifier.
#[derive(Debug)]
pub struct OpenAi {
    endpoint: Endpoint,
    model: String,
    api_key: Option<ApiKey>,
    /// Set once the server has rejected `json_schema`.
    json_object_only: AtomicBool,
}

impl OpenAi {
    /// A classifier for `config`; fails on a base URL that is not http(s).
    pub fn new(config: OpenAiConfig) -> Result<OpenAi, ClassifyError> {
        Ok(OpenAi {
            endpoint: Endpoint::new(
                "openai",
                &config.base_url,
                "/chat/completions",
                config.http,
                config.api_key.as_ref(),
            )?,
            model: config.model,
            api_key: config.api_key,
            json_object_only: AtomicBool::new(false),
        })
    }

    fn body(&self, domains: &[String], json_object: bool) -> Value {
        let response_format = if json_object {
            json!({ "type": "json_object" })
        } else {
            json!({
                "type": "json_schema",
                "json_schema": { "name": prompt::SCHEMA_NAME, "strict": true, "schema": prompt::answer_schema() }
            })
        };
        json!({
            "model": self.model,
            "temperature": 0,
            "messages": [
                { "role": "system", "content": prompt::system_message(json_object) },
                { "role": "user", "content": prompt::user_message(domains) }
            ],
            "response_format": response_format
        })
    }

    /// One call; `Ok(None)` if the server rejected `json_schema` and should be asked again.
    async fn call(
        &self,
        domains: &[String],
        json_object: bool,
    ) -> Result<Option<Vec<DomainOutcome>>, ClassifyError> {
        let received = self
            .endpoint
            .post(&self.body(domains, json_object), self.api_key.as_ref())
            .await?;
        read_answer(&self.endpoint.context(), &received.answer(), domains, json_object)
    }
}

/// Reads an OpenAI `chat/completions` answer to a request for `domains` (asked in `json_object`
/// mode or not): one outcome per domain, `Ok(None)` if the server rejected `json_schema` and
/// should be asked again in `json_object` mode, or why the whole batch failed. A pure function of
/// its arguments: no status, header, body or JSON shape can make it panic.
pub fn read_answer(
    ctx: &AnswerContext<'_>,
    answer: &Answer<'_>,
    domains: &[String],
    json_object: bool,
) -> Result<Option<Vec<DomainOutcome>>, ClassifyError> {
    if !answer.status.is_success() {
        if !json_object && rejects_json_schema(answer) {
            return Ok(None);
        }
        return Err(http::status_error(ctx, answer));
    }
    if answer.truncated {
        return Err(ctx.too_large());
    }
    let body: Value = serde_json::from_slice(answer.body).map_err(|e| {
        ClassifyError::Transient(format!(
            "openai answered something that is not JSON ({e}): {}",
            ctx.clean(&String::from_utf8_lossy(answer.body), 200)
        ))
    })?;
    let choice = body
        .pointer("/choices/0")
        .ok_or_else(|| ClassifyError::Transient("openai answered without choices".into()))?;
    if let Some(refusal) = choice.pointer("/message/refusal").and_then(Value::as_str) {
        return Err(ClassifyError::Permanent(format!(
            "the model refused to classify: {}",
            ctx.clean(refusal, 300)
        )));
    }
    match choice.get("finish_reason").and_then(Value::as_str) {
        Some("length") => {
            return Err(ClassifyError::Transient(
                "the model's answer was cut off (finish_reason=length); a smaller --batch-size helps".into(),
            ))
        }
        Some("content_filter") => {
            return Err(ClassifyError::Permanent(
                "the provider's content filter stopped the answer".into(),
            ))
        }
        _ => {}
    }
    let content = choice
        .pointer("/message/content")
        .and_then(Value::as_str)
        .ok_or_else(|| ClassifyError::Transient("openai answered without message content".into()))?;
    prompt::parse_answer(content, domains, ctx.secrets).map(Some)
}

fn rejects_json_schema(answer: &Answer<'_>) -> bool {
    let lower = String::from_utf8_lossy(answer.body).to_ascii_lowercase();
    matches!(answer.status.as_u16(), 400 | 422)
        && (lower.contains("json_schema") || lower.contains("response_format"))
}

#[async_trait]
impl Classifier for OpenAi {
    fn name(&self) -> &str {
        "openai"
    }

    async fn classify(&self, domains: &[String]) -> Result<Vec<DomainOutcome>, ClassifyError> {
        if !self.json_object_only.load(Ordering::Relaxed) {
            if let Some(out) = self.call(domains, false).await? {
                return Ok(out);
            }
            tracing::info!("the server rejected json_schema; using json_object from now on");
            self.json_object_only.store(true, Ordering::Relaxed);
        }
        self.call(domains, true)
            .await?
            .ok_or_else(|| ClassifyError::Permanent("the server rejected json_object mode".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::ollama;
    use crate::classify::secret::Secrets;
    use reqwest::header::HeaderMap;
    use reqwest::StatusCode;

    const KEY: &str = "sk-prop-SECRET-0a1b2c3d";

    /// Every error text and per-host message an answer produces.
    fn texts(result: Result<Option<Vec<DomainOutcome>>, ClassifyError>) -> Vec<String> {
        match result {
            Err(e) => vec![e.to_string()],
            Ok(None) => vec![],
            Ok(Some(outcomes)) => outcomes.into_iter().filter_map(Result::err).collect(),
        }
    }

    /// The answers that put server text into an error, with `text` as that server text.
    fn answers(text: &str) -> Vec<(u16, String)> {
        let completion = |content: &str| {
            json!({"choices": [{"finish_reason": "stop", "message": {"content": content}}]}).to_string()
        };
        let category = json!({"results": [{"domain": "a.example", "category": text}]}).to_string();
        vec![
            (401, json!({"error": {"message": text}}).to_string()),
            (400, json!({"error": text}).to_string()),
            (503, text.to_owned()),
            (429, text.to_owned()),
            (200, text.to_owned()),
            (200, completion(text)),
            (200, completion(&category)),
            (
                200,
                json!({"choices": [{"message": {"refusal": text}}]}).to_string(),
            ),
        ]
    }

    #[test]
    fn no_8_character_run_of_the_key_survives_at_any_offset() {
        let key = ApiKey::new(KEY).unwrap();
        let secrets = Secrets::new(Some(&key), None);
        let url = url::Url::parse("http://127.0.0.1:9/v1/chat/completions").unwrap();
        let ctx = AnswerContext {
            provider: "openai",
            endpoint: &url,
            secrets: &secrets,
            now: chrono::Utc::now(),
        };
        let domains = vec!["a.example".to_owned()];
        let headers = HeaderMap::new();
        let windows: Vec<&str> = (0..=KEY.len() - 8).map(|i| &KEY[i..i + 8]).collect();
        // Longer than each cut made to server text (60, 200, 300 characters), by a little.
        for len in [0, 61, 201, 301] {
            let filler: String = "abcdefghijklmnopqrstuvwxyz ".chars().cycle().take(len).collect();
            for offset in 0..=len {
                let text = format!("{}{KEY}{}", &filler[..offset], &filler[offset..]);
                for (code, body) in answers(&text) {
                    let answer = Answer {
                        status: StatusCode::from_u16(code).unwrap(),
                        headers: &headers,
                        body: body.as_bytes(),
                        truncated: false,
                    };
                    let mut all = texts(read_answer(&ctx, &answer, &domains, false));
                    all.extend(texts(ollama::read_answer(&ctx, &answer, &domains).map(Some)));
                    for t in all {
                        assert!(
                            !windows.iter().any(|w| t.contains(w)),
                            "len {len}, offset {offset}, HTTP {code}: {t}"
                        );
                    }
                }
            }
        }
    }
}
