//! `knowledge providers list|check|models`: the registry, keys from the environment only, and the models
//! endpoint of each wire format against a server on loopback.

use std::io::Write;
use std::sync::mpsc::Receiver;

use serde_json::Value;

use super::{CliTest, read_request, stderr};

/// A server on loopback that answers each request with the next of `answers` (status, body) and sends the
/// request's head (request line and headers, lowercased names) to the receiver.
fn server(answers: Vec<(u16, &'static str)>) -> (u16, Receiver<String>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (sender, heads) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for (status, body) in answers {
            let Ok((mut stream, _)) = listener.accept() else { break };
            let (head, _) = read_request(&stream);
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

    // A model id is the provider's text: it reaches a terminal escaped.
    let (port, _heads) = server(vec![(200, r#"{"data":[{"id":"evil\u001b[2J\u202e"}]}"#)]);
    let test = project(&format!(
        "[providers.gateway]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\n"
    ));
    let output = test.run(&["providers", "models"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(crate::hostile::acts_on_a_terminal(&text), None, "{text:?}");
    assert!(text.starts_with("evil\\u{1b}[2J"), "{text:?}");
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

/// A server on loopback that takes one request, sends back its head and JSON body, and answers with
/// `respond`.
fn one_request_server(
    respond: impl FnOnce(&mut std::net::TcpStream) + Send + 'static,
) -> (u16, Receiver<(String, Value)>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (sender, requests) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else { return };
        let (head, body) = read_request(&stream);
        let _ = sender.send((head, serde_json::from_slice(&body).unwrap()));
        respond(&mut stream);
    });
    (port, requests)
}

/// Answers one request with server-sent `events`.
pub(crate) fn streaming_server(events: Vec<String>) -> (u16, Receiver<(String, Value)>) {
    one_request_server(move |stream| {
        let _ = write!(stream, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
        for event in events {
            let _ = write!(stream, "{event}\n\n");
            let _ = stream.flush();
        }
    })
}

/// Answers one request with `answer` (JSON).
fn json_server(answer: &'static str) -> (u16, Receiver<(String, Value)>) {
    one_request_server(move |stream| {
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
            answer.len()
        );
    })
}

/// A project about ownership, built, whose kc.toml has one provider at `port`.
fn ownership(kind: &str, port: u16) -> CliTest {
    let test = CliTest::new();
    test.write(
        "docs/ownership.md",
        "# Ownership\n\nEach value in Rust has an owner. When the owner goes out of scope, the value is dropped.\n",
    );
    test.write(
        "kc.toml",
        format!(
            "version = 1\n[sources]\ninclude = [\"docs/**/*.md\"]\n[providers.p]\nkind = \"{kind}\"\n\
             base_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m-default\"\naliases = {{ small = \"m-small\" }}\n\
             api_key_env = \"P_KEY\"\nprices = {{ input = 2.0, output = 8.0 }}\n"
        ),
    );
    test.build();
    test
}

/// The answer every server streams: one sentence the excerpt supports, one it does not, one that cites
/// an excerpt the pack does not hold, and one with no citation.
const WRITTEN: [&str; 4] = [
    "When the owner goes out of scope, the value is dropped [1]. ",
    "Rust was designed by a committee in Geneva [1]. ",
    "Each value has an owner [7]. ",
    "Ownership is central.",
];

fn assert_checked(answer: &Value) {
    assert_eq!(answer["found"], true, "{answer:#}");
    let sentences = answer["sentences"].as_array().unwrap();
    let verdicts: Vec<(bool, Value)> = sentences.iter().map(|s| (s["supported"] == true, s["cites"].clone())).collect();
    assert_eq!(
        verdicts,
        [
            (true, serde_json::json!([1])),
            (false, serde_json::json!([1])),
            (false, serde_json::json!([7])),
            (false, serde_json::json!([])),
        ],
        "{answer:#}"
    );
    assert!(sentences[2]["problem"].as_str().unwrap().contains("[7], which the pack does not hold"));
    assert_eq!(sentences[3]["problem"], "cites no excerpt");
    assert_eq!(answer["citations"][0]["path"], "docs/ownership.md", "[1] resolves to its ref: {answer:#}");
    assert!(answer["citations"][0]["ref"].as_str().unwrap().starts_with("file://docs/ownership.md@"));
    assert_eq!(answer["citations"].as_array().unwrap().len(), 1, "[7] names nothing");
    assert_eq!(answer["generated"]["model"], "m-small", "the alias is resolved");
    assert_eq!(
        (answer["generated"]["input_tokens"].clone(), answer["generated"]["output_tokens"].clone()),
        (120.into(), 30.into())
    );
    assert!((answer["generated"]["cost_usd"].as_f64().unwrap() - 0.00048).abs() < 1e-12, "{answer:#}");
}

/// What the run ledger holds of the answer's provider call.
fn recorded_usage(test: &CliTest, run: &str) -> Value {
    let conn = rusqlite::Connection::open(test.index()).unwrap();
    let detail: String = conn
        .query_row("SELECT detail FROM run_events WHERE run_id = ?1 AND kind = 'provider_usage'", [run], |r| r.get(0))
        .unwrap();
    serde_json::from_str(&detail).unwrap()
}

#[test]
fn a_generated_answer_streams_in_each_wire_format_and_every_citation_is_checked() {
    let text_events = |wrap: &dyn Fn(&str) -> String| WRITTEN.iter().map(|piece| wrap(piece)).collect::<Vec<_>>();
    let formats: Vec<(&str, Vec<String>, &str)> = vec![
        (
            "openai",
            [
                vec![r#"event: response.created
data: {"type":"response.created","response":{"id":"r1"}}"#
                    .to_string()],
                text_events(&|piece| {
                    format!("event: response.output_text.delta\ndata: {}", serde_json::json!({"type": "response.output_text.delta", "delta": piece}))
                }),
                vec![r#"event: response.completed
data: {"type":"response.completed","response":{"usage":{"input_tokens":120,"output_tokens":30}}}"#
                    .to_string()],
            ]
            .concat(),
            "POST /v1/responses ",
        ),
        (
            "anthropic",
            [
                vec![r#"event: message_start
data: {"type":"message_start","message":{"usage":{"input_tokens":120,"output_tokens":1}}}"#
                    .to_string()],
                text_events(&|piece| {
                    format!("event: content_block_delta\ndata: {}", serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}))
                }),
                vec![
                    r#"event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":30}}"#
                        .to_string(),
                    "event: message_stop\ndata: {\"type\":\"message_stop\"}".to_string(),
                ],
            ]
            .concat(),
            "POST /v1/messages ",
        ),
        (
            "openai-compatible",
            [
                text_events(&|piece| {
                    format!("data: {}", serde_json::json!({"choices": [{"index": 0, "delta": {"content": piece}}]}))
                }),
                vec![
                    r#"data: {"choices":[],"usage":{"prompt_tokens":120,"completion_tokens":30}}"#.to_string(),
                    "data: [DONE]".to_string(),
                ],
            ]
            .concat(),
            "POST /v1/chat/completions ",
        ),
    ];
    for (kind, events, request_line) in formats {
        let (port, requests) = streaming_server(events);
        let test = ownership(kind, port);
        let output = test.run_with_env(
            &["ask", "what happens when the owner goes out of scope?", "--generate", "--model", "small", "--json"],
            &[("P_KEY", "sk-p")],
        );
        assert_eq!(output.status.code(), Some(0), "{kind}: {}", stderr(&output));
        let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_checked(&answer);
        assert_eq!(answer["answer"], WRITTEN.concat().trim(), "{kind}");
        let (head, body) = requests.recv().unwrap();
        assert!(head.starts_with(request_line), "{kind}: {head}");
        assert_eq!(body["stream"], true, "{kind}");
        assert_eq!(body["model"], "m-small", "{kind}");
        // The pack reaches the model, numbered as the answer cites it.
        let sent = body.to_string();
        assert!(sent.contains("[1] Ownership (file://docs/ownership.md@"), "{kind}: {sent}");
        assert!(sent.contains("the value is dropped"), "{kind}");
        // The ledger holds the provider call with its usage and cost, and the answer.
        let usage = recorded_usage(&test, answer["run_id"].as_str().unwrap());
        assert_eq!(
            (usage["provider"].clone(), usage["unsupported_sentences"].clone()),
            ("p".into(), 3.into()),
            "{kind}"
        );
    }

    // On a terminal the answer is printed as it arrives, then its sources and what does not hold up.
    let (port, _requests) = streaming_server(
        WRITTEN
            .iter()
            .map(|piece| format!("data: {}", serde_json::json!({"choices": [{"delta": {"content": piece}}]})))
            .collect(),
    );
    let test = ownership("openai-compatible", port);
    let output =
        test.run_with_env(&["ask", "what happens when the owner goes out of scope?", "--generate"], &[("P_KEY", "k")]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.starts_with(WRITTEN.concat().trim_end()), "{text}");
    assert!(text.contains("\n[1] file://docs/ownership.md@"), "{text}");
    assert!(text.contains("unsupported: \"Ownership is central.\" (cites no excerpt)"), "{text}");
}

#[test]
fn a_generated_answer_needs_a_key_and_a_pack() {
    // A question no excerpt touches is not found, and no one is called.
    let (port, requests) = streaming_server(Vec::new());
    let test = ownership("openai", port);
    let answer: Value = serde_json::from_slice(
        &test.run_with_env(&["ask", "zyxwvut qqqq", "--generate", "--json"], &[("P_KEY", "k")]).stdout,
    )
    .unwrap();
    assert_eq!(
        (answer["found"].clone(), answer["answer"].clone()),
        (false.into(), "Not found in the knowledge base.".into())
    );
    assert!(requests.try_recv().is_err(), "no provider call for an empty pack");

    // A missing key names its variable.
    let output = test.run_with_env(&["ask", "what is an owner?", "--generate"], &[("P_KEY", "")]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("set the environment variable `P_KEY`"), "{}", stderr(&output));
}

/// An answer ships only when it can say where it came from: a reply of citation marks alone (as a small local
/// model writes: `[3][4]`) or of sentences none of which the excerpts support is not found, cites nothing,
/// keeps its sentences with their problems, and says why on a terminal; the call is still accounted for.
#[test]
fn a_reply_with_no_supported_sentence_is_not_found() {
    let piece = |text: &str| format!("data: {}", serde_json::json!({"choices": [{"delta": {"content": text}}]}));
    // Each reply, its sentences kept, and what the terminal adds after it: nothing when the model itself said
    // it found nothing.
    let replies: [(&[&str], usize, Option<&str>); 3] = [
        (&["[1]", " [1]"], 0, Some("the reply holds no sentence")),
        (
            &["Rust was designed by a committee in Geneva [1]. ", "Ownership is central."],
            2,
            Some("no sentence of the reply is supported by the excerpts"),
        ),
        (&["Not found in the ", "knowledge base."], 0, None),
    ];
    for (reply, sentences, why) in replies {
        for json in [true, false] {
            let events = reply.iter().map(|text| piece(text)).chain(["data: [DONE]".to_string()]).collect();
            let (port, _requests) = streaming_server(events);
            let test = ownership("openai-compatible", port);
            let mut args = vec!["ask", "what happens when the owner goes out of scope?", "--generate"];
            if json {
                args.push("--json");
            }
            let output = test.run_with_env(&args, &[("P_KEY", "k")]);
            assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
            if json {
                let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
                assert_eq!(
                    (answer["found"].clone(), answer["answer"].clone(), answer["citations"].clone()),
                    (false.into(), "Not found in the knowledge base.".into(), serde_json::json!([])),
                    "{answer:#}"
                );
                let kept = answer["sentences"].as_array().unwrap();
                assert_eq!(kept.len(), sentences, "its sentences are kept: {answer:#}");
                assert!(kept.iter().all(|s| s["supported"] == false && s["problem"].is_string()), "{answer:#}");
                assert_eq!(answer["generated"]["provider"], "p", "the call is accounted for: {answer:#}");
            } else {
                let text = String::from_utf8_lossy(&output.stdout);
                let lines: Vec<&str> = text.lines().collect();
                assert_eq!(lines[0], reply.concat().trim_end(), "{text}");
                match why {
                    Some(why) => assert_eq!(lines[1], format!("Not found in the knowledge base. ({why})"), "{text}"),
                    None => assert!(lines[1].starts_with("written by"), "the model's own word is not repeated: {text}"),
                }
                assert_eq!(text.matches("unsupported: ").count(), sentences, "{text}");
                assert!(!text.contains("file-answer"), "a not-found answer is not offered for filing: {text}");
            }
        }
    }
}

/// What a model writes reaches a terminal as every other output does: a reply carrying escape sequences or
/// bidirectional marks (a prompt injected through a source can ask for them) is escaped as it streams.
#[test]
fn a_streamed_reply_never_reaches_a_terminal_raw() {
    let piece = |text: &str| format!("data: {}", serde_json::json!({"choices": [{"delta": {"content": text}}]}));
    let reply = ["When the owner goes out of scope \u{1b}[2J", "the value \u{202e}is dropped\u{7} [1]."];
    let (port, _requests) =
        streaming_server(reply.iter().map(|text| piece(text)).chain(["data: [DONE]".into()]).collect());
    let test = ownership("openai-compatible", port);
    let output =
        test.run_with_env(&["ask", "what happens when the owner goes out of scope?", "--generate"], &[("P_KEY", "k")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(crate::hostile::acts_on_a_terminal(&text), None, "{text:?}");
    assert!(text.starts_with("When the owner goes out of scope \\u{1b}[2Jthe value"), "shown escaped: {text:?}");
}

#[test]
fn a_provider_is_sent_only_what_the_principal_may_read() {
    let test = CliTest::empty();
    let secret = "quetzalcoatlus";
    test.write("docs/plan.md", "# Plan\n\nThe launch plan needs the budget review.\n");
    test.write(
        "hr/salaries.md",
        format!("# Salaries\n\nThe {secret} budget review lists salaries for the launch plan.\n"),
    );
    let (port, requests) = streaming_server(vec![format!(
        "data: {}",
        serde_json::json!({"choices": [{"delta": {"content": "The launch plan needs the budget review [1]."}}]})
    )]);
    test.write(
        "kc.toml",
        format!(
            "version = 1\n[permissions]\nrules = [{{ path = \"hr/**\", labels = [\"hr\"] }}]\n\
             [permissions.principals]\nstaff = [\"internal\"]\n\
             [providers.p]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\n"
        ),
    );
    test.build();
    let output = test.run(&["ask", "launch plan budget review salaries", "--generate", "--as", "staff", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let (_, body) = requests.recv().unwrap();
    let sent = body.to_string();
    assert!(sent.contains("The launch plan needs the budget review"), "{sent}");
    assert!(!sent.contains(secret) && !sent.contains("hr/salaries.md"), "the provider never sees hr's source: {sent}");
    assert!(!String::from_utf8_lossy(&output.stdout).contains(secret));
}

#[test]
fn an_error_inside_the_stream_is_an_error_not_an_answer() {
    let (port, _requests) = streaming_server(vec![
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}"
            .to_string(),
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"
            .to_string(),
    ]);
    let test = ownership("anthropic", port);
    let output =
        test.run_with_env(&["ask", "what happens when the owner goes out of scope?", "--generate"], &[("P_KEY", "k")]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("the provider stopped with an error: Overloaded"), "{}", stderr(&output));
}

/// A project with `[web]` as given and one provider of `kind` at `port`.
fn web_project(kind: &str, port: u16, web: &str) -> CliTest {
    project(&format!(
        "[providers.p]\nkind = \"{kind}\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\napi_key_env = \"P_KEY\"\n{web}"
    ))
}

#[test]
fn web_search_is_off_unless_kc_toml_turns_it_on_and_keeps_to_its_domains() {
    // Off by default: nothing is asked.
    let (port, requests) = json_server("{}");
    let test = web_project("openai", port, "");
    test.fails(&["web", "search", "rust ownership"], "web search is off");
    assert!(requests.try_recv().is_err());

    // OpenAI: the tool is asked with the allowed domains; the deny list and the cap apply to what comes back.
    let (port, requests) = json_server(
        r#"{"output":[{"type":"web_search_call","status":"completed"},{"type":"message","content":[{"type":"output_text",
        "text":"Ownership is a set of rules. Blogs discuss it. See the reference.",
        "annotations":[
          {"type":"url_citation","url":"https://doc.rust-lang.org/book/ch04-01.html","title":"What is Ownership?","start_index":0,"end_index":28},
          {"type":"url_citation","url":"https://blog.rust-lang.org/x.html","title":"A blog","start_index":29,"end_index":47},
          {"type":"url_citation","url":"https://doc.rust-lang.org/book/ch04-01.html","title":"What is Ownership?","start_index":0,"end_index":28},
          {"type":"url_citation","url":"https://doc.rust-lang.org/reference/","title":"The Reference","start_index":48,"end_index":66},
          {"type":"url_citation","url":"https://doc.rust-lang.org/std/","title":"std","start_index":48,"end_index":66}]}]}]}"#,
    );
    let web = "[web]\nenabled = true\nallow_domains = [\"rust-lang.org\"]\ndeny_domains = [\"blog.rust-lang.org\"]\nmax_results = 2\n";
    let test = web_project("openai", port, web);
    let output = test.run_with_env(&["web", "search", "rust ownership", "--json"], &[("P_KEY", "k")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results: Value = serde_json::from_slice(&output.stdout).unwrap();
    let urls: Vec<&str> = results.as_array().unwrap().iter().map(|r| r["url"].as_str().unwrap()).collect();
    assert_eq!(urls, ["https://doc.rust-lang.org/book/ch04-01.html", "https://doc.rust-lang.org/reference/"]);
    assert_eq!(results[0]["snippet"], "Ownership is a set of rules.");
    assert_eq!(results[0]["provider"], "p");
    assert!(results[0]["retrieved_at"].as_str().unwrap().ends_with('Z'));
    let (head, body) = requests.recv().unwrap();
    assert!(head.starts_with("POST /v1/responses "), "{head}");
    assert_eq!(body["tools"][0]["type"], "web_search");
    assert_eq!(body["tools"][0]["filters"]["allowed_domains"], serde_json::json!(["rust-lang.org"]));

    // Anthropic: its server tool, with the deny list when no allow list is given.
    let (port, requests) = json_server(
        r#"{"content":[{"type":"server_tool_use","id":"s1","name":"web_search","input":{"query":"rust ownership"}},
        {"type":"web_search_tool_result","tool_use_id":"s1","content":[
          {"type":"web_search_result","url":"https://doc.rust-lang.org/book/ch04-01.html","title":"What is Ownership?","encrypted_content":"x"},
          {"type":"web_search_result","url":"https://spam.example/rust","title":"Spam","encrypted_content":"y"}]},
        {"type":"text","text":"Ownership is a set of rules.","citations":[{"type":"web_search_result_location",
          "url":"https://doc.rust-lang.org/book/ch04-01.html","title":"What is Ownership?","cited_text":"Ownership is a set of rules that govern memory."}]}]}"#,
    );
    let test = web_project("anthropic", port, "[web]\nenabled = true\ndeny_domains = [\"spam.example\"]\n");
    let output = test.run_with_env(&["web", "search", "rust ownership"], &[("P_KEY", "k")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        text,
        "1. What is Ownership? <https://doc.rust-lang.org/book/ch04-01.html>\n   Ownership is a set of rules that govern memory.\n"
    );
    let (head, body) = requests.recv().unwrap();
    assert!(head.starts_with("POST /v1/messages "), "{head}");
    assert_eq!(body["tools"][0]["type"], "web_search_20250305");
    assert_eq!(body["tools"][0]["blocked_domains"], serde_json::json!(["spam.example"]));

    // A provider with no search tool of its own says so.
    let test = web_project("openai-compatible", 9, "[web]\nenabled = true\n");
    test.fails(&["web", "search", "x"], "has no web search tool");
}

#[test]
fn filed_web_results_are_sources_under_their_urls_that_only_their_readers_see() {
    let (port, _requests) = json_server(
        r#"{"output":[{"type":"message","content":[{"type":"output_text",
        "text":"Ownership is a set of rules that govern memory.",
        "annotations":[{"type":"url_citation","url":"https://doc.rust-lang.org/book/ch04-01.html","title":"What is Ownership?","start_index":0,"end_index":47}]}]}]}"#,
    );
    let web = "[web]\nenabled = true\n[permissions.principals]\nresearcher = [\"web\"]\n";
    let test = web_project("openai", port, web);
    let output = test
        .run_with_env(&["web", "search", "rust ownership", "--file", "--label", "web", "--json"], &[("P_KEY", "k")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let shown: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(shown["filed"][0]["ref"], "https://doc.rust-lang.org/book/ch04-01.html", "{shown}");
    assert_eq!(shown["filed"][0]["resolver"], "web");
    test.build();

    // The default principal may not read the `web` label; the researcher may, and the result cites the URL.
    assert!(test.search("rules govern memory")["results"].as_array().unwrap().is_empty());
    let found: Value =
        serde_json::from_str(&test.ok(&["--as", "researcher", "search", "rules govern memory", "--json"])).unwrap();
    let hit = &found["results"][0];
    assert_eq!(hit["source"]["uri"], "https://doc.rust-lang.org/book/ch04-01.html", "{found}");
    let chunk: Value =
        serde_json::from_str(&test.ok(&["--as", "researcher", "get", hit["id"].as_str().unwrap(), "--json"])).unwrap();
    assert_eq!(chunk["chunk"]["provenance"]["resolver"], "web");
    assert_eq!(chunk["chunk"]["provenance"]["source_owner"], "p");
    let everything = test.ok(&["context", "pack", "ownership rules memory", "--json"]);
    assert!(!everything.contains("govern memory"), "a pack for the default principal holds no web result");
}

#[test]
fn the_servers_web_search_is_the_operators_choice_keeps_to_the_domains_and_files_nothing() {
    let (port, requests) = json_server(
        r#"{"output":[{"type":"message","content":[{"type":"output_text",
        "text":"Ownership is a set of rules. Spam.",
        "annotations":[
          {"type":"url_citation","url":"https://doc.rust-lang.org/book/ch04-01.html","title":"What is Ownership?","start_index":0,"end_index":28},
          {"type":"url_citation","url":"https://spam.example/x","title":"Spam","start_index":29,"end_index":34}]}]}]}"#,
    );
    let test = web_project("openai", port, "[web]\nenabled = true\ndeny_domains = [\"spam.example\"]\n");
    let search = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "knowledge_web_search", "arguments": {"query": "rust ownership"}}});
    let answers = mcp_session(&test, &["--web-provider", "p"], &[("P_KEY", "k")], std::slice::from_ref(&search));
    let results = &answers[0]["result"]["structuredContent"]["results"];
    let urls: Vec<&str> = results.as_array().unwrap().iter().map(|r| r["url"].as_str().unwrap()).collect();
    assert_eq!(urls, ["https://doc.rust-lang.org/book/ch04-01.html"], "{:#}", answers[0]);
    assert_eq!(results[0]["provider"], "p");
    let (head, _) = requests.recv().unwrap();
    assert!(head.starts_with("POST /v1/responses "), "{head}");
    assert!(!test.root().join(".hasna/knowledge/ingested").exists(), "the server filed nothing");

    // Without the operator's provider the tool refuses and asks nothing; a project with `[web]` off, or a
    // missing key, stops the server at start.
    let refused = mcp_session(&test, &[], &[], &[search]);
    assert_eq!(refused[0]["result"]["isError"], true, "{:#}", refused[0]);
    assert!(refused[0]["result"]["content"][0]["text"].as_str().unwrap().contains("--web-provider"));
    assert!(requests.try_recv().is_err());
    let off = web_project("openai", port, "");
    let stopped = off.run_with_env(&["serve", "--web-provider", "p"], &[("P_KEY", "k")]);
    assert_eq!(stopped.status.code(), Some(2));
    assert!(stderr(&stopped).contains("`[web] enabled = true`"), "{}", stderr(&stopped));
    let keyless = test.run_with_env(&["serve", "--web-provider", "p"], &[("P_KEY", "")]);
    assert_eq!(keyless.status.code(), Some(2));
    assert!(stderr(&keyless).contains("`P_KEY`"), "{}", stderr(&keyless));
}

/// Sends `requests` (JSON-RPC lines) to `knowledge serve` over stdio and returns the answers by id.
pub(crate) fn mcp_session(
    test: &CliTest,
    serve_args: &[&str],
    envs: &[(&str, &str)],
    requests: &[Value],
) -> Vec<Value> {
    use std::io::BufRead;
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_knowledge"));
    command.arg("-C").arg(test.root()).arg("serve").args(serve_args);
    command.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
    for (key, value) in envs {
        command.env(key, value);
    }
    let mut server = command.spawn().unwrap();
    let mut input = server.stdin.take().unwrap();
    let mut output = std::io::BufReader::new(server.stdout.take().unwrap());
    let mut answers = Vec::new();
    let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    writeln!(input, "{initialize}").unwrap();
    let mut line = String::new();
    output.read_line(&mut line).unwrap();
    writeln!(input, "{}", serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
    for request in requests {
        writeln!(input, "{request}").unwrap();
        line.clear();
        output.read_line(&mut line).unwrap();
        answers.push(serde_json::from_str(&line).unwrap());
    }
    drop(input);
    server.wait().unwrap();
    answers
}

/// [`WRITTEN`] as an OpenAI-compatible server streams it, with its usage.
fn written_events() -> Vec<String> {
    [
        vec![r#"data: {"choices":[{"delta":{"role":"assistant"}}]}"#.to_string()],
        WRITTEN
            .iter()
            .map(|piece| format!("data: {}", serde_json::json!({"choices": [{"delta": {"content": piece}}]})))
            .collect(),
        vec![
            r#"data: {"choices":[],"usage":{"prompt_tokens":120,"completion_tokens":30}}"#.to_string(),
            "data: [DONE]".to_string(),
        ],
    ]
    .concat()
}

#[test]
fn the_servers_knowledge_ask_generates_with_the_operators_provider_and_checks_every_citation() {
    let (port, requests) = streaming_server(written_events());
    let test = ownership("openai-compatible", port);
    let ask = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "knowledge_ask", "arguments": {"question": "what happens when the owner goes out of scope?"}}});
    let answers = mcp_session(&test, &["--ask-provider", "p"], &[("P_KEY", "k")], std::slice::from_ref(&ask));
    let answer = &answers[0]["result"]["structuredContent"];
    assert_eq!(answer["generated"]["provider"], "p", "{:#}", answers[0]);
    let verdicts: Vec<bool> = answer["sentences"].as_array().unwrap().iter().map(|s| s["supported"] == true).collect();
    assert_eq!(verdicts, [true, false, false, false], "{answer:#}");
    assert_eq!(answer["run_id"], Value::Null, "the server records nothing");
    let (head, body) = requests.recv().unwrap();
    assert!(head.starts_with("POST /v1/chat/completions "), "{head}");
    assert!(body.to_string().contains("When the owner goes out of scope"), "the pack reached the model");

    // Without the operator's provider the same tool stays extractive, and a missing key stops the server
    // at start, naming the variable.
    let extractive = mcp_session(&test, &[], &[], &[ask]);
    assert_eq!(extractive[0]["result"]["structuredContent"]["generated"], Value::Null, "{:#}", extractive[0]);
    let refused = test.run_with_env(&["serve", "--ask-provider", "p"], &[("P_KEY", "")]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("`P_KEY`"), "{}", stderr(&refused));
}

#[test]
fn the_servers_knowledge_ask_holds_no_read_of_the_index_while_the_model_writes() {
    // The model answers only when the test says so: meanwhile a build commits, and the index's log must be
    // checkpointed whole, which a read transaction held open by the server would keep from happening.
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let (port, requests) = one_request_server(move |stream| {
        let _ = wait.recv();
        let _ = write!(stream, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
        for event in written_events() {
            let _ = write!(stream, "{event}\n\n");
        }
    });
    let test = ownership("openai-compatible", port);
    let ask = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "knowledge_ask", "arguments": {"question": "what happens when the owner goes out of scope?"}}});
    std::thread::scope(|scope| {
        let session = scope.spawn(|| mcp_session(&test, &["--ask-provider", "p"], &[("P_KEY", "k")], &[ask]));
        requests.recv_timeout(std::time::Duration::from_secs(30)).expect("the model is asked");
        test.write("docs/borrowing.md", "# Borrowing\n\nA reference borrows a value without owning it.\n");
        test.build();
        let conn = rusqlite::Connection::open(test.index()).unwrap();
        let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |row| row.get(0)).unwrap();
        go.send(()).unwrap();
        let answers = session.join().unwrap();
        assert_eq!(busy, 0, "a read was held open while the model wrote");
        let answer = &answers[0]["result"]["structuredContent"];
        assert_eq!(answer["generated"]["provider"], "p", "{:#}", answers[0]);
    });
}

#[test]
fn a_provider_that_times_out_or_fails_mid_stream_leaves_no_run() {
    let asks = |test: &CliTest| -> i64 {
        let conn = rusqlite::Connection::open(test.index()).unwrap();
        conn.query_row("SELECT count(*) FROM runs WHERE kind = 'ask'", [], |row| row.get(0)).unwrap()
    };
    // A server that takes the request and never answers, within a one-second budget and no retry.
    let (port, _requests) = one_request_server(|_stream| std::thread::sleep(std::time::Duration::from_secs(4)));
    let test = CliTest::new();
    test.write("docs/ownership.md", "# Ownership\n\nEach value in Rust has an owner.\n");
    test.write(
        "kc.toml",
        format!(
            "version = 1\n[providers.p]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n\
             model = \"m\"\ntimeout_seconds = 1\nmax_retries = 0\n"
        ),
    );
    test.build();
    let started = std::time::Instant::now();
    let output = test.run(&["ask", "who owns each value?", "--generate"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(started.elapsed() < std::time::Duration::from_secs(4), "the budget bounds the call");
    assert!(
        stderr(&output).to_lowercase().contains("timeout") || stderr(&output).contains("timed out"),
        "{}",
        stderr(&output)
    );
    assert_eq!(asks(&test), 0, "a failed call records no run");

    // An error inside the stream, after text began: an error, and no run either.
    let (port, _requests) = streaming_server(vec![
        format!("data: {}", serde_json::json!({"choices": [{"delta": {"content": "Each value has an owner [1]. "}}]})),
        "data: {\"error\":{\"message\":\"upstream overloaded\"}}".to_string(),
    ]);
    test.write(
        "kc.toml",
        format!("version = 1\n[providers.p]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\n"),
    );
    let output = test.run(&["ask", "who owns each value?", "--generate"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("upstream overloaded"), "{}", stderr(&output));
    assert_eq!(asks(&test), 0);
}
