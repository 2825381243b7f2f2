//! Generation in each provider's wire format, streamed: OpenAI's Responses API, Chat Completions (DeepSeek
//! and OpenAI-compatible servers) and Anthropic's Messages API, each read as server-sent events so that
//! text reaches the caller as the model writes it. The token counts come from the same stream.

use serde_json::{Value, json};

use super::{Provider, ProviderError, ProviderKind};

/// The most text one generation may hold; what a provider writes past it is an error. A thousand times what
/// an answer or a page's summary needs.
const MAX_GENERATED_BYTES: usize = 1 << 20;

/// What to ask: instructions, the user's message, and the most tokens to write.
pub struct Prompt<'a> {
    pub instructions: &'a str,
    pub input: &'a str,
    pub max_output_tokens: u32,
    /// The sampling temperature; `None` leaves the provider's default. 0 asks for the model's most likely
    /// text, which a cache of what it wrote assumes.
    pub temperature: Option<f32>,
}

/// What the model wrote, with the token counts the provider reported (zero when it reported none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Generation {
    pub text: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Provider {
    /// Asks `model` (the provider's default for `None`, an alias resolved), calling `delta` with each piece
    /// of text as it arrives.
    pub fn generate(
        &self,
        model: Option<&str>,
        prompt: &Prompt<'_>,
        delta: &mut dyn FnMut(&str),
    ) -> Result<Generation, ProviderError> {
        let model = self.model_for(model);
        let base = self.base_url.trim_end_matches('/');
        let (url, body) = match self.kind {
            ProviderKind::OpenAi => (
                format!("{base}/responses"),
                json!({"model": model, "instructions": prompt.instructions, "input": prompt.input,
                       "max_output_tokens": prompt.max_output_tokens, "stream": true}),
            ),
            ProviderKind::Anthropic => (
                format!("{base}/messages"),
                json!({"model": model, "system": prompt.instructions, "max_tokens": prompt.max_output_tokens,
                       "messages": [{"role": "user", "content": prompt.input}], "stream": true}),
            ),
            ProviderKind::DeepSeek | ProviderKind::OpenAiCompatible => (
                format!("{base}/chat/completions"),
                json!({"model": model, "max_tokens": prompt.max_output_tokens, "stream": true,
                       "stream_options": {"include_usage": true},
                       "messages": [{"role": "system", "content": prompt.instructions},
                                    {"role": "user", "content": prompt.input}]}),
            ),
        };
        let mut body = body;
        if let Some(temperature) = prompt.temperature {
            body["temperature"] = json!(temperature);
        }
        let client = super::http::Client::new(self.timeout_seconds, self.max_retries);
        let mut generation = Generation::default();
        let mut failure = None;
        let kind = self.kind;
        client.post_stream(&url, &self.headers()?, &body, &mut |data: &str| {
            let Ok(event) = serde_json::from_str::<Value>(data) else { return };
            if let Some(message) = stream_error(&event) {
                failure.get_or_insert(format!("the provider stopped with an error: {message}"));
            } else if let Some(text) = read_event(kind, &event, &mut generation) {
                // A provider that never stops writing is cut off at the cap, not kept in memory.
                if generation.text.len() + text.len() > MAX_GENERATED_BYTES {
                    failure.get_or_insert(format!("the provider wrote more than {MAX_GENERATED_BYTES} bytes"));
                    return;
                }
                generation.text.push_str(&text);
                delta(&text);
            }
        })?;
        failure.map_or(Ok(generation), |problem| Err(ProviderError::Stream { url, problem }))
    }
}

/// The message of an error reported inside a stream (Anthropic's `error` event, OpenAI's `error` and
/// `response.failed`, an `error` object in a chunk), which the HTTP status cannot carry once streaming began.
fn stream_error(event: &Value) -> Option<String> {
    let failed = matches!(event["type"].as_str(), Some("error" | "response.failed")) || event["error"].is_object();
    failed.then(|| {
        [&event["error"]["message"], &event["response"]["error"]["message"], &event["message"]]
            .into_iter()
            .find_map(|message| message.as_str().map(str::to_string))
            .unwrap_or_else(|| event.to_string())
    })
}

/// The text one event adds, if any; token counts are taken into `generation` as they are reported.
fn read_event(kind: ProviderKind, event: &Value, generation: &mut Generation) -> Option<String> {
    let count = |value: &Value| value.as_u64().unwrap_or(0);
    match kind {
        ProviderKind::OpenAi => match event["type"].as_str()? {
            "response.output_text.delta" => event["delta"].as_str().map(str::to_string),
            "response.completed" => {
                generation.input_tokens = count(&event["response"]["usage"]["input_tokens"]);
                generation.output_tokens = count(&event["response"]["usage"]["output_tokens"]);
                None
            }
            _ => None,
        },
        ProviderKind::Anthropic => match event["type"].as_str()? {
            "message_start" => {
                generation.input_tokens = count(&event["message"]["usage"]["input_tokens"]);
                None
            }
            "content_block_delta" => event["delta"]["text"].as_str().map(str::to_string),
            "message_delta" => {
                generation.output_tokens = count(&event["usage"]["output_tokens"]);
                None
            }
            _ => None,
        },
        ProviderKind::DeepSeek | ProviderKind::OpenAiCompatible => {
            if event["usage"].is_object() {
                generation.input_tokens = count(&event["usage"]["prompt_tokens"]);
                generation.output_tokens = count(&event["usage"]["completion_tokens"]);
            }
            event["choices"][0]["delta"]["content"].as_str().map(str::to_string)
        }
    }
}
