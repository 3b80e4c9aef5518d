//! Getting in and out: `/` (where to go), first-run setup, sign-in and sign-out, choosing a
//! password through an invitation or reset link, and the account page. A right password leads
//! to a session or, with two-factor sign-in, to its second step (`two_factor`).

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use porch_app::auth::{LoginView, SetupView, render_account, render_login, render_setup};
use porch_app::layout::Notice;
use serde::Deserialize;

use crate::accounts::{self, AfterPassword, DisplayName, EmailAddress};
use crate::http::{ClientIp, client_ip};
use crate::state::AppState;
use crate::store::UserRow;

use super::page::{PageError, html, html_with_status, see_other};
use super::session::{
    Posted, PublicForm, SignedIn, browser_session, expired_session_cookie, form_token,
    new_session_cookie, second_step_cookie, session_cookie, with_cookie,
};

/// A form with nothing but its CSRF token.
#[derive(Debug, Deserialize)]
pub struct NoFields {}

/// Messages shown after a redirect, chosen by a fixed code so no text comes from the URL.
#[derive(Debug, Default, Deserialize)]
pub struct NoticeQuery {
    #[serde(default)]
    pub notice: String,
}

impl NoticeQuery {
    pub fn notice(&self) -> Option<Notice> {
        let text = match self.notice.as_str() {
            "welcome" => {
                "Your admin account is ready. Create a site to get the chat on your pages."
            }
            "password-changed" => "Password changed. Your other sessions were signed out.",
            "name-changed" => {
                "Name saved. Your next replies carry it; earlier ones keep the name they were sent with."
            }
            "signed-out-elsewhere" => {
                "Your other sessions were signed out. This one stays signed in."
            }
            "token-revoked" => "Token revoked. Requests with it now get 401.",
            "signed-out" => "You are signed out.",
            "marked-unread" => {
                "Marked unread: it counts as unread for you until you open it again."
            }
            "site-created" => "Site created. Paste the snippet below into your pages.",
            "site-saved" => "Changes saved. New chat windows use them at once.",
            "site-saved-snippet" => {
                "Changes saved. The colour, the corner and the widget language are carried by the \
                 snippet: paste the new snippet below into your pages for them to show. New chat \
                 windows use the other changes at once."
            }
            "site-deleted" => "Site deleted.",
            "role-changed" => "Role changed.",
            "role-unchanged" => "Nothing changed: they had that role already.",
            "renamed" => "Name changed. Earlier messages keep the name they were sent with.",
            "disabled" => "User disabled. Their sessions and API tokens stopped working.",
            "enabled" => "User enabled again.",
            "slack-connected" => {
                "Slack is connected. New conversations start threads in the channel."
            }
            "slack-saved" => "Slack settings saved. Waiting deliveries go out now.",
            "slack-ok" => "Slack accepted the bot token.",
            "retried" => {
                "Queued again. They go out in order; failures show up here again. Deliveries of \
                 a broken or turned-off integration wait until it is fixed or turned on."
            }
            "not-retried" => {
                "Nothing was queued again: that delivery is no longer failed or blocked (it was \
                 retried already, or is gone with its integration)."
            }
            "dismissed" => "Dismissed: deleted with their attempts, and recorded in the audit log.",
            "none-failed" => "Nothing was dismissed: no delivery is failed now.",
            "not-dismissed" => {
                "Nothing was dismissed: that delivery is no longer failed (it was retried or \
                 dismissed already, or is gone with its integration)."
            }
            "waits-for-fix" => {
                "Its integration is broken or turned off: the delivery waits and goes out, in \
                 order, once the integration is fixed or turned on."
            }
            "discord-connected" => "Discord is added. New messages are posted to the channel.",
            "discord-saved" => "Discord settings saved. Waiting deliveries go out now.",
            "webhook-saved" => "Endpoint saved. Waiting deliveries go out now.",
            "replayed" => "Replay queued. It shows in the log when it is sent.",
            "email-saved" => "Email settings saved.",
            "imap-saved" => "Mailbox saved. Porch looks at it now; reload to see the outcome.",
            "imap-removed" => "Mailbox removed. Replies by email are no longer read.",
            "mail-queued" => "Mail queued to the visitor; its delivery shows under the message.",
            "visitor-saved" => "The visitor's name and email are saved.",
            "visitor-unchanged" => "Nothing to save: the name and email are as they were.",
            "visitor-changed-meanwhile" => {
                "Not saved: the visitor's name or email changed meanwhile (another agent, or the \
                 visitor). Here they are now; change them again if need be."
            }
            "imap-checking" => "Checking the mailbox now; reload to see the outcome.",
            "integration-off" => {
                "Turned off. Messages written while it is off are not sent to it; deliveries \
                 already waiting are kept and go out when it is turned on again."
            }
            "integration-on" => "Turned on. Waiting deliveries go out now.",
            "integration-deleted" => "Integration deleted.",
            "two-factor-on" => "Two-factor sign-in is on.",
            "two-factor-off" => "Two-factor sign-in is off.",
            "two-factor-reset" => {
                "Two-factor sign-in reset and their sessions ended. They sign in with their \
                 password (and set it up again if the team requires it)."
            }
            "two-factor-saved" => "Two-factor requirement saved.",
            "sign-in-expired" => "That sign-in waited too long for its code. Sign in again.",
            _ => return None,
        };
        Some(Notice::Success(text.to_owned()))
    }
}

/// `GET /`: setup on a fresh install, else the inbox (or sign-in).
pub async fn home(State(app): State<AppState>, headers: HeaderMap) -> Result<Response, PageError> {
    if app.accounts.needs_setup().await? {
        return Ok(see_other("/setup"));
    }
    let to = if has_session(&app, &headers).await? {
        "/inbox"
    } else {
        "/login"
    };
    Ok(see_other(to))
}

/// Whether the request carries a live session's cookie.
async fn has_session(app: &AppState, headers: &HeaderMap) -> Result<bool, PageError> {
    Ok(browser_session(app, headers).await?.is_some())
}

/// `GET /setup`: the first-run form, while no user exists.
pub async fn setup_page(
    State(app): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    if !app.accounts.needs_setup().await? {
        return Ok(see_other("/login"));
    }
    let (csrf, cookie) = form_token(&app, &headers);
    let page = render_setup(SetupView {
        csrf,
        ..SetupView::default()
    });
    Ok(with_cookie(html(page), cookie))
}

#[derive(Debug, Deserialize)]
pub struct SetupForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
}

/// The field of a setup form refused as invalid, checked in the order `create_first_admin`
/// checks them (after the token), so the form marks the one its error is about.
fn refused_setup_field(form: &SetupForm) -> &'static str {
    if EmailAddress::parse(&form.email).is_err() {
        "email"
    } else if DisplayName::parse(&form.name).is_err() {
        "name"
    } else {
        "password"
    }
}

/// `POST /setup`: creates the first admin (with the setup token) and signs them in.
pub async fn setup(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    PublicForm { form, csrf }: PublicForm<SetupForm>,
) -> Result<Response, PageError> {
    let result = app
        .accounts
        .create_first_admin(&form.token, &form.email, &form.name, &form.password, ip)
        .await;
    let user = match result {
        Ok(user) => user,
        Err(accounts::Error::SetupClosed) => return Ok(see_other("/login")),
        Err(err) => {
            let (status, field, text) = match err {
                accounts::Error::BadSetupToken => (
                    StatusCode::FORBIDDEN,
                    "token",
                    "That setup token is not right. Copy it from the server log (it changes at \
                     every start until setup is done)."
                        .to_owned(),
                ),
                accounts::Error::Invalid(invalid) => (
                    StatusCode::UNPROCESSABLE_ENTITY,
                    refused_setup_field(&form),
                    invalid.to_string(),
                ),
                other => return Err(other.into()),
            };
            let page = render_setup(SetupView {
                csrf,
                email: form.email,
                name: form.name,
                notice: Some(Notice::Invalid { field, text }),
            });
            return Ok(html_with_status(status, page));
        }
    };
    let session = app.accounts.start_session(&user, ip, None).await?;
    Ok(with_cookie(
        see_other("/sites/new?notice=welcome"),
        Some(session_cookie(&app, &session.cookie_value)),
    ))
}

#[derive(Debug, Default, Deserialize)]
pub struct LoginQuery {
    #[serde(default)]
    next: String,
    #[serde(default)]
    notice: String,
    /// Why a single sign-on was refused, as a code (`admin::sso`).
    #[serde(default)]
    sso_error: String,
}

/// Only paths on this server: `/x`, never `//host` or `/\host`, which browsers treat as another
/// site (an open redirect otherwise).
pub(super) fn safe_next(next: &str) -> &str {
    // Browsers drop tabs and newlines from a URL (`/\t/evil.example` becomes `//evil.example`),
    // and a control character cannot be a `Location` header at all: refuse them all. A path
    // Porch sends people back to is a request's, already percent-encoded ASCII, so anything
    // else (raw Unicode such as `/。evil.example`, spaces) is refused as well.
    let is_local = next.starts_with('/')
        && !next.starts_with("//")
        && !next.contains('\\')
        && next.chars().all(|c| c.is_ascii_graphic());
    if is_local { next } else { "/inbox" }
}

/// `GET /login`.
pub async fn login_page(
    State(app): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<LoginQuery>,
) -> Result<Response, PageError> {
    if app.accounts.needs_setup().await? {
        return Ok(see_other("/setup"));
    }
    // Already signed in: where the sign-in would have led.
    if has_session(&app, &headers).await? {
        return Ok(see_other(safe_next(&query.next)));
    }
    let (csrf, cookie) = form_token(&app, &headers);
    let next = safe_next(&query.next).to_owned();
    let mut sso = super::sso::button(&app, &next);
    let notice = super::sso::refusal_notice(&query.sso_error, &mut sso).or_else(|| {
        NoticeQuery {
            notice: query.notice,
        }
        .notice()
    });
    let page = render_login(LoginView {
        csrf,
        email: String::new(),
        sso,
        next,
        notice,
    });
    Ok(with_cookie(html(page), cookie))
}

#[derive(Debug, Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    next: String,
}

/// "1 minute", "3 minutes": how long a throttled person waits.
pub(super) fn wait_text(wait: std::time::Duration) -> String {
    let minutes = wait.as_secs().div_ceil(60).max(1);
    format!("{minutes} minute{}", if minutes == 1 { "" } else { "s" })
}

/// Adds `Retry-After` to a throttled answer: whole seconds, rounded up (1.2 s is 2), so a client
/// that waits that long is not early.
pub(super) fn with_retry_after(mut response: Response, wait: std::time::Duration) -> Response {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    if let Ok(value) = HeaderValue::from_str(&seconds.max(1).to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// `POST /login`: checks the password (throttled) and starts a session, or sends a user with
/// two-factor sign-in (or required to set it up) to the second step.
pub async fn login(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    PublicForm { form, csrf }: PublicForm<LoginForm>,
) -> Result<Response, PageError> {
    let ip = client_ip(peer, &headers, &app.config.trusted_proxies);
    let next = safe_next(&form.next).to_owned();
    let (status, message, retry_after) =
        match app.accounts.sign_in(&form.email, &form.password, ip).await {
            Ok(user) => return signed_in(&app, (&headers, ip), &user, &next).await,
            Err(accounts::Error::BadCredentials) => (
                StatusCode::UNAUTHORIZED,
                "Wrong email or password.".to_owned(),
                None,
            ),
            Err(accounts::Error::Disabled) => (
                StatusCode::FORBIDDEN,
                "This account is disabled. Ask an admin of your team to enable it again."
                    .to_owned(),
                None,
            ),
            Err(accounts::Error::Throttled(wait)) => (
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "Too many failed sign-ins. For your security, wait {} before trying again.",
                    wait_text(wait)
                ),
                Some(wait),
            ),
            Err(err) => return Err(err.into()),
        };
    let page = render_login(LoginView {
        csrf,
        email: form.email,
        sso: super::sso::button(&app, &next),
        next,
        notice: Some(Notice::Error(message)),
    });
    let response = html_with_status(status, page);
    Ok(match retry_after {
        Some(wait) => with_retry_after(response, wait),
        None => response,
    })
}

/// `POST /logout`.
pub async fn logout(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    posted: Posted<NoFields>,
) -> Result<Response, PageError> {
    let who = &posted.who;
    app.accounts
        .end_session(&who.cookie_value, &who.user, ip)
        .await?;
    Ok(with_cookie(
        see_other("/login?notice=signed-out"),
        Some(expired_session_cookie(&app)),
    ))
}

/// Where a person whose password was just proven (or chosen) goes: into a session at `next`, or
/// to the second step (their code, or setting one up where the team requires it).
pub(super) async fn signed_in(
    app: &AppState,
    (headers, ip): (&HeaderMap, std::net::IpAddr),
    user: &UserRow,
    next: &str,
) -> Result<Response, PageError> {
    Ok(match app.accounts.after_password(user, next, ip).await? {
        AfterPassword::Session(session) => with_cookie(
            see_other(next),
            Some(new_session_cookie(app, (headers, ip), &session.cookie_value).await),
        ),
        AfterPassword::SecondStep(token) => with_cookie(
            see_other("/login/two-factor"),
            Some(second_step_cookie(app, &token)),
        ),
        AfterPassword::Enrol(token) => with_cookie(
            see_other("/login/two-factor/setup"),
            Some(second_step_cookie(app, &token)),
        ),
    })
}

/// The account page for `who`, with `notice` and `status`.
pub(super) async fn account_page_with(
    app: &AppState,
    who: &SignedIn,
    notice: Option<Notice>,
    status: StatusCode,
) -> Result<Response, PageError> {
    let view = super::tokens::account_view(app, who, notice, None).await?;
    Ok(html_with_status(status, render_account(view)))
}

/// `GET /account`.
pub async fn account_page(
    State(app): State<AppState>,
    who: SignedIn,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    account_page_with(&app, &who, query.notice(), StatusCode::OK).await
}

/// `POST /account/sessions/sign-out-others`: ends the user's other sessions (a lost laptop, a
/// shared computer), this one staying signed in.
pub async fn sign_out_elsewhere(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    Posted { who, .. }: Posted<NoFields>,
) -> Result<Response, PageError> {
    app.accounts
        .sign_out_elsewhere(who.user.id, &who.cookie_value, ip)
        .await?;
    Ok(see_other("/account?notice=signed-out-elsewhere"))
}

#[derive(Debug, Deserialize)]
pub struct ChangePasswordForm {
    #[serde(default)]
    current: String,
    #[serde(default)]
    new: String,
}

/// `POST /account/password`.
pub async fn change_password(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Posted { who, form }: Posted<ChangePasswordForm>,
) -> Result<Response, PageError> {
    let ip = client_ip(peer, &headers, &app.config.trusted_proxies);
    let result = app
        .accounts
        .change_password(
            (who.user.id, &who.user.email),
            &form.current,
            &form.new,
            &who.cookie_value,
            ip,
        )
        .await;
    let (status, notice, retry_after) = match result {
        Ok(()) => return Ok(see_other("/account?notice=password-changed")),
        Err(accounts::Error::BadCredentials) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Notice::Invalid {
                field: "current",
                text: "Your current password is not right.".to_owned(),
            },
            None,
        ),
        Err(accounts::Error::NoPassword(text)) => {
            (StatusCode::CONFLICT, Notice::Error(text.to_owned()), None)
        }
        Err(accounts::Error::Throttled(wait)) => (
            StatusCode::TOO_MANY_REQUESTS,
            Notice::Error(format!(
                "Too many wrong passwords. Wait {} before trying again.",
                wait_text(wait)
            )),
            Some(wait),
        ),
        // The only rule on what is typed is the new password's.
        Err(accounts::Error::Invalid(invalid)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Notice::Invalid {
                field: "new",
                text: invalid.to_string(),
            },
            None,
        ),
        Err(err) => return Err(err.into()),
    };
    let page = account_page_with(&app, &who, Some(notice), status).await?;
    Ok(match retry_after {
        Some(wait) => with_retry_after(page, wait),
        None => page,
    })
}
