//! The provider's answers to a callback: the code exchange's HTTP (our reqwest client behind the
//! crate's), the ID token's checks (the crate's, plus the two Porch adds) and the words the log
//! gets when either fails. Whether to read the provider's keys again is `provider`'s decision.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures_util::future::BoxFuture;
use openidconnect::core::{CoreClient, CoreIdToken};
use openidconnect::{
    ClaimsVerificationError, EndpointMaybeSet, EndpointNotSet, EndpointSet, ErrorResponse,
    HttpRequest, HttpResponse, Nonce, RequestTokenError, SignatureVerificationError,
};

use super::discovery::PROVIDER_TIMEOUT;
use super::mapping::Claims;
use crate::clock;
use crate::integrations::send_error::error_chain;

/// How far ahead of this server's clock an ID token's issue time (`iat`) may be. Clocks drift by
/// seconds; a token issued further in the future comes from a provider whose clock is wrong, or
/// was minted to outlive its `exp` check, and is refused.
const ISSUED_AHEAD_LEEWAY: std::time::Duration = std::time::Duration::from_mins(5);

/// A client built from the provider's discovery document.
pub type DiscoveredClient = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// Why an ID token was not accepted.
#[derive(Debug, PartialEq, Eq)]
pub enum Rejected {
    /// Signed with a key the provider's key set (as Porch last read it) does not have: after a
    /// rotation, reading the keys again mends it.
    UnknownKey,
    /// The signature does not check out with the key of its `kid` as Porch last read it: a
    /// provider that made a new key under the same `kid` (or with none; a rebuilt development
    /// provider does) is mended by reading the keys again too. In words for the log.
    BadSignature(String),
    /// Any other failed check, in words for the log.
    Invalid(String),
}

/// The claims Porch reads from `id_token`, once the crate checked its signature (against
/// `client`'s keys), issuer, audience, expiry and `nonce`, and Porch its `iat` and `azp`.
///
/// # Errors
/// Which check failed.
pub fn verified(
    client: &DiscoveredClient,
    client_id: &str,
    id_token: &CoreIdToken,
    nonce: &Nonce,
) -> Result<Claims, Rejected> {
    let verifier = client
        .id_token_verifier()
        .set_issue_time_verifier_fn(|iat| issued_by_now(iat.timestamp_millis(), clock::now_ms()));
    let claims = id_token.claims(&verifier, nonce).map_err(|err| match err {
        ClaimsVerificationError::SignatureVerification(
            SignatureVerificationError::NoMatchingKey,
        ) => Rejected::UnknownKey,
        ClaimsVerificationError::SignatureVerification(
            SignatureVerificationError::CryptoError(_),
        ) => Rejected::BadSignature(error_chain(&err)),
        other => Rejected::Invalid(error_chain(&other)),
    })?;
    let party = claims.authorized_party().map(|party| party.as_str());
    issued_to(party, client_id).map_err(Rejected::Invalid)?;
    Ok(Claims {
        issuer: claims.issuer().to_string(),
        subject: claims.subject().to_string(),
        // Trimmed once here, so the lookup, the provisioned domains and a new account all read
        // the same address: a trailing space was refused where a leading one passed.
        email: claims.email().map(|email| email.trim().to_owned()),
        email_verified: claims.email_verified(),
        name: claims
            .name()
            .and_then(|name| name.get(None))
            .map(|name| name.to_string()),
    })
}

/// The key id (`kid`) in an ID token's header, for the log: `none` when it has none.
pub fn key_id(id_token: &CoreIdToken) -> String {
    let compact = id_token.to_string();
    let header = compact.split('.').next().unwrap_or_default();
    let kid = URL_SAFE_NO_PAD
        .decode(header)
        .ok()
        .and_then(|json| serde_json::from_slice::<serde_json::Value>(&json).ok())
        .and_then(|header| header.get("kid")?.as_str().map(loggable));
    kid.unwrap_or_else(|| "none".to_owned())
}

/// Why the code exchange failed, for the log: a token endpoint that did not answer in time says
/// so, since reqwest's own words for it ("error sending request") do not.
pub fn exchange_problem<T: ErrorResponse + 'static>(
    err: &RequestTokenError<reqwest::Error, T>,
) -> String {
    match err {
        RequestTokenError::Request(sent) if sent.is_timeout() => format!(
            "the token endpoint did not answer within {} s (timed out)",
            PROVIDER_TIMEOUT.as_secs()
        ),
        other => error_chain(other),
    }
}

/// OpenID Connect Core 3.1.3.7: a token issued to another party (`azp`) is not ours, even when
/// our client id is among its audiences; the crate leaves this check to us.
fn issued_to(authorized_party: Option<&str>, client_id: &str) -> Result<(), String> {
    match authorized_party {
        Some(party) if party != client_id => Err(format!(
            "the ID token was issued to {} (azp), not to this client",
            loggable(party)
        )),
        _ => Ok(()),
    }
}

/// Checks an ID token's `iat` against this server's clock, both in Unix milliseconds.
fn issued_by_now(iat_ms: i64, now_ms: i64) -> Result<(), String> {
    if iat_ms > now_ms.saturating_add(clock::millis(ISSUED_AHEAD_LEEWAY)) {
        return Err(format!(
            "the ID token is issued {} s in the future; check the provider's clock",
            (iat_ms - now_ms) / 1000
        ));
    }
    Ok(())
}

/// Text from the provider or the callback's URL as it may go to the log: at most 200
/// characters, none of them control characters (no forged log lines).
pub fn loggable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(200).collect()
}

/// The crate's HTTP client: our reqwest client behind its `AsyncHttpClient` (a closure), so the
/// whole binary has one TLS stack.
pub fn caller(
    http: &reqwest::Client,
) -> impl Fn(HttpRequest) -> BoxFuture<'static, Result<HttpResponse, reqwest::Error>> {
    let http = http.clone();
    move |request| Box::pin(send(http.clone(), request))
}

async fn send(http: reqwest::Client, request: HttpRequest) -> Result<HttpResponse, reqwest::Error> {
    let (parts, body) = request.into_parts();
    let response = http
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .timeout(PROVIDER_TIMEOUT)
        .send()
        .await?;
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.bytes().await?.to_vec();
    let mut answer = HttpResponse::new(body);
    *answer.status_mut() = status;
    *answer.headers_mut() = headers;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use openidconnect::StandardErrorResponse;
    use openidconnect::core::CoreErrorResponseType;

    use super::*;

    #[test]
    fn an_id_token_issued_beyond_the_leeway_is_refused() {
        let now = 1_800_000_000_000;
        let leeway = clock::millis(ISSUED_AHEAD_LEEWAY);
        assert_eq!(issued_by_now(now - 3_600_000, now), Ok(()));
        assert_eq!(issued_by_now(now + leeway, now), Ok(()), "a drifting clock");
        let refused = issued_by_now(now + leeway + 1000, now).unwrap_err();
        assert!(refused.contains("301 s in the future"), "{refused}");
        assert!(issued_by_now(now + 86_400_000, now).is_err());
    }

    #[test]
    fn a_token_issued_to_another_party_is_refused() {
        assert_eq!(issued_to(None, "porch"), Ok(()));
        assert_eq!(issued_to(Some("porch"), "porch"), Ok(()));
        let refused = issued_to(Some("other-app"), "porch").unwrap_err();
        assert!(refused.contains("other-app"), "{refused}");
    }

    type ExchangeError =
        RequestTokenError<reqwest::Error, StandardErrorResponse<CoreErrorResponseType>>;

    #[tokio::test]
    async fn a_token_endpoint_that_does_not_answer_in_time_is_said_to_have_timed_out() {
        let http = crate::integrations::HttpClients::build(true)
            .expect("clients")
            .known_hosts;
        // Accepts the connection and never answers.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let url = format!("http://{}/token", silent.local_addr().expect("addr"));
        let sent = http
            .post(&url)
            .timeout(std::time::Duration::from_millis(100))
            .send()
            .await
            .unwrap_err();
        let said = exchange_problem(&ExchangeError::Request(sent));
        assert_eq!(
            said,
            "the token endpoint did not answer within 10 s (timed out)"
        );

        let refused = ExchangeError::Other("the provider said no".to_owned());
        assert_eq!(
            exchange_problem(&refused),
            "Other error: the provider said no"
        );
    }

    #[test]
    fn the_key_id_is_read_from_the_tokens_header() {
        let part = |json: serde_json::Value| URL_SAFE_NO_PAD.encode(json.to_string());
        let claims = part(serde_json::json!({
            "iss": "https://id.example", "aud": "porch", "sub": "s1", "exp": 2, "iat": 1
        }));
        let token = |header| {
            let compact = format!("{}.{claims}.c2ln", part(header));
            serde_json::from_value::<CoreIdToken>(serde_json::Value::String(compact))
                .expect("an ID token")
        };
        let with_kid = token(serde_json::json!({"alg": "RS256", "kid": "key-2"}));
        assert_eq!(key_id(&with_kid), "key-2");
        assert_eq!(key_id(&token(serde_json::json!({"alg": "RS256"}))), "none");
    }
}
