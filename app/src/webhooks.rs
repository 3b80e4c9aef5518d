//! A site's outgoing webhook endpoints (admins only): the list with each one's health and the
//! form to add one; and one endpoint's page: its URL and events, its signing secret (shown once,
//! when created or rotated), its delivery log with replay, and turning it off, on or deleting it.

use leptos::prelude::*;

use crate::destination::{Health, HealthView, IntegrationControls};
use crate::layout::{CsrfField, Nav, Notice, NoticeBox, Section, document, field_marks};
use crate::time::format_time;

/// One endpoint in the list.
#[derive(Debug, Clone)]
pub struct EndpointItemView {
    pub id: i64,
    pub url: String,
    pub events: Vec<String>,
    pub health: HealthView,
}

/// The webhooks page of a site.
#[derive(Debug, Clone)]
pub struct WebhooksPageView {
    pub nav: Nav,
    pub site_key: String,
    pub site_name: String,
    pub endpoints: Vec<EndpointItemView>,
    /// Every event an endpoint can subscribe to, in the documented order.
    pub all_events: Vec<String>,
    /// What the admin typed and ticked, when the form is shown again with an error.
    pub url: String,
    pub events: Vec<String>,
    pub notice: Option<Notice>,
}

/// One attempt in the delivery log.
#[derive(Debug, Clone)]
pub struct DeliveryAttemptView {
    pub job_id: i64,
    pub event: String,
    /// The delivery's state now: `done`, `queued`, `failed`, `blocked`, ...
    pub job_state: String,
    pub attempt: u32,
    pub started_at: i64,
    /// `delivered`, `retry`, `rate_limited`, `failed` or `blocked`.
    pub outcome: String,
    pub http_status: Option<u16>,
    pub error: Option<String>,
}

/// One endpoint's page.
#[derive(Debug, Clone)]
pub struct WebhookPageView {
    pub nav: Nav,
    pub site_key: String,
    pub site_name: String,
    pub id: i64,
    pub url: String,
    pub events: Vec<String>,
    pub all_events: Vec<String>,
    pub is_enabled: bool,
    pub health: HealthView,
    /// The signing secret, right after it was created or rotated (never again).
    pub new_secret: Option<String>,
    /// Until when the previous secret still signs, after a rotation.
    pub previous_valid_until: Option<i64>,
    pub log: Vec<DeliveryAttemptView>,
    pub notice: Option<Notice>,
}

#[component]
fn EventChoices(all: Vec<String>, chosen: Vec<String>) -> impl IntoView {
    let boxes = all
        .into_iter()
        .map(|event| {
            let checked = chosen.contains(&event);
            view! {
                <label><input type="checkbox" name=event.clone() value="on" checked=checked/>" "
                    <span class="mono">{event}</span></label>
            }
        })
        .collect_view();
    view! {
        <fieldset>
            <legend>"Events"</legend>
            <div class="radios">{boxes}</div>
        </fieldset>
    }
}

fn url_field(value: String, refused: Option<&str>) -> impl IntoView {
    view! {
        <div class="field">
            <label for="url">"Endpoint URL"</label>
            <input id="url" name="url" type="url" required class="mono"
                {..field_marks(refused, "url", Some("url-hint"))} value=value/>
            <p class="hint" id="url-hint">"https://… on a public address. Porch refuses private, \
                loopback and link-local addresses (unless PORCH_ALLOW_PRIVATE_NETWORKS is set)."</p>
        </div>
    }
}

/// Renders the list of a site's endpoints and the form to add one.
pub fn render_webhooks(view: WebhooksPageView) -> String {
    let csrf = view.nav.csrf.clone();
    let nav = Nav {
        section: Section::Sites,
        ..view.nav
    };
    let key = view.site_key;
    let refused = view.notice.as_ref().and_then(Notice::field);
    let list = if view.endpoints.is_empty() {
        view! { <p class="muted">"No endpoints yet."</p> }.into_any()
    } else {
        let items = view
            .endpoints
            .into_iter()
            .map(|e| {
                view! {
                    <li class="member" data-endpoint=e.id>
                        <div class="member-main">
                            <p class="member-name">
                                <a class="mono" href=format!("/sites/{key}/webhooks/{}", e.id)>{e.url}</a>
                            </p>
                            <p class="muted small mono">{e.events.join(", ")}</p>
                            <Health health=e.health/>
                        </div>
                    </li>
                }
            })
            .collect_view();
        view! { <ul class="list">{items}</ul> }.into_any()
    };
    let content = view! {
        <div class="page-head">
            <p class="crumb"><a href=format!("/sites/{key}")>"← "{view.site_name}</a></p>
            <h1>"Webhooks"</h1>
            <p class="muted">"Porch posts the chosen events as JSON to each endpoint, signed per \
                Standard Webhooks, retried for about 27 hours. Setup steps and the payloads are in "
                <a href="/docs/integrations/webhooks.md">"the webhooks guide"</a>"."</p>
        </div>
        <NoticeBox notice=view.notice/>
        <section class="card" aria-labelledby="endpoints-title">
            <h2 id="endpoints-title">"Endpoints"</h2>
            {list}
        </section>
        <form method="post" action=format!("/sites/{key}/webhooks") class="card stack" aria-label="Add an endpoint">
            <h2>"Add an endpoint"</h2>
            <CsrfField token=csrf/>
            {url_field(view.url, refused)}
            <EventChoices all=view.all_events chosen=view.events/>
            <button type="submit" class="button button-primary">"Add endpoint"</button>
        </form>
    };
    document("Webhooks", Some(nav), false, content.into_any())
}

#[component]
fn Attempt(item: DeliveryAttemptView, replay_base: String, csrf: String) -> impl IntoView {
    let (iso, text) = format_time(item.started_at);
    let status = item.http_status.map(|s| s.to_string()).unwrap_or_default();
    // A delivery can be replayed once it is finished; the first row of a job carries the button.
    let is_finished = matches!(item.job_state.as_str(), "done" | "failed" | "blocked");
    let replay = is_finished.then(|| {
        view! {
            <form method="post" action=format!("{replay_base}/{}/replay", item.job_id)>
                <CsrfField token=csrf/>
                <button type="submit" class="button"
                    aria-label=format!("Replay delivery {}", item.job_id)>"Replay"</button>
            </form>
        }
    });
    let outcome = item.outcome.clone();
    view! {
        <tr data-job=item.job_id data-outcome=outcome>
            <td><time datetime=iso>{text}</time></td>
            <td class="mono">{item.event}</td>
            <td>{item.outcome}" "{status}</td>
            <td>{item.attempt}</td>
            <td class="small">{item.error.unwrap_or_default()}</td>
            <td>{replay}</td>
        </tr>
    }
}

/// Renders one endpoint's page.
pub fn render_webhook(view: WebhookPageView) -> String {
    let csrf = view.nav.csrf.clone();
    let nav = Nav {
        section: Section::Sites,
        ..view.nav
    };
    let key = view.site_key;
    let page = format!("/sites/{key}/webhooks/{}", view.id);
    let secret = view.new_secret.map(|secret| {
        view! {
            <section class="card card-highlight" aria-labelledby="secret-title">
                // Named apart from the rotate card's "Signing secret": two regions of one name
                // are one landmark too many for a screen reader's list (axe: landmark-unique).
                <h2 id="secret-title">"Your new signing secret"</h2>
                <p>"Copy it now into your receiver: Porch does not show it again."</p>
                <div class="copy-row">
                    <input id="new-secret" class="mono" readonly value=secret aria-label="Signing secret"/>
                    <button type="button" class="button" data-copy="new-secret">"Copy secret"</button>
                    <span class="copied" role="status" data-copied></span>
                </div>
            </section>
        }
    });
    let overlap = view.previous_valid_until.map(|until| {
        let (iso, text) = format_time(until);
        view! {
            <p class="hint">"The previous secret also signs every delivery until "
                <time datetime=iso>{text}</time>"."</p>
        }
    });
    let rows = view
        .log
        .into_iter()
        .map(|item| {
            view! { <Attempt item replay_base=format!("{page}/deliveries") csrf=csrf.clone()/> }
        })
        .collect_view();
    let content = view! {
        <div class="page-head">
            <p class="crumb"><a href=format!("/sites/{key}/webhooks")>"← Webhooks of "{view.site_name}</a></p>
            <h1 class="mono">{view.url.clone()}</h1>
        </div>
        <NoticeBox notice=view.notice/>
        {secret}
        <section class="card" aria-labelledby="status-title">
            <h2 id="status-title">"Status"</h2>
            <Health health=view.health/>
            <IntegrationControls base=format!("/sites/{key}/integrations/{}", view.id)
                is_enabled=view.is_enabled csrf=csrf.clone()/>
        </section>
        <form method="post" action=page.clone() class="card stack" aria-label="Endpoint settings">
            <h2>"Settings"</h2>
            <CsrfField token=csrf.clone()/>
            {url_field(view.url, None)}
            <EventChoices all=view.all_events chosen=view.events/>
            <button type="submit" class="button button-primary">"Save endpoint"</button>
        </form>
        <section class="card" aria-labelledby="rotate-title">
            <h2 id="rotate-title">"Signing secret"</h2>
            <p class="hint">"Rotating creates a new secret. For 24 hours every delivery carries two \
                signatures (new and previous secret), so receivers can switch without missing one."</p>
            {overlap}
            <form method="post" action=format!("{page}/rotate")>
                <CsrfField token=csrf.clone()/>
                <button type="submit" class="button">"Rotate secret"</button>
            </form>
        </section>
        <section class="card" aria-labelledby="log-title">
            <h2 id="log-title">"Delivery log"</h2>
            <p class="hint">"Newest first, one row per attempt. Replay sends a finished delivery again \
                with the same webhook-id and a fresh signature."</p>
            <div class="table-scroll" tabindex="0" role="region" aria-label="Delivery log, table">
                <table class="table" aria-labelledby="log-title">
                    <thead><tr><th>"Time"</th><th>"Event"</th><th>"Status"</th><th>"Attempt"</th>
                        <th>"Last error"</th><th><span class="visually-hidden">"Actions"</span></th></tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </section>
    };
    document("Webhook", Some(nav), true, content.into_any())
}
