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
