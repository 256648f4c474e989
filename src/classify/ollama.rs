//! The `ollama` provider: a local Ollama server's native `/api/chat`, with the answer's JSON
//! schema in `format`. The private, offline-first option: nothing leaves the machine when the
//! base URL is local.
//!
//! Same messages as the `openai` provider (system: instructions and categories; user: the hosts,
//! one per line). Ollama answers `{"message": {"content": ...}, "done_reason": ...}`; an unknown
//! model is a 404, which pauses the worker until the user acts.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::http::{self, Answer, AnswerContext, Endpoint, HttpOptions};
use super::prompt;
use super::{Classifier, ClassifyError, DomainOutcome};

/// The default base URL.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434";
/// The default model.
pub const DEFAULT_MODEL: &str = "llama3.2";

/// How to reach Ollama.
#[derive(Clone, Debug)]
pub struct OllamaConfig {
    /// Base URL, e.g. `http://127.0.0.1:11434`; `/api/chat` is appended.
    pub base_url: String,
    /// Model name.
    pub model: String,
    /// Timeouts.
    pub http: HttpOptions,
}

/// The Ollama classifier.
#[derive(Debug)]
pub struct Ollama {
    endpoint: Endpoint,
    model: String,
}

impl Ollama {
    /// A classifier for `config`; fails on a base URL that is not http(s).
    pub fn new(config: OllamaConfig) -> Result<Ollama, ClassifyError> {
        Ok(Ollama {
            endpoint: Endpoint::new("ollama", &config.base_url, "/api/chat", config.http, None)?,
            model: config.model,
        })
    }

    fn body(&self, domains: &[String]) -> Value {
        json!({
            "model": self.model,
            "stream": false,
            "format": prompt::answer_schema(),
            "options": { "temperature": 0 },
            "messages": [
                { "role": "system", "content": prompt::system_message(true) },
                { "role": "user", "content": prompt::user_message(domains) }
            ]
        })
    }
}

/// Reads an Ollama `/api/chat` answer to a request for `domains`: one outcome per domain, or why
/// the whole batch failed. A pure function of its arguments: no status, header, body or JSON
/// shape can make it panic.
pub fn read_answer(
    ctx: &AnswerContext<'_>,
    answer: &Answer<'_>,
    domains: &[String],
) -> Result<Vec<DomainOutcome>, ClassifyError> {
    if !answer.status.is_success() {
        return Err(http::status_error(ctx, answer));
    }
    if answer.truncated {
        return Err(ctx.too_large());
    }
    let body: Value = serde_json::from_slice(answer.body).map_err(|e| {
        ClassifyError::Transient(format!(
            "ollama answered something that is not JSON ({e}): {}",
            ctx.clean(&String::from_utf8_lossy(answer.body), 200)
        ))
    })?;
    if body.get("done_reason").and_then(Value::as_str) == Some("length") {
        return Err(ClassifyError::Transient(
            "the model's answer was cut off (done_reason=length); a smaller --batch-size helps".into(),
        ));
    }
    let content = body
        .pointer("/message/content")
        .and_then(Value::as_str)
        .ok_or_else(|| ClassifyError::Transient("ollama answered without message content".into()))?;
    prompt::parse_answer(content, domains, ctx.secrets)
}

#[async_trait]
impl Classifier for Ollama {
    fn name(&self) -> &str {
        "ollama"
    }

    async fn classify(&self, domains: &[String]) -> Result<Vec<DomainOutcome>, ClassifyError> {
        let received = self.endpoint.post(&self.body(domains), None).await?;
        read_answer(&self.endpoint.context(), &received.answer(), domains)
    }
}
