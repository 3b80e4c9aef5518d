//! Reading the provider's configuration: its discovery document (OpenID Connect Discovery 1.0)
//! and its signing keys. A failure is told apart as a provider that cannot be reached (retrying
//! mends it) or one that answers with a configuration that does not match Porch's settings (a
//! person must change one), and says what to change, for the log and the sign-in page.

use std::time::Duration;

use openidconnect::IssuerUrl;
use openidconnect::core::{CoreJsonWebKeySet, CoreProviderMetadata};
use reqwest::StatusCode;
use serde::de::DeserializeOwned;

use super::token::loggable;
use crate::integrations::send_error::describe;

/// Bound on one call to the provider (discovery, keys, token exchange).
pub const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);
/// Where the discovery document is, under the issuer (Discovery 1.0, section 4).
const DISCOVERY_PATH: &str = ".well-known/openid-configuration";

/// Why the provider's configuration could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// No answer, or one saying the provider is down for now (5xx, 429): retrying mends it.
    Unreachable(String),
    /// An answer that does not fit Porch's settings (another issuer, not a discovery document,
    /// a 404): retrying does not mend it until someone changes a setting.
    Misconfigured(String),
}

impl Failure {
    pub fn is_misconfigured(&self) -> bool {
        matches!(self, Self::Misconfigured(_))
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unreachable(why) | Self::Misconfigured(why) => f.write_str(why),
        }
    }
}

/// The provider's discovery document, checked to name `issuer` as its issuer, with its keys.
///
/// # Errors
/// What went wrong, told apart as above.
pub async fn read_provider(
    http: &reqwest::Client,
    issuer: &IssuerUrl,
) -> Result<CoreProviderMetadata, Failure> {
    let url = issuer.join(DISCOVERY_PATH).map_err(|err| {
        Failure::Misconfigured(format!("PORCH_OIDC_ISSUER makes no discovery URL: {err}"))
    })?;
    let metadata: CoreProviderMetadata = read_json(
        http,
        url.as_str(),
        "is not an OpenID Connect discovery document",
        "check PORCH_OIDC_ISSUER",
    )
    .await?;
    same_issuer(metadata.issuer().as_str(), issuer.as_str())?;
    let keys: CoreJsonWebKeySet = read_json(
        http,
        metadata.jwks_uri().as_str(),
        "is not a JSON Web Key Set",
        "check the provider's jwks_uri",
    )
    .await?;
    Ok(metadata.set_jwks(keys))
}

/// Discovery 1.0, section 4.3: the issuer the document states must be exactly the one it was
/// read for, or tokens would be checked against an issuer the provider does not use. Written by
/// hand, not left to the crate, so the log can say what to set.
fn same_issuer(stated: &str, configured: &str) -> Result<(), Failure> {
    if stated == configured {
        return Ok(());
    }
    Err(Failure::Misconfigured(format!(
        "the provider says its issuer is {}; set PORCH_OIDC_ISSUER to exactly that (it is {})",
        loggable(stated),
        configured
    )))
}

/// GETs `url` and reads its JSON; `not_it` says what a body that does not parse is not, `fix`
/// what to check when the provider's answer does not fit.
async fn read_json<T: DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
    not_it: &str,
    fix: &str,
) -> Result<T, Failure> {
    let unreachable = |err: reqwest::Error| Failure::Unreachable(describe(err));
    let response = http
        .get(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .timeout(PROVIDER_TIMEOUT)
        .send()
        .await
        .map_err(unreachable)?;
    let status = response.status();
    let body = response.bytes().await.map_err(unreachable)?;
    answered(status, url, fix)?;
    serde_json::from_slice(&body)
        .map_err(|err| Failure::Misconfigured(format!("{url} {not_it} ({err}); {fix}")))
}

/// Classifies an HTTP status: 200 is the document, a server error or 429 a provider that is down
/// for now, anything else (a 404, a redirect) an address that is not the provider's document.
fn answered(status: StatusCode, url: &str, fix: &str) -> Result<(), Failure> {
    if status == StatusCode::OK {
        return Ok(());
    }
    let what = format!("the provider answered {status} for {url}");
    if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
        Err(Failure::Unreachable(what))
    } else {
        Err(Failure::Misconfigured(format!("{what}; {fix}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_issuer_is_a_misconfiguration_that_says_what_to_set() {
        assert_eq!(
            same_issuer("https://id.example", "https://id.example"),
            Ok(())
        );
        let failure = same_issuer("http://localhost:22401", "http://localhost:22401/");
        assert_eq!(
            failure,
            Err(Failure::Misconfigured(
                "the provider says its issuer is http://localhost:22401; set PORCH_OIDC_ISSUER \
                 to exactly that (it is http://localhost:22401/)"
                    .to_owned()
            ))
        );
    }

    #[test]
    fn a_provider_down_for_now_is_unreachable_and_a_wrong_address_misconfigured() {
        let url = "https://id.example/.well-known/openid-configuration";
        assert_eq!(answered(StatusCode::OK, url, "check"), Ok(()));
        for down in [StatusCode::BAD_GATEWAY, StatusCode::TOO_MANY_REQUESTS] {
            let failure = answered(down, url, "check").unwrap_err();
            assert!(!failure.is_misconfigured(), "{failure}");
        }
        let failure = answered(StatusCode::NOT_FOUND, url, "check PORCH_OIDC_ISSUER");
        assert_eq!(
            failure,
            Err(Failure::Misconfigured(format!(
                "the provider answered 404 Not Found for {url}; check PORCH_OIDC_ISSUER"
            )))
        );
    }

    /// A server on loopback that answers every request with `body` as an HTML page.
    async fn page_server(body: &'static str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut request = [0_u8; 4096];
                let _ = stream.read(&mut request).await;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            }
        });
        url
    }

    #[tokio::test]
    async fn no_answer_is_unreachable_and_a_page_that_is_not_a_document_misconfigured() {
        let http = crate::integrations::HttpClients::build(true)
            .expect("clients")
            .known_hosts;
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let issuer = format!("http://{}", closed.local_addr().expect("addr"));
        drop(closed);
        let issuer = IssuerUrl::new(issuer).expect("a URL");
        let failure = read_provider(&http, &issuer).await.unwrap_err();
        assert!(!failure.is_misconfigured(), "{failure}");
        assert!(
            failure.to_string().contains("connection refused"),
            "{failure}"
        );

        let issuer = IssuerUrl::new(page_server("<p>Welcome to nginx!</p>").await).expect("URL");
        let failure = read_provider(&http, &issuer).await.unwrap_err();
        assert!(failure.is_misconfigured(), "{failure}");
        let said = failure.to_string();
        assert!(
            said.contains(
                "/.well-known/openid-configuration is not an OpenID Connect discovery \
                           document"
            ) && said.ends_with("; check PORCH_OIDC_ISSUER"),
            "{said}"
        );
    }
}
