//! The OpenID Connect relying party: discovery (kept fresh in the background), the
//! authorization request with PKCE, state and nonce, and the code exchange with the ID token's
//! checks (signature, issuer, audience, expiry, nonce), all done by the `openidconnect` crate.
//! It returns the verified claims; who may sign in is decided in `mapping`.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures_util::future::BoxFuture;
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet, EndpointNotSet,
    EndpointSet, HttpRequest, HttpResponse, IssuerUrl, Nonce, PkceCodeChallenge, RedirectUrl,
    Scope,
};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;

use super::attempts::{Attempts, Pending};
use super::mapping::{Claims, Refusal};
use crate::clock;

/// Bound on one call to the provider (discovery, keys, token exchange).
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);
/// Discovery is read again this often, so keys the provider rotates are picked up.
const REFRESH_EVERY: Duration = Duration::from_hours(1);
/// The first and the longest wait before discovery is tried again after a failure.
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_mins(1);
/// How far ahead of this server's clock an ID token's issue time (`iat`) may be. Clocks drift by
/// seconds; a token issued further in the future comes from a provider whose clock is wrong, or
/// was minted to outlive its `exp` check, and is refused.
const ISSUED_AHEAD_LEEWAY: Duration = Duration::from_mins(5);

/// The callback path, appended to the public URL to make the redirect URI.
pub const CALLBACK_PATH: &str = "/login/sso/callback";

/// A client built from the provider's discovery document.
type DiscoveredClient = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// What single sign-on needs from the configuration.
#[derive(Clone)]
pub struct SsoSettings {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: String,
    /// `PORCH_PUBLIC_URL` + [`CALLBACK_PATH`].
    pub redirect_uri: String,
    /// The button's text.
    pub label: String,
    /// Lower-case email domains whose verified people get an agent account on first sign-in.
    pub provision_domains: Vec<String>,
}

/// What the callback brought back, as the browser sent it.
#[derive(Debug, Default)]
pub struct Callback {
    pub code: Option<String>,
    pub state: Option<String>,
    /// Set when the provider refused or the person cancelled; logged, never shown.
    pub error: Option<String>,
    /// The provider's words for `error`; logged with it, never shown.
    pub error_description: Option<String>,
}

/// Single sign-on against one provider, shared by every request.
pub struct Sso {
    settings: SsoSettings,
    issuer: IssuerUrl,
    redirect: RedirectUrl,
    /// The operator's provider: not behind the webhook SSRF guard, never following redirects.
    http: reqwest::Client,
    /// Set once discovery succeeded; replaced on each refresh.
    client: RwLock<Option<Arc<DiscoveredClient>>>,
    attempts: Attempts,
}

impl Sso {
    /// Prepares single sign-on; nothing is fetched until [`Sso::spawn_discovery`].
    fn new(settings: SsoSettings, http: reqwest::Client) -> Result<Self, String> {
        let issuer = IssuerUrl::new(settings.issuer.clone()).map_err(|e| e.to_string())?;
        let redirect =
            RedirectUrl::new(settings.redirect_uri.clone()).map_err(|e| e.to_string())?;
        Ok(Self {
            settings,
            issuer,
            redirect,
            http,
            client: RwLock::new(None),
            attempts: Attempts::default(),
        })
    }

    /// Single sign-on as configured (`PORCH_OIDC_*`), or `None` when it is not.
    ///
    /// # Errors
    /// The issuer or the redirect URI is not a URL (the configuration rules catch that first).
    pub fn from_config(
        config: &crate::config::Config,
        public_url: &str,
        http: reqwest::Client,
    ) -> anyhow::Result<Option<Arc<Self>>> {
        let (Some(issuer), Some(client_id), Some(client_secret)) = (
            &config.oidc_issuer,
            &config.oidc_client_id,
            &config.oidc_client_secret,
        ) else {
            return Ok(None);
        };
        let settings = SsoSettings {
            issuer: issuer.clone(),
            client_id: client_id.clone(),
            client_secret: client_secret.expose().to_owned(),
            redirect_uri: format!("{public_url}{CALLBACK_PATH}"),
            label: config.oidc_label.trim().to_owned(),
            provision_domains: config.oidc_auto_provision_domains.to_vec(),
        };
        let sso = Self::new(settings, http)
            .map_err(|err| anyhow::anyhow!("single sign-on settings: {err}"))?;
        Ok(Some(Arc::new(sso)))
    }

    /// The settings it runs with.
    pub fn settings(&self) -> &SsoSettings {
        &self.settings
    }

    /// True once the provider's discovery document and keys have been read.
    pub fn is_ready(&self) -> bool {
        self.current().is_some()
    }

    /// The crate's HTTP client: our reqwest client behind its `AsyncHttpClient` (a closure).
    fn caller(
        &self,
    ) -> impl Fn(HttpRequest) -> BoxFuture<'static, Result<HttpResponse, reqwest::Error>> {
        let http = self.http.clone();
        move |request| Box::pin(send(http.clone(), request))
    }

    fn current(&self) -> Option<Arc<DiscoveredClient>> {
        self.client.read().ok().and_then(|slot| slot.clone())
    }

    /// Reads the discovery document and the provider's keys, and uses them from now on.
    async fn discover(&self) -> Result<(), String> {
        let call = self.caller();
        let metadata = CoreProviderMetadata::discover_async(self.issuer.clone(), &call)
            .await
            .map_err(|err| crate::integrations::send_error::error_chain(&err))?;
        let client = CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.settings.client_id.clone()),
            Some(ClientSecret::new(self.settings.client_secret.clone())),
        )
        .set_redirect_uri(self.redirect.clone());
        if let Ok(mut slot) = self.client.write() {
            *slot = Some(Arc::new(client));
        }
        Ok(())
    }

    /// Runs discovery now and keeps it fresh: after a failure (the provider down at boot) it is
    /// tried again with a doubling wait up to a minute; after a success, once an hour. The last
    /// good document stays in use while a refresh fails.
    pub fn spawn_discovery(self: Arc<Self>, shutdown: CancellationToken) {
        tokio::spawn(async move {
            let mut retry = RETRY_FIRST;
            loop {
                let wait = match self.discover().await {
                    Ok(()) => {
                        tracing::info!(issuer = %self.settings.issuer, "single sign-on ready");
                        retry = RETRY_FIRST;
                        REFRESH_EVERY
                    }
                    Err(err) => {
                        tracing::warn!(
                            issuer = %self.settings.issuer,
                            error = %err,
                            retry_in = ?retry,
                            "single sign-on: provider discovery failed"
                        );
                        let wait = retry;
                        retry = (retry * 2).min(RETRY_MAX);
                        wait
                    }
                };
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(wait) => {}
                }
            }
        });
    }

    /// Starts a sign-in: remembers a new attempt (state, nonce, PKCE verifier and `next`) and
    /// returns its id, for the browser's cookie, and the provider URL to send the browser to.
    ///
    /// # Errors
    /// [`Refusal::Unavailable`] while discovery has not succeeded.
    pub fn begin(&self, next: String) -> Result<(String, String), Refusal> {
        let client = self.current().ok_or(Refusal::Unavailable)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let (url, state, nonce) = client
            .authorize_url(
                CoreAuthenticationFlow::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .add_scope(Scope::new("email".to_owned()))
            .add_scope(Scope::new("profile".to_owned()))
            .set_pkce_challenge(challenge)
            .url();
        let id = self.attempts.insert(Pending {
            state,
            nonce,
            verifier,
            next,
        });
        Ok((id, url.to_string()))
    }

    /// Finishes a sign-in: takes the browser's attempt (single use), checks `state`, exchanges
    /// the code with the PKCE verifier and verifies the ID token. Returns the claims, or the
    /// [`Refusal`] to show (the provider's own text is only logged), and the attempt's `next`
    /// (none when there was no attempt of this browser), kept for a refusal too.
    pub async fn finish(
        &self,
        attempt: Option<&str>,
        callback: Callback,
    ) -> (Result<Claims, Refusal>, Option<String>) {
        let Some(pending) = attempt.and_then(|id| self.attempts.take(id)) else {
            return (Err(Refusal::StateMismatch), None);
        };
        let next = pending.next.clone();
        (self.complete(pending, callback).await, Some(next))
    }

    async fn complete(&self, pending: Pending, callback: Callback) -> Result<Claims, Refusal> {
        let state_ok = callback.state.as_deref().is_some_and(|state| {
            bool::from(state.as_bytes().ct_eq(pending.state.secret().as_bytes()))
        });
        if !state_ok {
            return Err(Refusal::StateMismatch);
        }
        if let Some(error) = callback.error {
            // The provider's code (`access_denied`, …) and words are for the operator; cut
            // short and without control characters, since anyone can put text in this URL.
            let error = loggable(&error);
            let description = loggable(callback.error_description.as_deref().unwrap_or(""));
            tracing::info!(%error, %description, "single sign-on: the provider refused");
            return Err(Refusal::ProviderError);
        }
        let code = callback.code.ok_or(Refusal::ProviderError)?;
        let client = self.current().ok_or(Refusal::Unavailable)?;
        let call = self.caller();
        let token = client
            .exchange_code(AuthorizationCode::new(code))
            .map_err(|err| token_failure(&err))?
            .set_pkce_verifier(pending.verifier)
            .request_async(&call)
            .await
            .map_err(|err| token_failure(&err))?;
        let id_token = openidconnect::TokenResponse::id_token(&token)
            .ok_or_else(|| token_failure(&"no ID token in the token response"))?;
        let verifier = client
            .id_token_verifier()
            .set_issue_time_verifier_fn(|iat| {
                issued_by_now(iat.timestamp_millis(), clock::now_ms())
            });
        let claims = id_token
            .claims(&verifier, &pending.nonce)
            .map_err(|err| token_failure(&err))?;
        let party = claims.authorized_party().map(|party| party.as_str());
        issued_to(party, &self.settings.client_id).map_err(|err| token_failure(&err))?;
        let claims = Claims {
            issuer: claims.issuer().to_string(),
            subject: claims.subject().to_string(),
            // Trimmed once here, so the lookup, the provisioned domains and a new account all
            // read the same address: a trailing space was refused where a leading one passed.
            email: claims.email().map(|email| email.trim().to_owned()),
            email_verified: claims.email_verified(),
            name: claims
                .name()
                .and_then(|name| name.get(None))
                .map(|name| name.to_string()),
        };
        Ok(claims)
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

/// Text from the callback's URL as it may go to the log: at most 200 characters, none of them
/// control characters (no forged log lines).
fn loggable(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(200).collect()
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

/// Logs why the code exchange or the ID token failed (for the operator) and refuses.
fn token_failure(err: &dyn std::fmt::Display) -> Refusal {
    tracing::warn!(error = %err, "single sign-on: code exchange or ID token check failed");
    Refusal::TokenInvalid
}

/// The crate's HTTP calls, made with our reqwest client (one TLS stack for the whole binary).
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
}
