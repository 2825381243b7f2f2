//! How `knowledge serve` meets its clients: stdio, or streamable HTTP on loopback. Both check each JSON-RPC
//! message's envelope before rmcp sees it, so a malformed request with an id gets an error reply naming
//! that id (-32600, or -32700 for text that is not JSON) instead of silence, and the server keeps serving.
//! Over HTTP the server also caps its connections, survives a failing `accept` (out of file descriptors,
//! say), and refuses requests whose `Origin` is not a loopback page.

use std::sync::Arc;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use super::KnowledgeServer;

/// Connections served at once over HTTP; past this, new ones wait in the listen backlog.
const MAX_CONNECTIONS: usize = 512;
/// The largest request body accepted over HTTP (rmcp's own default).
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The JSON-RPC error reply to one incoming message, or `None` when its envelope is sound (rmcp answers
/// it). Sound means: a JSON object with `"jsonrpc": "2.0"`; a string `method` if it has one; an object
/// `params` if it has them (MCP passes parameters by name); an `id` that is a string, a number or absent.
/// A batch (an array) is left to rmcp.
#[must_use]
pub(crate) fn envelope_error(message: &[u8]) -> Option<serde_json::Value> {
    let reply = |id: serde_json::Value, code: i64, message: &str| {
        Some(serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
    };
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(message) else {
        return reply(serde_json::Value::Null, -32700, "Parse error: the message is not JSON");
    };
    if value.is_array() {
        return None;
    }
    let Some(object) = value.as_object() else {
        return reply(serde_json::Value::Null, -32600, "Invalid Request: a message is a JSON object");
    };
    let id = object.get("id").cloned().unwrap_or(serde_json::Value::Null);
    let id_ok = matches!(id, serde_json::Value::Null | serde_json::Value::String(_) | serde_json::Value::Number(_));
    let reply_id = if id_ok { id.clone() } else { serde_json::Value::Null };
    let problem = if object.get("jsonrpc").and_then(serde_json::Value::as_str) != Some("2.0") {
        Some("Invalid Request: `jsonrpc` must be \"2.0\"")
    } else if !id_ok {
        Some("Invalid Request: `id` must be a string or a number")
    } else if object.get("method").is_some_and(|m| !m.is_string()) {
        Some("Invalid Request: `method` must be a string")
    } else if object.get("params").is_some_and(|p| !p.is_object()) {
        Some("Invalid Request: `params` must be an object")
    } else if !object.contains_key("method") && !object.contains_key("result") && !object.contains_key("error") {
        Some("Invalid Request: a message has a `method`, a `result` or an `error`")
    } else {
        None
    };
    problem.and_then(|problem| reply(reply_id, -32600, problem))
}

/// Serves MCP over stdin and stdout until the client disconnects. Lines whose envelope is unsound are
/// answered here; the rest go to rmcp, and both kinds of reply leave through one writer, a line at a time.
pub async fn serve_stdio(server: KnowledgeServer) -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    let (to_server, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, from_server) = tokio::io::duplex(1 << 16);
    let (replies, mut outgoing) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();

    // Client to server: check each line, forward the sound ones.
    let errors = replies.clone();
    let reader = tokio::spawn(async move {
        let mut to_server = to_server;
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.trim().is_empty() {
                continue;
            }
            match envelope_error(line.as_bytes()) {
                Some(error) => {
                    let _ = errors.send(format!("{error}\n").into_bytes());
                }
                None => {
                    if to_server.write_all(format!("{line}\n").as_bytes()).await.is_err() {
                        break;
                    }
                }
            }
        }
        // Dropping the writer tells rmcp the client is gone.
    });
    // Server to client: rmcp's lines join the error replies.
    let forwarder = tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(from_server).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if replies.send(format!("{line}\n").into_bytes()).is_err() {
                break;
            }
        }
    });
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = outgoing.recv().await {
            if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    let service = server.serve((server_in, server_out)).await?;
    service.waiting().await?;
    reader.abort();
    let _ = forwarder.await;
    let _ = writer.await;
    Ok(())
}

/// Serves MCP over streamable HTTP at `http://ADDRESS/mcp` until the process is stopped. The address must
/// be a loopback address unless `allow_remote` is set; on loopback, requests must name a loopback host
/// (`localhost`, `127.0.0.1`, `::1`), which keeps web pages from reaching the server through DNS rebinding,
/// and a request from a browser page (an `Origin` header) must come from a loopback page too.
pub async fn serve_http(
    server: KnowledgeServer,
    address: std::net::SocketAddr,
    allow_remote: bool,
    token: Option<String>,
) -> anyhow::Result<()> {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

    anyhow::ensure!(
        allow_remote || address.ip().is_loopback(),
        "refusing to serve on `{address}`, which is not a loopback address (pass --allow-remote to serve other hosts)"
    );
    anyhow::ensure!(
        address.ip().is_loopback() || token.is_some(),
        "refusing to serve on `{address}` without a bearer token: off loopback, --token-env NAME is required"
    );
    let token: Option<Arc<str>> = token.map(Arc::from);
    let mut config = StreamableHttpServerConfig::default();
    config = if allow_remote {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_origins(["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"])
    };
    let service = Arc::new(StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    ));
    let listener = tokio::net::TcpListener::bind(address).await?;
    // The bound address goes to stderr, so that a caller that asked for port 0 learns the port.
    eprintln!("knowledge: serving MCP at http://{}/mcp", listener.local_addr()?);
    let connections = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        // A permit first: at the cap, new connections wait in the kernel's backlog, not in memory.
        let permit = connections.clone().acquire_owned().await?;
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of file descriptors, a connection reset before it was accepted: the listener is
                // fine. Say so, give the process a moment to close connections, and accept again.
                eprintln!("knowledge: cannot accept a connection: {error}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let service = service.clone();
        let token = token.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let io = hyper_util::rt::TokioIo::new(stream);
            let handler = hyper::service::service_fn(move |request| {
                let service = service.clone();
                let token = token.clone();
                async move {
                    if !bearer_matches(&request, token.as_deref()) {
                        return Ok::<_, std::convert::Infallible>(unauthorized());
                    }
                    Ok::<_, std::convert::Infallible>(answer(&service, request).await)
                }
            });
            // A connection that fails is that client's problem; the server keeps accepting.
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, handler).await;
        });
    }
}

type Response = hyper::Response<http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>>;

/// One HTTP request: a POST body is read (up to [`MAX_BODY_BYTES`]) and its envelope checked before rmcp
/// handles it.
async fn answer<S, M>(
    service: &rmcp::transport::streamable_http_server::StreamableHttpService<S, M>,
    request: hyper::Request<hyper::body::Incoming>,
) -> Response
where
    S: rmcp::ServerHandler + Send + 'static,
    M: rmcp::transport::streamable_http_server::SessionManager,
{
    if request.method() != hyper::Method::POST {
        return service.handle(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => return plain(hyper::StatusCode::PAYLOAD_TOO_LARGE, &format!("cannot read the body: {error}")),
    };
    if let Some(error) = envelope_error(&bytes) {
        return hyper::Response::builder()
            .status(hyper::StatusCode::BAD_REQUEST)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(error.to_string())).boxed())
            .expect("a valid response");
    }
    service.handle(hyper::Request::from_parts(parts, Full::new(bytes))).await
}

/// Whether the request carries the server's bearer token (always, when the server has none). The bytes are
/// compared in full whatever they hold, so the time a refusal takes says nothing about the token.
fn bearer_matches<B>(request: &hyper::Request<B>, token: Option<&str>) -> bool {
    let Some(token) = token else { return true };
    let given = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .unwrap_or_default();
    let (given, expected) = (given.as_bytes(), token.as_bytes());
    let differences = given.iter().zip(expected).fold(0u8, |acc, (a, b)| acc | (a ^ b));
    given.len() == expected.len() && differences == 0
}

fn unauthorized() -> Response {
    hyper::Response::builder()
        .status(hyper::StatusCode::UNAUTHORIZED)
        .header(hyper::header::WWW_AUTHENTICATE, "Bearer")
        .header(hyper::header::CONTENT_TYPE, "text/plain")
        .body(Full::new(Bytes::from("a bearer token is required (Authorization: Bearer TOKEN)")).boxed())
        .expect("a valid response")
}

fn plain(status: hyper::StatusCode, text: &str) -> Response {
    hyper::Response::builder()
        .status(status)
        .header(hyper::header::CONTENT_TYPE, "text/plain")
        .body(Full::new(Bytes::from(text.to_string())).boxed())
        .expect("a valid response")
}

#[cfg(test)]
mod tests {
    use super::{bearer_matches, envelope_error};

    #[test]
    fn only_the_servers_token_opens_it() {
        let request = |value: Option<&str>| {
            let mut builder = hyper::Request::builder();
            if let Some(value) = value {
                builder = builder.header("Authorization", value);
            }
            builder.body(()).unwrap()
        };
        assert!(bearer_matches(&request(None), None), "no token: open, as on loopback");
        assert!(bearer_matches(&request(Some("Bearer s3cret")), Some("s3cret")));
        for wrong in [None, Some("Bearer s3cre"), Some("Bearer s3cretx"), Some("Basic s3cret"), Some("s3cret")] {
            assert!(!bearer_matches(&request(wrong), Some("s3cret")), "{wrong:?}");
        }
    }

    fn code_and_id(message: &str) -> Option<(i64, serde_json::Value)> {
        envelope_error(message.as_bytes()).map(|e| (e["error"]["code"].as_i64().unwrap(), e["id"].clone()))
    }

    #[test]
    fn a_bad_envelope_is_answered_with_its_id() {
        let id = |n: i64| serde_json::json!(n);
        assert_eq!(code_and_id(r#"{"jsonrpc":"1.0","id":2,"method":"tools/list"}"#), Some((-32600, id(2))));
        assert_eq!(code_and_id(r#"{"jsonrpc":"2.0","id":3,"method":5}"#), Some((-32600, id(3))));
        assert_eq!(code_and_id(r#"{"jsonrpc":"2.0","id":4,"method":"x","params":[1]}"#), Some((-32600, id(4))));
        assert_eq!(code_and_id(r#"{"jsonrpc":"2.0","id":"s"}"#), Some((-32600, serde_json::json!("s"))));
        assert_eq!(code_and_id(r#"{"jsonrpc":"2.0","id":[1],"method":"x"}"#), Some((-32600, serde_json::Value::Null)));
        assert_eq!(code_and_id("garbage"), Some((-32700, serde_json::Value::Null)));
        assert_eq!(code_and_id("7"), Some((-32600, serde_json::Value::Null)));
    }

    #[test]
    fn a_sound_message_is_left_to_rmcp() {
        for message in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
        ] {
            assert_eq!(envelope_error(message.as_bytes()), None, "{message}");
        }
    }
}
