//! Which classifier answers: the [`Provider`] setting's values.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Which classifier answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    /// Local rules, no network.
    #[default]
    Builtin,
    /// An OpenAI-compatible server.
    #[serde(rename = "openai")]
    OpenAi,
    /// A local Ollama.
    Ollama,
}

impl Provider {
    /// Every provider's name, as settings, flags and env vars take them.
    pub const NAMES: &'static [&'static str] = &["builtin", "openai", "ollama"];

    /// The name used in settings, flags and env vars.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Builtin => "builtin",
            Provider::OpenAi => "openai",
            Provider::Ollama => "ollama",
        }
    }

    /// True for providers reached over HTTP.
    pub fn is_remote(self) -> bool {
        self != Provider::Builtin
    }
}

impl std::str::FromStr for Provider {
    type Err = Error;
    fn from_str(s: &str) -> Result<Provider> {
        match s.trim().to_ascii_lowercase().as_str() {
            "builtin" => Ok(Provider::Builtin),
            "openai" => Ok(Provider::OpenAi),
            "ollama" => Ok(Provider::Ollama),
            other => Err(Error::InvalidInput(format!(
                "provider must be builtin, openai or ollama, not {other:?}"
            ))),
        }
    }
}
