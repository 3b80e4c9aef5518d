//! One message of a conversation as the page and the live stream show it: its bubble, files,
//! email subject and deliveries.

use leptos::prelude::*;

use crate::links::linked_text;
use crate::time::format_time;

/// Where one message stands with one integration (Slack, Discord, a webhook): posted, retrying
/// or failed. Filled in by the job runner once it lands; until then every list is empty.
#[derive(Debug, Clone)]
pub struct DeliveryView {
    pub integration: String,
    pub state: String,
    pub detail: Option<String>,
}

/// A file on a message: an image is shown by its thumbnail, anything else is a download link.
#[derive(Debug, Clone)]
pub struct AttachmentView {
    /// Where the signed-in agent reads it (`/conversations/{id}/attachments/{file}`).
    pub url: String,
    pub name: String,
    pub size: i64,
    pub is_image: bool,
}

/// One message.
#[derive(Debug, Clone)]
pub struct MessageView {
    pub id: i64,
    /// `visitor`, `agent`, `note` or `system`.
    pub author: String,
    pub author_name: String,
    pub body: String,
    pub at: i64,
    pub deliveries: Vec<DeliveryView>,
    pub attachments: Vec<AttachmentView>,
    /// The subject, when an agent sent this message to the visitor by email ("Email the
    /// visitor"). Filled in on the page's load; live fragments carry none.
    pub email_subject: Option<String>,
}

#[component]
fn Deliveries(deliveries: Vec<DeliveryView>) -> impl IntoView {
    (!deliveries.is_empty()).then(|| {
        let items = deliveries
            .into_iter()
            .map(|d| {
                let class = format!("delivery delivery-{}", d.state);
                view! {
                    <li class=class title=d.detail>
                        {d.integration}": "{d.state}
                    </li>
                }
            })
            .collect_view();
        view! { <ul class="deliveries" aria-label="Deliveries">{items}</ul> }
    })
}

/// A size for people: bytes, KB or MB (powers of 1,000, as file managers show them).
fn size_text(bytes: i64) -> String {
    match bytes {
        1 => "1 byte".to_owned(),
        b if b < 1_000 => format!("{b} bytes"),
        b if b < 1_000_000 => format!("{} KB", b / 1_000),
        b => format!("{}.{} MB", b / 1_000_000, b % 1_000_000 / 100_000),
    }
}

#[component]
fn Attachments(attachments: Vec<AttachmentView>) -> impl IntoView {
    (!attachments.is_empty()).then(|| {
        let items = attachments
            .into_iter()
            .map(|a| {
                let label = format!("{} ({})", a.name, size_text(a.size));
                if a.is_image {
                    // The thumbnail (at most 320 px a side) shows; the link opens the image.
                    let (thumbnail, title) = (format!("{}/thumbnail", a.url), label.clone());
                    view! {
                        <li class="attachment attachment-image">
                            <a href=a.url title=title>
                                <img src=thumbnail alt=label loading="lazy"/>
                            </a>
                        </li>
                    }
                    .into_any()
                } else {
                    view! {
                        <li class="attachment">
                            <a href=a.url download=a.name>{label}</a>
                        </li>
                    }
                    .into_any()
                }
            })
            .collect_view();
        view! { <ul class="attachments" aria-label="Attachments">{items}</ul> }
    })
}

#[component]
pub(crate) fn Message(message: MessageView) -> impl IntoView {
    let (iso, text) = format_time(message.at);
    let id = format!("message-{}", message.id);
    if message.author == "system" {
        return view! {
            <li id=id class="message message-system" data-id=message.id>
                <p>{message.body}" · "<time datetime=iso>{text}</time></p>
            </li>
        }
        .into_any();
    }
    let label = match message.author.as_str() {
        "note" => format!("{} · private note", message.author_name),
        _ => message.author_name,
    };
    let emailed = message.email_subject.map(|subject| {
        view! { " · "<span class="emailed" data-emailed>"sent by email: "<q>{subject}</q></span> }
    });
    view! {
        <li id=id class=format!("message message-{}", message.author) data-id=message.id>
            // Search results link here (`#m{id}`); CSS highlights the message it sits in.
            <span class="anchor" id=format!("m{}", message.id)></span>
            <div class="bubble">
                <p class="body" dir="auto">{linked_text(&message.body)}</p>
                <Attachments attachments=message.attachments/>
            </div>
            <p class="meta">
                <span class="author">{label}</span>" · "<time datetime=iso>{text}</time>{emailed}
            </p>
            <Deliveries deliveries=message.deliveries/>
        </li>
    }
    .into_any()
}

/// One message's `<li>`, as the live stream sends it.
pub fn render_message(message: MessageView) -> String {
    view! { <Message message/> }.to_html()
}
