//! The inbox: conversations with unread state, the last message and the site; tabs (open, mine,
//! unassigned, snoozed, closed) as shortcuts, a filter form (status, assignee, site, tag, order), the count and
//! a link to the next page. `render_conversation_item` is also what the live stream sends.

use leptos::prelude::*;

use crate::bulk::{BulkForm, row_checkbox};
use crate::layout::{KeysSaid, Nav, Notice, NoticeBox, Section, UnreadCount, document_with_skip};
use crate::search::SearchBox;
use crate::tags::tag_badges;
use crate::time::{format_time, time_view};

/// The inbox's tabs: shortcuts for a status and an assignee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    Open,
    Mine,
    Unassigned,
    Snoozed,
    Closed,
}

impl Filter {
    pub const ALL: [Self; 5] = [
        Self::Open,
        Self::Mine,
        Self::Unassigned,
        Self::Snoozed,
        Self::Closed,
    ];

    /// The `?filter=` value.
    pub fn slug(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Mine => "mine",
            Self::Unassigned => "unassigned",
            Self::Snoozed => "snoozed",
            Self::Closed => "closed",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Open => "Open",
            Self::Mine => "Mine",
            Self::Unassigned => "Unassigned",
            Self::Snoozed => "Snoozed",
            Self::Closed => "Closed",
        }
    }

    fn empty_text(self) -> &'static str {
        match self {
            Self::Open => "No open conversations. New chats appear here as they arrive.",
            Self::Mine => "Nothing assigned to you right now.",
            Self::Unassigned => "Every open conversation has someone on it.",
            Self::Snoozed => {
                "Nothing snoozed. A snoozed conversation comes back to Open when its \
                              time is up or the visitor writes."
            }
            Self::Closed => "No closed conversations yet.",
        }
    }
}

/// One conversation in the list.
#[derive(Debug, Clone)]
pub struct InboxItemView {
    pub id: i64,
    pub visitor: String,
    pub site: String,
    pub is_open: bool,
    /// Snoozed until then (Unix ms).
    pub snoozed_until: Option<i64>,
    pub assignee: Option<String>,
    /// "You", an agent's name, or `None` for the visitor.
    pub preview_author: Option<String>,
    pub preview: Option<String>,
    pub last_message_at: i64,
    pub is_unread: bool,
    /// Its tags' names.
    pub tags: Vec<String>,
    /// Its position in the list's order (`rank.at.id`), for the script to place live updates.
    pub sort_key: String,
}

/// One option of a filter's `<select>`.
#[derive(Debug, Clone)]
pub struct Choice {
    pub value: String,
    pub label: String,
    pub is_selected: bool,
}

/// The filter form's selects, each with its options.
#[derive(Debug, Clone)]
pub struct InboxFilters {
    pub status: Vec<Choice>,
    pub assignee: Vec<Choice>,
    pub site: Vec<Choice>,
    pub tag: Vec<Choice>,
    pub sort: Vec<Choice>,
}

impl InboxFilters {
    /// What the selects say now, as the folded filters' summary: "Open · Anyone · All sites ·
    /// Latest activity", with the tag when one is chosen ("… · refund · …").
    fn summary(&self) -> String {
        let chosen = |choices: &[Choice]| {
            choices
                .iter()
                .find(|c| c.is_selected)
                .or(choices.first())
                .map(|c| c.label.clone())
        };
        let tag = self
            .tag
            .iter()
            .find(|c| c.is_selected && !c.value.is_empty())
            .map(|c| c.label.clone());
        [
            chosen(&self.status),
            chosen(&self.assignee),
            chosen(&self.site),
            tag,
            chosen(&self.sort),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" · ")
    }
}

/// The inbox page.
#[derive(Debug, Clone)]
pub struct InboxView {
    pub nav: Nav,
    pub csrf: String,
    /// This page's address (filters and cursor), where the bulk form's answer returns.
    pub back: String,
    /// Each tab with its link (keeping the site and order).
    pub tabs: Vec<(Filter, String)>,
    /// The site the list is filtered to, whose own unread counts the tabs show
    /// (`data-site`; notify.js takes them from the counts' `site`).
    pub tabs_site: Option<i64>,
    /// The tab the filters amount to, if any.
    pub tab: Option<Filter>,
    pub filters: InboxFilters,
    /// "230 open conversations, showing 1–200".
    pub summary: String,
    pub items: Vec<InboxItemView>,
    /// The next page's link, when there is one.
    pub next: Option<String>,
    /// The first page's link, when this is a later page.
    pub first: Option<String>,
    /// The live stream's URL (the same filters).
    pub live: String,
    /// The count line's URL (the same filters and cursor), asked again as rows come and go.
    pub summary_href: String,
    /// `recent` or `waiting`: how the script orders live updates.
    pub sort: &'static str,
    /// The sort key this page starts after (empty on the first page).
    pub cursor: String,
    /// The newest message id when the page was read: the live stream continues from here.
    pub last_id: i64,
    pub notice: Option<Notice>,
}

/// Longest preview, in characters; the rest is cut with an ellipsis.
const PREVIEW_CHARS: usize = 140;

fn preview_text(text: &str) -> String {
    let shown = crate::chars::overrides_written_out(text);
    let flat: String = shown.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > PREVIEW_CHARS {
        let cut: String = flat.chars().take(PREVIEW_CHARS).collect();
        format!("{}…", cut.trim_end())
    } else {
        flat
    }
}

#[component]
fn ConversationItem(item: InboxItemView) -> impl IntoView {
    let (iso, text) = format_time(item.last_message_at);
    let class = if item.is_unread {
        "conversation unread"
    } else {
        "conversation"
    };
    let status = if item.is_open {
        item.snoozed_until.map(|until| {
            view! { <span class="badge badge-muted" data-snoozed>"Snoozed until "{time_view(until)}</span> }
                .into_any()
        })
    } else {
        Some(view! { <span class="badge badge-muted" data-closed>"Closed"</span> }.into_any())
    };
    let assignee = match item.assignee {
        Some(name) => view! { <span class="assignee">{name}</span> }.into_any(),
        None => view! { <span class="assignee assignee-none">"Unassigned"</span> }.into_any(),
    };
    let preview = item.preview.map(|body| {
        let who = item
            .preview_author
            .map(|a| view! { <span class="who">{a}": "</span> });
        view! { <p class="preview">{who}{preview_text(&body)}</p> }
    });
    let checkbox = row_checkbox(item.id, &item.visitor);
    view! {
        <li id=format!("conversation-{}", item.id) class=class data-id=item.id
            data-at=item.last_message_at data-key=item.sort_key>
            {checkbox}
            <a href=format!("/conversations/{}", item.id)>
                <div class="row">
                    <span class="visitor">
                        {item.is_unread.then(|| view! {
                            <span class="dot" aria-hidden="true"></span>
                            <span class="visually-hidden">"Unread: "</span>
                        })}
                        // Isolated: a right-to-left override in a visitor's name stays in it.
                        <bdi>{item.visitor}</bdi>
                    </span>
                    <time datetime=iso>{text}</time>
                </div>
                {preview}
                <div class="row meta">
                    <span class="site">{item.site}</span>
                    {status}
                    {assignee}
                </div>
                {tag_badges(item.tags)}
            </a>
        </li>
    }
}

/// One conversation's `<li>`, as the live stream sends it.
pub fn render_conversation_item(item: InboxItemView) -> String {
    view! { <ConversationItem item/> }.to_html()
}

/// A labelled `<select>` of a filter form (the inbox's and the search page's).
#[component]
pub fn FilterSelect(
    name: &'static str,
    label: &'static str,
    choices: Vec<Choice>,
) -> impl IntoView {
    let id = format!("inbox-{name}");
    let options = choices
        .into_iter()
        .map(|c| view! { <option value=c.value selected=c.is_selected>{c.label}</option> })
        .collect_view();
    view! {
        <div class="field">
            <label for=id.clone()>{label}</label>
            <select id=id name=name>{options}</select>
        </div>
    }
}

/// Renders the inbox page.
pub fn render_inbox(view: InboxView) -> String {
    let nav = Nav {
        section: Section::Inbox,
        ..view.nav
    };
    let current = view.tab;
    let tabs_site = view.tabs_site.map(|site| site.to_string());
    let tabs = view
        .tabs
        .into_iter()
        .map(|(f, href)| {
            // Closed and snoozed conversations are never unread in the counts' sense
            // (docs/admin.md).
            let counted = !matches!(f, Filter::Closed | Filter::Snoozed);
            let count = counted.then(|| view! { <UnreadCount which=f.slug()/> });
            view! {
                <a href=href aria-current=(Some(f) == current).then_some("page")>{f.label()}{count}</a>
            }
        })
        .collect_view();
    let filters = view.filters;
    let filters_said = filters.summary();
    let is_empty = view.items.is_empty();
    let items = view
        .items
        .into_iter()
        .map(|item| view! { <ConversationItem item/> })
        .collect_view();
    // A tab's own words only for the tab as it is: a tag chosen with it is a filter of its own.
    let tagged = filters
        .tag
        .iter()
        .any(|c| c.is_selected && !c.value.is_empty());
    let empty_text = current
        .filter(|_| !tagged)
        .map_or("No conversations match these filters.", Filter::empty_text);
    // Before any site exists no chat can arrive: say what comes first, not "as they arrive".
    let empty_text = if filters.site.len() > 1 {
        empty_text.into_any()
    } else if view.nav.is_admin {
        view! {
            "No site yet, so no chat can arrive. "<a href="/sites/new">"Create a site"</a>
            " and put its snippet on your website."
        }
        .into_any()
    } else {
        "No site yet, so no chat can arrive: an admin creates one on the Sites page.".into_any()
    };
    let pager = (view.next.is_some() || view.first.is_some()).then(|| {
        view! {
            <nav class="pager" aria-label="Pages">
                {view.first.map(|href| view! { <a href=href>"← First page"</a> })}
                {view.next.clone().map(|href| view! { <a href=href rel="next">"Next page →"</a> })}
            </nav>
        }
    });
    let content = view! {
        <div class="page-head">
            <h1>"Inbox"</h1>
            <SearchBox query=String::new()/>
            // Empty while the stream is live: inbox.js puts "Reconnecting…" in (admin.css).
            <p class="live-status" role="status" data-live-status></p>
        </div>
        <KeysSaid/>
        <NoticeBox notice=view.notice/>
        <nav class="tabs" aria-label="Filter conversations" data-site=tabs_site>{tabs}</nav>
        // Folded into its summary on a phone, so the list starts on the first screen; shown in
        // full on a larger one (admin.css, "filter-box").
        <details class="filter-box">
            <summary>"Filters: "{filters_said}</summary>
            <form class="inbox-filters" method="get" action="/inbox" aria-label="Filters">
                <FilterSelect name="status" label="Status" choices=filters.status/>
                <FilterSelect name="assignee" label="Assignee" choices=filters.assignee/>
                <FilterSelect name="site" label="Site" choices=filters.site/>
                // Only once there is a tag to choose (one in use, or the one chosen): "Any tag"
                // alone chooses nothing.
                {(filters.tag.len() > 1).then(|| view! { <FilterSelect name="tag" label="Tag" choices=filters.tag/> })}
                <FilterSelect name="sort" label="Order" choices=filters.sort/>
                <div class="field field-end">
                    <button type="submit" class="button">"Show"</button>
                </div>
            </form>
        </details>
        // The count and the bulk form share a line while nothing is ticked.
        <div class="list-head">
            <p class="inbox-count" data-count data-summary=view.summary_href>{view.summary}</p>
            <BulkForm csrf=view.csrf back=view.back hidden=is_empty/>
        </div>
        <ul class="conversations" id="conversations" aria-live="polite" tabindex="-1"
            data-live=view.live data-last-id=view.last_id data-sort=view.sort
            data-cursor=view.cursor data-more=view.next.is_some().then_some("true")>
            {items}
        </ul>
        // Takes the focus when the list is empty and the skip link or `e` leads there (inbox.js).
        <p class="empty" data-empty tabindex="-1" hidden=!is_empty>{empty_text}</p>
        {pager}
        <script src="/assets/bulk.js" defer></script>
    };
    document_with_skip(
        "Inbox",
        Some(nav),
        true,
        Some(("#conversations", "Skip to conversations")),
        content.into_any(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_are_flattened_and_cut() {
        assert_eq!(preview_text("a\n\n b"), "a b");
        let long = "x".repeat(PREVIEW_CHARS + 10);
        assert_eq!(preview_text(&long).chars().count(), PREVIEW_CHARS + 1);
        assert_eq!(preview_text("pay \u{202E}moc.knab"), "pay <U+202E>moc.knab");
    }
}
