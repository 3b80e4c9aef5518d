//! The arguments each kind of job stores: ids to read when delivering, never the payload itself,
//! except for the few webhook facts that must not change between attempts. The planner writes
//! them, the integrations' deliveries read them.

use serde::{Deserialize, Serialize};

use crate::store::{ConversationId, MessageId, UserId, VisitorId, WebhookConversation};

/// A chat post (`slack.post`, `discord.post`): the message to post.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct MessageArgs {
    pub message_id: MessageId,
}

/// A change of a conversation shown elsewhere (`slack.header`): the conversation, read as it is
/// when delivering.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct ConversationArgs {
    pub conversation_id: ConversationId,
}

/// A mail (`email.*`): the conversation, and for a reply the agent's message.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct EmailArgs {
    pub conversation_id: ConversationId,
    #[serde(default)]
    pub message_id: Option<MessageId>,
}

/// Which account link a mail carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AccountLink {
    Invitation,
    /// Made by an admin on `/team`.
    PasswordReset,
    /// Asked for on the "Forgot your password?" form, maybe by someone else.
    RequestedReset,
    /// Asked for on that form for someone invited who never chose a password, maybe by someone
    /// else: a fresh invitation, which says so.
    RequestedInvitation,
    /// Asked for on that form by someone who signs in through single sign-on and has no
    /// password: no link, but how they sign in (the button's `label`; the URL is the sign-in
    /// page) and that an admin gives passwords (docs/sso.md).
    SingleSignOn {
        label: String,
    },
}

/// An account-link mail (`email.account_link`). The link's token is only in the URL here (the
/// database keeps its hash otherwise), until the job is pruned; the link works once and
/// expires (docs/admin.md#team).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AccountLinkArgs {
    pub name: String,
    pub email: String,
    pub link: AccountLink,
    pub url: String,
    /// The admin who made the link on `/team`, named in the mail so that it reads as coming
    /// from someone the person knows (absent for links asked for on the sign-in page, and in
    /// jobs queued before 2026-12-07).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub made_by: Option<String>,
    /// The install's sites when the link was made, named in an invitation ("to answer chats
    /// for Shop").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<String>,
}

/// A test mail (`email.test`): whom to send it to (the admin who asked).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TestMailArgs {
    pub to: String,
}

/// A webhook event (`webhook.deliver`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WebhookArgs {
    pub event: String,
    pub conversation_id: ConversationId,
    #[serde(default)]
    pub message_id: Option<MessageId>,
    #[serde(default)]
    pub assignee_id: Option<UserId>,
    /// What could change after the event, as it was then. Absent from jobs written by an older
    /// Porch, which took none: those are built from the rows as they are when delivering.
    #[serde(default)]
    pub facts: Option<WebhookFacts>,
    /// Set on replays: the original delivery's `webhook-id`, so receivers recognise it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_id: Option<String>,
}

/// A `visitor.erased` event (`webhook.deliver`): whom Porch erased, for receivers to erase their
/// own copies. Everything the payload says is here, since nothing of the person is left to read;
/// and only ids, since the person's data must not outlive the erasure in a job. It has no
/// `conversation_id` or `message_id`, which is also what keeps it out of an erasure's and a
/// purge's deletions of the jobs that name a conversation or a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErasureNoticeArgs {
    /// Always `visitor.erased`, where the delivery log reads every webhook job's event.
    pub event: String,
    pub visitor_id: VisitorId,
    pub site_key: String,
    pub site_name: String,
    /// The visitor's conversations that were erased, oldest first.
    pub conversation_ids: Vec<ConversationId>,
    /// Set on replays, as [`WebhookArgs::webhook_id`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_id: Option<String>,
}

/// What a `webhook.deliver` job carries: an event about a conversation, or a notice of an
/// erasure. Untagged: a conversation's arguments always have `conversation_id`, a notice's never.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WebhookJobArgs {
    Conversation(WebhookArgs),
    Erasure(ErasureNoticeArgs),
}

impl WebhookJobArgs {
    /// The original delivery's `webhook-id`, on a replay.
    pub fn replayed_id(&self) -> Option<&str> {
        match self {
            Self::Conversation(args) => args.webhook_id.as_deref(),
            Self::Erasure(args) => args.webhook_id.as_deref(),
        }
    }

    /// Marks these as a replay of the delivery whose `webhook-id` is `id`.
    pub fn replay_of(&mut self, id: String) {
        match self {
            Self::Conversation(args) => args.webhook_id = Some(id),
            Self::Erasure(args) => args.webhook_id = Some(id),
        }
    }
}

/// The parts of a webhook payload that can change after the event (the conversation's status
/// and assignee, the visitor's details, the site's name), as they were when it happened. They
/// are stored in the job's arguments, so every attempt and every replay of the event sends the
/// same body under the same `webhook-id`; what never changes (ids, times, a message's text and
/// author) is read when delivering. Absent values are left out of the JSON to keep the per-job
/// arguments small: a new conversation's facts are about 90 bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookFacts {
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<i64>,
    /// The assignee's id, name and email.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<(UserId, String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visitor_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visitor_email: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visitor_page: Option<String>,
    pub site_name: String,
}

impl WebhookFacts {
    /// The facts of a conversation as it is now.
    pub fn of(conversation: &WebhookConversation) -> Self {
        Self {
            status: conversation.status.clone(),
            closed_at: conversation.closed_at,
            assignee: conversation.assignee.clone(),
            visitor_name: conversation.visitor_name.clone(),
            visitor_email: conversation.visitor_email.clone(),
            visitor_page: conversation.visitor_page.clone(),
            site_name: conversation.site_name.clone(),
        }
    }

    /// The conversation as it was when the event happened.
    pub fn applied_to(self, conversation: WebhookConversation) -> WebhookConversation {
        WebhookConversation {
            status: self.status,
            closed_at: self.closed_at,
            site_name: self.site_name,
            visitor_name: self.visitor_name,
            visitor_email: self.visitor_email,
            visitor_page: self.visitor_page,
            assignee: self.assignee,
            ..conversation
        }
    }
}

/// A job's arguments as JSON (they are plain data, so this cannot fail in practice; an empty
/// object would make the delivery fail visibly rather than panic).
pub fn to_json(args: &impl Serialize) -> String {
    serde_json::to_string(args).unwrap_or_else(|_| "{}".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_job_is_read_as_what_it_carries() {
        let event = r#"{"event":"message.created","conversation_id":7,"message_id":9}"#;
        let notice = to_json(&ErasureNoticeArgs {
            event: "visitor.erased".into(),
            visitor_id: VisitorId(3),
            site_key: "s_1".into(),
            site_name: "Acme".into(),
            conversation_ids: vec![ConversationId(7)],
            webhook_id: None,
        });
        assert!(matches!(
            serde_json::from_str(event),
            Ok(WebhookJobArgs::Conversation(WebhookArgs {
                conversation_id: ConversationId(7),
                ..
            }))
        ));
        assert!(matches!(
            serde_json::from_str(&notice),
            Ok(WebhookJobArgs::Erasure(ErasureNoticeArgs {
                visitor_id: VisitorId(3),
                ..
            }))
        ));
        assert!(!notice.contains("conversation_id\""), "{notice}");
    }
}
