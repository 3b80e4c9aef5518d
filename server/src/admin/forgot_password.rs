//! `/password-resets`: "Forgot your password?". The page answers the same whether or not the
//! address belongs to an account, and the link is made and mailed in the background, apart from
//! the answer, so neither the words nor the time taken tell who has an account here, nor how it
//! signs in (someone who signs in through single sign-on without a password is mailed that,
//! not a link). Only a client address that asks too often is refused (429), which says nothing
//! about accounts.

use std::net::IpAddr;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use porch_app::auth::{ForgotView, render_forgot};
use serde::Deserialize;

use crate::accounts::{EmailAddress, LinkKind};
use crate::http::ClientIp;
use crate::integrations::email::queue_account_link;
use crate::jobs::{AccountLink, AccountLinkArgs};
use crate::state::AppState;

use super::auth::{wait_text, with_retry_after};
use super::page::{PageError, html, html_with_status};
use super::session::{PublicForm, form_token, with_cookie};

/// `GET /password-resets`.
pub async fn forgot_page(State(app): State<AppState>, headers: HeaderMap) -> Response {
    let (csrf, cookie) = form_token(&app, &headers);
    let page = render_forgot(ForgotView {
        csrf,
        can_mail: app.mailer.is_some(),
        ..ForgotView::default()
    });
    with_cookie(html(page), cookie)
}

#[derive(Debug, Deserialize)]
pub struct ForgotForm {
    #[serde(default)]
    email: String,
}

/// `POST /password-resets`: takes the request and answers at once; the link is made and queued
/// for mailing in the background.
pub async fn request_link(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    PublicForm { form, csrf }: PublicForm<ForgotForm>,
) -> Result<Response, PageError> {
    let can_mail = app.mailer.is_some();
    let again = |status, error: String| {
        let page = render_forgot(ForgotView {
            csrf: csrf.clone(),
            can_mail,
            email: form.email.clone(),
            sent_to: None,
            error: Some(error),
        });
        html_with_status(status, page)
    };
    if !can_mail {
        return Ok(again(
            StatusCode::CONFLICT,
            "This server cannot send email.".to_owned(),
        ));
    }
    let email = match EmailAddress::parse(&form.email) {
        Ok(email) => email.as_str().to_owned(),
        Err(invalid) => return Ok(again(StatusCode::UNPROCESSABLE_ENTITY, invalid.to_string())),
    };
    if let Err(wait) = app.accounts.admit_reset_request(ip) {
        let text = format!(
            "Too many requests from your address. Try again in {}.",
            wait_text(wait)
        );
        return Ok(with_retry_after(
            again(StatusCode::TOO_MANY_REQUESTS, text),
            wait,
        ));
    }
    tokio::spawn(mail_link(app, email.clone(), ip));
    Ok(html(render_forgot(ForgotView {
        csrf,
        can_mail,
        sent_to: Some(email),
        ..ForgotView::default()
    })))
}

/// Makes and queues the link, if the address is an enabled account's; errors are only logged,
/// since the person was answered already.
async fn mail_link(app: AppState, email: String, ip: IpAddr) {
    let sso = app.sso.as_ref().map(|sso| sso.settings().label.clone());
    let requested = match app.accounts.request_reset(&email, ip, sso.is_some()).await {
        Ok(Some(requested)) => requested,
        Ok(None) => return,
        Err(err) => {
            tracing::warn!(error = %err, "a requested reset link was not made");
            return;
        }
    };
    let (link, url) = match requested.link {
        Some((kind, token)) => {
            let link = match kind {
                LinkKind::Reset => AccountLink::RequestedReset,
                LinkKind::Invite => AccountLink::RequestedInvitation,
            };
            (link, kind.url(&app.public_url, &token))
        }
        // No link (only made so with single sign-on on): how they sign in, and where.
        None => (
            AccountLink::SingleSignOn {
                label: sso.unwrap_or_default(),
            },
            format!("{}/login", app.public_url),
        ),
    };
    let args = AccountLinkArgs {
        name: requested.user.name,
        email: requested.user.email,
        link,
        url,
        made_by: None,
        sites: Vec::new(),
    };
    if let Err(err) = queue_account_link(&app.writer, &app.jobs, args).await {
        tracing::warn!(error = %err, "a requested reset link was not queued for mailing");
    }
}
