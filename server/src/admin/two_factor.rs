//! Two-factor sign-in pages: setting it up, recovery codes and switching it off on the account
//! page, and the sign-in's second step (a code, or setting it up when the team requires it),
//! which runs on the half-finished sign-in's cookie and ends with the session cookie.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use porch_app::layout::{Notice, Section};
use porch_app::two_factor::{
    EnrolmentView, QrView, RecoveryCodesView, SecondStepView, TwoFactorSummary, render_enrolment,
    render_recovery_codes, render_second_step,
};
use qrcode::{Color, EcLevel, QrCode};
use serde::Deserialize;

use crate::accounts::{self, Enrolment, FinishedSignIn, TwoFactorStatus};
use crate::http::ClientIp;
use crate::state::AppState;

use super::auth::{NoFields, account_page_with, wait_text, with_retry_after};
use super::page::{PageError, html, html_with_status, see_other};
use super::session::{
    Posted, PublicForm, SignedIn, expired_second_step_cookie, form_token, new_session_cookie,
    read_cookie, second_step_cookie_name, with_cookie,
};

/// The account page's view of a status.
pub fn summary(status: TwoFactorStatus) -> TwoFactorSummary {
    TwoFactorSummary {
        is_on: status.is_on,
        is_pending: status.is_pending,
        recovery_codes_left: status.recovery_codes_left,
        is_required: status.is_required,
    }
}

/// The QR code of an `otpauth://` URI. Medium error correction survives a phone camera at an
/// angle; an email too long to encode leaves the code out (the secret is still shown as text).
fn qr_view(uri: &str) -> QrView {
    QrCode::with_error_correction_level(uri, EcLevel::M).map_or_else(
        |_| QrView::default(),
        |qr| QrView {
            width: qr.width(),
            dark: qr
                .to_colors()
                .into_iter()
                .map(|c| c == Color::Dark)
                .collect(),
        },
    )
}

fn enrolment_page(
    (nav, csrf): (Option<porch_app::layout::Nav>, String),
    action: &str,
    enrolment: Enrolment,
    notice: Option<Notice>,
    status: StatusCode,
) -> Response {
    html_with_status(
        status,
        render_enrolment(EnrolmentView {
            nav,
            csrf,
            action: action.to_owned(),
            qr: qr_view(&enrolment.uri),
            secret_text: enrolment.secret_text,
            uri: enrolment.uri,
            notice,
        }),
    )
}

const BAD_CODE: &str = "That code is not right, or was already used. Codes change every 30 \
                        seconds: check the phone's clock and try the current one.";

/// A wrong code or a throttle as a notice with its status (and the wait, for `Retry-After`).
fn refusal(
    err: accounts::Error,
) -> Result<(StatusCode, String, Option<std::time::Duration>), PageError> {
    match err {
        accounts::Error::BadCode => Ok((StatusCode::UNAUTHORIZED, BAD_CODE.to_owned(), None)),
        accounts::Error::Throttled(wait) => Ok((
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "Too many wrong codes. For your security, wait {} before trying again.",
                wait_text(wait)
            ),
            Some(wait),
        )),
        other => Err(other.into()),
    }
}

fn retrying(response: Response, wait: Option<std::time::Duration>) -> Response {
    match wait {
        Some(wait) => with_retry_after(response, wait),
        None => response,
    }
}

/// A one-code form.
#[derive(Debug, Deserialize)]
pub struct CodeForm {
    #[serde(default)]
    code: String,
}

/// `POST /account/two-factor/setup`: starts (or continues) the setup.
pub async fn begin(
    State(app): State<AppState>,
    Posted { who, .. }: Posted<NoFields>,
) -> Result<Response, PageError> {
    match app.accounts.begin_two_factor(&who.user).await {
        Ok(_) => Ok(see_other("/account/two-factor")),
        Err(accounts::Error::Conflict(_)) => Ok(see_other("/account")),
        Err(accounts::Error::NoPassword(text)) => {
            let notice = Some(Notice::Error(text.to_owned()));
            account_page_with(&app, &who, notice, StatusCode::CONFLICT).await
        }
        Err(err) => Err(err.into()),
    }
}

/// `GET /account/two-factor`: the pending setup's QR code, secret and code form.
pub async fn setup_page(State(app): State<AppState>, who: SignedIn) -> Result<Response, PageError> {
    if !app
        .accounts
        .two_factor_status(who.user.id)
        .await?
        .is_pending
    {
        return Ok(see_other("/account"));
    }
    let enrolment = app.accounts.begin_two_factor(&who.user).await?;
    let nav = (Some(who.nav(Section::Account)), who.csrf.clone());
    Ok(enrolment_page(
        nav,
        "/account/two-factor/confirm",
        enrolment,
        None,
        StatusCode::OK,
    ))
}

/// `POST /account/two-factor/confirm`: the first code switches it on; the recovery codes are
/// the answer (not a redirect), since they exist nowhere else.
pub async fn confirm(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    Posted { who, form }: Posted<CodeForm>,
) -> Result<Response, PageError> {
    match app
        .accounts
        .confirm_two_factor(&who.user, &form.code, ip)
        .await
    {
        Ok(codes) => Ok(html(render_recovery_codes(RecoveryCodesView {
            nav: Some(who.nav(Section::Account)),
            codes,
            continue_to: "/account?notice=two-factor-on".to_owned(),
        }))),
        Err(accounts::Error::BadCode) => {
            let enrolment = app.accounts.begin_two_factor(&who.user).await?;
            let nav = (Some(who.nav(Section::Account)), who.csrf.clone());
            let notice = Some(Notice::Error(BAD_CODE.to_owned()));
            Ok(enrolment_page(
                nav,
                "/account/two-factor/confirm",
                enrolment,
                notice,
                StatusCode::UNPROCESSABLE_ENTITY,
            ))
        }
        Err(err) => Err(err.into()),
    }
}

/// `POST /account/two-factor/recovery-codes`: a new set, after a good code.
pub async fn regenerate(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    Posted { who, form }: Posted<CodeForm>,
) -> Result<Response, PageError> {
    match app
        .accounts
        .regenerate_recovery_codes(&who.user, &form.code, ip)
        .await
    {
        Ok(codes) => Ok(html(render_recovery_codes(RecoveryCodesView {
            nav: Some(who.nav(Section::Account)),
            codes,
            continue_to: "/account".to_owned(),
        }))),
        Err(err) => {
            let (status, message, wait) = refusal(err)?;
            let status = unprocessable_unless_throttled(status);
            let page = account_page_with(&app, &who, Some(Notice::Error(message)), status).await?;
            Ok(retrying(page, wait))
        }
    }
}

/// Signed in, a wrong code is a form mistake (422), not a failed sign-in (401).
fn unprocessable_unless_throttled(status: StatusCode) -> StatusCode {
    if status == StatusCode::TOO_MANY_REQUESTS {
        status
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    }
}

#[derive(Debug, Deserialize)]
pub struct DisableForm {
    #[serde(default)]
    password: String,
    #[serde(default)]
    code: String,
}

/// `POST /account/two-factor/disable`: needs the current password and a code.
pub async fn disable(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    Posted { who, form }: Posted<DisableForm>,
) -> Result<Response, PageError> {
    let result = app
        .accounts
        .disable_two_factor(&who.user, (&form.password, &form.code), ip)
        .await;
    let (status, message, wait) = match result {
        Ok(()) => return Ok(see_other("/account?notice=two-factor-off")),
        Err(accounts::Error::BadCredentials) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            "Your current password is not right.".to_owned(),
            None,
        ),
        Err(accounts::Error::Conflict(text)) => (StatusCode::CONFLICT, text.to_owned(), None),
        Err(err) => {
            let (status, message, wait) = refusal(err)?;
            (unprocessable_unless_throttled(status), message, wait)
        }
    };
    let page = account_page_with(&app, &who, Some(Notice::Error(message)), status).await?;
    Ok(retrying(page, wait))
}

/// The half-finished sign-in's token from its cookie.
fn pending_token(app: &AppState, headers: &HeaderMap) -> Option<String> {
    read_cookie(headers, &second_step_cookie_name(app)).map(str::to_owned)
}

/// Back to the password: the half-finished sign-in is gone (expired, finished, or never was).
fn start_again(app: &AppState) -> Response {
    with_cookie(
        see_other("/login?notice=sign-in-expired"),
        Some(expired_second_step_cookie(app)),
    )
}

/// The finished sign-in's answer: the session cookie set (ending the session the browser held
/// before, if any), the second-step cookie cleared.
async fn signed_in(
    app: &AppState,
    browser: (&HeaderMap, std::net::IpAddr),
    response: Response,
    finished: &FinishedSignIn,
) -> Response {
    let cookie = new_session_cookie(app, browser, &finished.session.cookie_value).await;
    let response = with_cookie(response, Some(cookie));
    with_cookie(response, Some(expired_second_step_cookie(app)))
}

/// `GET /login/two-factor`: the code form.
pub async fn second_step_page(
    State(app): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let pending = pending_token(&app, &headers).and_then(|t| app.accounts.pending_sign_in(&t));
    match pending {
        Some(p) if p.must_enrol => Ok(see_other("/login/two-factor/setup")),
        Some(_) => {
            let (csrf, cookie) = form_token(&app, &headers);
            let page = render_second_step(SecondStepView { csrf, notice: None });
            Ok(with_cookie(html(page), cookie))
        }
        None => Ok(start_again(&app)),
    }
}

/// Runs a second step to its end even if the browser drops the request: a double-click aborts
/// the first submission, and a step cut off after spending its code but before marking the
/// sign-in finished would leave the repeat (the answer the browser shows) nothing to find.
async fn to_the_end<T: Send + 'static>(
    step: impl Future<Output = Result<T, accounts::Error>> + Send + 'static,
) -> Result<Result<T, accounts::Error>, PageError> {
    tokio::spawn(step).await.map_err(|_| PageError::internal())
}

/// `POST /login/two-factor`: a code or a recovery code finishes the sign-in.
pub async fn second_step(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    PublicForm { form, csrf }: PublicForm<CodeForm>,
) -> Result<Response, PageError> {
    let Some(token) = pending_token(&app, &headers) else {
        return Ok(start_again(&app));
    };
    let (runner, step_token, code) = (app.clone(), token.clone(), form.code.clone());
    let finished = to_the_end(async move {
        let accounts = &runner.accounts;
        accounts.finish_sign_in(&step_token, &code, ip).await
    });
    match finished.await? {
        Ok(finished) => {
            Ok(signed_in(&app, (&headers, ip), see_other(&finished.next), &finished).await)
        }
        Err(accounts::Error::SignInExpired) => Ok(start_again(&app)),
        Err(err) => {
            let (status, message, wait) = refusal(err)?;
            let page = render_second_step(SecondStepView {
                csrf,
                notice: Some(Notice::Error(message)),
            });
            Ok(retrying(html_with_status(status, page), wait))
        }
    }
}

/// `GET /login/two-factor/setup`: the team requires two-factor and this user has none yet.
pub async fn enrol_page(
    State(app): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let Some(token) = pending_token(&app, &headers) else {
        return Ok(start_again(&app));
    };
    // A sign-in waiting for a code, not a setup: its page, with the sign-in kept (as the code
    // page sends a setup here).
    if app
        .accounts
        .pending_sign_in(&token)
        .is_some_and(|p| !p.must_enrol)
    {
        return Ok(see_other("/login/two-factor"));
    }
    match app.accounts.enrolment_at_sign_in(&token).await {
        Ok(enrolment) => {
            let (csrf, cookie) = form_token(&app, &headers);
            let page = enrolment_page(
                (None, csrf),
                "/login/two-factor/setup",
                enrolment,
                None,
                StatusCode::OK,
            );
            Ok(with_cookie(page, cookie))
        }
        Err(accounts::Error::SignInExpired) => Ok(start_again(&app)),
        Err(err) => Err(err.into()),
    }
}

/// `POST /login/two-factor/setup`: the first code switches it on and finishes the sign-in; the
/// recovery codes are the answer, with the session cookie.
pub async fn enrol(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    PublicForm { form, csrf }: PublicForm<CodeForm>,
) -> Result<Response, PageError> {
    let Some(token) = pending_token(&app, &headers) else {
        return Ok(start_again(&app));
    };
    let (runner, step_token, code) = (app.clone(), token.clone(), form.code.clone());
    let enrolled = to_the_end(async move {
        let accounts = &runner.accounts;
        accounts.enrol_at_sign_in(&step_token, &code, ip).await
    });
    match enrolled.await? {
        Ok((finished, codes)) => {
            let page = html(render_recovery_codes(RecoveryCodesView {
                nav: None,
                codes,
                continue_to: finished.next.clone(),
            }));
            Ok(signed_in(&app, (&headers, ip), page, &finished).await)
        }
        Err(accounts::Error::SignInExpired) => Ok(start_again(&app)),
        Err(err) => {
            let (status, message, wait) = refusal(err)?;
            let enrolment = app.accounts.enrolment_at_sign_in(&token).await?;
            let page = enrolment_page(
                (None, csrf),
                "/login/two-factor/setup",
                enrolment,
                Some(Notice::Error(message)),
                status,
            );
            Ok(retrying(page, wait))
        }
    }
}
