//! The one HTTP client every provider call goes through (embeddings and generation alike): a timeout per
//! request, retries with exponential backoff after a timeout, a connection failure, 429 or a 5xx, and an
//! error that names the endpoint, the status and the provider's own message.

/// Why an HTTP call failed: each names the endpoint.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// An answer of 400 or more, with the provider's own message.
    #[error("{url} answered {status}: {message}")]
    Refused { url: String, status: u16, message: String },
    /// An answer below 400 that is not a success where the body was wanted (a redirect, a 304).
    #[error("{url} answered {status}")]
    NotSuccess { url: String, status: u16 },
    /// No answer: the connection, the TLS handshake or the timeout failed.
    #[error("{url}: {error}")]
    Transport { url: String, error: ureq::Error },
    /// A retryable failure that lasted through every retry.
    #[error("{last} (after {attempts} attempts)")]
    GaveUp { last: Box<HttpError>, attempts: u32 },
    #[error("reading the answer: {0}")]
    Read(ureq::Error),
    #[error("{url}: the stream broke off: {error}")]
    StreamBroke { url: String, error: std::io::Error },
}

impl HttpError {
    /// The status the endpoint answered with, when it answered with an error.
    #[must_use]
    pub fn status(&self) -> Option<u16> {
        match self {
            HttpError::Refused { status, .. } | HttpError::NotSuccess { status, .. } => Some(*status),
            HttpError::GaveUp { last, .. } => last.status(),
            _ => None,
        }
    }
}

/// A blocking client with the provider's timeout and retry budget.
pub struct Client {
    agent: ureq::Agent,
    max_retries: u32,
}

impl Client {
    #[must_use]
    pub fn new(timeout_seconds: u32, max_retries: u32) -> Client {
        Client::with_redirects(timeout_seconds, max_retries, 10)
    }

    /// A client that follows no redirect: a 3xx answer comes back as it is, for the caller to check where
    /// it leads (ingest follows only to hosts it allows).
    #[must_use]
    pub fn without_redirects(timeout_seconds: u32, max_retries: u32) -> Client {
        Client::with_redirects(timeout_seconds, max_retries, 0)
    }

    fn with_redirects(timeout_seconds: u32, max_retries: u32, max_redirects: u32) -> Client {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(std::time::Duration::from_secs(u64::from(timeout_seconds.max(1)))))
            .http_status_as_error(false)
            .max_redirects(max_redirects)
            .build()
            .into();
        Client { agent, max_retries }
    }

    /// `GET url` with `headers`: the answer, whatever its status below 400 (a redirect, `304 Not Modified`),
    /// with the same retries as every call.
    pub fn fetch(&self, url: &str, headers: &[(&str, String)]) -> Result<ureq::http::Response<ureq::Body>, HttpError> {
        self.answer(url, |agent| {
            let mut request = agent.get(url);
            for (name, value) in headers {
                request = request.header(*name, value);
            }
            request.call()
        })
    }

    /// `GET url` with `headers`; the body of a 2xx answer.
    pub fn get(&self, url: &str, headers: &[(&str, String)]) -> Result<String, HttpError> {
        let call = |agent: &ureq::Agent| {
            let mut request = agent.get(url);
            for (name, value) in headers {
                request = request.header(*name, value);
            }
            request.call()
        };
        self.send(url, call, read_text)
    }

    /// `PUT url` with `body` and `headers`: the answer, whatever its status below 400.
    pub fn put(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> Result<ureq::http::Response<ureq::Body>, HttpError> {
        self.answer(url, |agent| {
            let mut request = agent.put(url);
            for (name, value) in headers {
                request = request.header(*name, value);
            }
            request.send(body)
        })
    }

    /// `DELETE url` with `headers`: the answer, whatever its status below 400.
    pub fn delete(&self, url: &str, headers: &[(&str, String)]) -> Result<ureq::http::Response<ureq::Body>, HttpError> {
        self.answer(url, |agent| {
            let mut request = agent.delete(url);
            for (name, value) in headers {
                request = request.header(*name, value);
            }
            request.call()
        })
    }

    /// `POST url` with a JSON body and `headers`; the body of a 2xx answer.
    pub fn post_json(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &serde_json::Value,
    ) -> Result<String, HttpError> {
        self.send(url, |agent| post(agent, url, headers).send_json(body), read_text)
    }

    /// `POST url` with a JSON body, its answer read as server-sent events: `data` is called with each
    /// event's data as it arrives (`[DONE]` and comments left out). A retry can only happen before the
    /// answer's first byte, so no text is delivered twice.
    pub fn post_stream(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &serde_json::Value,
        data: &mut dyn FnMut(&str),
    ) -> Result<(), HttpError> {
        use std::io::BufRead;
        self.send(
            url,
            |agent| post(agent, url, headers).send_json(body),
            |answer| {
                for line in std::io::BufReader::new(answer.into_reader()).lines() {
                    let line = line.map_err(|error| HttpError::StreamBroke { url: url.to_string(), error })?;
                    if let Some(event) = line.strip_prefix("data:").map(str::trim)
                        && event != "[DONE]"
                    {
                        data(event);
                    }
                }
                Ok(())
            },
        )
    }

    /// Makes the request with `call` until it succeeds or the retries run out, and reads a 2xx answer's body
    /// with `read`.
    fn send<T>(
        &self,
        url: &str,
        call: impl Fn(&ureq::Agent) -> Result<ureq::http::Response<ureq::Body>, ureq::Error>,
        read: impl FnOnce(ureq::Body) -> Result<T, HttpError>,
    ) -> Result<T, HttpError> {
        let response = self.answer(url, call)?;
        match response.status().as_u16() {
            200..300 => read(response.into_body()),
            status => Err(HttpError::NotSuccess { url: url.to_string(), status }),
        }
    }

    /// Makes the request with `call` until it is answered with a status below 400 or the retries run out.
    fn answer(
        &self,
        url: &str,
        call: impl Fn(&ureq::Agent) -> Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<ureq::http::Response<ureq::Body>, HttpError> {
        let mut attempt = 0;
        loop {
            let retryable = match call(&self.agent) {
                Ok(response) if response.status().as_u16() < 400 => return Ok(response),
                Ok(response) => {
                    let status = response.status().as_u16();
                    let text = response.into_body().read_to_string().unwrap_or_default();
                    let error = HttpError::Refused { url: url.to_string(), status, message: provider_message(&text) };
                    if status != 429 && status < 500 {
                        return Err(error);
                    }
                    error
                }
                Err(error) => HttpError::Transport { url: url.to_string(), error },
            };
            if attempt >= self.max_retries {
                return Err(HttpError::GaveUp { last: Box::new(retryable), attempts: attempt + 1 });
            }
            std::thread::sleep(std::time::Duration::from_millis(200 << attempt.min(6)));
            attempt += 1;
        }
    }
}

/// A POST with a JSON body and `headers`.
fn post(agent: &ureq::Agent, url: &str, headers: &[(&str, String)]) -> ureq::RequestBuilder<ureq::typestate::WithBody> {
    let mut request = agent.post(url).header("Content-Type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    request
}

/// A whole answer's body as text.
fn read_text(mut body: ureq::Body) -> Result<String, HttpError> {
    body.read_to_string().map_err(HttpError::Read)
}

/// The provider's own words in an error answer: `error.message` (OpenAI's and Anthropic's shape), else the
/// start of the body.
fn provider_message(text: &str) -> String {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| text.chars().take(200).collect())
}
