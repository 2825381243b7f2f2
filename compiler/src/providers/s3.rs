//! `s3://BUCKET/KEY`: signed requests (AWS Signature Version 4) with the credentials of the environment, as
//! the AWS tools read them: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` (optional),
//! `AWS_REGION` or `AWS_DEFAULT_REGION` (else `us-east-1`), and `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`
//! for an S3-compatible server (path-style requests), else AWS itself (virtual-hosted requests).
//!
//! Ingest needs one signed GET and the artifact store a GET, a PUT and a DELETE, so they are written here
//! over the shared HTTP client (two small RustCrypto crates do the hashing) rather than pulling in an SDK and
//! its async runtime.

use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};

/// The SHA-256 of an empty body: a GET's payload hash.
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// The credentials and endpoint of the environment.
#[derive(Debug, Clone)]
pub(crate) struct S3Environment {
    pub(crate) access_key: String,
    pub(crate) secret_key: String,
    pub(crate) session_token: Option<String>,
    pub(crate) region: String,
    /// A custom endpoint (`http://127.0.0.1:9000`), for path-style requests.
    pub(crate) endpoint: Option<String>,
}

impl S3Environment {
    /// Reads the environment; a missing key is an error that names its variable.
    pub(crate) fn from_env() -> Result<S3Environment, MissingCredentials> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let required = |name: &'static str| var(name).ok_or(MissingCredentials { variable: name });
        Ok(S3Environment {
            access_key: required("AWS_ACCESS_KEY_ID")?,
            secret_key: required("AWS_SECRET_ACCESS_KEY")?,
            session_token: var("AWS_SESSION_TOKEN"),
            region: var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")).unwrap_or_else(|| "us-east-1".to_string()),
            endpoint: var("AWS_ENDPOINT_URL_S3").or_else(|| var("AWS_ENDPOINT_URL")),
        })
    }
}

/// An S3 credential the environment lacks.
#[derive(Debug, thiserror::Error)]
#[error("s3:// refs need credentials: `{variable}` is not set")]
pub struct MissingCredentials {
    pub variable: &'static str,
}

/// A request to make: its URL and signed headers.
#[derive(Debug)]
pub(crate) struct SignedGet {
    pub(crate) url: String,
    pub(crate) headers: Vec<(&'static str, String)>,
}

/// The signed GET of `key` in `bucket` at `amz_date` (`YYYYMMDDTHHMMSSZ`). `extra`: further headers to sign,
/// lowercase names.
pub(crate) fn signed_get(
    env: &S3Environment,
    bucket: &str,
    key: &str,
    amz_date: &str,
    extra: &[(&'static str, String)],
) -> SignedGet {
    signed_request(env, "GET", bucket, key, b"", amz_date, extra)
}

/// The signed `method` request of `key` in `bucket` with `payload` as its body.
pub(crate) fn signed_request(
    env: &S3Environment,
    method: &str,
    bucket: &str,
    key: &str,
    payload: &[u8],
    amz_date: &str,
    extra: &[(&'static str, String)],
) -> SignedGet {
    let payload_hash = if payload.is_empty() { EMPTY_SHA256.to_string() } else { hex(&Sha256::digest(payload)) };
    let encoded_key = encode_path(key);
    let (scheme_host, host, path) = match &env.endpoint {
        Some(endpoint) => {
            let endpoint = endpoint.trim_end_matches('/');
            let host = endpoint.split_once("://").map_or(endpoint, |(_, rest)| rest).to_string();
            (endpoint.to_string(), host, format!("/{bucket}/{encoded_key}"))
        }
        None => {
            // us-east-1 answers at the global endpoint too; every other region at its own.
            let host = match env.region.as_str() {
                "us-east-1" => format!("{bucket}.s3.amazonaws.com"),
                region => format!("{bucket}.s3.{region}.amazonaws.com"),
            };
            (format!("https://{host}"), host, format!("/{encoded_key}"))
        }
    };
    let mut headers: Vec<(&'static str, String)> =
        vec![("host", host), ("x-amz-content-sha256", EMPTY_SHA256.to_string()), ("x-amz-date", amz_date.to_string())];
    if let Some(token) = &env.session_token {
        headers.push(("x-amz-security-token", token.clone()));
    }
    headers.extend(extra.iter().cloned());
    headers.sort_by(|a, b| a.0.cmp(b.0));
    let signed_names = headers.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(";");
    let canonical_headers: String = headers.iter().map(|(name, value)| format!("{name}:{}\n", value.trim())).collect();
    let canonical_request = format!("{method}\n{path}\n\n{canonical_headers}\n{signed_names}\n{payload_hash}");
    let date = &amz_date[..8];
    let scope = format!("{date}/{}/s3/aws4_request", env.region);
    let string_to_sign = format!("AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}", hex(&Sha256::digest(canonical_request)));
    let mut signing_key = hmac(format!("AWS4{}", env.secret_key).as_bytes(), date.as_bytes());
    for part in [env.region.as_str(), "s3", "aws4_request"] {
        signing_key = hmac(&signing_key, part.as_bytes());
    }
    let signature = hex(&hmac(&signing_key, string_to_sign.as_bytes()));
    headers.push((
        "authorization",
        format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_names}, Signature={signature}",
            env.access_key
        ),
    ));
    // The HTTP client sets `Host` itself, from the URL.
    headers.retain(|(name, _)| *name != "host");
    SignedGet { url: format!("{scheme_host}{path}"), headers }
}

/// `s3://BUCKET/KEY` as (bucket, key).
pub(crate) fn parse(reference: &str) -> Option<(&str, &str)> {
    let rest = reference.strip_prefix("s3://")?;
    let (bucket, key) = rest.split_once('/')?;
    (!bucket.is_empty() && !key.is_empty()).then_some((bucket, key))
}

/// The time now as SigV4 writes it: `YYYYMMDDTHHMMSSZ`.
pub(crate) fn amz_date_now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string().replace(['-', ':'], "")
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = hmac::Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A key's path, each segment percent-encoded as SigV4 requires (unreserved characters kept, `/` kept).
fn encode_path(key: &str) -> String {
    let mut encoded = String::with_capacity(key.len());
    for byte in key.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The "GET Object" example of AWS's Signature Version 4 documentation for S3 ("Examples: Signature
    /// Calculations in AWS Signature Version 4"), with its published signature.
    #[test]
    fn a_get_is_signed_as_the_aws_documentation_example() {
        let env = S3Environment {
            access_key: "AKIAIOSFODNN7EXAMPLE".to_string(),
            secret_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".to_string(),
            session_token: None,
            region: "us-east-1".to_string(),
            endpoint: None,
        };
        let signed =
            signed_get(&env, "examplebucket", "test.txt", "20130524T000000Z", &[("range", "bytes=0-9".into())]);
        assert_eq!(signed.url, "https://examplebucket.s3.amazonaws.com/test.txt");
        let authorization = &signed.headers.iter().find(|(name, _)| *name == "authorization").unwrap().1;
        assert_eq!(
            authorization,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn refs_and_keys_are_read_and_encoded() {
        assert_eq!(parse("s3://docs/team/a b.md"), Some(("docs", "team/a b.md")));
        assert_eq!(parse("s3://docs/"), None);
        assert_eq!(parse("s3://docs"), None);
        assert_eq!(encode_path("team/a b+ü.md"), "team/a%20b%2B%C3%BC.md");
        assert_eq!(amz_date_now().len(), 16);
    }
}
