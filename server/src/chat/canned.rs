//! Canned replies: text an agent inserts into the reply box by its shortcut. Shared replies are
//! the admins' to manage and everyone's to use; personal ones only their owner's. Changes are
//! audited in the same transaction. Placeholders are filled here, for one conversation, so the
//! picker inserts finished text.

use serde_json::json;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::now_ms;
use crate::store::{self, CannedReplyFields, CannedReplyRow, ConversationId, UserRow};
use crate::values::{Invalid, MessageBody};

use super::{Chat, Error};

/// Longest shortcut, in characters.
pub const MAX_SHORTCUT_CHARS: usize = 32;

/// A shortcut: 1 to 32 lowercase letters, digits, `-` or `_` (a leading `/` is dropped and
/// letters are lowercased, so `/Thanks` is `thanks`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shortcut(String);

impl Shortcut {
    pub fn parse(raw: &str) -> Result<Self, Invalid> {
        let trimmed = raw.trim();
        let word = trimmed.strip_prefix('/').unwrap_or(trimmed).to_lowercase();
        if word.is_empty() || word.chars().count() > MAX_SHORTCUT_CHARS {
            return Err(Invalid::from("A shortcut has 1 to 32 characters."));
        }
        if !word
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        {
            return Err(Invalid::from(
                "A shortcut has only letters a to z, digits, '-' and '_'.",
            ));
        }
        Ok(Self(word))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whose a new reply is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CannedScope {
    /// Everyone's; admins manage it.
    Shared,
    /// The creator's own.
    Personal,
}

impl CannedScope {
    fn of(row: &CannedReplyRow) -> Self {
        if row.owner_id.is_some() {
            Self::Personal
        } else {
            Self::Shared
        }
    }

    /// `shared` or `personal`, as audited and sent to the picker.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Shared => "shared",
            Self::Personal => "personal",
        }
    }
}

/// What a change came to, when it was not a storage failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CannedOutcome {
    Saved,
    /// A shared reply, and the user is no admin.
    NotAllowed,
    /// The owner (or the shared list) already has a reply with this shortcut.
    Taken,
}

/// The values placeholders stand for in one conversation.
#[derive(Debug, Clone, Default)]
pub struct Placeholders {
    pub visitor_name: Option<String>,
    pub visitor_email: Option<String>,
    pub agent_name: String,
    pub site_name: String,
}

/// `body` with `{visitor.name}`, `{visitor.email}`, `{agent.name}` and `{site.name}` replaced
/// in one pass (a value that looks like a placeholder is not replaced again). A placeholder may
/// say what stands in for an unknown value after a bar, `{visitor.name|there}`; without one an
/// unknown visitor name or email becomes empty. Any other text in braces stays as written.
pub fn fill_placeholders(body: &str, values: &Placeholders) -> String {
    let table: [(&str, Option<&str>); 4] = [
        ("visitor.name", values.visitor_name.as_deref()),
        ("visitor.email", values.visitor_email.as_deref()),
        ("agent.name", Some(&values.agent_name)),
        ("site.name", Some(&values.site_name)),
    ];
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(at) = rest.find('{') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        // `name}` or `name|fallback}`, up to the first `}`; a fallback holds no `{`.
        let filled = tail.find('}').and_then(|end| {
            let (name, fallback) = match tail[..end].split_once('|') {
                Some((name, fallback)) if !fallback.contains('{') => (name, Some(fallback)),
                Some(_) => return None,
                None => (&tail[..end], None),
            };
            let (_, value) = table.iter().find(|(key, _)| *key == name)?;
            out.push_str(value.or(fallback).unwrap_or(""));
            Some(end + 1)
        });
        match filled {
            Some(used) => rest = &tail[used..],
            None => {
                out.push('{');
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A reply ready for the picker: its shortcut, scope and filled text.
#[derive(Debug, Clone)]
pub struct FilledReply {
    pub shortcut: String,
    pub scope: &'static str,
    pub text: String,
}

/// Whether `user` may change `row`: their own, or a shared one if they are an admin. Someone
/// else's personal reply does not exist for them.
fn may_change(user: &UserRow, row: &CannedReplyRow) -> Result<bool, Error> {
    match row.owner_id {
        Some(owner) if owner == user.id => Ok(true),
        Some(_) => Err(Error::NotFound("canned reply")),
        None => Ok(user.role == "admin"),
    }
}

fn audit_change(
    c: &rusqlite::Connection,
    actor: &Actor,
    action: AuditAction,
    id: i64,
    shortcut: &str,
    scope: CannedScope,
) -> Result<(), store::Error> {
    let target = Target::canned_reply(id, shortcut);
    audit::record(
        c,
        actor,
        action,
        &target,
        &json!({ "scope": scope.as_str() }),
    )
}

impl Chat {
    /// The replies `user` may use and see on the canned replies page.
    pub async fn canned_replies(&self, user: &UserRow) -> Result<Vec<CannedReplyRow>, Error> {
        let id = user.id;
        Ok(self
            .readers
            .read(move |c| store::list_canned_replies(c, id))
            .await?)
    }

    /// Creates a reply in `scope` (shared ones only for admins).
    pub async fn create_canned_reply(
        &self,
        actor: &Actor,
        user: &UserRow,
        scope: CannedScope,
        shortcut: Shortcut,
        body: MessageBody,
    ) -> Result<CannedOutcome, Error> {
        if scope == CannedScope::Shared && user.role != "admin" {
            return Ok(CannedOutcome::NotAllowed);
        }
        let owner = (scope == CannedScope::Personal).then_some(user.id);
        let actor = actor.clone();
        Ok(self
            .writer
            .write(move |c| {
                let fields = CannedReplyFields {
                    shortcut: shortcut.as_str(),
                    body: body.as_str(),
                    now: now_ms(),
                };
                let Some(id) = store::insert_canned_reply(c, owner, &fields)? else {
                    return Ok(CannedOutcome::Taken);
                };
                let action = AuditAction::CannedReplyCreated;
                audit_change(c, &actor, action, id, shortcut.as_str(), scope)?;
                Ok(CannedOutcome::Saved)
            })
            .await?)
    }

    /// Replaces a reply's shortcut and body, if `user` may change it.
    ///
    /// # Errors
    /// `NotFound` for a reply that does not exist or is someone else's personal one.
    pub async fn update_canned_reply(
        &self,
        actor: &Actor,
        user: &UserRow,
        id: i64,
        shortcut: Shortcut,
        body: MessageBody,
    ) -> Result<CannedOutcome, Error> {
        let (actor, user) = (actor.clone(), user.clone());
        self.writer
            .write(move |c| {
                let Some(row) = store::find_canned_reply(c, id)? else {
                    return Ok(Err(Error::NotFound("canned reply")));
                };
                match may_change(&user, &row) {
                    Ok(true) => {}
                    Ok(false) => return Ok(Ok(CannedOutcome::NotAllowed)),
                    Err(err) => return Ok(Err(err)),
                }
                let fields = CannedReplyFields {
                    shortcut: shortcut.as_str(),
                    body: body.as_str(),
                    now: now_ms(),
                };
                if !store::update_canned_reply(c, id, &fields)? {
                    return Ok(Ok(CannedOutcome::Taken));
                }
                let (action, scope) = (AuditAction::CannedReplyUpdated, CannedScope::of(&row));
                audit_change(c, &actor, action, id, shortcut.as_str(), scope)?;
                Ok(Ok(CannedOutcome::Saved))
            })
            .await?
    }

    /// Deletes a reply, if `user` may change it.
    ///
    /// # Errors
    /// `NotFound` for a reply that does not exist or is someone else's personal one.
    pub async fn delete_canned_reply(
        &self,
        actor: &Actor,
        user: &UserRow,
        id: i64,
    ) -> Result<CannedOutcome, Error> {
        let (actor, user) = (actor.clone(), user.clone());
        self.writer
            .write(move |c| {
                let Some(row) = store::find_canned_reply(c, id)? else {
                    return Ok(Err(Error::NotFound("canned reply")));
                };
                match may_change(&user, &row) {
                    Ok(true) => {}
                    Ok(false) => return Ok(Ok(CannedOutcome::NotAllowed)),
                    Err(err) => return Ok(Err(err)),
                }
                store::delete_canned_reply(c, id)?;
                let (action, scope) = (AuditAction::CannedReplyDeleted, CannedScope::of(&row));
                audit_change(c, &actor, action, id, &row.shortcut, scope)?;
                Ok(Ok(CannedOutcome::Saved))
            })
            .await?
    }

    /// The replies `user` may use, filled for `conversation`.
    pub async fn filled_canned_replies(
        &self,
        user: &UserRow,
        conversation: ConversationId,
    ) -> Result<Vec<FilledReply>, Error> {
        let (me, agent_name) = (user.id, user.name.clone());
        let found = self
            .readers
            .read(move |c| {
                let Some(item) = store::find_inbox_item(c, me, conversation)? else {
                    return Ok(None);
                };
                Ok(Some((item, store::list_canned_replies(c, me)?)))
            })
            .await?;
        let (item, rows) = found.ok_or(Error::NotFound("conversation"))?;
        let values = Placeholders {
            visitor_name: item.visitor_name,
            visitor_email: item.visitor_email,
            agent_name,
            site_name: item.site_name,
        };
        Ok(rows
            .iter()
            .map(|row| FilledReply {
                shortcut: row.shortcut.clone(),
                scope: CannedScope::of(row).as_str(),
                text: fill_placeholders(&row.body, &values),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> Placeholders {
        Placeholders {
            visitor_name: Some("Ana {agent.name}".into()),
            visitor_email: None,
            agent_name: "Bo".into(),
            site_name: "Acme".into(),
        }
    }

    #[test]
    fn placeholders_are_filled_once() {
        let filled = fill_placeholders(
            "Hi {visitor.name}, {agent.name} of {site.name} here{visitor.email}. {x} {",
            &values(),
        );
        assert_eq!(filled, "Hi Ana {agent.name}, Bo of Acme here. {x} {");
    }

    #[test]
    fn a_fallback_stands_in_for_an_unknown_value_only() {
        let filled = fill_placeholders(
            "Thanks {visitor.name|there}, {visitor.email|no email} {agent.name|x} {visitor.name|a{b}",
            &values(),
        );
        assert_eq!(
            filled,
            "Thanks Ana {agent.name}, no email Bo {visitor.name|a{b}"
        );
        assert_eq!(fill_placeholders("{site.name|}", &values()), "Acme");
        assert_eq!(fill_placeholders("{visitor.email|}", &values()), "");
    }

    #[test]
    fn shortcuts_are_normalised_or_refused() {
        assert_eq!(
            Shortcut::parse(" /Thanks ").map(|s| s.0),
            Ok("thanks".into())
        );
        assert!(Shortcut::parse("/").is_err());
        assert!(Shortcut::parse("two words").is_err());
        assert!(Shortcut::parse(&"x".repeat(MAX_SHORTCUT_CHARS + 1)).is_err());
        assert!(Shortcut::parse("é").is_err());
    }
}
