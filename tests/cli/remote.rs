//! Remote clients: `knowledge serve --http` behind a bearer token, and `search`, `get`, `context pack` and
//! `ask` on another machine (here: another folder, with no project) answering from it with the output a
//! local index gives.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::{CliTest, stderr, stdout};

/// A built project about ownership.
fn project() -> CliTest {
    let test = CliTest::new();
    test.write(
        "docs/ownership.md",
        "# Ownership\n\nEach value in Rust has an owner. When the owner goes out of scope, the value is dropped.\n\n\
         ## Borrowing\n\nA reference borrows a value without taking ownership of it.\n",
    );
    test.write("docs/scope.md", "# Scope\n\nA scope is the range within a program for which an item is valid.\n");
    test.build();
    test
}

/// `knowledge serve --http 127.0.0.1:0` over `test`'s index with `args`, and its MCP URL.
fn serve(test: &CliTest, args: &[&str], envs: &[(&str, &str)]) -> (Child, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_knowledge"));
    command.arg("-C").arg(test.root()).args(["serve", "--http", "127.0.0.1:0"]).args(args);
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    for (key, value) in envs {
        command.env(key, value);
    }
    let mut server = command.spawn().unwrap();
    let mut line = String::new();
    std::io::BufReader::new(server.stderr.as_mut().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{line}");
    (server, url)
}

struct Stop(Child);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_remote_client_answers_as_the_local_index_does_through_a_token_guarded_server() {
    let test = project();
    let (server, url) = serve(&test, &["--token-env", "SERVE_TOKEN"], &[("SERVE_TOKEN", "t0ken")]);
    let _server = Stop(server);
    // Elsewhere: a folder with no project and no index.
    let elsewhere = CliTest::empty();
    let remote = [("KNOWLEDGE_API_URL", url.as_str()), ("KNOWLEDGE_API_KEY", "t0ken")];
    let ask_remote = |args: &[&str]| {
        let output = elsewhere.run_with_env(args, &remote);
        assert!(output.status.success(), "`knowledge {}` remotely: {}", args.join(" "), stderr(&output));
        stdout(&output)
    };

    for args in [
        vec!["search", "owner scope", "--json"],
        vec!["search", "owner scope"],
        vec!["search", "borrow", "--mode", "hybrid", "--kind", "source_chunk", "--json"],
        vec!["search", "borrow", "--context", "--json"],
        vec!["context", "pack", "what happens when the owner goes out of scope", "--json"],
        vec!["context", "pack", "what happens when the owner goes out of scope"],
        vec!["get", "docs/ownership.md", "--json"],
        vec!["get", "docs/scope.md"],
    ] {
        assert_eq!(ask_remote(&args), test.ok(&args), "`knowledge {}`: remote and local differ", args.join(" "));
    }
    let chunk_id = test.search("borrows")["results"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(ask_remote(&["get", &chunk_id, "--json"]), test.ok(&["get", &chunk_id, "--json"]));

    // `ask`: the same answer, which the server does not record (the local one is recorded as a run).
    let question = "what happens when the owner goes out of scope?";
    let mut remote_answer: Value = serde_json::from_str(&ask_remote(&["ask", question, "--json"])).unwrap();
    let mut local_answer: Value = serde_json::from_str(&test.ok(&["ask", question, "--json"])).unwrap();
    assert!(remote_answer["found"] == true && remote_answer["run_id"].is_null(), "{remote_answer}");
    local_answer["run_id"] = Value::Null;
    remote_answer["run_id"] = Value::Null;
    assert_eq!(remote_answer, local_answer);

    // No token, a wrong one, a principal the client cannot choose, and a missing ref: clear errors.
    let without = elsewhere.run_with_env(&["search", "owner"], &[("KNOWLEDGE_API_URL", url.as_str())]);
    assert_eq!(without.status.code(), Some(2));
    assert!(stderr(&without).contains("set `KNOWLEDGE_API_KEY`"), "{}", stderr(&without));
    let wrong = elsewhere
        .run_with_env(&["search", "owner"], &[("KNOWLEDGE_API_URL", url.as_str()), ("KNOWLEDGE_API_KEY", "guess")]);
    // A key that is set but wrong is named as refused, not as missing (issue 42).
    assert!(stderr(&wrong).contains("refused the bearer token given"), "{}", stderr(&wrong));
    assert!(!stderr(&wrong).contains("set `KNOWLEDGE_API_KEY`"), "{}", stderr(&wrong));
    let as_other = elsewhere.run_with_env(&["--as", "staff", "search", "owner"], &remote);
    assert!(stderr(&as_other).contains("--as: a remote server answers as the principal it serves"));
    let missing = elsewhere.run_with_env(&["get", "docs/none.md"], &remote);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("no chunk or source matches `docs/none.md`"), "{}", stderr(&missing));

    // `[remote]` in a kc.toml names the server as the variables do; `--db` reads a local index instead.
    elsewhere.write("kc.toml", format!("version = 1\n[remote]\nurl = \"{url}\"\napi_key_env = \"TEAM_TOKEN\"\n"));
    let configured = elsewhere.run_with_env(&["search", "owner scope", "--json"], &[("TEAM_TOKEN", "t0ken")]);
    assert_eq!(stdout(&configured), test.ok(&["search", "owner scope", "--json"]), "{}", stderr(&configured));
    let index = test.index();
    let local = elsewhere.run_with_env(&["search", "owner", "--db", index.to_str().unwrap()], &[]);
    assert!(local.status.success(), "{}", stderr(&local));
}

#[test]
fn a_server_off_loopback_needs_a_token_and_the_token_comes_from_the_environment() {
    let test = project();
    let refused = test.run(&["serve", "--http", "0.0.0.0:0", "--allow-remote"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("without a bearer token"), "{}", stderr(&refused));
    let unset = test.run_with_env(&["serve", "--http", "127.0.0.1:0", "--token-env", "NO_SUCH_TOKEN"], &[]);
    assert_eq!(unset.status.code(), Some(2));
    assert!(stderr(&unset).contains("`NO_SUCH_TOKEN` is not set"), "{}", stderr(&unset));

    // A request without the token is refused before the protocol sees it.
    let (server, url) = serve(&test, &["--token-env", "SERVE_TOKEN"], &[("SERVE_TOKEN", "t0ken")]);
    let _server = Stop(server);
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let post = |token: Option<&str>| {
        let mut request = agent
            .post(&url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        if let Some(token) = token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        request.send(initialize).unwrap()
    };
    let refused = post(None);
    assert_eq!(refused.status().as_u16(), 401);
    assert_eq!(refused.headers().get("www-authenticate").unwrap(), "Bearer");
    assert_eq!(post(Some("t0ke")).status().as_u16(), 401);
    assert_eq!(post(Some("t0ken")).status().as_u16(), 200);
}

/// One JSON-RPC session with a streamable HTTP server: each call's answer (read from JSON or from server-sent
/// events).
struct Session {
    agent: ureq::Agent,
    url: String,
    token: String,
    id: Option<String>,
}

impl Session {
    fn open(url: &str, token: &str) -> Session {
        let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let mut session = Session { agent, url: url.to_string(), token: token.to_string(), id: None };
        session.send(&serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
        session.send(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    fn send(&mut self, message: &Value) -> Option<Value> {
        let mut request = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("Authorization", format!("Bearer {}", self.token));
        if let Some(id) = &self.id {
            request = request.header("Mcp-Session-Id", id);
        }
        let response = request.send_json(message).unwrap();
        assert!(response.status().is_success(), "{}", response.status());
        if let Some(id) = response.headers().get("mcp-session-id") {
            self.id = Some(id.to_str().unwrap().to_string());
        }
        let text = response.into_body().read_to_string().unwrap();
        let data = text.lines().filter_map(|line| line.strip_prefix("data:")).map(str::trim).find(|d| !d.is_empty());
        let body = data.unwrap_or(text.trim());
        (!body.is_empty()).then(|| serde_json::from_str(body).unwrap())
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.send(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})).unwrap()
    }
}

#[test]
fn serve_http_conforms_to_the_remote_contract_it_publishes() {
    let test = project();
    let contract: Value = serde_json::from_str(&test.ok(&["remote", "contracts"])).unwrap();
    assert_eq!(
        (contract["schema"].as_str(), contract["schema_version"].as_u64()),
        (Some("knowledge-remote-contracts"), Some(1))
    );
    let names: Vec<&str> =
        contract["endpoints"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    for needed in ["search", "get", "ask", "context_pack", "build_status", "runs", "logs", "artifacts"] {
        assert!(names.contains(&needed), "the contract names `{needed}`: {names:?}");
    }

    let (server, url) = serve(&test, &["--token-env", "SERVE_TOKEN"], &[("SERVE_TOKEN", "t0ken")]);
    let _server = Stop(server);
    let mut session = Session::open(&url, "t0ken");
    let listed = session.request("tools/list", serde_json::json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    // The caller's part of each operation, on this project.
    let arguments = |name: &str| match name {
        "search" => serde_json::json!({"query": "owner scope"}),
        "get" => serde_json::json!({"ref": "docs/ownership.md"}),
        "ask" => serde_json::json!({"question": "what happens when the owner goes out of scope?"}),
        "context_pack" => serde_json::json!({"query": "owner scope"}),
        _ => serde_json::json!({}),
    };
    for endpoint in contract["endpoints"].as_array().unwrap() {
        let name = endpoint["name"].as_str().unwrap();
        let tool = tools.iter().find(|t| t["name"] == endpoint["tool"]).unwrap_or_else(|| panic!("{name}: no tool"));
        assert_eq!(tool["inputSchema"], endpoint["input_schema"], "{name}: the input schema differs");
        assert_eq!(tool["outputSchema"], endpoint["output_schema"], "{name}: the output schema differs");
        let mut call = arguments(name);
        for (key, value) in endpoint["fixed_arguments"].as_object().unwrap() {
            call[key] = value.clone();
        }
        let answer = session.request("tools/call", serde_json::json!({"name": endpoint["tool"], "arguments": call}));
        let result = &answer["result"];
        assert_ne!(result["isError"], true, "{name}: {answer}");
        let structured = result["structuredContent"].as_object().unwrap_or_else(|| panic!("{name}: {answer}"));
        for required in endpoint["output_schema"]["required"].as_array().into_iter().flatten() {
            assert!(structured.contains_key(required.as_str().unwrap()), "{name}: no `{required}` in {answer}");
        }
    }
}

#[test]
fn setup_records_the_hosted_url_and_keeps_its_key_outside_the_project() {
    let test = project();
    let (server, url) = serve(&test, &["--token-env", "SERVE_TOKEN"], &[("SERVE_TOKEN", "t0ken")]);
    let _server = Stop(server);
    let home = tempfile::tempdir().unwrap();
    let home_env = ("KNOWLEDGE_HOME", home.path().to_str().unwrap());
    let client = CliTest::empty();
    client.write("kc.toml", "# Our team's knowledge base.\nversion = 1\n\n[project]\nname = \"client\"  # named\n");

    let mut setup = client.command(&["setup", "--mode", "hosted", "--api-url", &url, "--api-key-stdin", "--json"]);
    setup.env(home_env.0, home_env.1).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = setup.spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"t0ken\n").unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let config = std::fs::read_to_string(client.path("kc.toml")).unwrap();
    assert!(
        config.starts_with("# Our team's knowledge base.\n") && config.contains("name = \"client\"  # named"),
        "{config}"
    );
    assert!(config.contains(&format!("[remote]\nurl = \"{url}\"")), "{config}");
    assert!(!config.contains("t0ken"), "the key is not project state");
    let auth = home.path().join("auth.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&auth).unwrap().permissions().mode() & 0o777, 0o600);

    // The client answers from the server with the kept key; the environment's key overrides it.
    let searched = client.run_with_env(&["search", "owner scope", "--json"], &[home_env]);
    assert_eq!(stdout(&searched), test.ok(&["search", "owner scope", "--json"]), "{}", stderr(&searched));
    let status = client.run_with_env(&["remote", "status"], &[home_env]);
    assert!(stdout(&status).contains("the server answers: 2 sources"), "{}{}", stdout(&status), stderr(&status));
    let overridden = client.run_with_env(&["search", "owner"], &[home_env, ("KNOWLEDGE_API_KEY", "guess")]);
    assert!(stderr(&overridden).contains("refused the bearer token given"), "{}", stderr(&overridden));

    // A key file others may read is not used.
    std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o644)).unwrap();
    let exposed = client.run_with_env(&["search", "owner"], &[home_env]);
    assert!(stderr(&exposed).contains("may be read by other users"), "{}", stderr(&exposed));
    assert!(stderr(&exposed).contains("wants a bearer token"), "{}", stderr(&exposed));

    // Local mode forgets the URL: the client has no index of its own, and says so.
    client.ok(&["setup", "--mode", "local"]);
    assert!(!std::fs::read_to_string(client.path("kc.toml")).unwrap().contains("url ="));
    client.fails(&["search", "owner"], "knowledge build");
    let refused = client
        .fails(&["setup", "--mode", "hosted", "--api-url", "https://user:pw@kb.example/mcp"], "without credentials");
    assert!(refused.contains("API URL"), "{refused}");
    client.fails(&["setup", "--mode", "hosted", "--api-url", "ftp://kb.example"], "http:// or https://");
    client.fails(&["setup", "--mode", "hosted", "--api-url", "https://kb.example/mcp\"]\n[evil]"], "spaces or quotes");
    assert!(!std::fs::read_to_string(client.path("kc.toml")).unwrap().contains("evil"), "kc.toml untouched");
}

#[test]
fn setup_edits_the_file_a_linked_kc_toml_names_and_keeps_the_link() {
    let home = tempfile::tempdir().unwrap();
    let client = CliTest::empty();
    client.write("shared/team.toml", "version = 1\n");
    std::os::unix::fs::symlink("shared/team.toml", client.path("kc.toml")).unwrap();
    let mut setup =
        client.command(&["setup", "--mode", "hosted", "--api-url", "https://kb.example/mcp", "--api-key-stdin"]);
    setup.env("KNOWLEDGE_HOME", home.path()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = setup.spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"key\n").unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let link = std::fs::symlink_metadata(client.path("kc.toml")).unwrap();
    assert!(link.file_type().is_symlink(), "kc.toml is still the link");
    let shared = std::fs::read_to_string(client.path("shared/team.toml")).unwrap();
    assert!(shared.contains("url = \"https://kb.example/mcp\""), "{shared}");
    let leftovers: Vec<_> =
        std::fs::read_dir(client.path("shared")).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(leftovers.len(), 1, "no temporary file left: {leftovers:?}");
}

#[test]
fn setups_run_at_once_keep_every_key_and_one_whole_config() {
    let home = tempfile::tempdir().unwrap();
    let client = CliTest::empty();
    client.write("kc.toml", "version = 1\n");
    let urls: Vec<String> = (0..8).map(|n| format!("https://kb{n}.example/mcp")).collect();
    let children: Vec<Child> = urls
        .iter()
        .enumerate()
        .map(|(n, url)| {
            let mut setup = client.command(&["setup", "--mode", "hosted", "--api-url", url, "--api-key-stdin"]);
            setup
                .env("KNOWLEDGE_HOME", home.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let mut child = setup.spawn().unwrap();
            std::io::Write::write_all(&mut child.stdin.take().unwrap(), format!("key-{n}\n").as_bytes()).unwrap();
            child
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
    }
    // Each setup read, changed and wrote the credentials under the lock: no key was lost to another.
    let auth: Value = serde_json::from_str(&std::fs::read_to_string(home.path().join("auth.json")).unwrap()).unwrap();
    for (n, url) in urls.iter().enumerate() {
        assert_eq!(auth["keys"][url], format!("key-{n}"), "{auth}");
    }
    // kc.toml is one setup's whole file, never a mix: it parses and names one of the URLs.
    let config = std::fs::read_to_string(client.path("kc.toml")).unwrap();
    assert_eq!(urls.iter().filter(|url| config.contains(url.as_str())).count(), 1, "{config}");
    // It is read as a configuration (setup reads it before it edits it).
    client.ok(&["setup", "--mode", "local"]);
    let leftovers: Vec<_> = std::fs::read_dir(client.path(".")).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(leftovers.iter().all(|name| !name.to_string_lossy().ends_with(".tmp")), "{leftovers:?}");
}
