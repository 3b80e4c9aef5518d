//! API tokens: making one (its clear text returned once, only its hash stored) and revoking one,
//! each with its audit event in the caller's transaction. The command line (`porch token`) and
//! the account page both call these, so a token is made and revoked one way.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rusqlite::Connection;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::audit::{self, Actor, AuditAction, Target};
use crate::store::{self, ApiTokenRow, UserRow};
use crate::values::TokenScope;

/// How every API token starts (so a request can be told apart from other bearer tokens).
pub const TOKEN_PREFIX: &str = "pat_";

/// A new random API token (shown once, never stored in clear).
pub fn new_api_token() -> String {
    format!(
        "{TOKEN_PREFIX}{}",
        URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
    )
}

/// What the database stores for an API token.
pub fn hash_api_token(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The longest token name: it labels a row, not a document.
const MAX_TOKEN_NAME_CHARS: usize = 100;

/// A token's name as the account page and `porch token add` both take it: trimmed, 1 to 100
/// characters, on one line (it is shown in a list row and a tab-separated listing). The error is
/// the sentence to show.
pub fn token_name(raw: &str) -> Result<&str, &'static str> {
    let name = raw.trim();
    if name.is_empty() || name.chars().count() > MAX_TOKEN_NAME_CHARS {
        return Err("A token needs a name of 1 to 100 characters.");
    }
    if name.chars().any(crate::values::breaks_the_line) {
        return Err("A token's name is one line of text, without control characters.");
    }
    // Shown beside other text (the admins' list of everyone's tokens), as a user's name is.
    if name.chars().any(crate::values::is_direction_control) {
        return Err(
            "A token's name cannot hold direction overrides, embeddings or isolates \
             (U+202A to U+202E, U+2066 to U+2069).",
        );
    }
    Ok(name)
}

/// What a new token is.
#[derive(Debug, Clone, Copy)]
pub struct TokenRequest<'a> {
    /// Checked with `token_name`.
    pub name: &'a str,
    pub scope: TokenScope,
    /// Milliseconds since the epoch; `None` never expires.
    pub expires_at: Option<i64>,
    pub now: i64,
}

/// Makes a token for `owner`, recorded as `token.created` by `actor`; returns its id and its
/// clear text, which nobody can see again.
pub fn create_api_token(
    conn: &Connection,
    actor: &Actor,
    owner: &UserRow,
    request: &TokenRequest<'_>,
) -> Result<(i64, String), store::Error> {
    let token = new_api_token();
    let id = store::insert_api_token(
        conn,
        &store::NewApiToken {
            user_id: owner.id,
            name: request.name,
            token_hash: &hash_api_token(&token),
            scope: request.scope,
            expires_at: request.expires_at,
            now: request.now,
        },
    )?;
    let detail = json!({
        "user": owner.email,
        "scope": request.scope.as_str(),
        "expires_at": request.expires_at,
    });
    audit::record(
        conn,
        actor,
        AuditAction::TokenCreated,
        &Target::token(id, request.name),
        &detail,
    )?;
    Ok((id, token))
}

/// Revokes a token, recorded as `token.revoked` by `actor`; returns the revoked token, or
/// `None` if no token has this id.
pub fn revoke_api_token(
    conn: &Connection,
    actor: &Actor,
    id: i64,
) -> Result<Option<ApiTokenRow>, store::Error> {
    let Some(token) = store::find_api_token(conn, id)? else {
        return Ok(None);
    };
    store::delete_api_token(conn, id)?;
    audit::record(
        conn,
        actor,
        AuditAction::TokenRevoked,
        &Target::token(id, &token.name),
        &json!({}),
    )?;
    Ok(Some(token))
}
