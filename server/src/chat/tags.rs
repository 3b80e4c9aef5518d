//! Tagging a conversation (docs/admin.md, "Tags"). A change of tags is a status line like
//! assigning ("Ana tagged this conversation refund"), so colleagues' pages follow it live and
//! the history says who tagged what; the visitor and the integrations hear nothing of it.

use crate::store::{self, ConversationId, MAX_TAGS_PER_CONVERSATION, UserRow};
use crate::values::{Invalid, Tag};

use super::Error;
use super::conversation::Chat;

/// "refund", "refund and vip", "refund, vip and b2b".
fn listed(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The status line of a change: "Ana tagged this conversation refund and removed the tag vip".
fn tags_line(by: &str, added: &[&str], removed: &[&str]) -> String {
    let removed_part = match removed {
        [] => None,
        [one] => Some(format!("removed the tag {one}")),
        many => Some(format!("removed the tags {}", listed(many))),
    };
    match (added.is_empty(), removed_part) {
        (false, None) => format!("{by} tagged this conversation {}", listed(added)),
        (false, Some(removed)) => {
            format!(
                "{by} tagged this conversation {} and {removed}",
                listed(added)
            )
        }
        (true, Some(removed)) => format!("{by} {removed}"),
        // Never asked: a change of nothing writes no line.
        (true, None) => String::new(),
    }
}

fn names(tags: &[Tag]) -> Vec<&str> {
    tags.iter().map(Tag::as_str).collect()
}

impl Chat {
    /// Adds the tags of `add` the conversation lacks and removes those of `remove` it has, open
    /// or closed. Returns false when that changed nothing.
    ///
    /// # Errors
    /// `Invalid` when the conversation would have more than [`MAX_TAGS_PER_CONVERSATION`] tags;
    /// `NotFound` for no such conversation.
    pub async fn change_tags(
        &self,
        id: ConversationId,
        by: &UserRow,
        add: Vec<Tag>,
        remove: Vec<Tag>,
    ) -> Result<bool, Error> {
        let item = self.inbox_item(by.id, id).await?;
        let has = |tag: &Tag| item.tags.iter().any(|t| t.name == tag.as_str());
        // A tag both added and removed in one change is removed.
        let add: Vec<Tag> = add
            .into_iter()
            .filter(|t| !has(t) && !remove.contains(t))
            .collect();
        let remove: Vec<Tag> = remove.into_iter().filter(|t| has(t)).collect();
        if item.tags.len() + add.len() - remove.len() > MAX_TAGS_PER_CONVERSATION {
            return Err(Error::Invalid(Invalid::from(format!(
                "A conversation has at most {MAX_TAGS_PER_CONVERSATION} tags; remove one first."
            ))));
        }
        if add.is_empty() && remove.is_empty() {
            return Ok(false);
        }
        let line = tags_line(&by.name, &names(&add), &names(&remove));
        Ok(self
            .change(item.site_id, id, by, line, None, move |c| {
                let (added, removed) = store::change_conversation_tags(c, id, &add, &remove)?;
                // A colleague's change meanwhile may have made this one a no-op.
                Ok((!added.is_empty() || !removed.is_empty()).then(Vec::new))
            })
            .await?
            .is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_what_changed() {
        assert_eq!(
            tags_line("Ana", &["refund"], &[]),
            "Ana tagged this conversation refund"
        );
        assert_eq!(
            tags_line("Ana", &["refund", "vip", "b2b"], &[]),
            "Ana tagged this conversation refund, vip and b2b"
        );
        assert_eq!(tags_line("Ana", &[], &["vip"]), "Ana removed the tag vip");
        assert_eq!(
            tags_line("Ana", &["refund"], &["vip", "b2b"]),
            "Ana tagged this conversation refund and removed the tags vip and b2b"
        );
    }
}
