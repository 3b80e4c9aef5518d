//! Use cases of the admin inbox: listing conversations per agent, reading, closing, reopening
//! and private notes (assigning is `assignment.rs`). Status changes are stored as `system` lines in the conversation,
//! so they have message ids and live streams resume across them like across any message.

use std::sync::Arc;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::now_ms;
use crate::hub::{Hub, InboxEvent, VisitorEvent};
use crate::jobs::ConversationChange;
use crate::store::{
    self, ConversationId, InboxCursor, InboxItemRow, InboxPage, InboxQuery, MessageId, MessageRow,
    NewAgentMessage, SiteId, SiteRow, UserId, UserRow, VisitorDetailsRow,
};
use crate::values::{Author, ClientId, Invalid, MessageBody};

use super::Error;
use super::conversation::{Chat, PostedMessage, agent_row};
use super::live_items::LiveItem;
use super::writes::{
    AgentPosting, ClientIdReused, conversation_change_jobs, store_agent_message_once,
};

/// Conversations on one page of the inbox list. 200 keeps a busy inbox on one screenful of
/// scrolling while the page stays light (one row each, no history).
pub const INBOX_PAGE_SIZE: u32 = 200;

/// What the inbox list's filter form offers.
#[derive(Debug, Clone)]
pub struct InboxChoices {
    pub sites: Vec<SiteRow>,
    /// Agents conversations can be assigned to (enabled users).
    pub agents: Vec<UserRow>,
    /// Every tag in use.
    pub tags: Vec<store::TagRow>,
}

/// A change made outside the inbox (from Slack): recorded in the audit log in the change's own
/// transaction, so the record exists exactly when the change does.
#[derive(Debug, Clone)]
pub struct Via {
    pub actor: Actor,
    pub action: AuditAction,
    /// What the audit row's detail holds (which action, the outside user's ids).
    pub detail: serde_json::Value,
}

impl Via {
    fn record(&self, c: &rusqlite::Connection, id: ConversationId) -> Result<(), store::Error> {
        audit::record(
            c,
            &self.actor,
            self.action,
            &Target::conversation(id),
            &self.detail,
        )
    }
}

/// Everything the conversation page shows.
#[derive(Debug, Clone)]
pub struct ConversationView {
    pub item: InboxItemRow,
    pub visitor: Option<VisitorDetailsRow>,
    /// Who the site says the visitor is, verified or only claimed.
    pub identity: store::VisitorIdentityRow,
    pub messages: Vec<MessageRow>,
    /// Agents it can be assigned to (enabled users).
    pub agents: Vec<UserRow>,
    /// Whether the site's email is on, so an agent can email the visitor.
    pub can_email: bool,
    /// The visitor's other conversations, the newest first: up to [`OTHER_CONVERSATIONS`].
    pub others: Vec<store::OtherConversationRow>,
    /// The visitor has more other conversations than those.
    pub more_others: bool,
    /// Every tag in use, suggested as tags are added.
    pub known_tags: Vec<store::TagRow>,
}

/// How many of a visitor's other conversations the conversation page lists.
const OTHER_CONVERSATIONS: usize = 10;

/// The admin inbox's use cases, on the same handle as the widget's and the API's.
impl Chat {
    /// The page of conversations matching `query` after `after`, as `reader` sees them, and the
    /// newest message id (where a live stream for the page starts).
    pub async fn list_inbox(
        &self,
        reader: UserId,
        query: InboxQuery,
        after: Option<InboxCursor>,
    ) -> Result<(InboxPage, MessageId), Error> {
        Ok(self
            .readers
            .read(move |c| {
                // Read first: a message committed meanwhile is then replayed, never missed.
                let last = store::find_last_message_id(c)?;
                let page = store::list_inbox_page(c, reader, &query, after, INBOX_PAGE_SIZE)?;
                Ok((page, last))
            })
            .await?)
    }

    /// The counts of the list's line above a page (see [`store::count_inbox`]).
    pub async fn count_inbox(
        &self,
        query: InboxQuery,
        after: Option<InboxCursor>,
    ) -> Result<(u64, u64), Error> {
        Ok(self
            .readers
            .read(move |c| store::count_inbox(c, &query, after))
            .await?)
    }

    /// The sites, agents and tags the inbox list can be filtered by.
    pub async fn inbox_choices(&self) -> Result<InboxChoices, Error> {
        Ok(self
            .readers
            .read(|c| {
                Ok(InboxChoices {
                    sites: store::list_sites(c)?,
                    agents: enabled_agents(c)?,
                    tags: store::list_tags(c)?,
                })
            })
            .await?)
    }

    /// The conversation of inbox event `event`, as every agent's live inbox shares it (`None`:
    /// it no longer exists). `burst` lists the events (with their conversations) the caller is
    /// working through, `event` among them: those not followed in memory are read together.
    pub async fn live_inbox_item(
        &self,
        event: (MessageId, ConversationId),
        burst: &[(MessageId, ConversationId)],
    ) -> Result<Option<Arc<LiveItem>>, Error> {
        self.live.get(&self.readers, event, burst).await
    }

    /// The newest message id (where a live stream without a starting point begins).
    pub async fn last_message_id(&self) -> Result<MessageId, Error> {
        Ok(self.readers.read(store::find_last_message_id).await?)
    }

    /// One conversation's summary as `reader` sees it.
    pub async fn inbox_item(
        &self,
        reader: UserId,
        id: ConversationId,
    ) -> Result<InboxItemRow, Error> {
        self.readers
            .read(move |c| store::find_inbox_item(c, reader, id))
            .await?
            .ok_or(Error::NotFound("conversation"))
    }

    /// The conversation page's content; marks it read for `reader`.
    pub async fn open_conversation(
        &self,
        reader: UserId,
        id: ConversationId,
    ) -> Result<ConversationView, Error> {
        let view = self.conversation_view(reader, id).await?;
        if let Some(last) = view.messages.last() {
            self.mark_read(reader, id, last.id).await?;
        }
        Ok(view)
    }

    /// The conversation page's content as `reader` sees it, read or not.
    pub async fn conversation_view(
        &self,
        reader: UserId,
        id: ConversationId,
    ) -> Result<ConversationView, Error> {
        self.readers
            .read(move |c| {
                let Some(item) = store::find_inbox_item(c, reader, id)? else {
                    return Ok(None);
                };
                let visitor = store::find_visitor_details(c, item.visitor_id)?;
                let identity = store::find_visitor_identity(c, item.visitor_id)?;
                let messages = store::list_conversation_messages(c, id)?;
                let agents = enabled_agents(c)?;
                let can_email = store::has_active_email(c, item.site_id)?;
                // One more than is shown says whether there are more.
                let mut others = store::list_other_conversations_of_visitor(
                    c,
                    item.visitor_id,
                    id,
                    OTHER_CONVERSATIONS + 1,
                )?;
                let more_others = others.len() > OTHER_CONVERSATIONS;
                others.truncate(OTHER_CONVERSATIONS);
                let known_tags = store::list_tags(c)?;
                Ok(Some(ConversationView {
                    item,
                    visitor,
                    identity,
                    messages,
                    agents,
                    can_email,
                    others,
                    more_others,
                    known_tags,
                }))
            })
            .await?
            .ok_or(Error::NotFound("conversation"))
    }

    /// Every open conversation with its assignee and, when `reader` has not seen its newest
    /// visitor message, that message's id: where a live page's unread counts start.
    pub async fn open_conversation_reads(
        &self,
        reader: UserId,
    ) -> Result<Vec<store::OpenConversationRead>, Error> {
        Ok(self
            .readers
            .read(move |c| store::list_open_conversation_reads(c, reader))
            .await?)
    }

    /// The conversation's messages after `after` (for resuming a live stream).
    pub async fn conversation_messages_after(
        &self,
        id: ConversationId,
        after: MessageId,
    ) -> Result<Vec<MessageRow>, Error> {
        Ok(self
            .readers
            .read(move |c| store::list_conversation_messages_after(c, id, after))
            .await?)
    }

    /// Conversations that changed after message `after`, with their newest message id.
    pub async fn conversations_changed_after(
        &self,
        after: MessageId,
    ) -> Result<Vec<(ConversationId, MessageId)>, Error> {
        Ok(self
            .readers
            .read(move |c| store::list_conversations_changed_after(c, after))
            .await?)
    }

    /// Posts a private note: stored with the conversation, shown to agents, never to the
    /// visitor (the widget's queries only return visitor and agent messages).
    pub async fn post_note(
        &self,
        id: ConversationId,
        by: &UserRow,
        body: MessageBody,
        client_id: Option<ClientId>,
        via: Option<Via>,
    ) -> Result<PostedMessage, Error> {
        let site_id = self.inbox_item(by.id, id).await?.site_id;
        let new = NewAgentMessage {
            conversation_id: id,
            site_id,
            user_id: Some(by.id),
            author_name: by.name.clone(),
            body,
            is_note: true,
            attachments: Vec::new(),
            client_id,
            now: now_ms(),
        };
        let (stored, published) = (new.clone(), new.clone());
        let hub = Arc::clone(&self.hub);
        let posting = self
            .writer
            .write_then(
                move |c| {
                    if let Some(via) = &via {
                        via.record(c, id)?;
                    }
                    store_agent_message_once(c, &stored)
                },
                move |posting: &Result<AgentPosting, ClientIdReused>| {
                    if let Ok(AgentPosting::Stored(message, _)) = posting {
                        publish(&hub, site_id, agent_row(message, &published));
                    }
                },
            )
            .await
            .map_err(Error::conversation_write)??;
        Ok(self.posted(posting, &new))
    }

    /// Closes an open conversation and tells the visitor's widgets; the visitor's next message
    /// starts a new one. False when it was closed already (nothing changed).
    pub async fn close_conversation(
        &self,
        id: ConversationId,
        by: &UserRow,
        via: Option<Via>,
    ) -> Result<bool, Error> {
        let item = self.inbox_item(by.id, id).await?;
        let (site_id, visitor) = (item.site_id, item.visitor_id);
        let now = now_ms();
        let line = format!("{} closed this conversation", by.name);
        let line = self
            .change(site_id, id, by, line, via, move |c| {
                if store::close_conversation(c, id, now)? {
                    Ok(Some(conversation_change_jobs(
                        c,
                        id,
                        ConversationChange::Closed,
                    )?))
                } else {
                    Ok(None)
                }
            })
            .await?;
        let Some(line) = line else {
            return Ok(false);
        };
        let event = VisitorEvent::Closed {
            conversation: id,
            line,
        };
        self.hub.publish_to_visitor(visitor, &event, None);
        Ok(true)
    }

    /// Where a refused reopen of `id` sends the agent: the visitor's open conversation, or else
    /// their newest one.
    pub async fn conversation_to_answer_instead_of(
        &self,
        id: ConversationId,
    ) -> Result<Option<ConversationId>, Error> {
        Ok(self
            .readers
            .read(move |c| store::find_conversation_to_answer_instead_of(c, id))
            .await?)
    }

    /// Reopens a closed conversation, unless the visitor has started a newer one meanwhile.
    pub async fn reopen_conversation(
        &self,
        id: ConversationId,
        by: &UserRow,
        via: Option<Via>,
    ) -> Result<(), Error> {
        let item = self.inbox_item(by.id, id).await?;
        if item.status != "closed" {
            return Ok(());
        }
        // It comes back unassigned when who had it was disabled meanwhile (the store's rule):
        // the line says so, or the history would read as still theirs.
        let assignee = match item.assignee_id {
            Some(id) => self.readers.read(move |c| store::find_user(c, id)).await?,
            None => None,
        };
        let line = match assignee
            .filter(|user| user.is_disabled)
            .map(|user| user.name)
        {
            Some(name) => format!(
                "{} reopened this conversation; {name} is disabled, so nobody has it",
                by.name
            ),
            None => format!("{} reopened this conversation", by.name),
        };
        let changed = self
            .change(item.site_id, id, by, line, via, move |c| {
                if !store::reopen_conversation(c, id)? {
                    return Ok(None);
                }
                conversation_change_jobs(c, id, ConversationChange::Reopened).map(Some)
            })
            .await
            .map(|line| {
                if let Some(line) = line {
                    let event = VisitorEvent::Reopened {
                        conversation: id,
                        line,
                    };
                    self.hub.publish_to_visitor(item.visitor_id, &event, None);
                }
            });
        // `change` ignores no-ops; a closed conversation that did not reopen is not the
        // visitor's newest, or another one of theirs is open.
        let after = self.inbox_item(by.id, id).await?;
        if after.status == "closed" {
            return Err(Error::Invalid(Invalid::from(
                "The visitor has started a newer conversation; answer there.",
            )));
        }
        changed
    }

    /// Applies a status change (`apply` returns `None` for a no-op, else the deliveries it
    /// implies) and, if it changed anything, records and publishes the line (and the audit
    /// event of a change made outside the inbox) and queues the jobs; returns the line's id when
    /// it changed anything.
    pub(super) async fn change<F>(
        &self,
        site_id: SiteId,
        id: ConversationId,
        by: &UserRow,
        line: String,
        via: Option<Via>,
        apply: F,
    ) -> Result<Option<MessageId>, Error>
    where
        F: FnOnce(&rusqlite::Connection) -> Result<Option<Vec<store::JobRow>>, store::Error>
            + Send
            + 'static,
    {
        self.change_saying(site_id, (id, by), via, move |c| {
            Ok(apply(c)?.map(|jobs| (line, jobs)))
        })
        .await
    }

    /// [`Chat::change`] of a change whose line says what the write found to do (`apply` returns
    /// the line with the deliveries), so that two agents changing it at once are each recorded
    /// for what they did.
    pub(super) async fn change_saying<F>(
        &self,
        site_id: SiteId,
        (id, by): (ConversationId, &UserRow),
        via: Option<Via>,
        apply: F,
    ) -> Result<Option<MessageId>, Error>
    where
        F: FnOnce(
                &rusqlite::Connection,
            ) -> Result<Option<(String, Vec<store::JobRow>)>, store::Error>
            + Send
            + 'static,
    {
        let (user, name, now) = (by.id, by.name.clone(), now_ms());
        let stored_name = name.clone();
        let hub = Arc::clone(&self.hub);
        let message = self
            .writer
            .write_then(
                move |c| {
                    let Some((line, jobs)) = apply(c)? else {
                        return Ok(None);
                    };
                    if let Some(via) = &via {
                        via.record(c, id)?;
                    }
                    let message = store::insert_system_message(
                        c,
                        id,
                        Some(user),
                        Some(&stored_name),
                        &line,
                        now,
                    )?;
                    Ok(Some((message, line, jobs)))
                },
                move |stored: &Option<(MessageId, String, Vec<store::JobRow>)>| {
                    if let Some((message, line, _)) = stored {
                        let row = status_line(*message, id, Some(name), line.clone(), now);
                        let mut event = InboxEvent::new(site_id, Arc::new(row));
                        event.by = Some(user);
                        hub.publish_to_inbox(event);
                    }
                },
            )
            .await?;
        Ok(message.map(|(line, _, jobs)| {
            self.jobs.submit(jobs);
            line
        }))
    }
}

/// A status line as live pages are shown it: by `author_name`, or by nobody (Porch itself).
pub(super) fn status_line(
    message: MessageId,
    conversation_id: ConversationId,
    author_name: Option<String>,
    body: String,
    created_at: i64,
) -> MessageRow {
    MessageRow {
        id: message,
        conversation_id,
        author: Author::System,
        author_name,
        client_id: None,
        body,
        created_at,
        attachments: Vec::new(),
    }
}

/// Users conversations can be assigned to.
fn enabled_agents(c: &rusqlite::Connection) -> Result<Vec<UserRow>, store::Error> {
    Ok(store::list_users(c)?
        .into_iter()
        .filter(|u| !u.is_disabled)
        .collect())
}

/// Shows a note or a status line on the agents' live pages. Runs as a commit hook, so in id order.
fn publish(hub: &Hub, site_id: SiteId, row: MessageRow) {
    hub.publish_to_inbox(InboxEvent::new(site_id, Arc::new(row)));
}
