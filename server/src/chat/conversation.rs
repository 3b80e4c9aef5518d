//! Use cases around conversations: a visitor writes, an agent replies or types, a visitor comes
//! back and catches up.

use std::sync::Arc;

use crate::clock::now_ms;
use crate::hub::{Hub, InboxEvent, VisitorEvent};
use crate::store::{
    self, ConversationId, ConversationRow, MessageId, MessageRow, NewVisitorMessage, Readers,
    StoredVisitorMessage, UserId, VisitorRow, Writer,
};

use super::Error;
use super::text::MessageBody;

/// Most messages a returning visitor receives at once.
const HISTORY_LIMIT: u32 = 500;

/// Who is answering: an agent with an account, or (for Slack) only a display name.
#[derive(Debug, Clone)]
pub struct Agent {
    pub user_id: Option<UserId>,
    pub name: String,
}

/// What a returning visitor needs: who they are and what they missed.
#[derive(Debug, Clone)]
pub struct VisitorHistory {
    pub visitor: VisitorRow,
    pub messages: Vec<MessageRow>,
}

/// The use-case functions, over the store and the hub.
#[derive(Clone)]
pub struct Chat {
    writer: Arc<Writer>,
    readers: Arc<Readers>,
    hub: Arc<Hub>,
}

impl Chat {
    pub fn new(writer: Arc<Writer>, readers: Arc<Readers>, hub: Arc<Hub>) -> Self {
        Self {
            writer,
            readers,
            hub,
        }
    }

    /// The fan-out hub, for connections that subscribe to live events.
    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// Stores a visitor message (idempotent on its client id) and, once committed, shows it on
    /// the visitor's other open connections. `from_connection` is the sender's subscription id.
    pub async fn post_visitor_message(
        &self,
        new: NewVisitorMessage,
        from_connection: Option<u64>,
    ) -> Result<StoredVisitorMessage, Error> {
        let client_id = new.client_id.clone();
        let body = new.body.clone();
        let site_id = new.site_id;
        let stored = self
            .writer
            .write(move |c| store::insert_visitor_message(c, &new))
            .await?;
        if !stored.is_duplicate {
            let row = MessageRow {
                id: stored.id,
                conversation_id: stored.conversation_id,
                author: "visitor".into(),
                author_name: None,
                client_id: Some(client_id),
                body,
                created_at: stored.created_at,
            };
            let row = Arc::new(row);
            let event = VisitorEvent::Message(Arc::clone(&row));
            self.hub
                .publish_to_visitor(stored.visitor_id, &event, from_connection);
            self.hub.publish_to_inbox(&InboxEvent {
                site_id,
                message: row,
            });
        }
        Ok(stored)
    }

    /// Posts an agent's reply into a conversation; it reaches the visitor's open connections
    /// live, and later connections through their history.
    pub async fn post_agent_message(
        &self,
        conversation_id: ConversationId,
        agent: &Agent,
        body: MessageBody,
    ) -> Result<MessageRow, Error> {
        let conversation = self.find_conversation(conversation_id).await?;
        let (user_id, name) = (agent.user_id, agent.name.clone());
        let now = now_ms();
        let row = MessageRow {
            id: MessageId(0),
            conversation_id,
            author: "agent".into(),
            author_name: Some(name.clone()),
            client_id: None,
            body: body.into_string(),
            created_at: now,
        };
        let text = row.body.clone();
        let id = self
            .writer
            .write(move |c| {
                store::insert_agent_message(c, conversation_id, user_id, "agent", &name, &text, now)
            })
            .await?;
        let row = MessageRow { id, ..row };
        let shared = Arc::new(row.clone());
        let event = VisitorEvent::Message(Arc::clone(&shared));
        self.hub
            .publish_to_visitor(conversation.visitor_id, &event, None);
        self.hub.publish_to_inbox(&InboxEvent {
            site_id: conversation.site_id,
            message: shared,
        });
        Ok(row)
    }

    /// Shows (or hides) "agent is typing" to the visitor of a conversation.
    pub async fn set_agent_typing(
        &self,
        conversation_id: ConversationId,
        agent: &Agent,
        active: bool,
    ) -> Result<(), Error> {
        let conversation = self.find_conversation(conversation_id).await?;
        let event = VisitorEvent::Typing {
            agent_name: agent.name.as_str().into(),
            active,
        };
        self.hub
            .publish_to_visitor(conversation.visitor_id, &event, None);
        Ok(())
    }

    /// The visitor behind a token hash and their messages after `after`, if they ever wrote.
    pub async fn visitor_history(
        &self,
        token_hash: [u8; 32],
        after: MessageId,
    ) -> Result<Option<VisitorHistory>, Error> {
        Ok(self
            .readers
            .read(move |c| {
                let Some(visitor) = store::find_visitor_by_token_hash(c, &token_hash)? else {
                    return Ok(None);
                };
                let messages =
                    store::list_visitor_messages_after(c, visitor.id, after, HISTORY_LIMIT)?;
                Ok(Some(VisitorHistory { visitor, messages }))
            })
            .await?)
    }

    /// The most recently active conversations.
    pub async fn list_conversations(&self, limit: u32) -> Result<Vec<ConversationRow>, Error> {
        Ok(self
            .readers
            .read(move |c| store::list_conversations(c, limit))
            .await?)
    }

    /// One conversation.
    pub async fn find_conversation(&self, id: ConversationId) -> Result<ConversationRow, Error> {
        self.readers
            .read(move |c| store::find_conversation(c, id))
            .await?
            .ok_or(Error::NotFound("conversation"))
    }

    /// Every message of a conversation, private notes included (for agents).
    pub async fn conversation_messages(
        &self,
        id: ConversationId,
    ) -> Result<Vec<MessageRow>, Error> {
        self.find_conversation(id).await?;
        Ok(self
            .readers
            .read(move |c| store::list_conversation_messages(c, id))
            .await?)
    }
}
