//! `knowledge providers list|check|models`: the registry, keys from the environment only, and the models
//! endpoint of each wire format against a server on loopback.

use std::io::{BufRead, Write};
use std::sync::mpsc::Receiver;

use serde_json::Value;

use super::{CliTest, stderr};

/// A server on loopback that answers each request with the next of `answers` (status, body) and sends the
/// request's head (request line and headers, lowercased names) to the receiver.
fn server(answers: Vec<(u16, &'static str)>) -> (u16, Receiver<String>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (sender, heads) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for (status, body) in answers {
            let Ok((mut stream, _)) = listener.accept() else { break };
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                let line = match line.split_once(':') {
                    Some((name, value)) if !head.is_empty() => format!("{}:{value}", name.to_ascii_lowercase()),
                    _ => line,
                };
                head.push_str(&line);
            }
            let _ = sender.send(head);
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, heads)
}

fn project(providers: &str) -> CliTest {
    let test = CliTest::new();
    test.write("kc.toml", format!("version = 1\n{providers}"));
    test
}

#[test]
fn providers_are_listed_with_their_defaults_and_keys_are_checked_without_calling_anyone() {
    let test = project(
        "[providers.openai]\nkind = \"openai\"\nmodel = \"gpt-4.1-mini\"\naliases = { best = \"gpt-4.1\" }\n\
         [providers.claude]\nkind = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\napi_key_env = \"MY_CLAUDE_KEY\"\n\
         [providers.local]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"llama\"\ndefault = true\n",
    );
    let listed: Value = serde_json::from_str(&test.ok(&["providers", "list", "--json"])).unwrap();
    let names: Vec<&str> = listed.as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["claude", "local", "openai"]);
    assert_eq!(listed[2]["base_url"], "https://api.openai.com/v1", "each kind has its endpoint");
    assert_eq!(listed[2]["api_key_env"], "OPENAI_API_KEY", "and its key's variable");
    assert_eq!(listed[2]["aliases"]["best"], "gpt-4.1");
    assert_eq!(listed[0]["api_key_env"], "MY_CLAUDE_KEY", "unless kc.toml names another");
    assert_eq!((listed[1]["default"].clone(), listed[2]["default"].clone()), (Value::Bool(true), Value::Bool(false)));

    // No key set: check says which are missing and exits 1; the keyless local server needs none.
    let output = test.run_with_env(&["providers", "check"], &[("OPENAI_API_KEY", ""), ("MY_CLAUDE_KEY", "")]);
    assert_eq!(output.status.code(), Some(1));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("claude: key missing: set $MY_CLAUDE_KEY"), "{text}");
    assert!(text.contains("local: no key needed"), "{text}");

    // Keys set: exit 0, and a key is never printed.
    let secret = "sk-secret-value-123";
    let output =
        test.run_with_env(&["providers", "check", "--json"], &[("OPENAI_API_KEY", secret), ("MY_CLAUDE_KEY", secret)]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let checked: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(checked.as_array().unwrap().iter().all(|p| p["key"] != "missing"), "{checked}");
    for args in [&["providers", "check"][..], &["providers", "list"], &["providers", "list", "--json"]] {
        let output = test.run_with_env(args, &[("OPENAI_API_KEY", secret), ("MY_CLAUDE_KEY", secret)]);
        assert!(!String::from_utf8_lossy(&output.stdout).contains(secret) && !stderr(&output).contains(secret));
    }
}

#[test]
fn models_are_listed_in_each_wire_format_with_its_own_authentication() {
    let (port, heads) = server(vec![(200, r#"{"object":"list","data":[{"id":"zeta"},{"id":"alpha"}]}"#)]);
    let test = project(&format!(
        "[providers.gateway]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\napi_key_env = \"GATEWAY_KEY\"\n"
    ));
    let output = test.run_with_env(&["providers", "models"], &[("GATEWAY_KEY", "sk-gw")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "alpha\nzeta\n");
    let head = heads.recv().unwrap();
    assert!(head.starts_with("GET /v1/models "), "{head}");
    assert!(head.contains("authorization: Bearer sk-gw"), "{head}");

    let (port, heads) = server(vec![(200, r#"{"data":[{"id":"claude-a","type":"model"}],"has_more":false}"#)]);
    let test = project(&format!(
        "[providers.claude]\nkind = \"anthropic\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"claude-a\"\n"
    ));
    let output = test.run_with_env(&["providers", "models", "claude", "--json"], &[("ANTHROPIC_API_KEY", "sk-ant")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(serde_json::from_slice::<Value>(&output.stdout).unwrap(), serde_json::json!(["claude-a"]));
    let head = heads.recv().unwrap();
    assert!(head.contains("x-api-key: sk-ant") && head.contains("anthropic-version: 2023-06-01"), "{head}");
    assert!(!head.contains("authorization"), "Anthropic takes its key in x-api-key: {head}");
}

#[test]
fn a_provider_failure_is_a_clear_error() {
    // A missing key names its variable, and nothing is called.
    let (port, heads) = server(vec![(401, r#"{"error":{"message":"Incorrect API key provided"}}"#)]);
    let test = project(&format!(
        "[providers.p]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\napi_key_env = \"P_KEY\"\nmax_retries = 2\n"
    ));
    let output = test.run_with_env(&["providers", "models"], &[("P_KEY", "")]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("set the environment variable `P_KEY`"), "{}", stderr(&output));
    assert!(heads.try_recv().is_err(), "no request without a key");

    // A 401 is an error at once, in the provider's words; no retry.
    let output = test.run_with_env(&["providers", "models"], &[("P_KEY", "wrong")]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("answered 401: Incorrect API key provided"), "{}", stderr(&output));
    assert!(heads.recv().is_ok() && heads.try_recv().is_err(), "one request");

    // A 503 is retried, then reported with the attempts.
    let (port, heads) = server(vec![(503, "busy"), (503, "busy")]);
    let test = project(&format!(
        "[providers.p]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\nmax_retries = 1\n"
    ));
    let error = test.fails(&["providers", "models"], "answered 503: busy (after 2 attempts)");
    assert_eq!(heads.try_iter().count(), 2, "{error}");

    // Naming no provider when several are configured and none is the default.
    let test = project(
        "[providers.a]\nkind = \"openai\"\nmodel = \"m\"\n[providers.b]\nkind = \"deepseek\"\nmodel = \"deepseek-chat\"\n",
    );
    test.fails(&["providers", "models"], "none is the default: name one (`a`, `b`)");
    test.fails(&["providers", "models", "c"], "no provider `c` in kc.toml");
}

#[test]
fn provider_settings_are_checked_where_kc_toml_says_them() {
    let cases = [
        ("[providers.x]\nkind = \"gemini\"\nmodel = \"m\"\n", "kc.toml:3:8", "unknown variant `gemini`"),
        ("[providers.x]\nkind = \"openai-compatible\"\nmodel = \"m\"\n", "kc.toml:2:12", "needs `base_url`"),
        (
            "[providers.x]\nkind = \"openai\"\nbase_url = \"ftp://h\"\nmodel = \"m\"\n",
            "kc.toml:4:12",
            "http:// or https://",
        ),
        (
            "[providers.a]\nkind = \"openai\"\nmodel = \"m\"\ndefault = true\n[providers.b]\nkind = \"openai\"\nmodel = \"m\"\ndefault = true\n",
            "kc.toml:9:11",
            "`a` is already the default provider",
        ),
        (
            "[providers.x]\nkind = \"openai\"\nmodel = \"m\"\napi_key = \"sk\"\n",
            "kc.toml:5:1",
            "unknown field `api_key`",
        ),
    ];
    for (providers, place, message) in cases {
        let test = project(providers);
        let error = test.fails(&["providers", "list"], message);
        assert!(error.contains(place), "{providers:?} should point at {place}: {error}");
    }
}
