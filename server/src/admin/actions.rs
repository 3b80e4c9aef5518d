//! A conversation's actions: assign, close, reopen, tag, mark unread (snoozing is `snooze.rs`). A browser's own form
//! post is answered with a redirect to the conversation page, which then says what was done (`?notice=`) or why
//! nothing was (`?error=`). The inbox script (the `e` and `a` keys and *Undo* on the inbox list,
//! docs/admin.md "Keyboard") sends `X-Porch-Fetch: 1` and gets `204 No Content` when done, or
//! the error as JSON, so that it can say which it was without leaving the list.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse as _, Response};
use porch_app::conversation::{ASSIGNEE_FIELD, Refused};
use porch_app::layout::Notice;
use porch_app::tags::TAG_FIELD;
use serde::Deserialize;

use crate::chat::{self, Invalid, Tag};
use crate::state::AppState;
use crate::store::{self, ConversationId, UserId};

use super::auth::NoFields;
use super::page::{PageError, html_with_status, see_other};
use super::session::{Posted, SignedIn, is_script, reject};

/// What the conversation page says after one of these actions (`?notice=`), so that the change
/// is confirmed in words, not only by the side panel changing. The assignee named is the one
/// the page shows now.
pub fn done_notice(code: &str, item: &store::InboxItemRow, me: UserId) -> Option<Notice> {
    let text = match code {
        "closed" => "Conversation closed. Reopen undoes it until the visitor writes again: their \
                     next message starts a new conversation."
            .to_owned(),
        "reopened" => "Conversation reopened.".to_owned(),
        "snoozed" => "Snoozed: the conversation is out of Open until the snooze ends or the \
                      visitor writes."
            .to_owned(),
        "unsnoozed" => "Unsnoozed: the conversation is back in Open.".to_owned(),
        "tagged" => "Tags saved.".to_owned(),
        "tags_unchanged" => "Nothing changed: its tags were already so.".to_owned(),
        "assignee" => match (item.assignee_id, &item.assignee_name) {
            (Some(id), _) if id == me => "Assigned to you.".to_owned(),
            (Some(_), Some(name)) => format!("Assigned to {name}."),
            _ => "Unassigned: nobody has this conversation now.".to_owned(),
        },
        _ => return None,
    };
    Some(Notice::Success(text))
}

/// How an action is answered, by who sent it.
pub(super) struct Answer {
    script: bool,
    id: i64,
}

impl Answer {
    pub(super) fn new(headers: &HeaderMap, id: i64) -> Self {
        Self {
            script: is_script(headers),
            id,
        }
    }

    /// Done: the conversation page with `notice`, or `204` to the script.
    pub(super) fn done(&self, notice: &str) -> Response {
        if self.script {
            StatusCode::NO_CONTENT.into_response()
        } else {
            see_other(&format!("/conversations/{}?notice={notice}", self.id))
        }
    }

    /// Nothing was done because the conversation changed meanwhile: the page at `location`
    /// (which says why), or `409` with `code` and `message` to the script, and `location` as
    /// `href` when it is another conversation's page.
    pub(super) fn conflict(&self, location: &str, code: &'static str, message: &str) -> Response {
        if self.script {
            let err = PageError {
                code,
                ..PageError::new(StatusCode::CONFLICT, "Changed meanwhile", message)
            };
            let own = format!("/conversations/{}", self.id);
            let elsewhere = !location.starts_with(&format!("{own}?")) && location != own;
            err.into_script_response_pointing(elsewhere.then_some(location))
        } else {
            see_other(location)
        }
    }

    pub(super) fn refused(&self, err: PageError) -> Response {
        reject(self.script, err)
    }

    /// A refused form of the conversation page: its error to the script; to a browser's own
    /// post, the conversation's page again, answered with the error's status, saying why at the
    /// top, with the refused `field` marked and given the focus, and what the form held (`kept`)
    /// back in it (docs/admin.md, "Screen readers": a refused form comes back).
    pub(super) async fn refused_on_page(
        &self,
        app: &AppState,
        who: &SignedIn,
        err: PageError,
        (field, kept): (&'static str, Option<Refused>),
    ) -> Response {
        if self.script {
            return self.refused(err);
        }
        let page = async {
            let view = app
                .chat
                .open_conversation(who.user.id, ConversationId(self.id))
                .await?;
            let notice = Notice::Invalid {
                field,
                text: err.message.clone(),
            };
            super::inbox::conversation_html(app, who, view, Some(notice), kept).await
        };
        match page.await {
            Ok(body) => html_with_status(err.status, body),
            Err(gone) => gone.into_response(),
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct AssignForm {
    /// A user id, `me` (the keyboard shortcut on the list), or empty for nobody.
    #[serde(default)]
    assignee: String,
    /// The assignee the form was shown with (a user id, or empty for nobody): if someone changed
    /// it meanwhile, nothing changes and the page says so. Without it, whoever has it.
    from: Option<String>,
}

/// Reads an [`AssignForm`] user field: empty for nobody, else a user id.
fn user_field(raw: &str) -> Result<Option<UserId>, PageError> {
    match raw.trim() {
        "" => Ok(None),
        raw => raw
            .parse::<i64>()
            .map(|id| Some(UserId(id)))
            .map_err(|_| PageError::not_found("agent")),
    }
}

/// `POST /conversations/{id}/assign`.
pub async fn assign(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    posted: Posted<AssignForm>,
) -> Response {
    let answer = Answer::new(&headers, id);
    post_assign(&app, &answer, posted)
        .await
        .unwrap_or_else(|err| answer.refused(err))
}

async fn post_assign(
    app: &AppState,
    answer: &Answer,
    Posted { who, form }: Posted<AssignForm>,
) -> Result<Response, PageError> {
    let target = match form.assignee.trim() {
        "me" => Some(who.user.id),
        raw => user_field(raw)?,
    };
    let expected = match form.from.as_deref() {
        Some(from) => store::Expected::Is(user_field(from)?),
        None => store::Expected::Any,
    };
    let conversation = ConversationId(answer.id);
    // The assignee the page showed, sent back as it was: nothing to change (also when that is
    // someone disabled since, who could not be assigned anew), unless it changed meanwhile.
    let unchanged = expected == store::Expected::Is(target);
    if !unchanged {
        let assignee = match target {
            Some(user) => match app.chat.find_agent(user).await {
                Ok(agent) => Some(agent),
                Err(chat::Error::NotFound(_)) => {
                    return Ok(cannot_take_it(app, &who, answer, user).await);
                }
                Err(err) => return Err(err.into()),
            },
            None => None,
        };
        let changed = app
            .chat
            .assign_conversation(conversation, &who.user, assignee.as_ref(), expected, None)
            .await?;
        if changed || expected == store::Expected::Any {
            return Ok(answer.done("assignee"));
        }
    }
    let now = app.chat.inbox_item(who.user.id, conversation).await?;
    if now.assignee_id != target {
        return Ok(answer.conflict(
            &format!("/conversations/{}?error=assigned", answer.id),
            "assignee_changed",
            "Someone changed the assignee meanwhile, so nothing changed.",
        ));
    }
    Ok(answer.done("assignee"))
}

/// An *Assign* to someone disabled or deleted since the page was drawn: the page again, its
/// picker drawn anew without them and marked, saying so (it was a 404 page that said the agent
/// "may have been deleted", of a colleague who was only disabled).
async fn cannot_take_it(app: &AppState, who: &SignedIn, answer: &Answer, user: UserId) -> Response {
    let named = app
        .readers
        .read(move |c| store::find_user(c, user))
        .await
        .ok()
        .flatten();
    let message = match named {
        Some(user) => format!(
            "{} is disabled, so nothing changed: choose someone else.",
            user.name
        ),
        None => "That person is no longer on the team, so nothing changed: choose someone \
                 else."
            .to_owned(),
    };
    let err = PageError::new(StatusCode::CONFLICT, "Cannot take it", message);
    let kept = (ASSIGNEE_FIELD, Some(Refused::Assignee));
    answer.refused_on_page(app, who, err, kept).await
}

/// `POST /conversations/{id}/close`.
pub async fn close(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    Posted { who, .. }: Posted<NoFields>,
) -> Response {
    let answer = Answer::new(&headers, id);
    match app
        .chat
        .close_conversation(ConversationId(id), &who.user, None)
        .await
    {
        Ok(true) => answer.done("closed"),
        // A colleague closed it meanwhile: the page shows it closed, and the script must not
        // offer an Undo that would reopen the colleague's close.
        Ok(false) => answer.conflict(
            &format!("/conversations/{id}"),
            "already_closed",
            "Someone closed it already.",
        ),
        Err(err) => answer.refused(err.into()),
    }
}

/// `POST /conversations/{id}/reopen`.
pub async fn reopen(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    Posted { who, .. }: Posted<NoFields>,
) -> Response {
    let answer = Answer::new(&headers, id);
    match app
        .chat
        .reopen_conversation(ConversationId(id), &who.user, None)
        .await
    {
        Ok(()) => answer.done("reopened"),
        // The visitor started a newer conversation meanwhile: the agent is taken there.
        Err(crate::chat::Error::Invalid(_)) => {
            match app
                .chat
                .conversation_to_answer_instead_of(ConversationId(id))
                .await
            {
                Ok(newer) => answer.conflict(
                    &match newer {
                        Some(newer) => format!("/conversations/{}?error=newer", newer.0),
                        None => format!("/conversations/{id}"),
                    },
                    "newer_conversation",
                    "The visitor has started a newer conversation since, so this one stays \
                     closed. Answer in the newer one.",
                ),
                Err(err) => answer.refused(err.into()),
            }
        }
        Err(err) => answer.refused(err.into()),
    }
}

/// `POST /conversations/{id}/unread`: the conversation is unread for the signed-in agent again,
/// until they next read it (docs/admin.md, "Unread"). The browser is taken to the inbox, since
/// the conversation page, left open, would read it again; the script (`u` on the list) gets 204.
pub async fn mark_unread(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    Posted { who, .. }: Posted<NoFields>,
) -> Response {
    let script = is_script(&headers);
    match app.chat.mark_unread(who.user.id, ConversationId(id)).await {
        Ok(()) if script => StatusCode::NO_CONTENT.into_response(),
        Ok(()) => see_other("/inbox?notice=marked-unread"),
        Err(err) => reject(script, err.into()),
    }
}

#[derive(Debug, Deserialize)]
pub struct TagsForm {
    /// Tags to add, separated by commas.
    #[serde(default)]
    add: String,
    /// Tags to remove, separated by commas (the side panel's × sends one).
    #[serde(default)]
    remove: String,
}

/// `POST /conversations/{id}/tags`: adds and removes tags (docs/admin.md, "Tags").
pub async fn tags(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    Posted { who, form }: Posted<TagsForm>,
) -> Response {
    let answer = Answer::new(&headers, id);
    let parsed =
        Tag::parse_list(&form.add).and_then(|add| Ok((add, Tag::parse_list(&form.remove)?)));
    let (add, remove) = match parsed {
        Ok(tags) => tags,
        Err(invalid) => {
            let err = crate::chat::Error::Invalid(invalid).into();
            return tags_refused(&app, &who, &answer, form.add, err).await;
        }
    };
    if add.is_empty() && remove.is_empty() {
        let err = crate::chat::Error::Invalid(Invalid::from("Type a tag to add.")).into();
        return tags_refused(&app, &who, &answer, form.add, err).await;
    }
    match app
        .chat
        .change_tags(ConversationId(id), &who.user, add, remove)
        .await
    {
        Ok(true) => answer.done("tagged"),
        Ok(false) => answer.done("tags_unchanged"),
        Err(err) => tags_refused(&app, &who, &answer, form.add, err.into()).await,
    }
}

/// A refused *Add tags*, what was typed kept in its field (see [`Answer::refused_on_page`]).
async fn tags_refused(
    app: &AppState,
    who: &SignedIn,
    answer: &Answer,
    typed: String,
    err: PageError,
) -> Response {
    let kept = (TAG_FIELD, Some(Refused::Tags(typed)));
    answer.refused_on_page(app, who, err, kept).await
}
