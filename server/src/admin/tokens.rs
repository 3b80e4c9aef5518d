//! The account page's API tokens: a user makes tokens for themselves (shown once), lists and
//! revokes their own; admins also see and revoke everyone's. Making and revoking go through
//! `accounts::{create_api_token, revoke_api_token}`, as `porch token` does.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use porch_app::api_tokens::{ApiTokensView, RevokeTokenView, TokenView, render_revoke_token};
use porch_app::auth::{AccountView, render_account};
use porch_app::layout::{Notice, Section};
use serde::Deserialize;

use crate::accounts::{TokenRequest, create_api_token, revoke_api_token, token_name};
use crate::audit::Actor;
use crate::clock::now_ms;
use crate::http::ClientIp;
use crate::state::AppState;
use crate::store::{self, ApiTokenRow};
use crate::values::TokenScope;

use super::auth::NoFields;
use super::page::{PageError, html, see_other};
use super::session::{Posted, SignedIn};
use super::two_factor::summary;

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// A form the page's own controls cannot send (a hand-made request): 422.
fn invalid(message: &str) -> PageError {
    PageError::new(StatusCode::UNPROCESSABLE_ENTITY, "Not made", message)
}

fn token_view(t: ApiTokenRow) -> TokenView {
    TokenView {
        is_expired: t.expires_at.is_some_and(|at| at <= now_ms()),
        id: t.id,
        name: t.name,
        owner: t.user_email,
        scope: t.scope.as_str().to_owned(),
        created_at: t.created_at,
        expires_at: t.expires_at,
        last_used_at: t.last_used_at,
    }
}

/// The account page of `who`, with their tokens (and everyone's for an admin).
pub async fn account_view(
    app: &AppState,
    who: &SignedIn,
    notice: Option<Notice>,
    created: Option<(String, String)>,
) -> Result<AccountView, PageError> {
    let scope = (!who.is_admin()).then_some(who.user.id);
    let id = who.user.id;
    let (all, has_password) = app
        .readers
        .read(move |c| {
            Ok((
                store::list_api_tokens_of(c, scope)?,
                store::has_password(c, id)?,
            ))
        })
        .await?;
    let (mine, others): (Vec<_>, Vec<_>) = all.into_iter().partition(|t| t.user_id == who.user.id);
    Ok(AccountView {
        nav: who.nav(Section::Account),
        name: who.user.name.clone(),
        email: who.user.email.clone(),
        role: who.user.role.clone(),
        notice,
        two_factor: summary(app.accounts.two_factor_status(who.user.id).await?),
        tokens: ApiTokensView {
            mine: mine.into_iter().map(token_view).collect(),
            others: who
                .is_admin()
                .then(|| others.into_iter().map(token_view).collect()),
            created,
        },
        has_password,
    })
}

#[derive(Debug, Deserialize)]
pub struct NewTokenForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    scope: String,
    #[serde(default)]
    expires: String,
}

/// `POST /account/tokens`: makes a token for the signed-in user and shows it once, on the page
/// this answers (never in a URL).
pub async fn create_token(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    Posted { who, form }: Posted<NewTokenForm>,
) -> Result<Response, PageError> {
    let name = token_name(&form.name).map_err(invalid)?.to_owned();
    let scope = TokenScope::parse(&form.scope)
        .ok_or_else(|| invalid("The scope is read or read-write."))?;
    let now = now_ms();
    let expires_at = match form.expires.as_str() {
        "never" => None,
        "30" | "90" | "365" => form.expires.parse::<i64>().ok().map(|d| now + d * DAY_MS),
        _ => return Err(invalid("Expiry is 30, 90 or 365 days, or never.")),
    };
    let (actor, owner, token_name) = (Actor::user(&who.user, ip), who.user.clone(), name.clone());
    let (_, token) = app
        .writer
        .write(move |c| {
            let request = TokenRequest {
                name: &token_name,
                scope,
                expires_at,
                now,
            };
            create_api_token(c, &actor, &owner, &request)
        })
        .await?;
    let view = account_view(&app, &who, None, Some((name, token))).await?;
    Ok(html(render_account(view)))
}

/// The token `id` if `who` may revoke it: their own, or anyone's for an admin. Others' tokens
/// are "not found" to a non-admin, so ids reveal nothing.
async fn revocable(app: &AppState, who: &SignedIn, id: i64) -> Result<ApiTokenRow, PageError> {
    app.readers
        .read(move |c| store::find_api_token(c, id))
        .await?
        .filter(|t| t.user_id == who.user.id || who.is_admin())
        .ok_or_else(|| PageError::not_found("token"))
}

/// `GET /account/tokens/{id}/revoke`: asks to confirm.
pub async fn confirm_revoke(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    who: SignedIn,
) -> Result<Response, PageError> {
    let token = revocable(&app, &who, id).await?;
    Ok(html(render_revoke_token(RevokeTokenView {
        nav: who.nav(Section::Account),
        token: token_view(token),
    })))
}

/// `POST /account/tokens/{id}/revoke`: revokes it at once.
pub async fn revoke(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    ClientIp(ip): ClientIp,
    Posted { who, .. }: Posted<NoFields>,
) -> Result<Response, PageError> {
    revocable(&app, &who, id).await?;
    let actor = Actor::user(&who.user, ip);
    app.writer
        .write(move |c| revoke_api_token(c, &actor, id))
        .await?;
    Ok(see_other("/account?notice=token-revoked#api-tokens"))
}
