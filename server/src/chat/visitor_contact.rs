//! An agent sets a visitor's name and email on the conversation page (docs/admin.md, "The
//! visitor's name and email"): a visitor who said who they are in a message, or an address to
//! mail replies and the transcript to. The change is a status line in the conversation, which
//! says who changed what and refreshes every open inbox and conversation page, as an assignment
//! does, and the Slack thread header is rewritten.

use crate::jobs::ConversationChange;
use crate::store::{self, ConversationId, UserRow, VisitorId};
use crate::values::{Invalid, is_invisible, is_visitor_email, one_line};

use super::Error;
use super::conversation::Chat;
use super::writes::conversation_change_jobs;

/// Longest visitor name, in characters: a name from the host page's identity is kept up to this
/// long, so one shown in the form can always be saved back.
const MAX_NAME_CHARS: usize = 200;

/// A visitor's name and email as an agent typed them: the name on one line, at most
/// [`MAX_NAME_CHARS`]; the email one replies can be mailed to (the widget's rule); an empty
/// field clears its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisitorContact {
    pub name: Option<String>,
    pub email: Option<String>,
}

/// Why typed contact details were refused, and the field (by its control's id on the
/// conversation page) the reason is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct RefusedContact {
    pub field: &'static str,
    pub reason: Invalid,
}

impl VisitorContact {
    /// Checks the typed name and email. An email left as the page showed it (`shown_email`) is
    /// kept unchecked: an address an older version took, which today's rule refuses, must not
    /// stop a save of the name.
    ///
    /// # Errors
    /// A name longer than [`MAX_NAME_CHARS`], or a new address no mail can be sent to.
    pub fn parse(name: &str, email: &str, shown_email: &str) -> Result<Self, RefusedContact> {
        let name = one_line(name);
        let refused_name = |reason: &'static str| RefusedContact {
            field: "visitor-name",
            reason: Invalid::from(reason),
        };
        if name.chars().count() > MAX_NAME_CHARS {
            return Err(refused_name("The name can have at most 200 characters."));
        }
        // Shown nowhere, such a name would leave the conversation nameless in every list.
        if !name.is_empty() && name.chars().all(is_invisible) {
            return Err(refused_name(
                "The name needs a visible character; leave it empty to remove it.",
            ));
        }
        let email = email.trim();
        if !email.is_empty() && email != shown_email && !is_visitor_email(email) {
            return Err(RefusedContact {
                field: "visitor-email",
                reason: Invalid::from(
                    "Please check the email address: one a mail can be sent to, such as \
                     jane@example.com.",
                ),
            });
        }
        Ok(Self {
            name: (!name.is_empty()).then_some(name),
            email: (!email.is_empty()).then(|| email.to_owned()),
        })
    }

    /// The same, as the store takes it.
    fn stored(&self) -> store::Contact<'_> {
        store::Contact {
            name: self.name.as_deref(),
            email: self.email.as_deref(),
        }
    }
}

/// What the status line says was done, after the agent's name: each changed field, set or
/// removed ("set the visitor's name to Jane Doe and removed the visitor's email"). A stored name that
/// differs from the typed one only as the form puts names on one line (spaces) is no change.
fn line(before: &VisitorContact, after: &VisitorContact) -> Option<String> {
    let shown_name = before
        .name
        .as_deref()
        .map(one_line)
        .filter(|n| !n.is_empty());
    let clause = |what: &str, old: &Option<String>, new: &Option<String>| match (old, new) {
        (old, new) if old == new => None,
        (_, Some(new)) => Some(format!("set the visitor's {what} to {new}")),
        (_, None) => Some(format!("removed the visitor's {what}")),
    };
    let clauses: Vec<String> = [
        clause("name", &shown_name, &after.name),
        clause("email", &before.email, &after.email),
    ]
    .into_iter()
    .flatten()
    .collect();
    (!clauses.is_empty()).then(|| clauses.join(" and "))
}

/// What came of an agent's save.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContactSaved {
    Saved,
    /// What was typed is what was shown: nothing to do.
    Unchanged,
    /// The values changed since the agent's page showed them (another agent, the visitor's own
    /// form), or the visitor was erased: nothing was written.
    ChangedMeanwhile,
}

impl Chat {
    /// Sets the name and email of conversation `id`'s visitor to `contact`, if they are still
    /// what the agent's page showed (`shown`). Changed meanwhile, nothing is written, so the
    /// agent sees the new values before overwriting them.
    ///
    /// # Errors
    /// The conversation does not exist, or storage failed.
    pub async fn set_visitor_contact(
        &self,
        id: ConversationId,
        by: &UserRow,
        shown: VisitorContact,
        contact: VisitorContact,
    ) -> Result<ContactSaved, Error> {
        let item = self.inbox_item(by.id, id).await?;
        let Some(what) = line(&shown, &contact) else {
            return Ok(ContactSaved::Unchanged);
        };
        let visitor = item.visitor_id;
        let text = format!("{} {what}", by.name);
        let changed = self
            .change(item.site_id, id, by, text, None, move |c| {
                if !store::set_visitor_contact(c, visitor, shown.stored(), contact.stored())? {
                    return Ok(None);
                }
                // The Slack thread header names the visitor.
                conversation_change_jobs(c, id, ConversationChange::VisitorChanged).map(Some)
            })
            .await?;
        Ok(if changed.is_some() {
            ContactSaved::Saved
        } else {
            ContactSaved::ChangedMeanwhile
        })
    }
}

impl Chat {
    /// Stores the address `visitor` left in the widget. Their open conversation's Slack thread
    /// header is written again, as after an agent's save: it names a visitor without a name by
    /// their address, as the thread's posts do from now on.
    ///
    /// # Errors
    /// `NotFound` when the visitor is not there (erased by another process, which could not
    /// tell the connection), or storage failed.
    pub async fn set_visitor_email(&self, visitor: VisitorId, email: String) -> Result<(), Error> {
        let jobs = self
            .writer
            .write(move |c| {
                let Some(changed) = store::set_visitor_email(c, visitor, &email)? else {
                    return Ok(None);
                };
                match store::find_open_conversation_of(c, visitor)? {
                    Some(id) if changed => {
                        conversation_change_jobs(c, id, ConversationChange::VisitorChanged)
                            .map(Some)
                    }
                    _ => Ok(Some(Vec::new())),
                }
            })
            .await?
            .ok_or(Error::NotFound("visitor"))?;
        self.jobs.submit(jobs);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_go_on_one_line_and_addresses_must_be_mailable() {
        let typed =
            VisitorContact::parse("  Jane\n Doe ", " jane@example.com ", "").expect("valid");
        assert_eq!(typed.name.as_deref(), Some("Jane Doe"));
        assert_eq!(typed.email.as_deref(), Some("jane@example.com"));
        let cleared = VisitorContact::parse(" ", "", "").expect("valid");
        assert_eq!((cleared.name, cleared.email), (None, None));
        for bad in [
            "jane",
            "jane@localhost",
            "a@[192.0.2.1]",
            "jane@example.com\u{200b}",
        ] {
            let refused = VisitorContact::parse("Jane", bad, "").expect_err(bad);
            assert_eq!(refused.field, "visitor-email", "{bad}");
            // Stored by an older version and left as shown: kept, so the name can be saved.
            let kept = VisitorContact::parse("Jane", bad, bad).expect("kept as shown");
            assert_eq!(kept.email.as_deref(), Some(bad.trim()));
        }
        let invisible = VisitorContact::parse("\u{200b}\u{2060}", "", "").expect_err("blank");
        assert_eq!(invisible.field, "visitor-name");
        let long = "x".repeat(201);
        assert_eq!(
            VisitorContact::parse(&long, "", "")
                .expect_err("long")
                .field,
            "visitor-name"
        );
    }

    #[test]
    fn the_line_names_each_change_and_nothing_when_nothing_changed() {
        let contact = |name: Option<&str>, email: Option<&str>| VisitorContact {
            name: name.map(str::to_owned),
            email: email.map(str::to_owned),
        };
        let anonymous = contact(None, None);
        let jane = contact(Some("Jane"), Some("jane@example.com"));
        assert_eq!(
            line(&anonymous, &jane).as_deref(),
            Some("set the visitor's name to Jane and set the visitor's email to jane@example.com")
        );
        assert_eq!(
            line(&jane, &contact(Some("Jane"), None)).as_deref(),
            Some("removed the visitor's email")
        );
        assert_eq!(line(&jane, &jane), None);
        // A stored name with a trailing space (an older identity's cut) is the typed one.
        let spaced = contact(Some("Jane "), Some("jane@example.com"));
        assert_eq!(
            line(&spaced, &contact(Some("Jane"), None)).as_deref(),
            Some("removed the visitor's email")
        );
    }
}
