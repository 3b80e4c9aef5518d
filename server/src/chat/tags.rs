//! Tagging a conversation (docs/admin.md, "Tags"). A change of tags is a status line like
//! assigning ("Ana tagged this conversation refund"), so colleagues' pages follow it live and
//! the history says who tagged what; the visitor and the integrations hear nothing of it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::store::{self, ConversationId, UserRow};
use crate::values::{Invalid, MAX_TAGS, Tag, listed_in_words};

use super::Error;
use super::conversation::Chat;

/// The status line of a change: "Ana tagged this conversation refund and removed the tag vip";
/// `None` for a change of nothing.
fn tags_line(by: &str, added: &[&str], removed: &[&str]) -> Option<String> {
    let removed_part = match removed {
        [] => None,
        [one] => Some(format!("removed the tag {one}")),
        many => Some(format!("removed the tags {}", listed_in_words(many))),
    };
    Some(match (added.is_empty(), removed_part) {
        (false, None) => format!("{by} tagged this conversation {}", listed_in_words(added)),
        (false, Some(removed)) => {
            format!(
                "{by} tagged this conversation {} and {removed}",
                listed_in_words(added)
            )
        }
        (true, Some(removed)) => format!("{by} {removed}"),
        (true, None) => return None,
    })
}

impl Chat {
    /// Adds the tags of `add` the conversation lacks and removes those of `remove` it has, open
    /// or closed, as its tags are when the change is written. Returns false when that changed
    /// nothing.
    ///
    /// # Errors
    /// `Invalid` when the conversation would have more than [`MAX_TAGS`] tags (nothing
    /// changes); `NotFound` for no such conversation.
    pub async fn change_tags(
        &self,
        id: ConversationId,
        by: &UserRow,
        add: Vec<Tag>,
        remove: Vec<Tag>,
    ) -> Result<bool, Error> {
        let site_id = self.inbox_item(by.id, id).await?.site_id;
        let name = by.name.clone();
        let too_many = Arc::new(AtomicBool::new(false));
        let refused = Arc::clone(&too_many);
        let line = self
            .change_saying(site_id, (id, by), None, move |c| {
                let Some(changed) = store::change_conversation_tags(c, id, &add, &remove)? else {
                    refused.store(true, Ordering::Relaxed);
                    return Ok(None);
                };
                let (added, removed) = (names(&changed.added), names(&changed.removed));
                // Nothing to say: nothing changed.
                Ok(tags_line(&name, &added, &removed).map(|line| (line, Vec::new())))
            })
            .await?;
        if too_many.load(Ordering::Relaxed) {
            return Err(Error::Invalid(Invalid::from(format!(
                "A conversation has at most {MAX_TAGS} tags; remove one first."
            ))));
        }
        Ok(line.is_some())
    }
}

fn names(names: &[String]) -> Vec<&str> {
    names.iter().map(String::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_what_changed() {
        let said = |added: &[&str], removed: &[&str]| tags_line("Ana", added, removed);
        assert_eq!(
            said(&["refund"], &[]).as_deref(),
            Some("Ana tagged this conversation refund")
        );
        assert_eq!(
            said(&["refund", "vip", "b2b"], &[]).as_deref(),
            Some("Ana tagged this conversation refund, vip and b2b")
        );
        assert_eq!(
            said(&[], &["vip"]).as_deref(),
            Some("Ana removed the tag vip")
        );
        assert_eq!(
            said(&["refund"], &["vip", "b2b"]).as_deref(),
            Some("Ana tagged this conversation refund and removed the tags vip and b2b")
        );
        assert_eq!(said(&[], &[]), None);
    }
}
