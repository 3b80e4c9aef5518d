//! The search page: a query box with the inbox's site and status filters, conversations whose
//! visitor's name or email matches, and matching messages newest first with a snippet, each linking
//! to the message in its conversation. Matched words are `<mark>` elements around escaped text:
//! a snippet is never markup.

use leptos::prelude::*;

use crate::inbox::{Choice, FilterSelect};
use crate::layout::{Nav, Section, document};
use crate::time::format_time;

/// Text in pieces; the `true` ones matched the query and are highlighted.
pub type Marked = Vec<(String, bool)>;

/// A conversation found by its visitor's name or email.
#[derive(Debug, Clone)]
pub struct VisitorHitView {
    pub href: String,
    /// The name and the email as found, each marked; either may be empty.
    pub name: Marked,
    pub email: Marked,
    pub site: String,
    pub is_open: bool,
    pub last_message_at: i64,
}

/// A matching message.
#[derive(Debug, Clone)]
pub struct MessageHitView {
    /// `/conversations/{id}#m{message id}`.
    pub href: String,
    /// Who the conversation is with.
    pub visitor: String,
    /// "Visitor", the agent's name, or "… · private note".
    pub author: String,
    pub site: String,
    pub is_open: bool,
    pub at: i64,
    pub snippet: Marked,
}

/// The search page.
#[derive(Debug, Clone)]
pub struct SearchView {
    pub nav: Nav,
    /// The query as typed.
    pub query: String,
    pub site: Vec<Choice>,
    pub status: Vec<Choice>,
    /// "12 messages", "more than 1000 messages (the newest 1000 are shown)", how many new
    /// messages wait for the indexer, or a hint when there is no query.
    pub summary: String,
    pub visitors: Vec<VisitorHitView>,
    pub messages: Vec<MessageHitView>,
    pub previous: Option<String>,
    pub next: Option<String>,
}

fn marked(pieces: Marked) -> impl IntoView {
    pieces
        .into_iter()
        .map(|(text, is_match)| {
            let text = crate::chars::overrides_written_out(&text).into_owned();
            if is_match {
                view! { <mark>{text}</mark> }.into_any()
            } else {
                text.into_any()
            }
        })
        .collect_view()
}

fn status_badge(is_open: bool) -> impl IntoView {
    (!is_open).then(|| view! { <span class="badge badge-muted">"Closed"</span> })
}

#[component]
fn VisitorHit(hit: VisitorHitView) -> impl IntoView {
    let (iso, text) = format_time(hit.last_message_at);
    let email =
        (!hit.email.is_empty()).then(|| view! { <span class="email">{marked(hit.email)}</span> });
    view! {
        <li class="search-hit">
            <a href=hit.href>
                <div class="row">
                    <span class="visitor"><bdi>{marked(hit.name)}</bdi>" "{email}</span>
                    <time datetime=iso>{text}</time>
                </div>
                <div class="row meta">
                    <span class="site">{hit.site}</span>
                    {status_badge(hit.is_open)}
                </div>
            </a>
        </li>
    }
}

#[component]
fn MessageHit(hit: MessageHitView) -> impl IntoView {
    let (iso, text) = format_time(hit.at);
    view! {
        <li class="search-hit">
            <a href=hit.href>
                <div class="row">
                    <span class="visitor">{hit.visitor}</span>
                    <time datetime=iso>{text}</time>
                </div>
                <p class="search-snippet">{marked(hit.snippet)}</p>
                <div class="row meta">
                    <span class="who">{hit.author}</span>
                    <span class="site">{hit.site}</span>
                    {status_badge(hit.is_open)}
                </div>
            </a>
        </li>
    }
}

/// The query box of the search page and the inbox header (`/` focuses it by its id).
#[component]
pub fn SearchBox(query: String) -> impl IntoView {
    view! {
        <form class="search-box" method="get" action="/search" role="search">
            <label for="inbox-search" class="visually-hidden">"Search conversations"</label>
            <input type="search" id="inbox-search" name="q" value=query maxlength="200"
                placeholder="Search conversations"/>
        </form>
    }
}

/// Renders the search page.
pub fn render_search(view: SearchView) -> String {
    let nav = Nav {
        section: Section::Search,
        ..view.nav
    };
    let visitors = (!view.visitors.is_empty()).then(|| {
        let items = view
            .visitors
            .into_iter()
            .map(|hit| view! { <VisitorHit hit/> })
            .collect_view();
        view! {
            <h2>"Visitors"</h2>
            <ul class="search-hits" aria-label="Visitors">{items}</ul>
        }
    });
    let has_messages = !view.messages.is_empty();
    let messages = view
        .messages
        .into_iter()
        .map(|hit| view! { <MessageHit hit/> })
        .collect_view();
    let pager = (view.previous.is_some() || view.next.is_some()).then(|| {
        view! {
            <nav class="pager" aria-label="Pages">
                {view.previous.map(|href| view! { <a href=href rel="prev">"← Previous page"</a> })}
                {view.next.map(|href| view! { <a href=href rel="next">"Next page →"</a> })}
            </nav>
        }
    });
    let content = view! {
        <div class="page-head">
            <h1>"Search"</h1>
        </div>
        <form class="inbox-filters" method="get" action="/search" role="search" aria-label="Search">
            <div class="field field-grow">
                <label for="inbox-search">"Words"</label>
                <input type="search" id="inbox-search" name="q" value=view.query maxlength="200"
                    placeholder="Search messages, names, emails"/>
            </div>
            <FilterSelect name="site" label="Site" choices=view.site/>
            <FilterSelect name="status" label="Status" choices=view.status/>
            <div class="field field-end">
                <button type="submit" class="button button-primary">"Search"</button>
            </div>
        </form>
        <p class="inbox-count" role="status">{view.summary}</p>
        {visitors}
        {has_messages.then(|| view! {
            <h2>"Messages"</h2>
            <ol class="search-hits" aria-label="Messages">{messages}</ol>
        })}
        {pager}
    };
    document("Search", Some(nav), false, content.into_any())
}
