//! Single sign-on pages: `GET /login/sso` sends the browser to the OpenID Connect provider with
//! a new attempt's id in a short-lived cookie; `GET /login/sso/callback` takes it back, has
//! `accounts::sso` check everything, and starts the session. Every refusal lands on the sign-in
//! page with a fixed message chosen by its code; the provider's text is never shown.

use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use porch_app::auth::SsoButton;
use porch_app::layout::Notice;
use serde::Deserialize;

use crate::accounts::sso::{ATTEMPT_LIFETIME, Callback, Refusal};
use crate::http::ClientIp;
use crate::state::AppState;

use super::auth::safe_next;
use super::page::{PageError, see_other};
use super::session::{
    cookie, cookie_name, new_session_cookie, read_cookie, url_encode, with_cookie,
};

/// The cookie holding the id of this browser's sign-in attempt (`__Host-` prefixed over https).
const SSO_COOKIE: &str = "porch_sso";

/// What the sign-in page says instead of the button while the provider has not been reached
/// (discovery is retried in the background until it is).
const UNREACHABLE: &str = "Single sign-on is not available right now: Porch cannot reach the \
                           sign-in provider yet and keeps trying.";

/// The sign-in page's single sign-on button for `next`, when single sign-on is configured.
pub fn button(app: &AppState, next: &str) -> Option<SsoButton> {
    app.sso.as_ref().map(|sso| SsoButton {
        label: sso.settings().label.clone(),
        href: format!("/login/sso?next={}", url_encode(next)),
        // A misconfiguration is not promised to mend itself: it says whom to tell.
        unavailable: match sso.readiness() {
            Ok(()) => None,
            Err(Refusal::Misconfigured) => Some(Refusal::Misconfigured.message().to_owned()),
            Err(_) => Some(UNREACHABLE.to_owned()),
        },
        is_said_above: false,
    })
}

/// The error notice for a refusal code in the sign-in page's URL (unknown codes show nothing).
/// A code about whether single sign-on can be used at all (unavailable, misconfigured) says how
/// it is now, in the notice and not again beside the button: the code in the URL may be older
/// than the state (it came back, or turned out misconfigured), and the page said it twice.
pub fn refusal_notice(code: &str, button: &mut Option<SsoButton>) -> Option<Notice> {
    match Refusal::from_code(code)? {
        Refusal::Unavailable | Refusal::Misconfigured => {
            let button = button.as_mut()?;
            let now = button.unavailable.clone()?;
            button.is_said_above = true;
            Some(Notice::Error(now))
        }
        refusal => Some(Notice::Error(refusal.message().to_owned())),
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct StartQuery {
    #[serde(default)]
    next: String,
}

/// `GET /login/sso`: starts an attempt and sends the browser to the provider.
pub async fn start(State(app): State<AppState>, Query(query): Query<StartQuery>) -> Response {
    let Some(sso) = &app.sso else {
        return see_other("/login");
    };
    let next = safe_next(&query.next).to_owned();
    match sso.begin(next.clone()) {
        Ok((attempt, to)) => {
            // Lax, not Strict: the provider's redirect back is a navigation from another site,
            // and a Strict cookie would not come with it.
            let attempt = cookie(
                &app,
                &cookie_name(&app, SSO_COOKIE),
                &attempt,
                ATTEMPT_LIFETIME,
                "Lax",
            );
            with_cookie(see_other(&to), Some(attempt))
        }
        Err(refusal) => to_login(refusal, &next),
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /login/sso/callback`: the provider sends the browser back here.
pub async fn callback(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    Query(query): Query<CallbackQuery>,
) -> Result<Response, PageError> {
    let Some(sso) = &app.sso else {
        return Ok(see_other("/login"));
    };
    let name = cookie_name(&app, SSO_COOKIE);
    let attempt = read_cookie(&headers, &name);
    let callback = Callback {
        code: query.code,
        state: query.state,
        error: query.error,
        error_description: query.error_description,
    };
    let (finished, next) = sso.finish(attempt, callback).await;
    let next = next.unwrap_or_else(|| "/inbox".to_owned());
    let response = match finished {
        Err(refusal) => {
            app.accounts.record_sso_refusal(refusal, ip).await;
            to_login(refusal, &next)
        }
        Ok(claims) => {
            let domains = sso.settings().provision_domains.clone();
            match app.accounts.sign_in_sso(claims, domains, ip).await? {
                Ok(user) => {
                    let session = app.accounts.start_sso_session(&user, ip).await?;
                    with_cookie(
                        see_other(safe_next(&next)),
                        Some(new_session_cookie(&app, (&headers, ip), &session.cookie_value).await),
                    )
                }
                Err(refusal) => to_login(refusal, &next),
            }
        }
    };
    // The attempt is spent either way.
    let spent = cookie(&app, &name, "", std::time::Duration::ZERO, "Lax");
    Ok(with_cookie(response, Some(spent)))
}

/// The sign-in page, saying why, and still leading to `next` afterwards.
fn to_login(refusal: Refusal, next: &str) -> Response {
    see_other(&format!(
        "/login?sso_error={}&next={}",
        refusal.code(),
        url_encode(next)
    ))
}
