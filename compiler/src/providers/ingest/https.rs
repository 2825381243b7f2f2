//! `https://` and `s3://` reads: a GET through the shared client, redirects checked hop by hop, the size
//! and content type limited, a stored ETag sent so an unchanged source costs a `304`.

use std::io::Read as _;

use super::{Read, Refusal, check_size, rule, to_markdown};
use crate::config::ingest::{IngestConfig, host_in};
use crate::providers::http::{Client, HttpError};
use crate::providers::s3;
use crate::sources::ingested::{Document, Ingested};

/// The most redirects one read follows.
const MAX_REDIRECTS: usize = 5;

/// Reads an `https://` (or, when allowed, `http://`) ref.
pub(super) fn read(config: &IngestConfig, reference: &str, prior: Option<&Ingested>) -> Result<Read, Refusal> {
    let client = Client::without_redirects(config.timeout_seconds, 1);
    let mut url = reference.to_string();
    let conditional = conditional_headers(prior);
    for _ in 0..=MAX_REDIRECTS {
        let host = allowed_host(config, &url)?;
        let response = client.fetch(&url, &conditional)?;
        let status = response.status().as_u16();
        if status == 304 {
            return if prior.is_some() {
                Ok(Read::NotModified)
            } else {
                Err(HttpError::NotSuccess { url: url.clone(), status: 304 }.into())
            };
        }
        if (300..400).contains(&status) {
            let location = header(&response, "location")
                .ok_or_else(|| rule(format!("{url} answered {status} without a Location")))?;
            url = redirect_target(&url, &location)?;
            continue;
        }
        let document = read_answer(config, response, &url)?;
        return Ok(Read::Document(Document {
            reference: reference.to_string(),
            resolver: "https",
            owner: host,
            ..document
        }));
    }
    Err(rule(format!("more than {MAX_REDIRECTS} redirects")))
}

/// Reads an `s3://BUCKET/KEY` ref.
pub(super) fn read_s3(config: &IngestConfig, reference: &str, prior: Option<&Ingested>) -> Result<Read, Refusal> {
    let (bucket, key) = s3::parse(reference).ok_or_else(|| rule("an s3 ref is `s3://BUCKET/KEY`"))?;
    if config.allow_buckets.is_empty() {
        return Err(rule("`s3://` ingest is off: name the buckets it may read in `[ingest] allow_buckets`"));
    }
    if !config.allow_buckets.iter().any(|allowed| allowed == bucket) {
        return Err(rule(format!("the bucket `{bucket}` is not in `[ingest] allow_buckets`")));
    }
    let environment = s3::S3Environment::from_env()?;
    let signed = s3::signed_get(&environment, bucket, key, &s3::amz_date_now(), &[]);
    let mut headers: Vec<(&str, String)> = signed.headers.iter().map(|(n, v)| (*n, v.clone())).collect();
    headers.extend(conditional_headers(prior));
    let client = Client::without_redirects(config.timeout_seconds, 2);
    let response = client.fetch(&signed.url, &headers)?;
    match response.status().as_u16() {
        304 if prior.is_some() => return Ok(Read::NotModified),
        200..300 => {}
        status => return Err(HttpError::NotSuccess { url: signed.url.clone(), status }.into()),
    }
    let document = read_answer(config, response, &signed.url)?;
    Ok(Read::Document(Document {
        reference: reference.to_string(),
        resolver: "s3",
        owner: bucket.to_string(),
        ..document
    }))
}

/// A 2xx answer's body as a document (ref, resolver and owner left for the caller): its type checked, its
/// size limited before and while it is read.
fn read_answer(
    config: &IngestConfig,
    response: ureq::http::Response<ureq::Body>,
    url: &str,
) -> Result<Document, Refusal> {
    let mime = header(&response, "content-type").unwrap_or_else(|| "application/octet-stream".to_string());
    let media = mime.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    if !config.content_types.iter().any(|allowed| allowed.eq_ignore_ascii_case(&media)) {
        return Err(rule(format!("content type `{media}` is not one ingest reads (`[ingest] content_types`)")));
    }
    if let Some(length) = header(&response, "content-length").and_then(|l| l.parse::<u64>().ok()) {
        check_size(length, config.max_bytes)?;
    }
    let revision = header(&response, "etag").or_else(|| header(&response, "last-modified"));
    let mut bytes = Vec::new();
    response
        .into_body()
        .into_reader()
        .take(config.max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Refusal::Content(format!("{url}: reading the answer: {e}")))?;
    check_size(bytes.len() as u64, config.max_bytes)?;
    let (title, text) = to_markdown(&bytes, &mime)?;
    Ok(Document {
        reference: String::new(),
        resolver: "https",
        owner: String::new(),
        revision_id: revision.unwrap_or_else(|| knowledge_queries::content_hash(&bytes)),
        mime: media,
        title: title.unwrap_or_else(|| url.to_string()),
        labels: Vec::new(),
        text,
    })
}

/// The host of `url` when ingest may read it: its scheme is `https` (or `http` when allowed) and its host
/// is in `allow_domains`.
fn allowed_host(config: &IngestConfig, url: &str) -> Result<String, Refusal> {
    let uri: ureq::http::Uri = url.parse().map_err(|e| rule(format!("`{url}` is not a URL: {e}")))?;
    match uri.scheme_str() {
        Some("https") => {}
        Some("http") if config.allow_http => {}
        Some("http") => return Err(rule(format!("`{url}`: http:// is read only with `[ingest] allow_http = true`"))),
        _ => return Err(rule(format!("`{url}`: ingest follows only https:// (and allowed http://) URLs"))),
    }
    let host = uri.host().ok_or_else(|| rule(format!("`{url}` names no host")))?.to_string();
    if !config.allow_domains.iter().any(|domain| host_in(&host, domain)) {
        return Err(rule(format!("host `{host}` is not in `[ingest] allow_domains`")));
    }
    Ok(host)
}

/// Where a redirect leads: an absolute URL, or a path on the same origin. Anything else is refused.
fn redirect_target(from: &str, location: &str) -> Result<String, Refusal> {
    if location.starts_with("https://") || location.starts_with("http://") {
        return Ok(location.to_string());
    }
    if location.starts_with('/') && !location.starts_with("//") {
        let uri: ureq::http::Uri = from.parse().map_err(|e| rule(format!("`{from}`: {e}")))?;
        let (scheme, authority) = (uri.scheme_str().unwrap_or("https"), uri.authority().map_or("", |a| a.as_str()));
        return Ok(format!("{scheme}://{authority}{location}"));
    }
    Err(rule(format!("{from} redirects to `{location}`, which ingest does not follow")))
}

/// `If-None-Match` with a stored ETag, or `If-Modified-Since` with a stored date.
fn conditional_headers(prior: Option<&Ingested>) -> Vec<(&'static str, String)> {
    match prior.map(|p| p.revision_id.as_str()) {
        Some(etag) if etag.starts_with('"') || etag.starts_with("W/\"") => vec![("If-None-Match", etag.to_string())],
        Some(date) if date.ends_with(" GMT") => vec![("If-Modified-Since", date.to_string())],
        _ => Vec::new(),
    }
}

fn header(response: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_allowed_hosts_and_schemes_are_read_and_redirects_stay_on_the_web() {
        let config = IngestConfig { allow_domains: vec!["example.org".to_string()], ..IngestConfig::default() };
        assert_eq!(allowed_host(&config, "https://docs.example.org/a").unwrap(), "docs.example.org");
        assert!(allowed_host(&config, "https://example.org.evil.net/a").is_err());
        assert!(allowed_host(&config, "http://example.org/a").unwrap_err().to_string().contains("allow_http"));
        assert!(allowed_host(&config, "file:///etc/passwd").is_err());
        assert_eq!(redirect_target("https://example.org/a", "/b?c").unwrap(), "https://example.org/b?c");
        assert!(redirect_target("https://example.org/a", "file:///etc/passwd").is_err());
        assert!(redirect_target("https://example.org/a", "//evil.net/x").is_err());
    }
}
