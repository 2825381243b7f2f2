//! `[providers.NAME]`: the model providers that generate answers, bring your own key. The file names the
//! environment variable a key is read from, never the key. See docs/agents.md.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};
use toml::Spanned;

/// One provider: its wire format, endpoint, default model, model aliases and where its key comes from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// The endpoint up to and including its version (`https://api.openai.com/v1`); each kind but
    /// `openai-compatible` has a default.
    pub base_url: Option<Spanned<String>>,
    /// The model asked when none is named.
    pub model: String,
    /// Short names for models (`fast = "gpt-4.1-mini"`).
    #[serde(default)]
    pub aliases: BTreeMap<String, String>,
    /// The environment variable holding the key; each kind but `openai-compatible` has a default
    /// (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `DEEPSEEK_API_KEY`). A local server needs none.
    pub api_key_env: Option<String>,
    /// The provider used when none is named (at most one); a single provider is the default anyway.
    pub default: Option<Spanned<bool>>,
    /// US dollars per million tokens, for the cost a run records.
    pub prices: Option<Prices>,
    /// Seconds before a request is abandoned (then retried).
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u32,
    /// Retries after a timeout, a connection failure, 429 or a 5xx, with exponential backoff.
    #[serde(default = "default_retries")]
    pub max_retries: u32,
}

/// A model's prices, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
}

fn default_timeout() -> u32 {
    60
}

fn default_retries() -> u32 {
    3
}

/// The wire formats `knowledge` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum ProviderKind {
    /// OpenAI's API.
    #[serde(rename = "openai")]
    OpenAi,
    /// Anthropic's Messages API.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// DeepSeek's API (OpenAI's wire format).
    #[serde(rename = "deepseek")]
    DeepSeek,
    /// Any server with OpenAI's wire format: llama.cpp, vLLM, Ollama, a gateway.
    #[serde(rename = "openai-compatible")]
    OpenAiCompatible,
}

impl ProviderKind {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::DeepSeek => "deepseek",
            ProviderKind::OpenAiCompatible => "openai-compatible",
        }
    }

    #[must_use]
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            ProviderKind::OpenAi => Some("https://api.openai.com/v1"),
            ProviderKind::Anthropic => Some("https://api.anthropic.com/v1"),
            ProviderKind::DeepSeek => Some("https://api.deepseek.com"),
            ProviderKind::OpenAiCompatible => None,
        }
    }

    #[must_use]
    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            ProviderKind::OpenAi => Some("OPENAI_API_KEY"),
            ProviderKind::Anthropic => Some("ANTHROPIC_API_KEY"),
            ProviderKind::DeepSeek => Some("DEEPSEEK_API_KEY"),
            ProviderKind::OpenAiCompatible => None,
        }
    }
}

/// Checks the providers: names, endpoints, one default. `invalid` makes the error at a span of kc.toml.
pub(super) fn validate<E>(
    providers: &BTreeMap<Spanned<String>, ProviderConfig>,
    invalid: impl Fn(Option<Range<usize>>, String) -> E,
) -> Result<(), E> {
    let mut default: Option<&Spanned<String>> = None;
    for (name, provider) in providers {
        let valid_name = name.get_ref().bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !valid_name {
            return Err(invalid(
                Some(name.span()),
                format!("provider name `{}`: use letters, digits, `-` and `_`", name.get_ref()),
            ));
        }
        match &provider.base_url {
            Some(url) if !(url.get_ref().starts_with("http://") || url.get_ref().starts_with("https://")) => {
                return Err(invalid(Some(url.span()), "`base_url` must start with http:// or https://".to_string()));
            }
            None if provider.kind.default_base_url().is_none() => {
                return Err(invalid(
                    Some(name.span()),
                    format!("[providers.{}] kind \"openai-compatible\" needs `base_url`", name.get_ref()),
                ));
            }
            _ => {}
        }
        if provider.model.trim().is_empty() {
            return Err(invalid(Some(name.span()), format!("[providers.{}] needs a `model`", name.get_ref())));
        }
        if let Some(flag) = provider.default.as_ref().filter(|flag| *flag.get_ref()) {
            if let Some(first) = default {
                return Err(invalid(
                    Some(flag.span()),
                    format!("`{}` is already the default provider; only one may be", first.get_ref()),
                ));
            }
            default = Some(name);
        }
    }
    Ok(())
}

/// `[web]`: whether `knowledge web search` may ask a provider to search the web, and within which limits.
/// Off unless turned on: nothing is searched silently.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebConfig {
    pub enabled: bool,
    /// Only results from these domains (and their subdomains), when any are given.
    pub allow_domains: Vec<String>,
    /// Never results from these domains (and their subdomains).
    pub deny_domains: Vec<String>,
    /// At most this many results.
    pub max_results: u32,
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig { enabled: false, allow_domains: Vec::new(), deny_domains: Vec::new(), max_results: 5 }
    }
}
