//! Model providers, bring your own key: the registry `[providers.NAME]` configures (OpenAI, Anthropic,
//! DeepSeek, any OpenAI-compatible server), each with a default model, aliases and the environment variable
//! its key comes from. Keys are read from the environment when a call needs them, and never stored,
//! logged or printed. `http.rs` is the client every provider call shares, the embeddings' included.

mod generate;
pub mod http;
pub mod ingest;
pub mod s3;
mod web;

pub use generate::{Generation, Prompt};
pub use web::WebResult;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::config::Project;
pub use crate::config::providers::ProviderKind;

/// Anthropic's API version header, as its API reference requires on every request.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A configured provider, its defaults filled in.
#[derive(Debug, Clone, Serialize)]
pub struct Provider {
    pub name: String,
    pub kind: ProviderKind,
    pub base_url: String,
    pub model: String,
    pub aliases: BTreeMap<String, String>,
    /// The variable the key is read from; `None` for a server that needs no key.
    pub api_key_env: Option<String>,
    pub default: bool,
    pub prices: Option<crate::config::providers::Prices>,
    #[serde(skip)]
    timeout_seconds: u32,
    #[serde(skip)]
    max_retries: u32,
}

/// Whether a provider's key is where the configuration says, without calling anyone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyStatus {
    Present,
    Missing,
    NotNeeded,
}

/// The providers `kc.toml` configures, sorted by name. With one provider, it is the default.
#[must_use]
pub fn configured(project: &Project) -> Vec<Provider> {
    let providers = &project.config.providers;
    let single = providers.len() == 1;
    providers
        .iter()
        .map(|(name, config)| Provider {
            name: name.get_ref().clone(),
            kind: config.kind,
            base_url: config.base_url.as_ref().map_or_else(
                || config.kind.default_base_url().unwrap_or_default().to_string(),
                |url| url.get_ref().clone(),
            ),
            model: config.model.clone(),
            aliases: config.aliases.clone(),
            api_key_env: config.api_key_env.clone().or_else(|| config.kind.default_key_env().map(str::to_string)),
            default: single || config.default.as_ref().is_some_and(|flag| *flag.get_ref()),
            prices: config.prices,
            timeout_seconds: config.timeout_seconds,
            max_retries: config.max_retries,
        })
        .collect()
}

/// Why a provider call failed, or a provider could not be chosen.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("no provider `{name}` in kc.toml; the providers are: {known}")]
    Unknown { name: String, known: String },
    #[error("kc.toml configures no provider: add a [providers.NAME] table")]
    NoneConfigured,
    #[error("kc.toml configures several providers and none is the default: name one ({known})")]
    NoDefault { known: String },
    #[error("provider `{provider}` needs a key: set the environment variable `{variable}`")]
    MissingKey { provider: String, variable: String },
    #[error("provider `{provider}` ({kind}) has no web search tool: use an `openai` or `anthropic` provider")]
    NoWebSearch { provider: String, kind: &'static str },
    #[error(transparent)]
    Http(#[from] http::HttpError),
    /// An answer that does not hold what was asked for.
    #[error("{url} answered with {missing}")]
    Answer { url: String, missing: String },
    /// A stream the provider ended with an error, or cut off at the cap.
    #[error("{url}: {problem}")]
    Stream { url: String, problem: String },
}

/// The provider `name` names, or the default one.
pub fn find(project: &Project, name: Option<&str>) -> Result<Provider, ProviderError> {
    let providers = configured(project);
    let known = || providers.iter().map(|p| format!("`{}`", p.name)).collect::<Vec<_>>().join(", ");
    match name {
        Some(name) => providers
            .iter()
            .find(|p| p.name == name)
            .cloned()
            .ok_or_else(|| ProviderError::Unknown { name: name.to_string(), known: known() }),
        None if providers.is_empty() => Err(ProviderError::NoneConfigured),
        None => {
            providers.iter().find(|p| p.default).cloned().ok_or_else(|| ProviderError::NoDefault { known: known() })
        }
    }
}

impl Provider {
    #[must_use]
    pub fn key_status(&self) -> KeyStatus {
        match &self.api_key_env {
            None => KeyStatus::NotNeeded,
            Some(variable) if std::env::var(variable).is_ok_and(|key| !key.trim().is_empty()) => KeyStatus::Present,
            Some(_) => KeyStatus::Missing,
        }
    }

    /// The model an alias names, or the name itself; the provider's default model for `None`.
    #[must_use]
    pub fn model_for<'a>(&'a self, name: Option<&'a str>) -> &'a str {
        match name {
            Some(name) => self.aliases.get(name).map_or(name, String::as_str),
            None => &self.model,
        }
    }

    /// What `input` and `output` tokens cost, when kc.toml gives the provider's prices.
    #[must_use]
    pub fn cost(&self, input: u64, output: u64) -> Option<f64> {
        self.prices.map(|prices| (input as f64 * prices.input + output as f64 * prices.output) / 1_000_000.0)
    }

    /// Checks that the key is in the environment, without keeping it; an error names the variable to set.
    pub fn check_key(&self) -> Result<(), ProviderError> {
        self.key().map(drop)
    }

    /// The key, read from the environment now; an error names the variable to set.
    fn key(&self) -> Result<Option<String>, ProviderError> {
        match &self.api_key_env {
            None => Ok(None),
            Some(variable) => match std::env::var(variable) {
                Ok(key) if !key.trim().is_empty() => Ok(Some(key)),
                _ => Err(ProviderError::MissingKey { provider: self.name.clone(), variable: variable.clone() }),
            },
        }
    }

    /// The headers that authenticate a request in this provider's wire format.
    fn headers(&self) -> Result<Vec<(&'static str, String)>, ProviderError> {
        let key = self.key()?;
        Ok(match self.kind {
            ProviderKind::Anthropic => {
                let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION.to_string())];
                headers.extend(key.map(|key| ("x-api-key", key)));
                headers
            }
            _ => key.map(|key| ("Authorization", format!("Bearer {key}"))).into_iter().collect(),
        })
    }

    /// The models the provider serves (`GET {base_url}/models`), sorted.
    pub fn models(&self) -> Result<Vec<String>, ProviderError> {
        let url = format!("{}/models", self.base_url.trim_end_matches('/'));
        let client = http::Client::new(self.timeout_seconds, self.max_retries);
        let text = client.get(&url, &self.headers()?)?;
        let missing = |missing: String| ProviderError::Answer { url: url.clone(), missing };
        let answer: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| missing(format!("no model list: {e}")))?;
        let listed = answer["data"].as_array().ok_or_else(|| missing("no `data` list".to_string()))?;
        let mut models: Vec<String> =
            listed.iter().filter_map(|model| model["id"].as_str().map(str::to_string)).collect();
        models.sort();
        Ok(models)
    }
}
