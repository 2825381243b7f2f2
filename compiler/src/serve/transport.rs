//! How `knowledge serve` meets its clients: stdio, or streamable HTTP on loopback. Both check each JSON-RPC
//! message's envelope before rmcp sees it, so a malformed request with an id gets an error reply naming
//! that id (-32600, or -32700 for text that is not JSON) instead of silence, and the server keeps serving.
//! Over HTTP the server also caps its connections and its sessions, drops a connection that sends no request
//! in time, survives a failing `accept` (out of file descriptors, say), and refuses requests whose `Origin`
//! is not a loopback page. docs/deployment.md states these limits.

use std::sync::Arc;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

use super::KnowledgeServer;

/// Connections served at once over HTTP. At the cap, the oldest connection that has not yet sent a whole
/// request is dropped for the new one (a client that sends nothing cannot hold a slot a real one needs);
/// when every connection has sent one, new ones wait in the listen backlog.
pub(crate) const MAX_CONNECTIONS: usize = 512;
/// The largest request body accepted over HTTP (rmcp's own default), and the longest line over stdio.
pub(crate) const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// How long a connection may take to send a request's head, counted from when the server starts waiting
/// for it: a new connection, and one idle between requests, is closed after this.
pub(crate) const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a request's body may take to arrive.
pub(crate) const BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// MCP sessions kept at once over HTTP (each holds about 80 KB until it is closed or idles out); a new
/// one past this closes the session that was used least recently.
pub(crate) const MAX_SESSIONS: usize = 256;
/// How long an unused session is kept.
pub(crate) const SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(300);

/// Methods whose request must carry `params`: without them the reply is -32602, as JSON-RPC says.
const METHODS_WITH_PARAMS: [&str; 7] = [
    "initialize",
    "tools/call",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/get",
    "completion/complete",
];

/// The JSON-RPC error reply to one incoming message, or `None` when its envelope is sound (rmcp answers
/// it). Sound means: a JSON object with `"jsonrpc": "2.0"`, no key twice (anywhere in it); a string
/// `method` if it has one; an object `params` if it has them (MCP passes parameters by name), and params
/// where the method needs them; an `id` that is a string or an integer, or absent (a notification). A batch
/// (an array) is refused: MCP 2025-06-18 has no batches.
#[must_use]
pub(crate) fn envelope_error(message: &[u8]) -> Option<serde_json::Value> {
    let reply = |id: serde_json::Value, code: i64, message: &str| {
        Some(serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
    };
    // One read gives the value and whether some object held a key twice (serde_json keeps the last one,
    // and rmcp's typed reading refuses the message, so it is answered here instead).
    let Ok(Checked { value, key_twice }) = serde_json::from_slice::<Checked>(message) else {
        return reply(serde_json::Value::Null, -32700, "Parse error: the message is not JSON (or not UTF-8)");
    };
    if value.is_array() {
        return reply(serde_json::Value::Null, -32600, "Invalid Request: batches are not supported");
    }
    let Some(object) = value.as_object() else {
        return reply(serde_json::Value::Null, -32600, "Invalid Request: a message is a JSON object");
    };
    let id = object.get("id");
    let id_ok = match id {
        None => true,
        Some(serde_json::Value::String(_)) => true,
        Some(serde_json::Value::Number(number)) => number.is_i64() || number.is_u64(),
        // JSON-RPC allows a null id only in an error reply that could not read the request's.
        Some(serde_json::Value::Null) => object.contains_key("error"),
        Some(_) => false,
    };
    let reply_id = if id_ok { id.cloned().unwrap_or(serde_json::Value::Null) } else { serde_json::Value::Null };
    let method = object.get("method");
    let problem = if object.get("jsonrpc").and_then(serde_json::Value::as_str) != Some("2.0") {
        Some("Invalid Request: `jsonrpc` must be \"2.0\"")
    } else if !id_ok {
        Some("Invalid Request: `id` must be a string or an integer")
    } else if method.is_some_and(|m| !m.is_string()) {
        Some("Invalid Request: `method` must be a string")
    } else if object.get("params").is_some_and(|p| !p.is_object()) {
        Some("Invalid Request: `params` must be an object")
    } else if method.is_none() && !object.contains_key("result") && !object.contains_key("error") {
        Some("Invalid Request: a message has a `method`, a `result` or an `error`")
    } else if key_twice {
        Some("Invalid Request: a key appears twice in one object")
    } else {
        None
    };
    if let Some(problem) = problem {
        return reply(reply_id, -32600, problem);
    }
    let needs_params = method.and_then(serde_json::Value::as_str).is_some_and(|m| METHODS_WITH_PARAMS.contains(&m));
    if needs_params && id.is_some() && !object.contains_key("params") {
        return reply(reply_id, -32602, "Invalid params: this method needs `params`");
    }
    None
}

/// A JSON value as read, and whether some object in it held a key twice.
struct Checked {
    value: serde_json::Value,
    key_twice: bool,
}

impl<'de> serde::Deserialize<'de> for Checked {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> serde::de::Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("JSON")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        let (mut object, mut key_twice) = (serde_json::Map::new(), false);
        while let Some(key) = map.next_key::<String>()? {
            let Checked { value, key_twice: inside } = map.next_value()?;
            key_twice |= inside | object.insert(key, value).is_some();
        }
        Ok(Checked { value: serde_json::Value::Object(object), key_twice })
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        let (mut items, mut key_twice) = (Vec::new(), false);
        while let Some(Checked { value, key_twice: inside }) = seq.next_element()? {
            key_twice |= inside;
            items.push(value);
        }
        Ok(Checked { value: serde_json::Value::Array(items), key_twice })
    }

    fn visit_bool<E>(self, v: bool) -> Result<Checked, E> {
        Ok(scalar(v.into()))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Checked, E> {
        Ok(scalar(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Checked, E> {
        Ok(scalar(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Checked, E> {
        Ok(scalar(v.into()))
    }

    fn visit_str<E>(self, v: &str) -> Result<Checked, E> {
        Ok(scalar(v.into()))
    }

    fn visit_string<E>(self, v: String) -> Result<Checked, E> {
        Ok(scalar(v.into()))
    }

    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(scalar(serde_json::Value::Null))
    }
}

fn scalar(value: serde_json::Value) -> Checked {
    Checked { value, key_twice: false }
}

/// One line of stdin, without its line end, into `line`: `Ok(None)` at the end of input, `Ok(Some(false))`
/// for a line longer than [`MAX_BODY_BYTES`] (read to its end and dropped, so a flood costs no memory).
/// Bytes are kept as they are: a line that is not UTF-8 is answered as a parse error, not the end.
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    line.clear();
    let mut fits = true;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if line.is_empty() && fits { None } else { Some(fits) });
        }
        let (taken, ended) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        let content = &available[..if ended { taken - 1 } else { taken }];
        if fits && line.len() + content.len() <= MAX_BODY_BYTES {
            line.extend_from_slice(content);
        } else {
            fits = false;
            line.clear();
        }
        reader.consume(taken);
        if ended {
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(fits));
        }
    }
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
        let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
        let mut line = Vec::new();
        while let Ok(Some(fits)) = read_line(&mut stdin, &mut line).await {
            if fits && line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let error = if fits {
                envelope_error(&line)
            } else {
                let problem = format!("Parse error: a message longer than {MAX_BODY_BYTES} bytes");
                Some(serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": problem}}))
            };
            match error {
                Some(error) => {
                    let _ = errors.send(format!("{error}\n").into_bytes());
                }
                None => {
                    line.push(b'\n');
                    if to_server.write_all(&line).await.is_err() {
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
    // --allow-remote turns the Host and Origin checks off, so whatever address it serves on, only a token
    // keeps a web page (DNS rebinding) or another host out.
    anyhow::ensure!(
        (address.ip().is_loopback() && !allow_remote) || token.is_some(),
        "refusing to serve on `{address}` with --allow-remote (or off loopback) without a bearer token: --token-env NAME is required"
    );
    let token: Option<Arc<str>> = token.map(Arc::from);
    let mut config = StreamableHttpServerConfig::default();
    config = if allow_remote {
        config.disable_allowed_hosts()
    } else {
        config.with_allowed_origins(["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"])
    };
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    let service = Arc::new(StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(super::sessions::BoundedSessions::new(sessions, MAX_SESSIONS)),
        config,
    ));
    let listener = tokio::net::TcpListener::bind(address).await?;
    // The bound address goes to stderr, so that a caller that asked for port 0 learns the port.
    eprintln!("knowledge: serving MCP at http://{}/mcp", listener.local_addr()?);
    let connections = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let unproven = Arc::new(std::sync::Mutex::new(Unproven::default()));
    loop {
        // At the cap, the oldest connection that has sent no whole request yet makes room; with none such,
        // new connections wait in the kernel's backlog, not in memory.
        if connections.available_permits() == 0 {
            lock(&unproven).shed_oldest();
        }
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
        let (number, shed) = lock(&unproven).add();
        tokio::spawn(serve_connection(stream, service.clone(), token.clone(), unproven.clone(), number, shed, permit));
    }
}

/// Serves one accepted connection until it closes or is shed (`shed` is notified for a newer connection's
/// sake); each request must carry the bearer `token`, and the connection's first request head takes it off
/// the `unproven` list. The `permit` is held for the connection's life.
async fn serve_connection<S, M>(
    stream: tokio::net::TcpStream,
    service: Arc<rmcp::transport::streamable_http_server::StreamableHttpService<S, M>>,
    token: Option<Arc<str>>,
    unproven: Arc<std::sync::Mutex<Unproven>>,
    number: u64,
    shed: Arc<tokio::sync::Notify>,
    permit: tokio::sync::OwnedSemaphorePermit,
) where
    S: rmcp::ServerHandler + Send + 'static,
    M: rmcp::transport::streamable_http_server::SessionManager,
{
    let _permit = permit;
    let io = hyper_util::rt::TokioIo::new(stream);
    let proven = unproven.clone();
    let handler = hyper::service::service_fn(move |request| {
        let service = service.clone();
        let token = token.clone();
        lock(&proven).remove(number);
        async move {
            if !bearer_matches(&request, token.as_deref()) {
                return Ok::<_, std::convert::Infallible>(unauthorized());
            }
            Ok::<_, std::convert::Infallible>(answer(&service, request).await)
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(io, handler);
    // A connection that fails is that client's problem; the server keeps accepting. One shed for a newer
    // connection is dropped, which closes it.
    tokio::select! {
        _ = connection => {}
        () = shed.notified() => {}
    }
    lock(&unproven).remove(number);
}

/// The connections that have not yet sent a whole request head, oldest first, each with the signal that
/// drops it.
#[derive(Default)]
struct Unproven {
    next: u64,
    connections: std::collections::BTreeMap<u64, Arc<tokio::sync::Notify>>,
}

impl Unproven {
    fn add(&mut self) -> (u64, Arc<tokio::sync::Notify>) {
        let number = self.next;
        self.next += 1;
        let shed = Arc::new(tokio::sync::Notify::new());
        self.connections.insert(number, shed.clone());
        (number, shed)
    }

    fn remove(&mut self, number: u64) {
        self.connections.remove(&number);
    }

    fn shed_oldest(&mut self) {
        if let Some((_, shed)) = self.connections.pop_first() {
            // A stored permit: the connection's task sees it even if it is not waiting yet.
            shed.notify_one();
        }
    }
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
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
    let bytes = match tokio::time::timeout(BODY_TIMEOUT, Limited::new(body, MAX_BODY_BYTES).collect()).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(error)) => {
            return plain(hyper::StatusCode::PAYLOAD_TOO_LARGE, &format!("cannot read the body: {error}"));
        }
        Err(_) => return plain(hyper::StatusCode::REQUEST_TIMEOUT, "the body did not arrive in time"),
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
        // Issue 40, item 16: what rmcp would refuse with a plain-text 415 over HTTP.
        let null = serde_json::Value::Null;
        for message in [
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
        ] {
            assert_eq!(code_and_id(message), Some((-32600, null.clone())), "{message}");
        }
        assert_eq!(code_and_id(r#"{"jsonrpc":"2.0","id":8,"id":9,"method":"tools/list"}"#), Some((-32600, id(9))));
        assert_eq!(
            code_and_id(r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"a","name":"b"}}"#),
            Some((-32600, id(8)))
        );
        assert_eq!(code_and_id(r#"{"jsonrpc":"2.0","id":10,"method":"tools/call"}"#), Some((-32602, id(10))));
        let not_utf8 = envelope_error(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/\xff\"}").unwrap();
        assert_eq!(not_utf8["error"]["code"], -32700);
    }

    #[test]
    fn a_sound_message_is_left_to_rmcp() {
        for message in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list"}"#,
        ] {
            assert_eq!(envelope_error(message.as_bytes()), None, "{message}");
        }
    }
}
