//! Doing what an agent asked from Slack (close, reopen, take, add a private note), after the
//! request was acknowledged: the conversation is found (by its thread or its number, only among
//! the integration's site's), the Slack user is mapped to an enabled Porch user by email, and the
//! change goes through the inbox's own use cases with an audit record. The answer is an
//! ephemeral message only the asker sees.

use std::sync::Arc;

use serde_json::json;

use crate::audit::{Actor, AuditAction};
use crate::chat::{self, MessageBody, Via};
use crate::store::{self, ConversationId, IntegrationId, UserRow};

use super::inbound::porch_user;
use super::request::{Action, Ask, Request, Target, note_view};
use super::{SlackInbound, SlackIntegration};

/// What `/porch help` (and an unknown command) answers.
const HELP: &str = "*Porch* — act on a website conversation without leaving Slack.\n\
    In a conversation's thread: open the ⋯ menu of any message (the first one too) and pick \
    *Close conversation*, *Reopen conversation*, *Assign to me* or *Add private note*.\n\
    Anywhere: `/porch close 42`, `/porch reopen 42`, `/porch assign 42`, `/porch note 42 text` \
    (42 is the number in the thread's first message, *Conversation #42*).\n\
    Your Slack account's email must be the one of your Porch account.";

/// Handles a request that was already acknowledged to Slack, and answers the asker. Runs in its
/// own task: Slack's 3 s are spent on the acknowledgement only.
pub async fn handle_request(
    inbound: Arc<SlackInbound>,
    integration: IntegrationId,
    slack: SlackIntegration,
    request: Request,
) {
    if request.team_id != slack.config.team_id {
        tracing::warn!(integration = %integration, team = request.team_id, "ignored a Slack request from another workspace");
        return;
    }
    let answer = match answer(&inbound, integration, &slack, &request).await {
        Ok(Some(text)) => text,
        // The note modal is open: it is the answer.
        Ok(None) => return,
        Err(err) => {
            tracing::warn!(integration = %integration, error = %err, "a Slack action failed");
            "Porch could not do that just now; try again in a moment.".to_owned()
        }
    };
    let token = &slack.secrets.bot_token;
    let thread = request.thread_ts.as_deref();
    let sent = inbound
        .api
        .post_ephemeral(
            token,
            &request.channel_id,
            &request.user_id,
            thread,
            &answer,
        )
        .await;
    if let Err(err) = sent {
        tracing::warn!(integration = %integration, error = %err, "could not answer a Slack action");
    }
}

/// The answer's text, or `None` when the note modal was opened instead.
async fn answer(
    inbound: &SlackInbound,
    integration: IntegrationId,
    slack: &SlackIntegration,
    request: &Request,
) -> Result<Option<String>, chat::Error> {
    let target = match &request.ask {
        Ask::Help => return Ok(Some(HELP.to_owned())),
        Ask::Unknown(text) => {
            return Ok(Some(format!(
                "Porch does not know `{}`.\n{HELP}",
                super::escape(text)
            )));
        }
        Ask::OpenNote { target, .. } | Ask::Act(target, _) => target,
    };
    let Some(conversation) = find_conversation(inbound, integration, slack, target).await? else {
        return Ok(Some(match target {
            Target::Thread { .. } => "This is not the thread of a Porch conversation: use the \
                                      shortcut on a message in a conversation's thread."
                .to_owned(),
            Target::Number(id) => format!("Porch has no conversation #{id} in this channel."),
        }));
    };
    let Some(agent) = porch_user(inbound, slack, &request.user_id).await?.1 else {
        return Ok(Some(
            "Your Slack account is not linked to an active Porch agent: Porch matches the email \
             of your Slack profile with a Porch account's. Ask an admin to invite that address \
             to the team, or act from the Porch inbox."
                .to_owned(),
        ));
    };
    match &request.ask {
        Ask::OpenNote {
            target:
                Target::Thread {
                    channel_id,
                    thread_ts,
                },
            trigger_id,
        } => {
            let view = note_view(channel_id, thread_ts);
            let opened = inbound
                .api
                .open_view(&slack.secrets.bot_token, trigger_id, &view)
                .await;
            Ok(opened
                .err()
                .map(|err| format!("Slack did not open the note form ({err}); try again.")))
        }
        Ask::Act(_, action) => {
            let via = Via {
                actor: Actor::slack(&agent, &slack.config.team_id, &request.user_id),
                action: AuditAction::SlackConversationAction,
                detail: json!({
                    "action": action.as_str(),
                    "slack_team": slack.config.team_id,
                    "slack_user": request.user_id,
                    "integration": integration.0,
                }),
            };
            act(inbound, conversation, &agent, action, via)
                .await
                .map(Some)
        }
        // A note form is only offered in a thread; help was answered above.
        _ => Ok(None),
    }
}

/// The conversation `target` names, if it is one of the integration's site's.
async fn find_conversation(
    inbound: &SlackInbound,
    integration: IntegrationId,
    slack: &SlackIntegration,
    target: &Target,
) -> Result<Option<ConversationId>, chat::Error> {
    let (team, target) = (slack.config.team_id.clone(), target.clone());
    Ok(inbound
        .readers
        .read(move |c| {
            let Some(row) = store::find_integration(c, integration)? else {
                return Ok(None);
            };
            let id = match target {
                Target::Thread {
                    channel_id,
                    thread_ts,
                } => store::find_conversation_by_slack_thread(c, &team, &channel_id, &thread_ts)?,
                Target::Number(id) => Some(id),
            };
            let Some(id) = id else {
                return Ok(None);
            };
            Ok(store::find_conversation(c, id)?
                .filter(|found| found.site_id == row.site_id)
                .map(|_| id))
        })
        .await?)
}

/// Does `action` as `agent` through the inbox's use cases; the answer says what happened, or
/// why not.
async fn act(
    inbound: &SlackInbound,
    id: ConversationId,
    agent: &UserRow,
    action: &Action,
    via: Via,
) -> Result<String, chat::Error> {
    let chat = &inbound.chat;
    let done = match action {
        Action::Close => chat
            .close_conversation(id, agent, Some(via))
            .await
            .map(|_| format!("Conversation #{id} is closed.")),
        Action::Reopen => chat
            .reopen_conversation(id, agent, Some(via))
            .await
            .map(|()| format!("Conversation #{id} is open.")),
        Action::Assign => chat
            .assign_conversation(id, agent, Some(agent), store::Expected::Any, Some(via))
            .await
            .map(|_| format!("Conversation #{id} is assigned to you.")),
        Action::Note(text) => {
            let Ok(body) = MessageBody::parse(text) else {
                return Ok(format!(
                    "A note needs 1 to {} characters.",
                    crate::chat::MAX_BODY_CHARS
                ));
            };
            chat.post_note(id, agent, body, None, Some(via))
                .await
                .map(|_| format!("Your private note is on conversation #{id}."))
        }
    };
    match done {
        Err(chat::Error::Invalid(invalid)) => Ok(invalid.to_string()),
        Err(chat::Error::NotFound(_)) => Ok(format!("Porch has no conversation #{id}.")),
        other => other,
    }
}
