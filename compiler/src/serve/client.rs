//! The client side of `knowledge serve --http`: with `KNOWLEDGE_API_URL` (or `[remote] url` in kc.toml) set,
//! `knowledge search`, `get`, `context pack` and `ask` send their question to that server's MCP tools and
//! print its answer as they print their own. The bearer token comes from `KNOWLEDGE_API_KEY` (or the
//! variable `[remote] api_key_env` names), never from a file or an argument.
//!
//! It speaks MCP's streamable HTTP as the server does: `initialize`, the `initialized` notification with the
//! session id the server gave, then one `tools/call` per question; an answer comes as JSON or as server-sent
//! events, and either is read.

use serde_json::{Value, json};

/// The variables a remote server is named by.
pub const URL_VARIABLE: &str = "KNOWLEDGE_API_URL";
pub const KEY_VARIABLE: &str = "KNOWLEDGE_API_KEY";

/// Why a call to a remote server failed; each names the server's URL.
#[derive(Debug, thiserror::Error)]
pub enum RemoteCallError {
    #[error("{url}: {error}")]
    Transport { url: String, error: ureq::Error },
    #[error("{url}: no answer to `{tool}`")]
    NoAnswer { url: String, tool: String },
    /// The server's JSON-RPC error, or the text of a tool result marked as an error.
    #[error("{url}: {message}")]
    Refused { url: String, message: String },
    #[error("{url}: `{tool}` gave no structured answer")]
    Unstructured { url: String, tool: String },
    #[error(
        "{url}: the server refused the bearer token given (`{KEY_VARIABLE}`, or `[remote] api_key_env`): check its value"
    )]
    BadToken { url: String },
    #[error("{url}: the server wants a bearer token: set `{KEY_VARIABLE}`")]
    NoToken { url: String },
    #[error("{url} answered {status}: {text}")]
    Status { url: String, status: u16, text: String },
    #[error("{url}: not a JSON answer: {error}")]
    NotJson { url: String, error: serde_json::Error },
}

/// A session with a remote server.
pub struct Remote {
    url: String,
    key: Option<String>,
    agent: ureq::Agent,
    session: Option<String>,
}

impl Remote {
    /// Opens a session with the server at `url` (`http://HOST:PORT/mcp`), with the bearer `key` if any.
    pub fn connect(url: &str, key: Option<String>) -> Result<Remote, RemoteCallError> {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(std::time::Duration::from_secs(120)))
            .http_status_as_error(false)
            .build()
            .into();
        let mut remote = Remote { url: url.to_string(), key, agent, session: None };
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "knowledge", "version": env!("CARGO_PKG_VERSION")}}});
        remote.post(&initialize)?;
        remote.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(remote)
    }

    /// Calls `tool` with `arguments`: its structured answer, or the error the server gave.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Result<Value, RemoteCallError> {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                             "params": {"name": tool, "arguments": arguments}});
        let answered = self.post(&request)?;
        let url = || self.url.clone();
        let answer = answered.ok_or_else(|| RemoteCallError::NoAnswer { url: url(), tool: tool.to_string() })?;
        if let Some(error) = answer.get("error") {
            let message = error["message"].as_str().unwrap_or("error").to_string();
            return Err(RemoteCallError::Refused { url: url(), message });
        }
        let result = &answer["result"];
        if result["isError"] == true {
            let message = result["content"][0]["text"].as_str().unwrap_or("the tool failed").to_string();
            return Err(RemoteCallError::Refused { url: url(), message });
        }
        result
            .get("structuredContent")
            .cloned()
            .ok_or_else(|| RemoteCallError::Unstructured { url: url(), tool: tool.to_string() })
    }

    /// POSTs one message; the JSON-RPC answer to it, if it has an id.
    fn post(&mut self, message: &Value) -> Result<Option<Value>, RemoteCallError> {
        let mut request = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        if let Some(key) = &self.key {
            request = request.header("Authorization", format!("Bearer {key}"));
        }
        if let Some(session) = &self.session {
            request = request.header("Mcp-Session-Id", session);
        }
        let response =
            request.send_json(message).map_err(|error| RemoteCallError::Transport { url: self.url.clone(), error })?;
        let status = response.status().as_u16();
        if let Some(session) = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            self.session = Some(session.to_string());
        }
        let event_stream = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let text = response
            .into_body()
            .read_to_string()
            .map_err(|error| RemoteCallError::Transport { url: self.url.clone(), error })?;
        let url = self.url.clone();
        match status {
            401 if self.key.is_some() => return Err(RemoteCallError::BadToken { url }),
            401 => return Err(RemoteCallError::NoToken { url }),
            200..300 => {}
            _ => return Err(RemoteCallError::Status { url, status, text: text.trim().to_string() }),
        }
        let Some(id) = message.get("id") else { return Ok(None) };
        let messages: Vec<Value> = if event_stream {
            text.lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str(data.trim()).ok())
                .collect()
        } else if text.trim().is_empty() {
            Vec::new()
        } else {
            vec![
                serde_json::from_str(&text)
                    .map_err(|error| RemoteCallError::NotJson { url: self.url.clone(), error })?,
            ]
        };
        Ok(messages.into_iter().find(|answer| answer.get("id") == Some(id)))
    }
}
