//! Server-rendered pages of Porch's admin UI, as Leptos components. This crate knows nothing of
//! the server: pages take plain view models and return HTML strings. Fragments the live inbox
//! stream sends (`render_conversation_item`, `render_message`, `render_conversation_aside`) are
//! rendered by the same components as the full pages.
//!
//! - [`layout`]: the document shell, navigation, notices, the CSRF field.
//! - [`auth`]: setup, sign-in, invitation and reset links, account, error pages.
//! - [`inbox`]: the conversation list, and [`bulk`], its form for several at once.
//! - [`conversation`]: one conversation with its details and reply box (and `snooze`, its side
//!   panel's *Snooze*).
//! - [`search`]: inbox search results; [`canned`]: canned replies.
//! - [`two_factor`]: setting up two-factor sign-in, recovery codes, the sign-in's second step.
//! - [`sites`] (with [`site_identity`], known visitors, [`site_hours`], business hours, and
//!   [`site_prechat`], the pre-chat form),
//!   [`team`], [`privacy`]: the admin pages.
//! - [`integrations`] (Slack), [`discord`], [`webhooks`], [`email`]: the destination pages, with
//!   what they share in [`destination`] (health, test outcome, off/on/delete).
//! - [`capacity`]: graphs, headroom and load-test runs; [`chart`] draws the SVG line charts.

// Leptos' typed views nest deeply; large pages exceed the default limit of 128.
#![recursion_limit = "256"]

pub mod api_tokens;
pub mod audit;
pub mod auth;
pub mod bulk;
pub mod canned;
pub mod capacity;
pub mod chars;
pub mod chart;
pub mod conversation;
mod conversation_status;
pub mod deliveries;
pub mod destination;
pub mod discord;
pub mod docs;
pub mod email;
pub mod email_inbound;
pub mod email_mailbox;
pub mod inbox;
pub mod integrations;
pub mod layout;
pub mod links;
mod message;
pub mod privacy;
pub mod reply;
pub mod search;
pub mod site_hours;
pub mod site_identity;
pub mod site_prechat;
pub mod sites;
pub mod snooze;
pub mod tags;
pub mod team;
mod time;
pub mod two_factor;
pub mod visitor_contact;
pub mod webhooks;

pub use time::{format_time, time_view};

/// Text for the inside of a `<textarea>`. Leptos writes a textarea's children unescaped (it treats
/// the element like `<script>`), so a stored `</textarea><meta http-equiv=refresh …>` would end
/// the field and redirect whoever opens the page. Every `<textarea>` child goes through this; the
/// browser decodes the entities back, so the field's value is the original text.
pub fn textarea_text(text: &str) -> String {
    escape_html(text)
}

/// "1 message", "3 messages": a count with its noun, plural but for one.
pub fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// Escapes text for HTML content and attribute values (for markup built as a string: the SVG
/// charts, and the server's HTML email).
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_is_singular() {
        assert_eq!(super::counted(1, "message"), "1 message");
        assert_eq!(super::counted(0, "message"), "0 messages");
        assert_eq!(super::counted(3, "message"), "3 messages");
    }
}
