//! The writes behind the use cases: a change and the deliveries it implies, planned by `jobs`
//! inside the same writer closure, so a message and its jobs commit together or not at all.

use rusqlite::Connection;

use crate::clock::now_ms;
use crate::jobs::{self, ConversationChange, NewMessage};
use crate::store::{
    self, ConversationId, JobRow, MessageRow, NewAgentMessage, NewVisitorMessage,
    StoredAgentMessage, StoredVisitorMessage,
};
use crate::values::Invalid;

/// Stores a visitor message (nothing new for a resend) with its deliveries.
pub(super) fn store_visitor_message(
    conn: &Connection,
    new: &NewVisitorMessage,
) -> Result<(StoredVisitorMessage, Vec<JobRow>), store::Error> {
    let stored = store::insert_visitor_message(conn, new)?;
    if stored.is_duplicate {
        return Ok((stored, Vec::new()));
    }
    let jobs = jobs::plan_visitor_message(
        conn,
        &NewMessage {
            site_id: new.site_id,
            conversation_id: stored.conversation_id,
            message_id: stored.id,
            is_new_conversation: stored.is_new_conversation,
            now: new.now,
        },
    )?;
    Ok((stored, jobs))
}

/// Stores an agent's reply with its deliveries (none back to `origin`, the Slack channel it was
/// typed in), or a private note, which is delivered nowhere.
pub(super) fn store_agent_message(
    conn: &Connection,
    new: &NewAgentMessage,
    origin: Option<&jobs::SlackChannel>,
) -> Result<(StoredAgentMessage, Vec<JobRow>), store::Error> {
    let stored = store::insert_agent_message(conn, new)?;
    if new.is_note {
        return Ok((stored, Vec::new()));
    }
    let message = NewMessage {
        site_id: new.site_id,
        conversation_id: new.conversation_id,
        message_id: stored.id,
        is_new_conversation: false,
        now: new.now,
    };
    let jobs = jobs::plan_agent_message(conn, &message, origin)?;
    Ok((stored, jobs))
}

/// What posting an agent's message did.
pub(super) enum AgentPosting {
    /// Stored it, with these deliveries.
    Stored(StoredAgentMessage, Vec<JobRow>),
    /// Found it: the agent stored it before under the same client id (a resend after an answer
    /// was lost), so nothing new was written and nothing is shown or delivered again.
    Earlier(MessageRow),
}

/// Stores an agent's reply or note as [`store_agent_message`] does, unless the agent stored it
/// before under the same client id.
pub(super) fn store_agent_message_once(
    conn: &Connection,
    new: &NewAgentMessage,
) -> Result<Result<AgentPosting, ClientIdReused>, store::Error> {
    if let Some(earlier) = earlier_agent_message(conn, new)? {
        return Ok(earlier.map(AgentPosting::Earlier));
    }
    let (stored, jobs) = store_agent_message(conn, new, None)?;
    Ok(Ok(AgentPosting::Stored(stored, jobs)))
}

/// The message the agent stored before under `new`'s client id, if any: `Ok` when `new` repeats
/// it, `Err` when it has another conversation, kind, text or files. A resend is the same message,
/// never a different one that would silently vanish.
fn earlier_agent_message(
    conn: &Connection,
    new: &NewAgentMessage,
) -> Result<Option<Result<MessageRow, ClientIdReused>>, store::Error> {
    let (Some(user), Some(client_id)) = (new.user_id, &new.client_id) else {
        return Ok(None);
    };
    let Some(earlier) = store::find_agent_message_by_client_id(conn, user, client_id)? else {
        return Ok(None);
    };
    let same = earlier.conversation_id == new.conversation_id
        && earlier.author == new.author()
        && earlier.body == new.body.as_str()
        && same_files(&earlier.attachments, &new.attachments);
    Ok(Some(if same {
        Ok(earlier)
    } else {
        Err(ClientIdReused)
    }))
}

/// Whether a message's stored files are the uploads a resend names. Compared as sets: the stored
/// ones come back in the order their uploads finished, which a resend of files uploaded side by
/// side need not repeat.
fn same_files(stored: &[store::AttachmentMeta], named: &[String]) -> bool {
    let mut stored: Vec<&str> = stored.iter().map(|a| a.id.as_str()).collect();
    let mut named: Vec<&str> = named.iter().map(String::as_str).collect();
    stored.sort_unstable();
    named.sort_unstable();
    stored == named
}

/// [`store_agent_message_once`]'s refusal: the client id names another message.
#[derive(Debug)]
pub(super) struct ClientIdReused;

impl From<ClientIdReused> for super::Error {
    fn from(_: ClientIdReused) -> Self {
        Self::ClientIdReused
    }
}

/// Stores an agent's mail to the visitor: the message, its subject, and its deliveries with the
/// `email.agent` job, unless the agent stored it before under the same client id (a form sent
/// twice mails once). Refused (nothing written) when the visitor left no address or no email
/// integration of the site is on, so a stored mail always has a job that sends it.
pub(super) fn store_agent_mail(
    conn: &Connection,
    new: &NewAgentMessage,
    subject: &str,
) -> Result<Result<AgentPosting, super::Error>, store::Error> {
    if let Some(earlier) = earlier_agent_message(conn, new)? {
        return Ok(earlier.map(AgentPosting::Earlier).map_err(Into::into));
    }
    if !store::has_visitor_email(conn, new.conversation_id)? {
        return Ok(Err(
            Invalid::from("The visitor left no email address.").into()
        ));
    }
    if !store::has_active_email(conn, new.site_id)? {
        return Ok(Err(
            Invalid::from("Email is not turned on for this site.").into()
        ));
    }
    let stored = store::insert_agent_message(conn, new)?;
    store::insert_outbound_mail(conn, stored.id, subject, new.now)?;
    let message = NewMessage {
        site_id: new.site_id,
        conversation_id: new.conversation_id,
        message_id: stored.id,
        is_new_conversation: false,
        now: new.now,
    };
    let jobs = jobs::plan_agent_email(conn, &message)?;
    Ok(Ok(AgentPosting::Stored(stored, jobs)))
}

/// The deliveries of a conversation's assignment or close, after the change was made.
pub(super) fn conversation_change_jobs(
    conn: &Connection,
    id: ConversationId,
    change: ConversationChange,
) -> Result<Vec<JobRow>, store::Error> {
    jobs::plan_conversation_change(conn, id, change, now_ms())
}
