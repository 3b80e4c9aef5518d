//! Use cases around conversations: a visitor writes, an agent replies or types, a visitor comes
//! back and catches up.

use std::sync::Arc;

use tokio::sync::Notify;

use crate::clock::now_ms;
use crate::hub::{Hub, InboxEvent, VisitorEvent};

use super::agent_typing::AgentTypingGate;
use crate::jobs::JobQueue;
use crate::store::{
    self, ConversationId, ConversationRow, MessageId, MessageRow, NewAgentMessage,
    NewVisitorMessage, Readers, StoredAgentMessage, StoredVisitorMessage, UserId, VisitorId,
    VisitorRow, Writer,
};
use crate::values::{Author, ClientId, MessageBody, Tag};

use super::Error;
use super::live_items::LiveItems;
use super::writes::{
    AgentPosting, ClientIdReused, store_agent_message, store_agent_message_once,
    store_visitor_message,
};

/// Most messages in one page of a returning visitor's history.
const HISTORY_PAGE: usize = 500;

/// Who is answering: an agent with an account, or (for Slack) only a display name.
#[derive(Debug, Clone)]
pub struct Agent {
    pub user_id: Option<UserId>,
    pub name: String,
}

/// The stored row of an agent message, without reading it back.
pub(super) fn agent_row(stored: &StoredAgentMessage, new: &NewAgentMessage) -> MessageRow {
    MessageRow {
        id: stored.id,
        conversation_id: new.conversation_id,
        author: new.author(),
        author_name: Some(new.author_name.clone()),
        client_id: new.client_id.as_ref().map(|id| id.as_str().to_owned()),
        body: new.body.as_str().to_owned(),
        created_at: new.now,
        attachments: stored.attachments.clone(),
    }
}

/// A posted agent message, and whether it had been stored before (a resend of its client id).
#[derive(Debug, Clone)]
pub struct PostedMessage {
    pub row: MessageRow,
    pub was_stored_before: bool,
}

/// Shows an agent message (or note) live: to the agents' inboxes always, to the visitor's open
/// connections unless it is a private note. Runs as a commit hook, so in id order.
pub(super) fn publish_agent_message(hub: &Hub, conversation: &ConversationRow, row: MessageRow) {
    let shared = Arc::new(row);
    if shared.author != Author::Note {
        let event = VisitorEvent::Message(Arc::clone(&shared));
        hub.publish_to_visitor(conversation.visitor_id, &event, None);
    }
    hub.publish_to_inbox(InboxEvent::new(conversation.site_id, shared));
}

/// Shows a newly stored visitor message live (nothing for a resend): on the visitor's other open
/// connections (not `from_connection`, the sender's) and in the agents' inboxes. Runs as a commit
/// hook, so in id order.
pub(super) fn publish_visitor_message(
    hub: &Hub,
    new: &NewVisitorMessage,
    stored: &StoredVisitorMessage,
    from_connection: Option<u64>,
) {
    if stored.is_duplicate {
        return;
    }
    let row = Arc::new(MessageRow {
        id: stored.id,
        conversation_id: stored.conversation_id,
        author: Author::Visitor,
        author_name: None,
        client_id: Some(new.client_id.as_str().to_owned()),
        body: new.body.as_str().to_owned(),
        created_at: stored.created_at,
        attachments: stored.attachments.clone(),
    });
    let event = VisitorEvent::Message(Arc::clone(&row));
    hub.publish_to_visitor(stored.visitor_id, &event, from_connection);
    if new.visitor_id.is_none() {
        // Maybe the visitor's first message: their tabs that are waiting for them to be stored
        // follow them from now on. Told at commit, so also when the sending tab is gone.
        hub.visitor_stored(&new.token_hash);
    }
    let context = &new.details.context;
    let mut published = InboxEvent::new(new.site_id, row);
    published.visitor_changed = context.identity.is_some() || context.prechat.is_some();
    published.opened = stored.is_new_conversation;
    published.visitor = Some(stored.visitor_id);
    hub.publish_to_inbox(published);
}

/// One page of what a returning visitor missed, oldest first.
#[derive(Debug, Clone)]
pub struct HistoryPage {
    pub messages: Vec<MessageRow>,
    /// More messages follow the last one of this page.
    pub has_more: bool,
    /// When the page after a positive id is empty: the newest message id stored, for anyone's
    /// conversation (a resume from beyond it must not hold back what comes next).
    pub newest_id: Option<MessageId>,
}

/// A reply that arrived from an integration (a Slack thread), deduplicated on the event id.
#[derive(Debug, Clone)]
pub struct InboundReply {
    /// Where it was typed: the reply is not posted back there.
    pub channel: crate::jobs::SlackChannel,
    /// The integration's own id for the event; a second delivery of it creates nothing.
    pub event_id: String,
    /// The message's own id in its channel (Slack's `ts`): the same message delivered as two
    /// events (an app subscribed to both `message.channels` and `app_mention`) creates one.
    pub message_ts: String,
    pub conversation_id: ConversationId,
    pub agent: Agent,
    pub body: MessageBody,
    /// A private note (Slack replies starting with `note:`): never shown to the visitor.
    pub is_note: bool,
    /// Public ids of the uploads the reply takes: stored as the agent's when `agent` has an
    /// account, else as [`store::Uploader::Integration`]'s.
    pub attachments: Vec<String>,
}

/// The use-case functions of the widget, the API, integrations and the admin inbox (those in
/// `inbox.rs`), over the store, the hub and the job runner. Cheap to clone.
#[derive(Clone)]
pub struct Chat {
    pub(super) writer: Arc<Writer>,
    pub(super) readers: Arc<Readers>,
    pub(super) hub: Arc<Hub>,
    /// Takes the deliveries that messages and conversation changes imply.
    pub(super) jobs: JobQueue,
    /// Conversations behind recent inbox events, read once for every watching agent.
    pub(super) live: Arc<LiveItems>,
    /// Wakes the alarm that ends snoozes (`snooze.rs`) when a new one may end sooner.
    pub(super) snooze_alarm: Arc<Notify>,
    /// Paces what colleagues are told of an agent's typing (`agent_typing.rs`).
    pub(super) agent_typing: Arc<AgentTypingGate>,
}

/// The conversations the API's list asks for: the store's filters, and a site (by key) and a
/// tag, read against what exists (one that does not exist has no conversations).
#[derive(Debug, Clone, Default)]
pub struct ConversationsWanted {
    pub filter: store::ConversationFilter,
    pub site_key: Option<String>,
    pub tag: Option<Tag>,
}

impl Chat {
    /// The hub is made here, so that the live inbox's summaries follow it from the start.
    pub fn new(writer: Arc<Writer>, readers: Arc<Readers>, jobs: JobQueue) -> Self {
        let live = Arc::new(LiveItems::default());
        let hub = Hub::observed(Arc::clone(live.summaries()) as _);
        Self {
            writer,
            readers,
            hub: Arc::new(hub),
            jobs,
            live,
            snooze_alarm: Arc::new(Notify::new()),
            agent_typing: Arc::default(),
        }
    }

    /// The fan-out hub, for visitor and inbox connections that subscribe to live events.
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
        let published = new.clone();
        let hub = Arc::clone(&self.hub);
        let publish = move |(stored, _): &(StoredVisitorMessage, Vec<store::JobRow>)| {
            publish_visitor_message(&hub, &published, stored, from_connection);
        };
        // Repeatable: storing the message and planning its jobs only write.
        let (stored, jobs) = self
            .writer
            .write_then_repeatable(move |c| store_visitor_message(c, &new), publish)
            .await?;
        self.jobs.submit(jobs);
        Ok(stored)
    }

    /// Posts an agent's reply, with the agent's uploads `attachments`, into a conversation; it
    /// reaches the visitor's open connections live, later connections through their history,
    /// and the site's integrations as jobs. With a `client_id` the agent stored before, nothing
    /// new is stored or sent: the answer is the earlier message ([`Error::ClientIdReused`] if
    /// that id named another message).
    pub async fn post_agent_message(
        &self,
        conversation_id: ConversationId,
        agent: &Agent,
        body: MessageBody,
        attachments: Vec<String>,
        client_id: Option<ClientId>,
    ) -> Result<PostedMessage, Error> {
        let conversation = self.find_conversation(conversation_id).await?;
        let new = NewAgentMessage {
            conversation_id,
            site_id: conversation.site_id,
            user_id: agent.user_id,
            author_name: agent.name.clone(),
            body,
            is_note: false,
            attachments,
            client_id,
            now: now_ms(),
        };
        let (stored, published) = (new.clone(), new.clone());
        let hub = Arc::clone(&self.hub);
        let posting = self
            .writer
            .write_then(
                move |c| store_agent_message_once(c, &stored),
                move |posting: &Result<AgentPosting, ClientIdReused>| {
                    if let Ok(AgentPosting::Stored(stored, _)) = posting {
                        publish_agent_message(&hub, &conversation, agent_row(stored, &published));
                    }
                },
            )
            .await
            .map_err(Error::conversation_write)??;
        Ok(self.posted(posting, &new))
    }

    /// What [`store_agent_message_once`] did, once committed: its jobs are run.
    pub(super) fn posted(&self, posting: AgentPosting, new: &NewAgentMessage) -> PostedMessage {
        match posting {
            AgentPosting::Stored(stored, jobs) => {
                self.jobs.submit(jobs);
                PostedMessage {
                    row: agent_row(&stored, new),
                    was_stored_before: false,
                }
            }
            AgentPosting::Earlier(row) => PostedMessage {
                row,
                was_stored_before: true,
            },
        }
    }

    /// Stores a reply that came from an integration, unless its event was handled before
    /// (then `None`). The event id, the message and its jobs commit together, so a crash never
    /// loses an acknowledged event and a replay never duplicates one.
    pub async fn post_inbound_reply(
        &self,
        reply: InboundReply,
    ) -> Result<Option<MessageRow>, Error> {
        let conversation = self.find_conversation(reply.conversation_id).await?;
        let new = NewAgentMessage {
            conversation_id: reply.conversation_id,
            site_id: conversation.site_id,
            user_id: reply.agent.user_id,
            author_name: reply.agent.name.clone(),
            body: reply.body,
            is_note: reply.is_note,
            attachments: reply.attachments,
            client_id: None,
            now: now_ms(),
        };
        let stored = {
            let (stored, published, event_id) = (new.clone(), new.clone(), reply.event_id);
            let origin = reply.channel;
            // Kept beside the event ids, for as long (Slack resends within minutes).
            let message_key = format!(
                "ts:{}:{}:{}",
                origin.team_id, origin.channel_id, reply.message_ts
            );
            let hub = Arc::clone(&self.hub);
            self.writer
                .write_then(
                    move |c| {
                        if !store::insert_slack_event(c, &event_id, stored.now)?
                            || !store::insert_slack_event(c, &message_key, stored.now)?
                        {
                            return Ok(None);
                        }
                        store_agent_message(c, &stored, Some(&origin)).map(Some)
                    },
                    move |stored: &Option<(StoredAgentMessage, Vec<store::JobRow>)>| {
                        if let Some((stored, _)) = stored {
                            publish_agent_message(
                                &hub,
                                &conversation,
                                agent_row(stored, &published),
                            );
                        }
                    },
                )
                .await?
        };
        let Some((stored, jobs)) = stored else {
            return Ok(None);
        };
        self.jobs.submit(jobs);
        Ok(Some(agent_row(&stored, &new)))
    }

    /// The visitor behind a token hash, if they ever wrote.
    pub async fn find_visitor(&self, token_hash: [u8; 32]) -> Result<Option<VisitorRow>, Error> {
        Ok(self
            .readers
            .read(move |c| store::find_visitor_by_token_hash(c, &token_hash))
            .await?)
    }

    /// The visitor's messages and agent replies after `after`, oldest first, one page at a
    /// time: a client is caught up once it has followed `has_more` to the end.
    pub async fn visitor_messages_after(
        &self,
        visitor: VisitorId,
        after: MessageId,
    ) -> Result<HistoryPage, Error> {
        // One row beyond the page says whether there is more, without a count.
        let limit = u32::try_from(HISTORY_PAGE + 1).unwrap_or(u32::MAX);
        let (mut messages, newest_id) = self
            .readers
            .read(move |c| {
                let rows = store::list_visitor_messages_after(c, visitor, after, limit)?;
                let newest = if rows.is_empty() && after.0 > 0 {
                    Some(store::find_newest_message_id(c)?)
                } else {
                    None
                };
                Ok((rows, newest))
            })
            .await?;
        let has_more = messages.len() > HISTORY_PAGE;
        messages.truncate(HISTORY_PAGE);
        Ok(HistoryPage {
            messages,
            has_more,
            newest_id,
        })
    }

    /// One page of the conversations `wanted` by last activity, newest first, after `before`
    /// (the last one of the previous page: its `last_message_at` and id).
    pub async fn list_conversations(
        &self,
        wanted: ConversationsWanted,
        before: Option<(i64, ConversationId)>,
        limit: u32,
    ) -> Result<Vec<ConversationRow>, Error> {
        let ConversationsWanted {
            mut filter,
            site_key,
            tag,
        } = wanted;
        Ok(self
            .readers
            .read(move |c| {
                if let Some(key) = site_key {
                    match store::find_site_by_key(c, &key)? {
                        Some(site) => filter.site = Some(site.id),
                        None => return Ok(Vec::new()),
                    }
                }
                if let Some(tag) = tag {
                    // A tag no conversation has: none to list.
                    match store::find_tag(c, tag.as_str())? {
                        Some(id) => filter.tag = Some(id),
                        None => return Ok(Vec::new()),
                    }
                }
                store::list_conversations(c, &filter, before, limit)
            })
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
