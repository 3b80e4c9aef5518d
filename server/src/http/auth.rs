//! API authentication: `Authorization: Bearer <token>`, where the token was made by
//! `porch token add`. Only the token's SHA-256 is stored. A token may expire, and a read-only
//! one is refused for anything but `GET` and `HEAD`.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{Method, StatusCode, header};

use crate::clock::now_ms;
use crate::state::AppState;
use crate::store::{self, UserRow};
use crate::values::TokenScope;

use super::ApiError;

pub use crate::accounts::{TOKEN_PREFIX, hash_api_token, new_api_token};

/// How stale a token's `last_used_at` may get before a use writes it again.
const LAST_USED_EVERY_MS: i64 = 60_000;

/// The credentials of `Authorization: Bearer …`, trimmed; the scheme's name in any case, as
/// HTTP has it (RFC 9110 §11.1).
pub fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    let mut all = headers.get_all(header::AUTHORIZATION).iter();
    let value = all.next()?.to_str().ok()?;
    // Two credentials are none: which one was meant is not ours to guess.
    if all.next().is_some() {
        return None;
    }
    let (scheme, credentials) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credentials.trim())
}

/// The user behind a valid bearer token.
pub struct ApiUser(pub UserRow);

impl FromRequestParts<AppState> for ApiUser {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        app: &AppState,
    ) -> Result<Self, Self::Rejection> {
        if parts.headers.get_all(header::AUTHORIZATION).iter().count() > 1 {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "bad_request",
                "Send one Authorization header.",
            ));
        }
        let token = bearer(&parts.headers)
            .filter(|t| t.starts_with(TOKEN_PREFIX))
            .ok_or_else(ApiError::unauthorized)?;
        let hash = hash_api_token(token);
        let found = app
            .readers
            .read(move |c| store::find_api_token_use(c, &hash))
            .await?;
        let token = found.ok_or_else(ApiError::unauthorized)?;
        let now = now_ms();
        if token.expires_at.is_some_and(|at| now >= at) {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "token_expired",
                "This API token has expired: make a new one on your account page (/account), or ask an \
                 admin to run `porch token add`.",
            ));
        }
        let is_read = matches!(parts.method, Method::GET | Method::HEAD);
        if token.scope == TokenScope::Read && !is_read {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "insufficient_scope",
                "This API token is read-only.",
            ));
        }
        let id = token.id;
        // At most one write per token a minute, off the request's path: for `porch token list`.
        if token
            .last_used_at
            .is_none_or(|at| now.saturating_sub(at) >= LAST_USED_EVERY_MS)
        {
            let writer = std::sync::Arc::clone(&app.writer);
            tokio::spawn(async move {
                if writer
                    .write(move |c| store::touch_api_token(c, id, now))
                    .await
                    .is_err()
                {
                    tracing::debug!("could not record an API token's last use");
                }
            });
        }
        Ok(ApiUser(token.user))
    }
}

/// An admin behind a valid bearer token; anyone else gets 403 (or 401 without a valid token).
pub struct ApiAdmin(pub UserRow);

impl FromRequestParts<AppState> for ApiAdmin {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        app: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let ApiUser(user) = ApiUser::from_request_parts(parts, app).await?;
        if user.role == "admin" {
            Ok(Self(user))
        } else {
            Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                "This endpoint is for admins only.",
            ))
        }
    }
}
