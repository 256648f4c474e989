//! The `ollama` provider: a local Ollama server's native `/api/chat`, with the answer's JSON
//! schema in `format`. The private, offline-first option: nothing leaves the machine when the
//! base URL is local.
//!
//! Same messages as the `openai` provider (system: instructions and categories; user: the hosts,
//! one per line). Ollama answers `{"message": {"content": ...}, "done_reason": ...}`; an unknown
//! model is a 404, which pauses the worker until the user acts.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::http::{self, HttpOptions};
use super::prompt;
use super::{Classifier, ClassifyError, DomainOutcome};
use crate::error::truncate_chars;

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
    client: reqwest::Client,
    endpoint: String,
    model: String,
}

impl Ollama {
    /// A classifier for `config`; fails on a base URL that is not http(s).
    pub fn new(config: OllamaConfig) -> Result<Ollama, ClassifyError> {
        let base = http::normalise_base_url(&config.base_url).map_err(ClassifyError::NeedsUser)?;
        Ok(Ollama {
            client: http::build_client(config.http)?,
            endpoint: format!("{base}/api/chat"),
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

#[async_trait]
impl Classifier for Ollama {
    fn name(&self) -> &str {
        "ollama"
    }

    async fn classify(&self, domains: &[String]) -> Result<Vec<DomainOutcome>, ClassifyError> {
        let resp = self
            .client
            .post(&self.endpoint)
            .json(&self.body(domains))
            .send()
            .await
            .map_err(|e| http::send_error("ollama", &e, None))?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = resp
            .text()
            .await
            .map_err(|e| http::send_error("ollama", &e, None))?;
        if !status.is_success() {
            return Err(http::status_error("ollama", status, &headers, &text, None));
        }
        let body: Value = serde_json::from_str(&text).map_err(|e| {
            ClassifyError::Transient(format!(
                "ollama answered something that is not JSON ({e}): {}",
                truncate_chars(&text, 200)
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
        prompt::parse_answer(content, domains)
    }
}
