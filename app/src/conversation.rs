//! The conversation page: the whole history (visitor, agents, private notes, status lines), the
//! visitor's details, assignment and status, and the reply box. `render_message` and
//! `render_conversation_aside` are also what the live stream sends.

use leptos::prelude::*;

use crate::conversation_status::{closed_hint, newer_conversation, status_form};
use crate::layout::{CsrfField, KeysSaid, Nav, Notice, NoticeBox, Section, document, field_marks};
use crate::snooze::snooze_panel;
use crate::tags::{TagView, tags_panel};
use crate::time::format_time;
use crate::visitor_contact::{ContactFormView, TypedContact, contact_form};

use crate::message::Message;
pub use crate::message::{AttachmentView, DeliveryView, MessageView, render_message};

/// What is known about the visitor.
#[derive(Debug, Clone, Default)]
pub struct VisitorDetailsView {
    pub email: Option<String>,
    pub site: String,
    pub first_page: Option<String>,
    pub last_page: Option<String>,
    pub browser: Option<String>,
    pub user_agent: Option<String>,
    pub ip: Option<String>,
    pub first_seen_at: Option<i64>,
    pub last_seen_at: Option<i64>,
    /// The page that linked to the visitor's first chat page: shown as text, never a link.
    pub referrer: Option<String>,
    pub language: Option<String>,
    /// IANA name; the page's script shows the visitor's local time in it.
    pub time_zone: Option<String>,
    /// The site's user id, vouched for with a valid `user_hash` (docs/widget.md#known-visitors).
    pub verified_user: Option<String>,
    /// What the page claimed without a valid hash (id, name, email on one line).
    pub unverified_claim: Option<String>,
    /// The pre-chat form's question and the visitor's answer (docs/widget.md#pre-chat-form).
    pub prechat: Option<(String, String)>,
    pub contact: ContactFormView,
}

/// An agent one can assign to.
#[derive(Debug, Clone)]
pub struct AgentOption {
    pub id: i64,
    pub name: String,
}

/// The id of the side panel's assignee picker.
pub const ASSIGNEE_FIELD: &str = "assignee";

/// What a refused form of the side panel held, given back in it, which takes the focus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// *Add tags*: what was typed.
    Tags(String),
    /// *Snooze* "until a date and time…": the date and time given (empty when none was).
    SnoozeUntil(String),
    /// *Edit name and email*: what was typed, and the field refused.
    Contact(TypedContact),
    /// *Assign*: the agent picked cannot take it (disabled or deleted since the page loaded);
    /// the picker, drawn anew, no longer offers them.
    Assignee,
}

/// The side panel: status, assignment, visitor details.
#[derive(Debug, Clone)]
pub struct ConversationAsideView {
    pub csrf: String,
    pub id: i64,
    pub is_open: bool,
    /// Snoozed until then (Unix ms).
    pub snoozed_until: Option<i64>,
    pub tags: Vec<TagView>,
    /// Every tag in use, suggested as new ones are typed.
    pub known_tags: Vec<String>,
    /// What a refused form of the panel held (the page says why), kept in it.
    pub refused: Option<Refused>,
    pub assignee_id: Option<i64>,
    pub assignee: Option<String>,
    pub me: i64,
    pub agents: Vec<AgentOption>,
    /// How the page's heading names the visitor: a live panel carries it to the heading.
    pub visitor_label: String,
    pub visitor: VisitorDetailsView,
    /// The visitor's other conversations, the newest first.
    pub others: Vec<OtherConversationView>,
    /// The visitor has more than those listed.
    pub more_others: bool,
}

/// Another conversation of the same visitor, linked from the side panel.
#[derive(Debug, Clone)]
pub struct OtherConversationView {
    pub id: i64,
    pub is_open: bool,
    /// Unix milliseconds.
    pub created_at: i64,
    /// The start of the visitor's first message.
    pub opening: Option<String>,
}

/// A conversation's status as a badge: Open or Closed.
fn status_badge(is_open: bool) -> impl IntoView {
    if is_open {
        view! { <span class="badge badge-open">"Open"</span> }.into_any()
    } else {
        view! { <span class="badge badge-muted">"Closed"</span> }.into_any()
    }
}

/// The side panel's list of the visitor's other conversations (none: no panel).
fn other_conversations(others: Vec<OtherConversationView>, more: bool) -> impl IntoView {
    let shown = others.len();
    let rows = others
        .into_iter()
        .map(|other| {
            let (iso, text) = format_time(other.created_at);
            view! {
                <li>
                    <a href=format!("/conversations/{}", other.id)>{format!("Conversation {}", other.id)}</a>
                    " "
                    {status_badge(other.is_open)}
                    <br/><time class="muted small" datetime=iso>{text}</time>
                    {other.opening.map(|text| view! { <p class="opening"><bdi>{text}</bdi></p> })}
                </li>
            }
        })
        .collect_view();
    (shown > 0).then(|| {
        view! {
            <section class="panel" aria-labelledby="others-title">
                <h2 id="others-title">"Other conversations"</h2>
                <ul class="other-conversations">{rows}</ul>
                {more.then(|| view! { <p class="hint">{format!("The {shown} latest are listed.")}</p> })}
            </section>
        }
    })
}

/// The conversation page.
#[derive(Debug, Clone)]
pub struct ConversationView {
    pub nav: Nav,
    pub id: i64,
    pub visitor: String,
    pub messages: Vec<MessageView>,
    pub aside: ConversationAsideView,
    pub last_id: i64,
    pub notice: Option<Notice>,
    /// What the agent had typed, kept when a post failed.
    pub draft: String,
    /// The reply form's id for its message, so that the form sent twice stores one message.
    pub reply_id: String,
    /// The same for the form that emails the visitor.
    pub mail_id: String,
    /// Whether the site's email is on: without it, a visitor's address cannot be mailed.
    pub can_email: bool,
    /// Whether a mailbox is read for visitors' answers, so that a mail's answer comes back.
    pub reads_replies: bool,
}

/// A line of what the visitor's browser or page told: in `<bdi>`, so that right-to-left text or a
/// stray direction character in it cannot reorder what follows (a badge, the next line's label).
fn detail(label: &'static str, value: Option<String>) -> impl IntoView {
    value.map(|value| {
        view! {
            <dt>{label}</dt>
            <dd><bdi>{value}</bdi></dd>
        }
    })
}

fn time_detail(label: &'static str, at: Option<i64>) -> impl IntoView {
    at.map(|at| {
        let (iso, text) = format_time(at);
        view! {
            <dt>{label}</dt>
            <dd><time datetime=iso>{text}</time></dd>
        }
    })
}

/// The side panel's visitor details.
#[component]
fn VisitorPanel(visitor: VisitorDetailsView) -> impl IntoView {
    let page_link = visitor.last_page.clone().map(|url| {
        let safe = url.starts_with("https://") || url.starts_with("http://");
        let link = if safe {
            let href = url.clone();
            view! { <a href=href rel="noopener noreferrer" target="_blank"><bdi>{url}</bdi></a> }
                .into_any()
        } else {
            view! { <bdi>{url}</bdi> }.into_any()
        };
        view! { <dt>"Page"</dt><dd class="break">{link}</dd> }
    });
    let first_page = visitor
        .first_page
        .filter(|first| Some(first) != visitor.last_page.as_ref());
    view! {
        <section class="panel">
            <h2>"Visitor"</h2>
            <dl class="details">
                <dt>"Site"</dt>
                <dd>{visitor.site}</dd>
                {visitor.verified_user.map(|id| view! {
                    <dt>"User"</dt>
                    <dd data-identity="verified"><bdi>{id}</bdi>" "<span class="badge badge-open">"verified"</span></dd>
                })}
                {visitor.unverified_claim.map(|claim| view! {
                    <dt>"Says they are"</dt>
                    <dd data-identity="unverified"><bdi>{claim}</bdi>" "<span class="badge badge-muted">"unverified"</span></dd>
                })}
                {detail("Email", visitor.email)}
                // The answer is typed like a message, so an override in it is written out as in
                // one (an order number must read as typed).
                {visitor.prechat.map(|(question, answer)| view! {
                    <dt data-prechat="question">{question}</dt>
                    <dd data-prechat="answer"><bdi>{crate::chars::overrides_written_out(&answer).into_owned()}</bdi></dd>
                })}
                {page_link}
                {detail("First page", first_page)}
                {detail("Came from", visitor.referrer)}
                {detail("Language", visitor.language)}
                {visitor.time_zone.map(|zone| view! {
                    <dt>"Local time"</dt>
                    <dd><span class="visitor-clock" data-time-zone=zone.clone()>{zone.clone()}</span></dd>
                })}
                {detail("Browser", visitor.browser)}
                {detail("IP address", visitor.ip)}
                {time_detail("First seen", visitor.first_seen_at)}
                {time_detail("Last seen", visitor.last_seen_at)}
            </dl>
            {visitor.user_agent.map(|ua| view! {
                <details class="ua"><summary>"User agent"</summary><p class="mono">{ua}</p></details>
            })}
            {contact_form(visitor.contact)}
        </section>
    }
}

/// The side panel: status and assignment, the visitor, their other conversations.
#[component]
fn ConversationAside(aside: ConversationAsideView) -> impl IntoView {
    let id = aside.id;
    let status_form = status_form(id, &aside.csrf, aside.is_open, &aside.others).into_any();
    // Each assignment names the assignee it was shown with (`from`): one a colleague changed
    // meanwhile is refused, not silently overridden. The `a` key takes only an unassigned one.
    let from = aside.assignee_id.map(|a| a.to_string()).unwrap_or_default();
    // The main action of an open conversation; on a closed one Reopen comes first, plain.
    let take_class = if aside.is_open {
        "button button-primary"
    } else {
        "button"
    };
    let take = (aside.assignee_id != Some(aside.me)).then(|| {
        let (label, shortcut) = match &aside.assignee {
            Some(name) => (format!("Take over from {name}"), None),
            None => ("Assign to me".to_owned(), Some("assign-me")),
        };
        view! {
            <form method="post" action=format!("/conversations/{id}/assign") data-shortcut=shortcut>
                <CsrfField token=aside.csrf.clone()/>
                <input type="hidden" name="assignee" value=aside.me/>
                <input type="hidden" name="from" value=from.clone()/>
                <button type="submit" class=take_class>{label}</button>
            </form>
        }
        .into_any()
    });
    let (first, second) = if aside.is_open {
        (take, Some(status_form))
    } else {
        (Some(status_form), take)
    };
    let options = aside
        .agents
        .iter()
        .map(|a| {
            view! {
                <option value=a.id selected=aside.assignee_id == Some(a.id)>{a.name.clone()}</option>
            }
        })
        .collect_view();
    // An assignee who is no longer an agent to pick (disabled since: their closed conversations
    // keep them) is still shown as the one selected, so *Assign* pressed as it is changes nothing.
    let former = aside
        .assignee_id
        .filter(|id| !aside.agents.iter().any(|a| a.id == *id))
        .zip(aside.assignee.clone())
        .map(|(id, name)| view! { <option value=id selected>{format!("{name} (disabled)")}</option> });
    let mut visitor = aside.visitor;
    let assignee_marked = (aside.refused == Some(Refused::Assignee)).then_some(ASSIGNEE_FIELD);
    let (typed_tags, typed_until) = match aside.refused {
        Some(Refused::Tags(typed)) => (Some(typed), None),
        Some(Refused::SnoozeUntil(typed)) => (None, Some(typed)),
        Some(Refused::Contact(typed)) => {
            visitor.contact.refused = Some(typed);
            (None, None)
        }
        Some(Refused::Assignee) | None => (None, None),
    };
    let snooze = snooze_panel(
        id,
        aside.csrf.clone(),
        aside.is_open,
        (aside.snoozed_until, typed_until),
    );
    let tags = tags_panel(id, &aside.csrf, (aside.tags, aside.known_tags), typed_tags);
    view! {
        <aside id="conversation-aside" class="aside" aria-label="Conversation details"
            data-open=aside.is_open.to_string() data-visitor=aside.visitor_label>
            <section class="panel">
                <h2>"Status"</h2>
                <p>
                    {match aside.snoozed_until {
                        Some(_) => view! { <span class="badge badge-muted">"Snoozed"</span> }.into_any(),
                        None => status_badge(aside.is_open).into_any(),
                    }}
                    " "
                    {match aside.assignee {
                        Some(name) => view! { <span>"Assigned to "<strong>{name}</strong></span> }.into_any(),
                        None => view! { <span class="muted">"Unassigned"</span> }.into_any(),
                    }}
                </p>
                <div class="actions">
                    {first}
                    {second}
                    <form method="post" action=format!("/conversations/{id}/unread") data-shortcut="unread">
                        <CsrfField token=aside.csrf.clone()/>
                        <button type="submit" class="button">"Mark unread"</button>
                    </form>
                </div>
                <form method="post" action=format!("/conversations/{id}/assign") class="inline-form">
                    <CsrfField token=aside.csrf.clone()/>
                    <input type="hidden" name="from" value=from/>
                    <label for="assignee">"Assignee"</label>
                    <div class="inline-controls">
                        <select id=ASSIGNEE_FIELD name="assignee"
                            {..field_marks(assignee_marked, ASSIGNEE_FIELD, None)}>
                            <option value="" selected=aside.assignee_id.is_none()>"Nobody"</option>
                            {former}
                            {options}
                        </select>
                        <button type="submit" class="button">"Assign"</button>
                    </div>
                </form>
            </section>
            {snooze}
            {tags}
            <VisitorPanel visitor/>
            {other_conversations(aside.others, aside.more_others)}
        </aside>
    }
}

/// The side panel, as the live stream sends it after a status change.
pub fn render_conversation_aside(aside: ConversationAsideView) -> String {
    view! { <ConversationAside aside/> }.to_html()
}

/// The reply box's hint on a closed conversation, as the live stream sends it once the visitor
/// started a newer one (it still said to reopen this one).
pub fn render_closed_hint(aside: &ConversationAsideView) -> String {
    closed_hint(aside.is_open, newer_conversation(aside.id, &aside.others)).to_html()
}

/// "Email the visitor": a mail from the install's address, threaded so that the visitor's answer
/// comes back into this conversation (docs/integrations/email.md#emailing-a-visitor). Apart
/// from the reply box: a mail has a subject and is never a note.
fn visitor_mail_form(
    (id, mail_id): (i64, &str),
    csrf: &str,
    (to, site): (String, &str),
    reads_replies: bool,
) -> impl IntoView + use<> {
    let subject = format!("Your conversation on {site}");
    let answers = if reads_replies {
        "their answer by email comes back into this conversation."
    } else {
        "no mailbox is read for answers, so an answer by email reaches only this install's \
         address, not this conversation."
    };
    view! {
        <details class="reply email-visitor" id="email-visitor">
            <summary>"Email the visitor"</summary>
            <form method="post" action=format!("/conversations/{id}/email")>
                <CsrfField token=csrf.to_owned()/>
                <input type="hidden" name="client_id" value=mail_id.to_owned()/>
                <p class="hint">
                    "To "<strong><bdi>{to}</bdi></strong>", from this install's address. It is \
                     added here as your message; "{answers}
                </p>
                <label for="mail-subject">"Subject"</label>
                <input type="text" id="mail-subject" name="subject" required maxlength="200" value=subject/>
                <label for="mail-body">"Message"</label>
                <textarea id="mail-body" name="body" rows="5" required maxlength="4000"></textarea>
                <div class="reply-bar">
                    <span></span>
                    <button type="submit" class="button button-primary">"Send email"</button>
                </div>
            </form>
        </details>
    }
}

/// Renders the conversation page.
pub fn render_conversation(view: ConversationView) -> String {
    let id = view.id;
    let csrf = view.nav.csrf.clone();
    let nav = Nav {
        section: Section::Inbox,
        ..view.nav
    };
    let messages = view
        .messages
        .into_iter()
        .map(|message| view! { <Message message/> })
        .collect_view();
    let closed = closed_hint(
        view.aside.is_open,
        newer_conversation(id, &view.aside.others),
    );
    // Isolated (U+2068 … U+2069), so a right-to-left override in the name cannot turn " · Porch".
    let title = format!("\u{2068}{}\u{2069}", view.visitor);
    let email_form = view.aside.visitor.email.clone().map(|to| {
        if view.can_email {
            visitor_mail_form(
                (id, &view.mail_id),
                &csrf,
                (to, &view.aside.visitor.site),
                view.reads_replies,
            )
            .into_any()
        } else {
            // Said up front rather than refused after the agent has written the mail.
            view! {
                <p class="hint email-visitor-off">
                    "Email is off for this site, so the visitor cannot be emailed from here: an \
                     admin turns it on on the site's Email page."
                </p>
            }
            .into_any()
        }
    });
    let site_name = view.aside.visitor.site.clone();
    // A refusal about one field of the page (a tag) leaves the focus to that field.
    let focus_elsewhere = view.notice.as_ref().and_then(Notice::field).is_some();
    let content = view! {
        <div class="page-head">
            // The site first: with several sites it is whose brand the agent answers as, and at
            // 390 px the side panel that also names it is below the reply box.
            <p class="crumb"><a href="/inbox">"← Inbox"</a>
                <span class="crumb-site">" · Site: "<bdi>{site_name}</bdi></span></p>
            <h1><bdi>{view.visitor}</bdi></h1>
            // Empty while the stream is live: inbox.js puts "Reconnecting…" in (admin.css).
            <p class="live-status" role="status" data-live-status></p>
        </div>
        <KeysSaid/>
        <NoticeBox notice=view.notice keeps_focus=true/>
        <div class="conversation-layout">
            <section class="thread" aria-label="Messages">
                <ol class="messages" id="messages" aria-live="polite"
                    data-live=format!("/conversations/{id}/events") data-last-id=view.last_id>
                    {messages}
                </ol>
                // Empty until inbox.js says "Visitor is typing…" (a status region that is already
                // there is announced; admin.css gives an empty one no room).
                <p class="typing" id="visitor-typing" role="status"></p>
                // "Ben is replying…": a colleague writing a reply here, so two agents do not
                // answer the visitor at once without knowing.
                <p class="typing" id="colleague-typing" role="status"></p>
                <crate::reply::ReplyForm id csrf=csrf.clone() reply_id=view.reply_id
                    draft=crate::textarea_text(&view.draft)
                    closed=closed.into_any() focus_elsewhere/>
                {email_form}
            </section>
            <ConversationAside aside=view.aside/>
        </div>
        <script src="/assets/reply.js" defer></script>
        <script src="/assets/canned.js" defer></script>
    };
    document(&title, Some(nav), true, content.into_any())
}
