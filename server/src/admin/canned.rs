//! Canned replies: the `/canned` page (list, add, edit, delete; agents manage their personal
//! replies, admins also the shared ones) and the picker's JSON for one conversation
//! (`/conversations/{id}/canned`). Every post carries the session's CSRF token (`Posted`).

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use porch_app::canned::{CannedPageView, CannedReplyView, render_canned};
use porch_app::layout::{Notice, Section};
use serde::Deserialize;
use serde_json::json;

use crate::audit::Actor;
use crate::chat::{CannedOutcome, CannedScope, MessageBody, Shortcut};
use crate::http::ClientIp;
use crate::state::AppState;
use crate::store::ConversationId;
use crate::values::Invalid;

use super::auth::NoFields;
use super::page::{PageError, html_with_status, see_other};
use super::session::{Posted, SignedIn};

/// A notice after a redirect, by a fixed code (no text comes from the URL).
#[derive(Debug, Default, Deserialize)]
pub struct CannedQuery {
    #[serde(default)]
    notice: String,
}

/// The add and edit forms.
#[derive(Debug, Default, Deserialize)]
pub struct CannedForm {
    #[serde(default)]
    shortcut: String,
    #[serde(default)]
    body: String,
    /// `shared` or `personal` (adding only).
    #[serde(default)]
    scope: String,
}

async fn page_with(
    app: &AppState,
    who: &SignedIn,
    notice: Option<Notice>,
    draft: Option<&CannedForm>,
    status: StatusCode,
) -> Result<Response, PageError> {
    let rows = app.chat.canned_replies(&who.user).await?;
    let is_admin = who.is_admin();
    let replies = rows
        .into_iter()
        .map(|row| CannedReplyView {
            id: row.id,
            is_shared: row.owner_id.is_none(),
            may_edit: row.owner_id.is_some() || is_admin,
            shortcut: row.shortcut,
            body: row.body,
        })
        .collect();
    Ok(html_with_status(
        status,
        render_canned(CannedPageView {
            nav: who.nav(Section::Canned),
            replies,
            notice,
            draft_shortcut: draft.map(|d| d.shortcut.clone()).unwrap_or_default(),
            draft_body: draft.map(|d| d.body.clone()).unwrap_or_default(),
            draft_shared: draft.is_some_and(|d| d.scope == "shared"),
        }),
    ))
}

/// `GET /canned`.
pub async fn canned_page(
    State(app): State<AppState>,
    who: SignedIn,
    Query(query): Query<CannedQuery>,
) -> Result<Response, PageError> {
    let text = match query.notice.as_str() {
        "created" => Some("Canned reply added."),
        "saved" => Some("Canned reply saved."),
        "deleted" => Some("Canned reply deleted."),
        _ => None,
    };
    let notice = text.map(|t| Notice::Success(t.to_owned()));
    page_with(&app, &who, notice, None, StatusCode::OK).await
}

/// The page again with what went wrong, or the redirect after a change.
async fn answer(
    app: &AppState,
    who: &SignedIn,
    outcome: Result<CannedOutcome, crate::chat::Error>,
    done: &str,
    draft: Option<&CannedForm>,
) -> Result<Response, PageError> {
    let (status, notice) = match outcome {
        Ok(CannedOutcome::Saved) => return Ok(see_other(&format!("/canned?notice={done}"))),
        Ok(CannedOutcome::NotAllowed) => (
            StatusCode::FORBIDDEN,
            Notice::Error("Only admins can add, change or delete shared replies.".to_owned()),
        ),
        Ok(CannedOutcome::Taken) => {
            let text = "That shortcut is already used: pick another one.".to_owned();
            let notice = match draft {
                Some(_) => Notice::Invalid {
                    field: "canned-new-shortcut",
                    text,
                },
                None => Notice::Error(text),
            };
            (StatusCode::CONFLICT, notice)
        }
        Err(crate::chat::Error::Invalid(invalid)) => {
            let text = invalid.0.into_owned();
            let notice = match draft.and_then(refused_field) {
                Some(field) => Notice::Invalid { field, text },
                None => Notice::Error(text),
            };
            (StatusCode::UNPROCESSABLE_ENTITY, notice)
        }
        Err(err) => return Err(err.into()),
    };
    page_with(app, who, Some(notice), draft, status).await
}

/// The add form's control a refused reply's error is about, checked in the order [`parse`]
/// checks them. Only the add form: a refused edit shows the stored reply, not what was typed,
/// so no field there holds the mistake.
fn refused_field(form: &CannedForm) -> Option<&'static str> {
    if Shortcut::parse(&form.shortcut).is_err() {
        Some("canned-new-shortcut")
    } else if MessageBody::parse(&form.body).is_err() {
        Some("canned-new-body")
    } else {
        None
    }
}

fn parse(form: &CannedForm) -> Result<(Shortcut, MessageBody), crate::chat::Error> {
    Ok((
        Shortcut::parse(&form.shortcut)?,
        MessageBody::parse(&form.body)?,
    ))
}

/// `POST /canned`: adds a personal reply, or a shared one (admins).
pub async fn create(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    Posted { who, form }: Posted<CannedForm>,
) -> Result<Response, PageError> {
    // The form's radio sends `personal` or `shared`; an agent's form, which has no choice,
    // sends none. Anything else is a mistake, never silently a personal reply.
    let scope = match form.scope.as_str() {
        "shared" => Ok(CannedScope::Shared),
        "personal" | "" => Ok(CannedScope::Personal),
        _ => Err(crate::chat::Error::Invalid(Invalid::from(
            "The scope must be personal or shared.",
        ))),
    };
    let outcome = match scope.and_then(|scope| Ok((scope, parse(&form)?))) {
        Ok((scope, (shortcut, body))) => {
            let actor = Actor::user(&who.user, ip);
            app.chat
                .create_canned_reply(&actor, &who.user, scope, shortcut, body)
                .await
        }
        Err(err) => Err(err),
    };
    answer(&app, &who, outcome, "created", Some(&form)).await
}

/// `POST /canned/{id}`: changes a reply's shortcut and text.
pub async fn update(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    ClientIp(ip): ClientIp,
    Posted { who, form }: Posted<CannedForm>,
) -> Result<Response, PageError> {
    // The edit form has no scope: one sent anyway would otherwise be answered "saved" while
    // nothing of it was.
    let parsed = if form.scope.is_empty() {
        parse(&form)
    } else {
        Err(crate::chat::Error::Invalid(Invalid::from(
            "A reply's scope is chosen when it is added; an edit changes its shortcut and text.",
        )))
    };
    let outcome = match parsed {
        Ok((shortcut, body)) => {
            let actor = Actor::user(&who.user, ip);
            app.chat
                .update_canned_reply(&actor, &who.user, id, shortcut, body)
                .await
        }
        Err(err) => Err(err),
    };
    answer(&app, &who, outcome, "saved", None).await
}

/// `POST /canned/{id}/delete`.
pub async fn delete(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    ClientIp(ip): ClientIp,
    Posted { who, .. }: Posted<NoFields>,
) -> Result<Response, PageError> {
    let actor = Actor::user(&who.user, ip);
    let outcome = app.chat.delete_canned_reply(&actor, &who.user, id).await;
    answer(&app, &who, outcome, "deleted", None).await
}

/// `GET /conversations/{id}/canned`: the replies the signed-in agent may use, with the
/// placeholders filled for this conversation, as `{"replies": [{shortcut, scope, text}]}`.
pub async fn conversation_replies(
    State(app): State<AppState>,
    who: SignedIn,
    Path(id): Path<i64>,
) -> Result<Response, PageError> {
    let replies = app
        .chat
        .filled_canned_replies(&who.user, ConversationId(id))
        .await?;
    let replies: Vec<_> = replies
        .into_iter()
        .map(|r| json!({ "shortcut": r.shortcut, "scope": r.scope, "text": r.text }))
        .collect();
    let mut response = Json(json!({ "replies": replies })).into_response();
    // Filled with a visitor's details: never cached.
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}
