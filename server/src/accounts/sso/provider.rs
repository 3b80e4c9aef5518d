//! The OpenID Connect relying party: discovery (kept fresh in the background, and read again
//! when a token comes signed with a key Porch does not know), the authorization request with
//! PKCE, state and nonce, and the code exchange with the ID token's checks, all done by the
//! `openidconnect` crate. It returns the verified claims; who may sign in is decided in `mapping`.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreIdToken};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, Scope, TokenResponse as _,
};
use subtle::ConstantTimeEq;
use tokio_util::sync::CancellationToken;

use super::attempts::{Attempts, Pending};
use super::discovery::{self, Failure};
use super::mapping::{Claims, Refusal};
use super::token::{
    DiscoveredClient, Rejected, caller, exchange_problem, key_id, loggable, verified,
};

/// Discovery is read again this often, so keys the provider rotates are picked up.
const REFRESH_EVERY: Duration = Duration::from_hours(1);
/// The first and the longest wait before discovery is tried again after a failure.
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_mins(1);
/// Least time between two readings of the provider's keys prompted by an ID token signed with a
/// key Porch does not know: one reading follows a rotation at once, and tokens with forged key
/// ids cannot make Porch call the provider more often than this.
const KEYS_AGAIN_AFTER: Duration = Duration::from_mins(1);

/// The callback path, appended to the public URL to make the redirect URI.
pub const CALLBACK_PATH: &str = "/login/sso/callback";

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
    /// What discovery found so far.
    discovered: RwLock<Discovered>,
    /// When the keys were last read again for a token signed with an unknown key. Held while
    /// reading, so callbacks that come at once wait for one reading and use its keys.
    keys_read_again: tokio::sync::Mutex<Option<Instant>>,
    attempts: Attempts,
}

/// What discovery found so far.
#[derive(Default)]
struct Discovered {
    /// Set once discovery succeeded; replaced on each refresh.
    client: Option<Arc<DiscoveredClient>>,
    /// The last failed discovery was a misconfiguration, not an unreachable provider.
    is_misconfigured: bool,
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
            discovered: RwLock::default(),
            keys_read_again: tokio::sync::Mutex::default(),
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

    /// `Ok` once the provider's discovery document and keys have been read; before, why not:
    /// [`Refusal::Misconfigured`] when the provider's answer does not match Porch's settings,
    /// else [`Refusal::Unavailable`] (not reached yet).
    ///
    /// # Errors
    /// As said.
    pub fn readiness(&self) -> Result<(), Refusal> {
        let Ok(discovered) = self.discovered.read() else {
            return Err(Refusal::Unavailable);
        };
        match discovered.client {
            Some(_) => Ok(()),
            None if discovered.is_misconfigured => Err(Refusal::Misconfigured),
            None => Err(Refusal::Unavailable),
        }
    }

    fn current(&self) -> Option<Arc<DiscoveredClient>> {
        self.discovered
            .read()
            .ok()
            .and_then(|found| found.client.clone())
    }

    /// Reads the discovery document and the provider's keys, and uses them from now on. A
    /// failure keeps the last good client, and is remembered for [`Sso::readiness`].
    async fn discover(&self) -> Result<(), Failure> {
        let read = discovery::read_provider(&self.http, &self.issuer).await;
        let Ok(mut discovered) = self.discovered.write() else {
            return read.map(drop);
        };
        match read {
            Ok(metadata) => {
                let client = CoreClient::from_provider_metadata(
                    metadata,
                    ClientId::new(self.settings.client_id.clone()),
                    Some(ClientSecret::new(self.settings.client_secret.clone())),
                )
                .set_redirect_uri(self.redirect.clone());
                discovered.client = Some(Arc::new(client));
                discovered.is_misconfigured = false;
                Ok(())
            }
            Err(failure) => {
                discovered.is_misconfigured = failure.is_misconfigured();
                Err(failure)
            }
        }
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
                    Err(failure) => {
                        self.log_discovery_failure(&failure, retry);
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

    /// A provider that cannot be reached is a warning (it may come back); one whose answer does
    /// not match Porch's settings is an error someone must mend, and the line says what to set.
    fn log_discovery_failure(&self, failure: &Failure, retry_in: Duration) {
        let issuer = &self.settings.issuer;
        match failure {
            Failure::Unreachable(error) => tracing::warn!(
                %issuer,
                %error,
                ?retry_in,
                "single sign-on: provider discovery failed: the provider cannot be reached"
            ),
            Failure::Misconfigured(problem) => tracing::error!(
                %issuer,
                %problem,
                ?retry_in,
                "single sign-on: provider discovery failed: single sign-on is misconfigured \
                 (retried in the background, but only mended by fixing what `problem` says)"
            ),
        }
    }

    /// Starts a sign-in: remembers a new attempt (state, nonce, PKCE verifier and `next`) and
    /// returns its id, for the browser's cookie, and the provider URL to send the browser to.
    ///
    /// # Errors
    /// [`Refusal::Unavailable`] or [`Refusal::Misconfigured`] while discovery has not succeeded.
    pub fn begin(&self, next: String) -> Result<(String, String), Refusal> {
        self.readiness()?;
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
        let Some(code) = callback.code else {
            tracing::info!(
                "single sign-on: the callback has neither a code nor an error, so the provider \
                 did not sign the person in"
            );
            return Err(Refusal::ProviderError);
        };
        let client = self.current().ok_or(Refusal::Unavailable)?;
        let id_token = self.exchange(&client, code, pending.verifier).await?;
        let id = self.settings.client_id.as_str();
        let checked = match verified(&client, id, &id_token, &pending.nonce) {
            Err(rejected @ (Rejected::UnknownKey | Rejected::BadSignature(_))) => {
                let why = match &rejected {
                    Rejected::UnknownKey => "a key the provider's keys did not have when last read",
                    _ => "a key whose signature the provider's keys, as last read, do not check",
                };
                let client = self.read_keys_again(&key_id(&id_token), why).await;
                client.map_or(Err(rejected), |client| {
                    verified(&client, id, &id_token, &pending.nonce)
                })
            }
            checked => checked,
        };
        // Read again now, or less than a minute ago and not again yet: the words say both, so an
        // operator whose provider just published a key waits a minute instead of hunting for it.
        let again = "after reading the provider's keys again now or in the last minute (at most \
                     once a minute: a key published since is read by a sign-in a minute later)";
        checked.map_err(|rejected| match rejected {
            Rejected::UnknownKey => token_failure(&format!(
                "the ID token is signed with a key (kid {}) the provider's keys do not have, {again}",
                key_id(&id_token)
            )),
            Rejected::BadSignature(why) => token_failure(&format!("{why}, {again}")),
            Rejected::Invalid(why) => token_failure(&why),
        })
    }

    /// Exchanges `code` (with the PKCE verifier) at the token endpoint for the ID token.
    async fn exchange(
        &self,
        client: &DiscoveredClient,
        code: String,
        verifier: PkceCodeVerifier,
    ) -> Result<CoreIdToken, Refusal> {
        let call = caller(&self.http);
        let token = client
            .exchange_code(AuthorizationCode::new(code))
            .map_err(|err| token_failure(&err))?
            .set_pkce_verifier(verifier)
            .request_async(&call)
            .await
            .map_err(|err| token_failure(&exchange_problem(&err)))?;
        token
            .id_token()
            .cloned()
            .ok_or_else(|| token_failure(&"no ID token in the token response"))
    }

    /// The client to check again a token signed with the unknown or changed key `kid` (`why`
    /// says which, for the log): a provider rotating its keys publishes the new one before
    /// signing with it, so the keys are read again, at
    /// most once per [`KEYS_AGAIN_AFTER`]; within that, the keys read last (a callback that
    /// waited here for another's reading gets its keys).
    async fn read_keys_again(&self, kid: &str, why: &str) -> Option<Arc<DiscoveredClient>> {
        let mut last = self.keys_read_again.lock().await;
        let now = Instant::now();
        if is_due(*last, now) {
            *last = Some(now);
            tracing::warn!(
                %kid,
                "single sign-on: the ID token is signed with {why}; reading them again (the \
                 provider rotated its keys?)"
            );
            if let Err(failure) = self.discover().await {
                tracing::warn!(error = %failure, "single sign-on: reading the keys again failed");
            }
        }
        drop(last);
        self.current()
    }
}

/// Whether the keys may be read again at `now`, having been last read so at `last`.
fn is_due(last: Option<Instant>, now: Instant) -> bool {
    last.is_none_or(|at| now.duration_since(at) >= KEYS_AGAIN_AFTER)
}

/// Logs why the code exchange or the ID token failed (for the operator) and refuses.
fn token_failure(err: &dyn std::fmt::Display) -> Refusal {
    tracing::warn!(error = %err, "single sign-on: code exchange or ID token check failed");
    Refusal::TokenInvalid
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_again_at_most_once_a_minute() {
        let now = Instant::now();
        assert!(is_due(None, now));
        let read = now.checked_sub(Duration::from_secs(30)).unwrap_or(now);
        assert!(!is_due(Some(read), now), "read 30 s ago");
        assert!(!is_due(Some(now), now));
        assert!(is_due(Some(now), now + KEYS_AGAIN_AFTER));
    }
}
