//! Building a worker from resolved settings: the classifier (the built-in rules, or a remote
//! provider behind the privacy router) and the [`WorkerConfig`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::{Provider, Settings};
use crate::category::Category;
use crate::classify::builtin::BuiltinWithUser;
use crate::classify::http::HttpOptions;
use crate::classify::ollama::{self, Ollama, OllamaConfig};
use crate::classify::openai::{self, OpenAi, OpenAiConfig};
use crate::classify::privacy::{Exclusions, PrivacyRouter};
use crate::classify::secret::ApiKey;
use crate::classify::Classifier;
use crate::error::{Error, Result};
use crate::store::StoreOptions;
use crate::worker::{RetryPolicy, WorkerConfig};

/// Settings after every layer was applied, with the API key: what a worker is built from.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The effective settings.
    pub settings: Settings,
    /// The API key, if any.
    pub api_key: Option<ApiKey>,
}

impl Resolved {
    /// The base URL in use (the provider's default if none is set).
    pub fn base_url(&self) -> &str {
        match (&self.settings.base_url, self.settings.provider) {
            (Some(u), _) => u,
            (None, Provider::Ollama) => ollama::DEFAULT_BASE_URL,
            (None, _) => openai::DEFAULT_BASE_URL,
        }
    }

    /// The model in use (the provider's default if none is set).
    pub fn model(&self) -> &str {
        match (&self.settings.model, self.settings.provider) {
            (Some(m), _) => m,
            (None, Provider::Ollama) => ollama::DEFAULT_MODEL,
            (None, _) => openai::DEFAULT_MODEL,
        }
    }

    /// The provider as its pauses are recorded: `builtin`, or `<provider> <base URL> <model>`
    /// with any credentials written into the URL left out. Workers on one file share a pause
    /// only if this is the same.
    pub fn pause_scope(&self) -> String {
        if !self.settings.provider.is_remote() {
            return self.settings.provider.as_str().to_owned();
        }
        let base = match url::Url::parse(self.base_url().trim()) {
            Ok(mut u) => {
                let _ = u.set_username("");
                let _ = u.set_password(None);
                u.set_query(None);
                u.set_fragment(None);
                u.as_str().trim_end_matches('/').to_owned()
            }
            Err(_) => String::from("(unparsable base URL)"),
        };
        format!("{} {base} {}", self.settings.provider.as_str(), self.model())
    }

    /// How `worker` and `daemon` open the database: the resolved `synchronous` (flag, then
    /// `SITETRAIL_SYNCHRONOUS`, then the file). Their callers check the variable with
    /// [`StoreOptions::from_env`] first, so a bad one gets the message every command gives.
    pub fn store_options(&self) -> StoreOptions {
        StoreOptions {
            synchronous: self.settings.synchronous,
            ..StoreOptions::default()
        }
    }

    /// The worker settings.
    pub fn worker_config(&self) -> WorkerConfig {
        WorkerConfig {
            pause_scope: Some(self.pause_scope()),
            ..self.settings.worker_config()
        }
    }

    /// The classifier: the built-in rules (with `user_categories` first), or a remote provider
    /// behind the privacy router, which sends private and excluded hosts to the built-in rules.
    pub fn classifier(&self, user_categories: HashMap<String, Category>) -> Result<Arc<dyn Classifier>> {
        let local: Arc<dyn Classifier> = Arc::new(BuiltinWithUser::new(user_categories));
        let s = &self.settings;
        let http = s.http_options();
        let remote: Arc<dyn Classifier> = match s.provider {
            Provider::Builtin => return Ok(local),
            Provider::OpenAi => {
                if self.api_key.is_none() && self.base_url().contains("api.openai.com") {
                    return Err(Error::InvalidConfig(
                        "the openai provider at api.openai.com needs an API key: set SITETRAIL_API_KEY"
                            .into(),
                    ));
                }
                Arc::new(OpenAi::new(OpenAiConfig {
                    base_url: self.base_url().to_owned(),
                    model: self.model().to_owned(),
                    api_key: self.api_key.clone(),
                    http,
                })?)
            }
            Provider::Ollama => Arc::new(Ollama::new(OllamaConfig {
                base_url: self.base_url().to_owned(),
                model: self.model().to_owned(),
                http,
            })?),
        };
        let exclusions = Exclusions::parse(&s.exclusions)?;
        Ok(Arc::new(PrivacyRouter::new(remote, local, exclusions)))
    }

    /// Everything a worker needs: its classifier and its configuration. The desktop app and
    /// `sitetrail worker` both build their worker with this.
    pub fn build(
        &self,
        user_categories: HashMap<String, Category>,
    ) -> Result<(Arc<dyn Classifier>, WorkerConfig)> {
        let config = self.worker_config();
        config.validate()?;
        Ok((self.classifier(user_categories)?, config))
    }
}

impl Settings {
    /// Websites per call: the setting, or 1 for the built-in rules and 20 for remote providers.
    pub fn batch_size(&self) -> usize {
        let default = if self.provider.is_remote() {
            WorkerConfig::REMOTE_BATCH_SIZE
        } else {
            WorkerConfig::BATCH_SIZE.default
        };
        self.batch_size.unwrap_or(default)
    }

    /// The worker these settings describe; the fields that are not settings keep
    /// [`WorkerConfig::default`]'s values (no pause scope: [`Resolved::worker_config`] adds it).
    pub fn worker_config(&self) -> WorkerConfig {
        WorkerConfig {
            fixed_delay: Duration::from_millis(self.fixed_delay_ms),
            retry: RetryPolicy::exponential(
                Duration::from_millis(self.retry_base_ms),
                self.retry_factor,
                Duration::from_millis(self.retry_max_ms),
            ),
            processing_timeout: Duration::from_millis(self.processing_timeout_ms),
            max_attempts: self.max_attempts,
            batch_size: self.batch_size(),
            max_requests_per_minute: self.max_requests_per_minute,
            ..WorkerConfig::default()
        }
    }

    /// The provider calls' timeouts.
    pub fn http_options(&self) -> HttpOptions {
        HttpOptions {
            connect_timeout: Duration::from_millis(self.connect_timeout_ms),
            total_timeout: Duration::from_millis(self.request_timeout_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{Environment, Overrides};

    #[test]
    fn the_pause_scope_names_the_provider_without_credentials() {
        let r = Settings {
            provider: Provider::OpenAi,
            base_url: Some("http://user:hunter2@127.0.0.1:8080/v1/?k=secret".into()),
            model: Some("m1".into()),
            ..Settings::default()
        }
        .resolve(&Environment::default(), &Overrides::new())
        .unwrap();
        let scope = r.pause_scope();
        assert_eq!(scope, "openai http://127.0.0.1:8080/v1 m1");
        assert_eq!(r.worker_config().pause_scope.as_deref(), Some(scope.as_str()));
        let builtin = Settings::default()
            .resolve(&Environment::default(), &Overrides::new())
            .unwrap();
        assert_eq!(builtin.pause_scope(), "builtin");
    }

    #[test]
    fn the_default_settings_describe_the_default_worker() {
        let from_settings = Settings::default().worker_config();
        assert_eq!(
            format!("{from_settings:?}"),
            format!("{:?}", WorkerConfig::default())
        );
        let remote = Settings {
            provider: Provider::OpenAi,
            ..Settings::default()
        };
        assert_eq!(remote.worker_config().batch_size, WorkerConfig::REMOTE_BATCH_SIZE);
        // The schema's limits are the worker's.
        assert_eq!(
            crate::settings::schema::limits("max_attempts"),
            (1, u64::from(WorkerConfig::MAX_ATTEMPTS.max))
        );
        assert_eq!(
            crate::settings::schema::number_limits("retry_factor"),
            (1.0, 100.0)
        );
    }

    #[test]
    fn openai_at_openai_needs_a_key() {
        let r = Settings {
            provider: Provider::OpenAi,
            ..Settings::default()
        }
        .resolve(&Environment::default(), &Overrides::new())
        .unwrap();
        let err = r.build(HashMap::new()).err().expect("no key must be refused");
        assert!(err.to_string().contains("SITETRAIL_API_KEY"), "{err}");
    }
}
