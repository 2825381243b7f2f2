//! Web search through a provider's own search tool (OpenAI's `web_search`, Anthropic's
//! `web_search_20250305`), within `[web]`'s limits: the domains it allows and denies (asked of the provider,
//! and enforced again on what comes back) and a cap on results.

use serde::Serialize;
use serde_json::{Value, json};

use super::{Provider, ProviderError, ProviderKind};
use crate::config::providers::WebConfig;

/// One page the search found.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct WebResult {
    pub url: String,
    pub title: String,
    /// The provider's words about the page (the text that cites it), possibly empty.
    pub snippet: String,
    /// When the search ran (RFC 3339, UTC).
    pub retrieved_at: String,
    pub provider: String,
}

impl Provider {
    /// Searches the web for `query` with the provider's own tool; results outside `web`'s domains are
    /// dropped, repeats removed, and at most `max_results` kept.
    pub fn web_search(&self, query: &str, web: &WebConfig) -> Result<Vec<WebResult>, ProviderError> {
        let base = self.base_url.trim_end_matches('/');
        let prompt = format!("Search the web for: {query}\nCite the most relevant pages.");
        let (url, body) = match self.kind {
            ProviderKind::OpenAi => {
                let mut tool = json!({"type": "web_search"});
                if !web.allow_domains.is_empty() {
                    tool["filters"] = json!({"allowed_domains": web.allow_domains});
                }
                (format!("{base}/responses"), json!({"model": self.model, "input": prompt, "tools": [tool]}))
            }
            ProviderKind::Anthropic => {
                let mut tool = json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 1});
                // The tool takes one list or the other; the deny list is enforced below either way.
                if !web.allow_domains.is_empty() {
                    tool["allowed_domains"] = json!(web.allow_domains);
                } else if !web.deny_domains.is_empty() {
                    tool["blocked_domains"] = json!(web.deny_domains);
                }
                let body = json!({"model": self.model, "max_tokens": 1024, "tools": [tool],
                                  "messages": [{"role": "user", "content": prompt}]});
                (format!("{base}/messages"), body)
            }
            ProviderKind::DeepSeek | ProviderKind::OpenAiCompatible => {
                return Err(ProviderError::NoWebSearch { provider: self.name.clone(), kind: self.kind.as_str() });
            }
        };
        let client = super::http::Client::new(self.timeout_seconds, self.max_retries);
        let text = client.post_json(&url, &self.headers()?, &body)?;
        let answer: Value = serde_json::from_str(&text)
            .map_err(|e| ProviderError::Answer { url: url.clone(), missing: format!("no JSON: {e}") })?;
        let found = match self.kind {
            ProviderKind::OpenAi => openai_results(&answer),
            _ => anthropic_results(&answer),
        };
        let retrieved_at = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        let mut results: Vec<WebResult> = Vec::new();
        for (url, title, snippet) in found {
            if !allowed(&url, web) || results.iter().any(|r| r.url == url) {
                continue;
            }
            let provider = self.name.clone();
            results.push(WebResult { url, title, snippet, retrieved_at: retrieved_at.clone(), provider });
        }
        results.truncate(web.max_results as usize);
        Ok(results)
    }
}

/// OpenAI's answer: each `url_citation` annotation of its output text, with the text it annotates.
fn openai_results(answer: &Value) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    for item in answer["output"].as_array().into_iter().flatten() {
        for content in item["content"].as_array().into_iter().flatten() {
            let text = content["text"].as_str().unwrap_or_default();
            for note in content["annotations"].as_array().into_iter().flatten() {
                if note["type"] != "url_citation" {
                    continue;
                }
                let span = |key: &str| note[key].as_u64().and_then(|at| usize::try_from(at).ok());
                let snippet = match (span("start_index"), span("end_index")) {
                    (Some(start), Some(end)) => text.get(start..end).unwrap_or_default(),
                    _ => "",
                };
                let field = |key: &str| note[key].as_str().unwrap_or_default().to_string();
                found.push((field("url"), field("title"), snippet.trim().to_string()));
            }
        }
    }
    found
}

/// Anthropic's answer: each `web_search_result`, with the text its citations quote.
fn anthropic_results(answer: &Value) -> Vec<(String, String, String)> {
    let blocks = answer["content"].as_array().cloned().unwrap_or_default();
    let cited = |url: &str| -> String {
        let quotes = blocks.iter().flat_map(|block| block["citations"].as_array().cloned().unwrap_or_default());
        quotes
            .filter(|citation| citation["url"] == url)
            .filter_map(|citation| citation["cited_text"].as_str().map(str::to_string))
            .next()
            .unwrap_or_default()
    };
    let mut found = Vec::new();
    for block in blocks.iter().filter(|block| block["type"] == "web_search_tool_result") {
        for result in block["content"].as_array().into_iter().flatten() {
            let url = result["url"].as_str().unwrap_or_default().to_string();
            let title = result["title"].as_str().unwrap_or_default().to_string();
            let snippet = cited(&url);
            found.push((url, title, snippet));
        }
    }
    found
}

/// Whether `url` is an http(s) page on an allowed, not denied, domain (a domain covers its subdomains).
fn allowed(url: &str, web: &WebConfig) -> bool {
    let Some(rest) = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://")) else { return false };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
    let host = host.split(':').next().unwrap_or_default().to_ascii_lowercase();
    let under = |domain: &String| {
        let domain = domain.trim().trim_start_matches('.').to_ascii_lowercase();
        host == domain || host.ends_with(&format!(".{domain}"))
    };
    !host.is_empty()
        && (web.allow_domains.is_empty() || web.allow_domains.iter().any(under))
        && !web.deny_domains.iter().any(under)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains_cover_their_subdomains_and_the_deny_list_wins() {
        let web = WebConfig {
            enabled: true,
            allow_domains: vec!["rust-lang.org".into(), "docs.rs".into()],
            deny_domains: vec!["blog.rust-lang.org".into()],
            max_results: 5,
        };
        assert!(allowed("https://doc.rust-lang.org/book/ch04-01.html", &web));
        assert!(allowed("https://docs.rs/serde", &web));
        assert!(!allowed("https://blog.rust-lang.org/2024/x.html", &web));
        assert!(!allowed("https://evil-rust-lang.org/", &web), "not a subdomain");
        assert!(!allowed("https://rust-lang.org.evil.com/", &web));
        assert!(!allowed("https://user@evil.com/?rust-lang.org", &web));
        assert!(!allowed("file:///etc/passwd", &web));
    }
}
