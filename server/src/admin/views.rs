//! Turning stored rows into the view models `porch-app` renders. Kept apart from the handlers
//! so the full page and the live fragments build items the same way.

use porch_app::conversation::{
    AgentOption, AttachmentView, ConversationAsideView, DeliveryView, MessageView,
    OtherConversationView, VisitorDetailsView,
};
use porch_app::inbox::InboxItemView;
use porch_app::tags::TagView;
use porch_app::visitor_contact::ContactFormView;

use crate::attachments::Kind;
use crate::chat::ConversationView;
use crate::store::{
    InboxItemRow, InboxQuery, MessageDelivery, MessageId, MessageRow, UserId, UserRow,
    VisitorIdentityRow,
};
use crate::values::{Author, anonymous_visitor};

use super::inbox_query::{format_cursor, tag_param};

/// How a visitor is called: their name or email if they gave one, else a number.
pub fn visitor_label(item: &InboxItemRow) -> String {
    item.visitor_name
        .clone()
        .or_else(|| item.visitor_email.clone())
        .unwrap_or_else(|| anonymous_visitor(item.visitor_id))
}

/// A conversation in the list of `query`, as `me` sees it.
pub fn inbox_item(item: InboxItemRow, me: UserId, query: &InboxQuery) -> InboxItemView {
    let preview_author = match item.preview_author {
        Some(Author::Agent) => Some("Agent".to_owned()),
        _ => None,
    };
    let assignee = match item.assignee_id {
        Some(id) if id == me => Some("You".to_owned()),
        _ => item.assignee_name.clone(),
    };
    let sort_key = format_cursor(query.cursor(&item));
    InboxItemView {
        sort_key,
        id: item.id.0,
        visitor: visitor_label(&item),
        site: item.site_name,
        is_open: item.status == "open",
        snoozed_until: item.snoozed_until,
        assignee,
        preview_author,
        // A message of files alone is previewed as "2 files".
        preview: match item.preview_body {
            Some(body) if body.is_empty() && item.preview_files > 0 => Some(porch_app::counted(
                usize::try_from(item.preview_files).unwrap_or(0),
                "file",
            )),
            other => other,
        },
        last_message_at: item.last_message_at,
        is_unread: item.is_unread,
        tags: item.tags.into_iter().map(|t| t.name).collect(),
    }
}

/// A delivery's state in words an agent understands.
pub fn delivery(d: &MessageDelivery) -> DeliveryView {
    let state = match d.state.as_str() {
        "done" => "posted",
        "queued" if d.attempt > 0 => "retrying",
        "queued" | "running" => "sending",
        "blocked" => "blocked",
        _ => "failed",
    };
    let name = if d.integration_name.is_empty() {
        &d.integration_kind
    } else {
        &d.integration_name
    };
    // One webhook endpoint can take both `conversation.created` and `message.created` for a
    // conversation's first message: the event tells the two rows apart.
    let integration = match &d.event {
        Some(event) => format!("{name} ({event})"),
        None => name.clone(),
    };
    DeliveryView {
        integration,
        state: state.to_owned(),
        detail: d.last_error.clone(),
    }
}

/// One message with its deliveries and, for a mail to the visitor, its subject.
pub fn message_with_deliveries(
    row: &MessageRow,
    deliveries: &[MessageDelivery],
    mails: &[(MessageId, String)],
) -> MessageView {
    MessageView {
        deliveries: deliveries
            .iter()
            .filter(|d| d.message_id == row.id)
            .map(delivery)
            .collect(),
        email_subject: mails
            .iter()
            .find(|(id, _)| *id == row.id)
            .map(|(_, subject)| subject.clone()),
        ..message(row)
    }
}

/// One message.
pub fn message(row: &MessageRow) -> MessageView {
    let author_name = match row.author {
        Author::Visitor => "Visitor".to_owned(),
        _ => row
            .author_name
            .clone()
            .unwrap_or_else(|| "Agent".to_owned()),
    };
    MessageView {
        id: row.id.0,
        author: row.author.as_str().to_owned(),
        author_name,
        body: row.body.clone(),
        at: row.created_at,
        // Live fragments carry none; the page shows them on load (message_with_deliveries).
        deliveries: Vec::new(),
        email_subject: None,
        attachments: row
            .attachments
            .iter()
            .map(|a| AttachmentView {
                url: format!(
                    "/conversations/{}/attachments/{}",
                    row.conversation_id, a.id
                ),
                name: a.name.clone(),
                size: a.size,
                is_image: Kind::from_content_type(&a.content_type).is_some_and(Kind::is_image),
            })
            .collect(),
    }
}

/// A short description of a browser from its user agent ("Firefox on Linux").
pub fn browser_summary(user_agent: &str) -> Option<String> {
    // Order matters: Edge and Opera also say Chrome; Chrome also says Safari.
    let browser = [
        ("Edg/", "Edge"),
        ("OPR/", "Opera"),
        ("Firefox/", "Firefox"),
        ("Chrome/", "Chrome"),
        ("Safari/", "Safari"),
    ]
    .into_iter()
    .find(|(marker, _)| user_agent.contains(marker))
    .map(|(_, name)| name)?;
    let system = [
        ("Android", "Android"),
        ("iPhone", "iOS"),
        ("iPad", "iPadOS"),
        ("Windows", "Windows"),
        ("Mac OS X", "macOS"),
        ("CrOS", "ChromeOS"),
        ("Linux", "Linux"),
    ]
    .into_iter()
    .find(|(marker, _)| user_agent.contains(marker))
    .map(|(_, name)| name);
    Some(match system {
        Some(system) => format!("{browser} on {system}"),
        None => browser.to_owned(),
    })
}

/// When the visitor was last seen: the visitor row's time (their latest connection's first
/// message; it is not rewritten on every message, which would cost each message a second row
/// write), or their newest message shown here, whichever is later.
fn last_seen_at(stored: i64, messages: &[MessageRow]) -> i64 {
    messages
        .iter()
        .filter(|m| m.author == Author::Visitor)
        .map(|m| m.created_at)
        .fold(stored, i64::max)
}

/// The side panel of a conversation.
pub fn aside(view: &ConversationView, me: UserId, csrf: &str) -> ConversationAsideView {
    let details = view.visitor.as_ref();
    ConversationAsideView {
        csrf: csrf.to_owned(),
        id: view.item.id.0,
        is_open: view.item.status == "open",
        snoozed_until: view.item.snoozed_until,
        tags: view
            .item
            .tags
            .iter()
            .map(|t| TagView {
                name: t.name.clone(),
                href: format!("/inbox?{}", tag_param(&t.name)),
            })
            .collect(),
        // Those it has already are not suggested.
        known_tags: view
            .known_tags
            .iter()
            .filter(|known| !view.item.tags.iter().any(|t| t.id == known.id))
            .map(|t| t.name.clone())
            .collect(),
        refused: None,
        assignee_id: view.item.assignee_id.map(|id| id.0),
        assignee: view.item.assignee_name.clone(),
        me: me.0,
        agents: view
            .agents
            .iter()
            .map(|a| AgentOption {
                id: a.id.0,
                name: agent_label(a, &view.agents),
            })
            .collect(),
        visitor_label: visitor_label(&view.item),
        visitor: VisitorDetailsView {
            email: view.item.visitor_email.clone(),
            site: view.item.site_name.clone(),
            first_page: details.and_then(|d| d.first_page.clone()),
            last_page: details.and_then(|d| d.last_page.clone()),
            browser: details
                .and_then(|d| d.user_agent.as_deref())
                .and_then(browser_summary),
            user_agent: details.and_then(|d| d.user_agent.clone()),
            ip: details.and_then(|d| d.ip.clone()),
            first_seen_at: details.map(|d| d.first_seen_at),
            last_seen_at: details.map(|d| last_seen_at(d.last_seen_at, &view.messages)),
            referrer: details.and_then(|d| d.referrer.clone()),
            language: details.and_then(|d| d.language.clone()),
            time_zone: details.and_then(|d| d.time_zone.clone()),
            verified_user: view.identity.user_id.clone(),
            unverified_claim: unverified_claim(&view.identity),
            prechat: details.and_then(|d| d.prechat.clone()),
            contact: ContactFormView {
                conversation: view.item.id.0,
                csrf: csrf.to_owned(),
                name: view.item.visitor_name.clone(),
                email: view.item.visitor_email.clone(),
                is_verified: view.identity.user_id.is_some(),
                refused: None,
            },
        },
        others: view
            .others
            .iter()
            .map(|other| OtherConversationView {
                id: other.id.0,
                is_open: other.status == "open",
                created_at: other.created_at,
                opening: other.opening.clone(),
            })
            .collect(),
        more_others: view.more_others,
    }
}

/// How an agent is named where one picks among the team (assignee menus, the inbox filter):
/// their name, with their email when another enabled agent has the same name, so two Anas can
/// be told apart.
pub fn agent_label(agent: &UserRow, team: &[UserRow]) -> String {
    let shared = team
        .iter()
        .any(|other| other.id != agent.id && other.name.eq_ignore_ascii_case(&agent.name));
    if shared {
        format!("{} ({})", agent.name, agent.email)
    } else {
        agent.name.clone()
    }
}

/// What a page claimed without a valid `user_hash`, on one line (id, name, email).
fn unverified_claim(identity: &VisitorIdentityRow) -> Option<String> {
    let id = identity.claimed_user_id.as_ref()?;
    let parts: Vec<&str> = [
        Some(id),
        identity.claimed_name.as_ref(),
        identity.claimed_email.as_ref(),
    ]
    .into_iter()
    .flatten()
    .map(String::as_str)
    .collect();
    Some(parts.join(" \u{b7} "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browsers_are_named_plainly() {
        let chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
                      Chrome/120.0 Safari/537.36";
        assert_eq!(browser_summary(chrome).as_deref(), Some("Chrome on Linux"));
        let edge = "Mozilla/5.0 (Windows NT 10.0) Chrome/120.0 Safari/537.36 Edg/120.0";
        assert_eq!(browser_summary(edge).as_deref(), Some("Edge on Windows"));
        assert_eq!(browser_summary("curl/8"), None);
    }

    #[test]
    fn agents_sharing_a_name_are_told_apart_by_email() {
        let agent = |id, name: &str, email: &str| UserRow {
            id: UserId(id),
            email: email.into(),
            name: name.into(),
            role: "agent".into(),
            is_disabled: false,
        };
        let team = [
            agent(1, "Ana", "ana@a.test"),
            agent(2, "ana", "ana@b.test"),
            agent(3, "Bo", "bo@a.test"),
        ];
        assert_eq!(agent_label(&team[0], &team), "Ana (ana@a.test)");
        assert_eq!(agent_label(&team[1], &team), "ana (ana@b.test)");
        assert_eq!(agent_label(&team[2], &team), "Bo");
    }
}
