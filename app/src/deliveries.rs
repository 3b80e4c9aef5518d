//! Deliveries that need an admin (admins only): failed and blocked jobs with their errors,
//! retrying one or all of them, and dismissing failed ones.

use leptos::prelude::*;

use crate::layout::{CsrfField, Nav, Notice, NoticeBox, Section, document};
use crate::time::format_time;

/// A failed or blocked delivery.
#[derive(Debug, Clone)]
pub struct DeliveryItemView {
    pub id: i64,
    /// What it carries, in words ("the thread's header").
    pub kind: String,
    /// `failed` or `blocked`.
    pub state: String,
    /// How many times it was tried (every try, 429s and those before a retry included).
    pub tries: u32,
    pub last_error: Option<String>,
    pub created_at: i64,
    /// The integration's name ("Slack", "Webhook", …), if the job has one.
    pub destination: Option<String>,
    pub site_name: Option<String>,
    pub conversation_id: Option<i64>,
}

/// A state with more deliveries than the page lists.
#[derive(Debug, Clone, Copy)]
pub struct DeliveriesCut {
    /// `blocked` or `failed`.
    pub state: &'static str,
    pub shown: u32,
    /// How many there are (the count's cap when `is_more`).
    pub total: u32,
    pub is_more: bool,
}

/// The deliveries page.
#[derive(Debug, Clone)]
pub struct DeliveriesView {
    pub nav: Nav,
    pub items: Vec<DeliveryItemView>,
    /// The states whose list is cut to the newest.
    pub cut: Vec<DeliveriesCut>,
    pub notice: Option<Notice>,
}

#[component]
fn Item(item: DeliveryItemView, csrf: String) -> impl IntoView {
    let (iso, text) = format_time(item.created_at);
    // "Slack · Shop": where it goes, and for which site.
    let what = match (item.destination, item.site_name) {
        (Some(destination), Some(site)) => format!("{destination} · {site}"),
        (Some(destination), None) => destination,
        _ => "Porch".to_owned(),
    };
    let conversation = item.conversation_id.map(|id| {
        view! { <a href=format!("/conversations/{id}")>{format!("Conversation {id}")}</a>" · " }
    });
    // Every try, not the attempt budget's count, which a retry starts again: a blocked row
    // retried with *Retry all* read "0 attempts" beside the error its tries got.
    let attempts = match item.tries {
        0 => "not tried yet".to_owned(),
        1 => "tried once".to_owned(),
        n => format!("tried {n} times"),
    };
    let badge_class = if item.state == "blocked" {
        "badge badge-danger"
    } else {
        "badge badge-muted"
    };
    // A blocked delivery waits for its integration's fix; only one given up can be dismissed.
    let dismiss = (item.state == "failed").then(|| {
        view! {
            <form method="post" action=format!("/deliveries/{}/dismiss", item.id)>
                <CsrfField token=csrf.clone()/>
                <button type="submit" class="button"
                    aria-label=format!("Dismiss delivery {}", item.id)>"Dismiss"</button>
            </form>
        }
    });
    view! {
        <li class="member">
            <div class="member-main">
                <p class="member-name">
                    {what}" "<span class=badge_class>{item.state}</span>
                </p>
                <p class="muted small">
                    {conversation}<time datetime=iso>{text}</time>" · "{attempts}" · "{item.kind}
                </p>
                <p class="small">{item.last_error.unwrap_or_default()}</p>
            </div>
            <div class="member-actions">
                <form method="post" action=format!("/deliveries/{}/retry", item.id)>
                    <CsrfField token=csrf/>
                    <button type="submit" class="button"
                        aria-label=format!("Retry delivery {}", item.id)>"Retry"</button>
                </form>
                {dismiss}
            </div>
        </li>
    }
}

/// Renders the deliveries page.
pub fn render_deliveries(view: DeliveriesView) -> String {
    let csrf = view.nav.csrf.clone();
    let nav = Nav {
        section: Section::Deliveries,
        ..view.nav
    };
    let retry_all = (!view.items.is_empty()).then(|| {
        view! {
            <form method="post" action="/deliveries/retry">
                <CsrfField token=csrf.clone()/>
                <button type="submit" class="button button-primary">"Retry all"</button>
            </form>
        }
    });
    let dismiss_all = view.items.iter().any(|i| i.state == "failed").then(|| {
        view! {
            <form method="post" action="/deliveries/dismiss"
                data-confirm="Dismiss every failed delivery? They are deleted and will not be sent.">
                <CsrfField token=csrf.clone()/>
                <button type="submit" class="button">"Dismiss all failed"</button>
            </form>
        }
    });
    let list = if view.items.is_empty() {
        view! {
            <p class="card muted">"Nothing waits for you: every delivery went out or is still being retried on its own."</p>
        }
        .into_any()
    } else {
        let items = view
            .items
            .into_iter()
            .map(|item| view! { <Item item csrf=csrf.clone()/> })
            .collect_view();
        view! { <ul class="card list">{items}</ul> }.into_any()
    };
    let content = view! {
        <div class="page-head">
            <h1>"Deliveries"</h1>
            <p class="muted">"Posts to Slack and other destinations that failed for good, or wait \
                for an integration to be fixed. Fixing an integration sends its blocked deliveries by itself. \
                A failed delivery nobody will want (an address that does not exist) can be dismissed: \
                it is deleted, and its destination's health no longer counts it."</p>
            <div class="head-actions">{retry_all}{dismiss_all}</div>
        </div>
        <NoticeBox notice=view.notice/>
        {view.cut.into_iter().map(cut_note).collect_view()}
        {list}
    };
    document("Deliveries", Some(nav), false, content.into_any())
}

/// "Showing the newest 200 of 621 failed deliveries": a list cut short says so, and how to reach
/// the rest.
fn cut_note(cut: DeliveriesCut) -> impl IntoView {
    let more = if cut.is_more { "more than " } else { "" };
    let total = crate::chart::format_number(f64::from(cut.total));
    view! {
        <p class="card hint" data-cut=cut.state>
            {format!("Showing the newest {} of {more}{total} {} deliveries. ", cut.shown, cut.state)}
            "Retry all reaches every one of them; "
            <code>{format!("GET /api/v1/jobs?state={}", cut.state)}</code>
            " lists them all, 500 at a time."
        </p>
    }
}
