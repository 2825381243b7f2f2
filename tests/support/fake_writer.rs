//! A fake `[wiki] writer` provider: an OpenAI-compatible chat server on loopback (`writer_server`, which
//! streams what a function of the request says) that writes, for each request, the first sentence of every excerpt it is sent (of the first only for the concept `terse`),
//! each cited by the excerpt's number, then [`INVENTED`] citing [1]. It reports 100 input and 20 output
//! tokens a call and counts the requests it answered. Its answer depends only on the request, as a
//! writer's cache assumes of a model.

use std::io::{BufRead, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

/// A sentence no quote supports, which the fake model adds to every summary.
#[allow(dead_code, reason = "the differential test does not look for it")]
pub(crate) const INVENTED: &str = "The meadow was first surveyed by a committee in Geneva";

/// Starts the server; returns its port and its count of answered requests.
pub(crate) fn fake_writer(terse: &'static str) -> (u16, Arc<AtomicUsize>) {
    writer_server(move |input| {
        let mut answer = String::new();
        let shown = if input.starts_with(&format!("Concept: {terse}\n")) { 1 } else { usize::MAX };
        for (number, text) in excerpts(input).into_iter().take(shown) {
            let first = text.split_inclusive(". ").next().unwrap_or(&text).trim().trim_end_matches('.');
            answer.push_str(&format!("{first} [{number}]. "));
        }
        answer.push_str(&format!("{INVENTED} [1]."));
        answer
    })
}

/// A chat server on loopback that streams `answer(user message)` for each request; returns its port and
/// its count of answered requests.
#[allow(dead_code, reason = "the differential test uses only the fake writer")]
pub(crate) fn writer_server(answer: impl Fn(&str) -> String + Send + 'static) -> (u16, Arc<AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Some(body) = request_body(&stream) else { continue };
            let request: Value = serde_json::from_slice(&body).unwrap_or_default();
            let input = request["messages"][1]["content"].as_str().unwrap_or_default();
            let answer = answer(input);
            counted.fetch_add(1, Ordering::SeqCst);
            let _ = write!(stream, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n");
            for piece in answer.split_inclusive(' ') {
                let chunk = serde_json::json!({"choices": [{"delta": {"content": piece}}]});
                let _ = write!(stream, "data: {chunk}\n\n");
            }
            let usage = serde_json::json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 20}});
            let _ = write!(stream, "data: {usage}\n\ndata: [DONE]\n\n");
        }
    });
    (port, calls)
}

/// The body of one HTTP request (by its `Content-Length`).
fn request_body(stream: &std::net::TcpStream) -> Option<Vec<u8>> {
    let mut reader = std::io::BufReader::new(stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

/// The numbered excerpts of a writer's message: lines `[n] TEXT`.
fn excerpts(input: &str) -> Vec<(u32, String)> {
    input
        .lines()
        .filter_map(|line| {
            let (number, text) = line.strip_prefix('[')?.split_once("] ")?;
            Some((number.parse().ok()?, text.to_string()))
        })
        .collect()
}
