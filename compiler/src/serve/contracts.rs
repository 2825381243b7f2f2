//! The remote contract: what a server answering `knowledge search|get|ask|context pack` and the run ledger
//! for remote clients implements, as a machine-readable document (`knowledge remote contracts`). It is read
//! off this server's own tools, so `knowledge serve --http` conforms to it by construction, and a hosted
//! service that implements it is one the command line's remote client can use.

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{KnowledgeServer, ProjectContext};

/// The document's schema name and version.
pub const SCHEMA: &str = "knowledge-remote-contracts";
pub const SCHEMA_VERSION: u32 = 1;

/// One operation: its name, the MCP tool that performs it, the arguments it always passes, and the tool's
/// schemas.
#[derive(Debug, Clone, Serialize)]
pub struct Endpoint {
    pub name: &'static str,
    pub tool: String,
    pub description: String,
    /// Arguments the operation fixes (`runs` is `knowledge_list` with `kind: runs`).
    pub fixed_arguments: Value,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
}

/// The operations, each with its tool and fixed arguments.
const OPERATIONS: [(&str, &str, &str); 9] = [
    ("search", "knowledge_search", "{}"),
    ("get", "knowledge_get", "{}"),
    ("ask", "knowledge_ask", "{}"),
    ("context_pack", "knowledge_context_pack", "{}"),
    ("build_status", "knowledge_run_status", "{}"),
    ("runs", "knowledge_list", r#"{"kind": "runs"}"#),
    ("logs", "knowledge_recent_changes", "{}"),
    ("artifacts", "knowledge_storage", "{}"),
    ("status", "knowledge_stats", "{}"),
];

/// The contract document.
#[must_use]
pub fn document() -> Value {
    let tools = KnowledgeServer::new(None, None, ProjectContext::default()).tool_router.list_all();
    let endpoints: Vec<Endpoint> = OPERATIONS
        .iter()
        .map(|&(name, tool, fixed)| {
            let found =
                tools.iter().find(|t| t.name == tool).expect("every contract operation is a tool of this server");
            Endpoint {
                name,
                tool: tool.to_string(),
                description: found.description.as_deref().unwrap_or_default().to_string(),
                fixed_arguments: serde_json::from_str(fixed).expect("fixed arguments are JSON"),
                input_schema: Value::Object(Map::clone(&found.input_schema)),
                output_schema: found.output_schema.as_ref().map(|schema| Value::Object(Map::clone(schema))),
            }
        })
        .collect();
    json!({
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "server_version": env!("CARGO_PKG_VERSION"),
        "read_only": true,
        "transport": {
            "protocol": "mcp",
            "binding": "streamable-http",
            "mcp_protocol_version": "2025-06-18",
            "endpoint": "the API URL itself (`knowledge serve --http` serves http://ADDRESS/mcp)",
            "request": "tools/call with the operation's tool, its fixed arguments and the caller's",
            "answer": "the tool result's structuredContent, which follows output_schema; isError with a text on failure",
            "auth": {
                "scheme": "bearer",
                "header": "Authorization: Bearer KEY",
                "key_from": ["KNOWLEDGE_API_KEY", "the credentials file `knowledge setup --mode hosted` writes"],
                "unauthorized": "401 with WWW-Authenticate: Bearer",
            },
        },
        "endpoints": endpoints,
    })
}
