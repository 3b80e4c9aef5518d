//! Who has a conversation: assigning it (and the status line saying so), a reply from the
//! inbox taking one nobody has, and giving back a disabled agent's open conversations.

use crate::jobs::ConversationChange;
use crate::store::{self, ConversationId, UserId, UserRow};
use crate::values::ClientId;

use super::Error;
use super::conversation::Chat;
use super::inbox::Via;
use super::writes::conversation_change_jobs;

/// The status line of an assignment by `by`, as the history shows it.
fn assignment_line(by: &UserRow, assignee: Option<&UserRow>) -> String {
    match assignee {
        Some(a) if a.id == by.id => format!("{} took this conversation", by.name),
        Some(a) => format!("{} assigned this conversation to {}", by.name, a.name),
        None => format!("{} unassigned this conversation", by.name),
    }
}

impl Chat {
    /// Assigns the conversation to `assignee` (or nobody) if it is assigned as `expected`;
    /// returns whether it changed (not when it was already so, or not as expected).
    pub async fn assign_conversation(
        &self,
        id: ConversationId,
        by: &UserRow,
        assignee: Option<&UserRow>,
        expected: store::Expected,
        via: Option<Via>,
    ) -> Result<bool, Error> {
        let site_id = self.inbox_item(by.id, id).await?.site_id;
        let target = assignee.map(|a| a.id);
        let line = assignment_line(by, assignee);
        self.change(site_id, id, by, line, via, move |c| {
            if !store::update_conversation_assignee(c, id, target, expected)? {
                return Ok(None);
            }
            let change =
                target.map_or(ConversationChange::Unassigned, ConversationChange::Assigned);
            conversation_change_jobs(c, id, change).map(Some)
        })
        .await
        .map(|line| line.is_some())
    }

    /// A reply from the inbox takes an open conversation that nobody has, as *Assign to me* would:
    /// the same status line, events and integrations' notices (docs/admin.md, "Replying takes the
    /// conversation"). Called before the reply is stored, so the history reads "Ana took this
    /// conversation" and then her reply. Returns whether it took it; a colleague's conversation,
    /// a closed one, one taken meanwhile, or a resend of a reply already stored under
    /// `client_id` (the first send took it, if it was free) is left as it is; so is one whose
    /// reply names `attachments` that are not all the agent's free uploads on its site: the
    /// reply is then refused, and a refused reply takes nothing. The checks and the take are one
    /// write, so nothing (a sweep of an upload, the first send of a resend) comes between them;
    /// the reply is the next write, so a sweep in the moment between the two can still leave
    /// the take without its reply (rare: an upload is swept a day after it was made).
    pub async fn take_on_reply(
        &self,
        id: ConversationId,
        by: &UserRow,
        client_id: Option<&ClientId>,
        attachments: &[String],
    ) -> Result<bool, Error> {
        let conversation = self.find_conversation(id).await?;
        if conversation.status != "open" {
            return Ok(false);
        }
        let (user, site, ids) = (by.id, conversation.site_id, attachments.to_vec());
        let client_id = client_id.cloned();
        let line = assignment_line(by, Some(by));
        self.change(site, id, by, line, None, move |c| {
            let is_resend = match &client_id {
                Some(id) => store::find_agent_message_by_client_id(c, user, id)?.is_some(),
                None => false,
            };
            let takes = !is_resend
                && store::are_free_uploads(c, site, store::Uploader::Agent(user), &ids)?
                && store::update_conversation_assignee(
                    c,
                    id,
                    Some(user),
                    store::Expected::Is(None),
                )?;
            if !takes {
                return Ok(None);
            }
            conversation_change_jobs(c, id, ConversationChange::Assigned(user)).map(Some)
        })
        .await
        .map(|line| line.is_some())
    }

    /// Unassigns every open conversation of `user`, who was just disabled and will answer none
    /// of them: each gets `by`'s "unassigned" line saying why, its integrations hear of it, and
    /// it counts as unassigned again in every inbox, live. One that was taken or closed
    /// meanwhile is left as it is now. Returns how many were unassigned.
    pub async fn unassign_all_of(&self, user: &UserRow, by: &UserRow) -> Result<usize, Error> {
        let (user, name) = (user.id, &user.name);
        let ids = self
            .readers
            .read(move |c| store::list_open_conversations_assigned_to(c, user))
            .await?;
        let mut unassigned = 0;
        for id in ids {
            let site_id = self.inbox_item(by.id, id).await?.site_id;
            // Why, in the history: an admin taking work away for no stated reason reads oddly.
            let line = format!(
                "{} unassigned this conversation: {name} was disabled",
                by.name
            );
            let changed = self
                .change(site_id, id, by, line, None, move |c| {
                    if !store::unassign_open_conversation_of(c, id, user)? {
                        return Ok(None);
                    }
                    conversation_change_jobs(c, id, ConversationChange::Unassigned).map(Some)
                })
                .await?;
            unassigned += usize::from(changed.is_some());
        }
        Ok(unassigned)
    }

    /// An enabled user by id (an assignee).
    pub async fn find_agent(&self, id: UserId) -> Result<UserRow, Error> {
        self.readers
            .read(move |c| store::find_user(c, id))
            .await?
            .filter(|u| !u.is_disabled)
            .ok_or(Error::NotFound("agent"))
    }
}
