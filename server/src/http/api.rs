//! The JSON API for agents and scripts (`/api/v1`). The inbox will use the same domain
//! functions; this API exists for automation and tests.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use crate::attachments::file_json;
use crate::chat::{Agent, ConversationsWanted, MessageBody, Tag};
use crate::state::AppState;
use crate::store::{
    AttachmentPart, ConversationFilter, ConversationId, ConversationRow, Expected, InboxAssignee,
    InboxStatus, MessageRow, Resnooze, UserId,
};
use crate::values::ClientId;

use super::attachment::conversation_file;
use super::auth::ApiUser;
use super::strict_json::{NoBody, StrictJson};
use super::strict_query::StrictQuery;
use super::{ApiError, paging};

/// Most conversations listed at once.
const LIST_LIMIT: u32 = 200;

fn conversation_json(c: &ConversationRow) -> serde_json::Value {
    json!({
        "id": c.id,
        "site": c.site_key,
        "visitor_id": c.visitor_id,
        "status": c.status,
        "created_at": c.created_at,
        "last_message_at": c.last_message_at,
        "closed_at": c.closed_at,
        "assignee": c.assignee.as_ref().map(|(id, name, email)| json!({"id": id, "name": name, "email": email})),
        "snoozed_until": c.snoozed_until,
        "tags": c.tags,
    })
}

fn message_json(m: &MessageRow) -> serde_json::Value {
    let files: Vec<_> = m
        .attachments
        .iter()
        .map(|a| file_json("", m.conversation_id, a))
        .collect();
    json!({
        "id": m.id,
        "conversation_id": m.conversation_id,
        "author": m.author.as_str(),
        "author_name": m.author_name,
        "client_id": m.client_id,
        "body": m.body,
        "at": m.created_at,
        "attachments": files,
    })
}

fn agent(user: &ApiUser) -> Agent {
    Agent {
        user_id: Some(user.0.id),
        name: user.0.name.clone(),
    }
}

#[derive(Debug, Deserialize)]
pub struct ListQuery {
    /// `open` or `closed`: only those.
    status: Option<String>,
    /// A tag's name: only conversations with it.
    tag: Option<String>,
    /// `true` or `false`: only the snoozed ones, or only the others.
    snoozed: Option<String>,
    /// A user id, `me` (the token's user) or `unassigned`: only theirs, or nobody's.
    assignee: Option<String>,
    /// A site's key: only that site's.
    site: Option<String>,
    /// The previous page's `next`.
    before: Option<String>,
    /// Conversations on a page, 1 to [`LIST_LIMIT`] (text, so a bad value gets this API's
    /// JSON error rather than the framework's).
    limit: Option<String>,
}

/// A page cursor: the last conversation's `last_message_at` and id, as `"{ms}.{id}"`.
fn cursor(c: &ConversationRow) -> String {
    format!("{}.{}", c.last_message_at, c.id)
}

/// A page's `next`: the last activity (Unix ms) and id of its last conversation, neither
/// negative (no `next` ever is).
fn parse_cursor(raw: &str) -> Option<(i64, ConversationId)> {
    let (at, id) = raw.split_once('.')?;
    let (at, id): (i64, i64) = (at.parse().ok()?, id.parse().ok()?);
    (at >= 0 && id >= 0).then_some((at, ConversationId(id)))
}

/// The conversations `query` asks for, `me` being the token's user (`assignee=me`).
fn wanted(query: &ListQuery, me: UserId) -> Result<ConversationsWanted, ApiError> {
    let status = match query.status.as_deref() {
        None => None,
        Some("open") => Some(InboxStatus::Open),
        Some("closed") => Some(InboxStatus::Closed),
        Some(_) => return Err(ApiError::invalid("status must be open or closed.")),
    };
    let snoozed = match query.snoozed.as_deref() {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(_) => return Err(ApiError::invalid("snoozed must be true or false.")),
    };
    let assignee = match query.assignee.as_deref() {
        None => InboxAssignee::Anyone,
        Some("me") => InboxAssignee::User(me),
        Some("unassigned") => InboxAssignee::Unassigned,
        Some(raw) => match raw.parse::<i64>() {
            Ok(id) if id > 0 && raw.bytes().all(|b| b.is_ascii_digit()) => {
                InboxAssignee::User(UserId(id))
            }
            _ => {
                return Err(ApiError::invalid(
                    "assignee must be a user id, me or unassigned.",
                ));
            }
        },
    };
    let tag = query
        .tag
        .as_deref()
        .map(Tag::parse)
        .transpose()
        .map_err(|invalid| ApiError::invalid(format!("tag: {}", invalid.0)))?;
    Ok(ConversationsWanted {
        filter: ConversationFilter {
            status,
            snoozed,
            assignee,
            ..ConversationFilter::default()
        },
        site_key: query.site.clone(),
        tag,
    })
}

/// `GET /api/v1/conversations?status=…&snoozed=…&assignee=…&site=…&tag=…&before=…&limit=…`:
/// conversations (all, or those the filters let through) by last activity, newest first, a page
/// at a time; `next` is the cursor of the following page (`null` on the last).
pub async fn list_conversations(
    State(app): State<AppState>,
    user: ApiUser,
    StrictQuery(query): StrictQuery<ListQuery>,
) -> Result<Response, ApiError> {
    let wanted = wanted(&query, user.0.id)?;
    let before = match query.before.as_deref() {
        None => None,
        Some(raw) => Some(parse_cursor(raw).ok_or_else(|| {
            ApiError::invalid("before must be the `next` value of a previous page.")
        })?),
    };
    let limit = paging::limit(query.limit.as_deref(), LIST_LIMIT)?;
    let rows = app
        .chat
        .list_conversations(wanted, before, paging::rows_to_read(limit))
        .await?;
    let (conversations, next) = paging::page(rows, limit, cursor);
    let list: Vec<_> = conversations.iter().map(conversation_json).collect();
    Ok(Json(json!({"conversations": list, "next": next})).into_response())
}

/// `GET /api/v1/conversations/{id}`: one conversation, as the list shows it.
pub async fn get_conversation(
    State(app): State<AppState>,
    _user: ApiUser,
    Path(id): Path<i64>,
) -> Result<Response, ApiError> {
    let conversation = app.chat.find_conversation(ConversationId(id)).await?;
    Ok(Json(conversation_json(&conversation)).into_response())
}

/// `POST /api/v1/conversations/{id}/close`: closes it as *Close* in the inbox does (the visitor's
/// widget is told, the integrations hear of it); closing a closed one changes nothing. Answers
/// the conversation as it is now.
pub async fn close_conversation(
    State(app): State<AppState>,
    user: ApiUser,
    Path(id): Path<i64>,
    _: NoBody,
) -> Result<Response, ApiError> {
    let id = ConversationId(id);
    app.chat.close_conversation(id, &user.0, None).await?;
    conversation_now(&app, id).await
}

/// The conversation as it is now, as the close and reopen calls answer.
async fn conversation_now(app: &AppState, id: ConversationId) -> Result<Response, ApiError> {
    Ok(Json(conversation_json(&app.chat.find_conversation(id).await?)).into_response())
}

#[derive(Debug, Deserialize)]
pub struct Assign {
    /// A user id, or `null` for nobody. Not an `Option`: a body without it must be refused, not
    /// read as "nobody".
    assignee: serde_json::Value,
}

/// `POST /api/v1/conversations/{id}/assign`: assigns it to an enabled user, or to nobody, as the
/// inbox's *Assign* does (the status line, the integrations' notices); whoever had it. Answers
/// the conversation as it is now; assigning it to whoever has it changes nothing.
pub async fn assign_conversation(
    State(app): State<AppState>,
    user: ApiUser,
    Path(id): Path<i64>,
    StrictJson(assign): StrictJson<Assign>,
) -> Result<Response, ApiError> {
    let id = ConversationId(id);
    let refused = || ApiError::invalid("assignee must be the id of an enabled user, or null.");
    // As every id field of the API: a JSON integer, not `2.0` or `"2"`, said as such (the id
    // may well be an enabled user's).
    let not_an_id = || ApiError::invalid("assignee must be a whole number (a user's id) or null.");
    let assignee = match assign.assignee {
        serde_json::Value::Null => None,
        serde_json::Value::Number(n) => {
            let id = n.as_i64().ok_or_else(not_an_id)?;
            match app.chat.find_agent(UserId(id)).await {
                Ok(agent) => Some(agent),
                Err(crate::chat::Error::NotFound(_)) => return Err(refused()),
                Err(err) => return Err(err.into()),
            }
        }
        _ => return Err(not_an_id()),
    };
    app.chat
        .assign_conversation(id, &user.0, assignee.as_ref(), Expected::Any, None)
        .await?;
    conversation_now(&app, id).await
}

#[derive(Debug, Deserialize)]
pub struct Tags {
    /// Names to add (the conversation keeps those it has).
    #[serde(default)]
    add: Vec<String>,
    /// Names to remove (one it does not have is no error).
    #[serde(default)]
    remove: Vec<String>,
}

/// Tag names of one list of a [`Tags`] body (`field` names it in the error).
fn parse_tags(field: &str, names: &[String]) -> Result<Vec<Tag>, ApiError> {
    Tag::parse_all(names.iter().map(String::as_str))
        .map_err(|invalid| ApiError::invalid(format!("{field}: {}", invalid.0)))
}

/// `POST /api/v1/conversations/{id}/tags`: adds and removes tags as the inbox's side panel does
/// (docs/admin.md, "Tags"), open or closed. Answers the conversation as it is now; a change of
/// nothing writes no status line.
pub async fn tag_conversation(
    State(app): State<AppState>,
    user: ApiUser,
    Path(id): Path<i64>,
    StrictJson(tags): StrictJson<Tags>,
) -> Result<Response, ApiError> {
    let id = ConversationId(id);
    let (add, remove) = (
        parse_tags("add", &tags.add)?,
        parse_tags("remove", &tags.remove)?,
    );
    if add.is_empty() && remove.is_empty() {
        return Err(ApiError::invalid("Give at least one tag to add or remove."));
    }
    app.chat.change_tags(id, &user.0, add, remove).await?;
    conversation_now(&app, id).await
}

#[derive(Debug, Deserialize)]
pub struct Snooze {
    /// Unix milliseconds: in the future, at most a year ahead.
    until: i64,
}

/// `POST /api/v1/conversations/{id}/snooze`: out of the inbox's Open list and unread counts until
/// `until` or the visitor's next message (docs/admin.md, "Snooze"). Only an open conversation
/// can be snoozed: `409 conflict` for a closed one. Snoozing again moves the end.
pub async fn snooze_conversation(
    State(app): State<AppState>,
    user: ApiUser,
    Path(id): Path<i64>,
    StrictJson(snooze): StrictJson<Snooze>,
) -> Result<Response, ApiError> {
    let id = ConversationId(id);
    if !app
        .chat
        .snooze_conversation(id, &user.0, snooze.until, Resnooze::Move)
        .await?
        && app.chat.find_conversation(id).await?.status != "open"
    {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "conflict",
            "Only an open conversation can be snoozed, and this one is closed.".to_owned(),
        ));
    }
    conversation_now(&app, id).await
}

/// `POST /api/v1/conversations/{id}/unsnooze`: back in the Open list now; one that is not
/// snoozed is left as it is.
pub async fn unsnooze_conversation(
    State(app): State<AppState>,
    user: ApiUser,
    Path(id): Path<i64>,
    _: NoBody,
) -> Result<Response, ApiError> {
    let id = ConversationId(id);
    app.chat.unsnooze_conversation(id, &user.0).await?;
    conversation_now(&app, id).await
}

/// `POST /api/v1/conversations/{id}/reopen`: reopens a closed conversation as *Reopen* in the
/// inbox does; an open one is left as it is. `409 conflict` when the visitor has started a newer
/// conversation since (only the newest can be reopened): the message names where to answer.
pub async fn reopen_conversation(
    State(app): State<AppState>,
    user: ApiUser,
    Path(id): Path<i64>,
    _: NoBody,
) -> Result<Response, ApiError> {
    let id = ConversationId(id);
    match app.chat.reopen_conversation(id, &user.0, None).await {
        Err(crate::chat::Error::Invalid(_)) => {
            let newer = app.chat.conversation_to_answer_instead_of(id).await?;
            let which = newer.map_or_else(String::new, |n| format!(" (#{n})"));
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "conflict",
                format!("The visitor has started a newer conversation{which}; answer there."),
            ));
        }
        done => done?,
    }
    conversation_now(&app, id).await
}

/// `GET /api/v1/conversations/{id}/messages`: the whole conversation, notes included.
pub async fn list_messages(
    State(app): State<AppState>,
    _user: ApiUser,
    Path(id): Path<i64>,
) -> Result<Response, ApiError> {
    let messages = app.chat.conversation_messages(ConversationId(id)).await?;
    let list: Vec<_> = messages.iter().map(message_json).collect();
    Ok(Json(json!({"messages": list})).into_response())
}

/// `GET /api/v1/conversations/{id}/attachments/{file}`: a file of the conversation, with the
/// headers the inbox serves it with; 404 for a file of another conversation.
pub async fn download_attachment(
    State(app): State<AppState>,
    _user: ApiUser,
    Path((id, file)): Path<(i64, String)>,
) -> Response {
    conversation_file(&app, id, file, AttachmentPart::File, None)
        .await
        .unwrap_or_else(|failure| ApiError::from(failure).into_response())
}

#[derive(Debug, Deserialize)]
pub struct NewReply {
    body: String,
}

/// `POST /api/v1/conversations/{id}/messages`: an agent reply, pushed to the visitor live. With
/// an `Idempotency-Key`, a resend of the same reply (after a timeout, a lost connection) is
/// answered with the first one and stores nothing new (docs/api.md).
pub async fn post_message(
    State(app): State<AppState>,
    user: ApiUser,
    Path(id): Path<i64>,
    headers: HeaderMap,
    StrictJson(reply): StrictJson<NewReply>,
) -> Result<Response, ApiError> {
    let key = idempotency_key(&headers)?;
    let body = MessageBody::parse(&reply.body).map_err(crate::chat::Error::from)?;
    let posted = app
        .chat
        .post_agent_message(ConversationId(id), &agent(&user), body, Vec::new(), key)
        .await?;
    let mut response = (StatusCode::CREATED, Json(message_json(&posted.row))).into_response();
    if posted.was_stored_before {
        response
            .headers_mut()
            .insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(response)
}

/// The request's `Idempotency-Key`, bare (`k1`) or as the draft standard's quoted string
/// (`"k1"`), held to a widget `client_id`'s rules; several are refused rather than one picked.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<ClientId>, ApiError> {
    let mut keys = headers.get_all("idempotency-key").iter();
    let Some(raw) = keys.next() else {
        return Ok(None);
    };
    if keys.next().is_some() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "Send one Idempotency-Key header.",
        ));
    }
    let text = raw.to_str().unwrap_or_default().trim();
    let bare = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    ClientId::parse(bare).map(Some).map_err(|_| {
        ApiError::invalid(
            "Idempotency-Key must be 1 to 64 characters of A-Z, a-z, 0-9, - and _ (a UUID is fine).",
        )
    })
}

#[derive(Debug, Deserialize)]
pub struct Typing {
    active: bool,
}

/// `POST /api/v1/conversations/{id}/typing`: shows or hides "typing…" to the visitor.
pub async fn post_typing(
    State(app): State<AppState>,
    user: ApiUser,
    Path(id): Path<i64>,
    StrictJson(typing): StrictJson<Typing>,
) -> Result<Response, ApiError> {
    app.chat
        .set_agent_typing(ConversationId(id), &agent(&user), typing.active)
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
