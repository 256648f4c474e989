//! Classifiers: from a batch of domains to their categories.
//!
//! [`Classifier`] is the seam between the worker and whatever answers: the offline
//! [`builtin::Builtin`] rules, the OpenAI-compatible [`openai::OpenAi`] and the local
//! [`ollama::Ollama`] providers (over reqwest, errors classified in [`http`]), and the
//! [`privacy::PrivacyRouter`] that keeps private hosts away from remote providers. A classifier either answers the
//! batch, one verdict per domain in order (a single domain may fail on its own), or fails the
//! whole batch with a [`ClassifyError`] whose variant tells the worker whether the failure is the
//! job's fault (it costs an attempt) or not (offline, rate limited, bad credentials: it doesn't).

pub mod builtin;
pub mod hints;
pub mod http;
pub mod local;
pub mod model;
pub mod ollama;
pub mod open_table;
pub mod openai;
pub mod privacy;
pub mod prompt;
pub mod secret;
pub mod user_rules;
pub mod vocabulary;

use std::time::Duration;

use async_trait::async_trait;

use crate::category::{Category, CategorySource};
use crate::confidence::Confidence;

/// The answer for one domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The category.
    pub category: Category,
    /// Who gave it (`ai` for remote and local models, `builtin` for the rules).
    pub source: CategorySource,
    /// How sure: the rule's band for `builtin`; for `ai`, the model's own confidence in bands
    /// ([`Confidence::from_score`]).
    pub confidence: Confidence,
}

/// One domain's outcome: a verdict, or why this domain alone could not be classified.
pub type DomainOutcome = Result<Verdict, String>;

/// Why a whole batch could not be classified: defined with the library's other errors (so the
/// error vocabulary depends on no module above it), and named here where classifiers use it.
pub use crate::error::ClassifyError;

/// Something that puts domains into categories.
#[async_trait]
pub trait Classifier: Send + Sync {
    /// The provider's name (`builtin`, `openai`, `ollama`).
    fn name(&self) -> &str;

    /// Classifies `domains`. On `Ok`, the vector has exactly one outcome per domain, in order.
    async fn classify(&self, domains: &[String]) -> Result<Vec<DomainOutcome>, ClassifyError>;

    /// True if this classifier would send `domain` to a remote provider (a model reached over
    /// HTTP), false if it answers it locally (the built-in rules; private and excluded hosts
    /// behind the [`privacy::PrivacyRouter`]). The worker asks only those the remote provider
    /// will see; everything else gets the built-in answer at once, as final. The default says
    /// every classifier but the built-in one is remote.
    fn asks_remote(&self, domain: &str) -> bool {
        let _ = domain;
        self.name() != "builtin"
    }
}

/// Wraps a classifier and adds a fixed latency to every call: simulates a slow remote provider,
/// for tests and demos.
pub struct WithLatency {
    inner: std::sync::Arc<dyn Classifier>,
    latency: Duration,
}

impl WithLatency {
    /// `inner`, slowed down by `latency` per call.
    pub fn new(inner: std::sync::Arc<dyn Classifier>, latency: Duration) -> Self {
        WithLatency { inner, latency }
    }
}

#[async_trait]
impl Classifier for WithLatency {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn classify(&self, domains: &[String]) -> Result<Vec<DomainOutcome>, ClassifyError> {
        tokio::time::sleep(self.latency).await;
        self.inner.classify(domains).await
    }

    /// It stands in for a slow remote provider: every host is treated as sent out, so the
    /// worker goes through the call (and its latency) for everything that is not certain.
    fn asks_remote(&self, _domain: &str) -> bool {
        true
    }
}
