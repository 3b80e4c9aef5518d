//! The pages behind an invitation or password-reset link: the person chooses a password and is
//! signed in (with the second step a sign-in would ask). A browser signed in as someone else is
//! told first that choosing the password ends that session.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use porch_app::auth::{PasswordLinkView, render_password_link};
use serde::Deserialize;

use crate::accounts::{self, LinkKind};
use crate::http::ClientIp;
use crate::state::AppState;

use super::auth::signed_in;
use super::page::{PageError, html, html_with_status};
use super::session::{PublicForm, browser_session, form_token, with_cookie};

async fn link_page(
    app: &AppState,
    headers: &HeaderMap,
    kind: LinkKind,
    token: &str,
) -> Result<Response, PageError> {
    let (csrf, cookie) = form_token(app, headers);
    let page = render_password_link(link_view(app, (headers, kind, token), csrf, None).await?);
    Ok(with_cookie(html(page), cookie))
}

/// The page of a link (`kind`, `token`) in the browser that sent `headers`, which is told when
/// it is signed in: choosing the password ends that session (`new_session_cookie`).
async fn link_view(
    app: &AppState,
    (headers, kind, token): (&HeaderMap, LinkKind, &str),
    csrf: String,
    error: Option<String>,
) -> Result<PasswordLinkView, PageError> {
    let link = app.accounts.find_link(token, kind).await?;
    let signed_in_as = browser_session(app, headers).await?.map(|s| s.user.name);
    Ok(PasswordLinkView {
        csrf,
        is_invitation: kind == LinkKind::Invite,
        name: link.name,
        email: link.email,
        action: format!("/{}/{token}", kind.path()),
        error,
        signed_in_as,
    })
}

/// `GET /invitations/{token}`: an invited person chooses their password.
pub async fn invitation_page(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> Result<Response, PageError> {
    link_page(&app, &headers, LinkKind::Invite, &token).await
}

/// `GET /password-resets/{token}`: someone chooses a new password.
pub async fn reset_page(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> Result<Response, PageError> {
    link_page(&app, &headers, LinkKind::Reset, &token).await
}

#[derive(Debug, Deserialize)]
pub struct PasswordForm {
    #[serde(default)]
    password: String,
}

async fn complete_link(
    app: &AppState,
    (kind, headers, ip): (LinkKind, &HeaderMap, std::net::IpAddr),
    token: &str,
    PublicForm { form, csrf }: PublicForm<PasswordForm>,
) -> Result<Response, PageError> {
    match app
        .accounts
        .complete_link(token, kind, &form.password, ip)
        .await
    {
        // The link proved the mailbox and the password was just chosen: signed in, with the
        // second step a sign-in would ask (a password reset does not skip two-factor).
        Ok(user) => signed_in(app, (headers, ip), &user, "/").await,
        Err(accounts::Error::Invalid(invalid)) => {
            let error = Some(invalid.to_string());
            let view = link_view(app, (headers, kind, token), csrf, error).await?;
            Ok(html_with_status(
                StatusCode::UNPROCESSABLE_ENTITY,
                render_password_link(view),
            ))
        }
        Err(err) => Err(err.into()),
    }
}

/// `POST /invitations/{token}`.
pub async fn complete_invitation(
    State(app): State<AppState>,
    Path(token): Path<String>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    form: PublicForm<PasswordForm>,
) -> Result<Response, PageError> {
    complete_link(&app, (LinkKind::Invite, &headers, ip), &token, form).await
}

/// `POST /password-resets/{token}`.
pub async fn complete_reset(
    State(app): State<AppState>,
    Path(token): Path<String>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    form: PublicForm<PasswordForm>,
) -> Result<Response, PageError> {
    complete_link(&app, (LinkKind::Reset, &headers, ip), &token, form).await
}
