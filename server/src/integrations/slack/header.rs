//! A conversation's thread header: the first post (who, where, a link to the inbox, the
//! conversation's number and state) and its updates with `chat.update` when the conversation is
//! closed, reopened or (un)assigned, wherever that was done. An update is built from the
//! conversation as it is when the job runs, so a late or repeated update never shows an old state.

use std::fmt::Write;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::integrations::Destinations;
use crate::integrations::delivery::{Found, args, finish, integration_of, label_visitor, read};
use crate::jobs::{Attempt, ConversationArgs, Outcome};
use crate::secrets::SecretKey;
use crate::store::{self, ConversationId, IntegrationId, JobRow, WebhookConversation};

use super::deliver::classify;
use super::{HEADER_EVENT_TYPE, SlackIntegration, escape};

/// The header post's body, from the conversation as it is now (for `chat.postMessage`;
/// `chat.update` takes the same with the header's `ts`).
pub(super) fn header(public_url: &str, channel: &str, conversation: &WebhookConversation) -> Value {
    let visitor = label_visitor(
        conversation.visitor_name.as_deref(),
        conversation.visitor_email.as_deref(),
        conversation.visitor_id,
    );
    let mut text = format!(
        "New conversation on *{}* from {}",
        escape(&conversation.site_name),
        escape(&visitor)
    );
    if let Some(page) = &conversation.visitor_page {
        let _ = write!(text, "\nPage: {}", escape(page));
    }
    let state = if conversation.status == "closed" {
        "Closed"
    } else {
        "Open"
    };
    let assignee = conversation.assignee.as_ref().map_or_else(
        || "unassigned".to_owned(),
        |(_, name, _)| format!("assigned to {}", escape(name)),
    );
    let id = conversation.id;
    let _ = write!(
        text,
        "\n*Conversation #{id}* · {state} · {assignee}\n<{public_url}/conversations/{id}|Open in \
         Porch> · reply in this thread to answer; start a reply with `note:` for a private note"
    );
    json!({
        "channel": channel,
        "text": text,
        "unfurl_links": false,
        "unfurl_media": false,
        "metadata": {"event_type": HEADER_EVENT_TYPE, "event_payload": {"conversation_id": id.0}},
    })
}

/// Delivers a `slack.header` job: the conversation's header in this integration's channel is
/// rewritten to show its state now. Nothing to do when the conversation has no thread there.
pub async fn deliver_header_update(destinations: &Destinations, job: &JobRow) -> Attempt {
    finish(update(destinations, job).await)
}

async fn update(destinations: &Destinations, job: &JobRow) -> Result<Attempt, Attempt> {
    let ConversationArgs { conversation_id } = args(job)?;
    let integration = integration_of(job)?;
    let key = Arc::clone(&destinations.secret_key);
    let (slack, conversation, thread) = read(&destinations.readers, move |c| {
        load(c, &key, integration, conversation_id)
    })
    .await?;
    let Some(ts) = thread else {
        // The header was never posted here (the site had no Slack then): nothing shows a state.
        return Ok(Attempt::new(
            Outcome::Delivered { external_ref: None },
            None,
        ));
    };
    let mut body = header(
        &destinations.public_url,
        &slack.config.channel_id,
        &conversation,
    );
    body["ts"] = Value::from(ts.clone());
    Ok(
        match destinations
            .slack
            .update_message(&slack.secrets.bot_token, &body)
            .await
        {
            Ok(()) => Attempt::new(
                Outcome::Delivered {
                    external_ref: Some(ts),
                },
                Some(200),
            ),
            Err(err) => Attempt::new(classify(&err), err.http_status()),
        },
    )
}

/// The integration, the conversation as it is now, and its thread in the integration's channel.
type Loaded = (SlackIntegration, WebhookConversation, Option<String>);

fn load(
    conn: &rusqlite::Connection,
    key: &SecretKey,
    integration: IntegrationId,
    conversation: ConversationId,
) -> Result<Found<Loaded>, store::Error> {
    let Some(row) = store::find_integration(conn, integration)? else {
        return Ok(Found::Gone("the integration was deleted"));
    };
    let Some(slack) = SlackIntegration::open(key, &row) else {
        return Ok(Found::Invalid("the Slack settings are incomplete"));
    };
    let Some(found) = store::load_webhook_conversation(conn, conversation)? else {
        return Ok(Found::Gone("the conversation was deleted"));
    };
    let thread = store::find_slack_thread(
        conn,
        conversation,
        &slack.config.team_id,
        &slack.config.channel_id,
    )?;
    Ok(Found::Ready((slack, found, thread)))
}
