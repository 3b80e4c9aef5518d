//! The privacy page (admins only, docs/privacy.md): find a person by email address or visitor
//! id, download everything about them as JSON, or erase it after a confirmation page that shows
//! what goes.

use leptos::prelude::*;

use crate::layout::{CsrfField, Nav, Notice, NoticeBox, Section, document};
use crate::time_view;

/// A visitor as found.
#[derive(Debug, Clone)]
pub struct PersonView {
    pub id: i64,
    pub site_name: String,
    pub name: Option<String>,
    pub email: Option<String>,
    pub first_seen_at: i64,
    pub last_seen_at: i64,
    pub conversations: i64,
    pub messages: i64,
}

/// The search page.
#[derive(Debug, Clone)]
pub struct PrivacyView {
    pub nav: Nav,
    /// What was searched for, shown again in the box.
    pub query: String,
    /// `None` before a search.
    pub people: Option<Vec<PersonView>>,
    pub notice: Option<Notice>,
}

/// The erase confirmation page.
#[derive(Debug, Clone)]
pub struct EraseView {
    pub nav: Nav,
    pub person: PersonView,
    /// Each conversation that goes: id, started at, messages.
    pub conversations: Vec<(i64, i64, usize)>,
    /// Delivery jobs that name the visitor's messages.
    pub jobs: usize,
    /// Files of their conversations (both sides') and uploads no message took.
    pub files: usize,
}

#[component]
fn PersonRow(person: PersonView, csrf: String) -> impl IntoView {
    let id = person.id;
    view! {
        <tr id=format!("visitor-{id}")>
            <td>{format!("v{id}")}</td>
            <td>{person.site_name}</td>
            <td>{person.name.unwrap_or_default()}</td>
            <td>{person.email.unwrap_or_default()}</td>
            <td>{time_view(person.first_seen_at)}</td>
            <td>{time_view(person.last_seen_at)}</td>
            <td>{person.conversations}</td>
            <td>{person.messages}</td>
            <td class="actions">
                <form method="post" action=format!("/privacy/visitors/{id}/export")>
                    <CsrfField token=csrf/>
                    <button type="submit" class="button">"Download JSON"</button>
                </form>
                <a class="button button-danger" href=format!("/privacy/visitors/{id}/erase")>"Erase…"</a>
            </td>
        </tr>
    }
}

/// Renders the search page.
pub fn render_privacy(view: PrivacyView) -> String {
    debug_assert_eq!(view.nav.section, Section::Privacy);
    let csrf = view.nav.csrf.clone();
    let results = view.people.map(|people| {
        if people.is_empty() {
            return view! { <p class="muted" role="status">"Nobody found."</p> }.into_any();
        }
        let rows = people
            .into_iter()
            .map(|person| view! { <PersonRow person csrf=csrf.clone()/> })
            .collect_view();
        view! {
            <div class="table-scroll" tabindex="0" role="region" aria-label="People found">
                <table class="table privacy">
                    <thead>
                        <tr>
                            <th scope="col">"Visitor"</th>
                            <th scope="col">"Site"</th>
                            <th scope="col">"Name"</th>
                            <th scope="col">"Email"</th>
                            <th scope="col">"First seen"</th>
                            <th scope="col">"Last seen"</th>
                            <th scope="col">"Conversations"</th>
                            <th scope="col">"Messages"</th>
                            <th scope="col">"Actions"</th>
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        }
        .into_any()
    });
    let content = view! {
        <h1>"Privacy"</h1>
        <NoticeBox notice=view.notice/>
        <form method="get" action="/privacy" class="card filters" role="search">
            <label for="privacy-q">"Email address or visitor id"</label>
            <input id="privacy-q" name="q" value=view.query required
                placeholder="someone@example.com or v42"/>
            <button type="submit" class="button">"Find"</button>
        </form>
        <p class="hint">"Exports and erasures are recorded in the audit log, without the data. \
            Copies already sent to Slack, Discord, webhooks or by email are not erased: \
            remove them there."</p>
        {results}
    };
    document("Privacy", Some(view.nav), false, content.into_any())
}

/// Renders the erase confirmation page.
pub fn render_erase(view: EraseView) -> String {
    let csrf = view.nav.csrf.clone();
    let person = view.person;
    let id = person.id;
    let conversations = view
        .conversations
        .into_iter()
        .map(|(conversation, started, messages)| {
            view! {
                <li>{format!("Conversation {conversation}, started ")}{time_view(started)}
                    {format!(": {}", crate::counted(messages, "message"))}</li>
            }
        })
        .collect_view();
    let email = person.email.clone().unwrap_or_else(|| "none".to_owned());
    let content = view! {
        <section class="card card-narrow card-danger" aria-labelledby="erase-title">
            <h1 id="erase-title">{format!("Erase visitor v{id}?")}</h1>
            <p>"This deletes, and it cannot be undone:"</p>
            <ul class="erase-list">
                <li>"the visitor's record on "{person.site_name}": email address ("{email}
                    "), name, IP address, pages, browser and token"</li>
                {conversations}
                {(view.files > 0).then(|| view! {
                    <li>{format!("{} in these conversations (sent by the visitor or by agents) \
                        or uploaded by the visitor and not sent", crate::counted(view.files, "file"))}</li>
                })}
                <li>{format!("{} delivery records that name them", view.jobs)}</li>
            </ul>
            <p class="hint">"Agents' replies and notes in these conversations go too. An open \
                chat window of this visitor starts again as a new visitor."</p>
            <form method="post" action=format!("/privacy/visitors/{id}/erase") class="stack">
                <CsrfField token=csrf/>
                <div class="form-actions">
                    <a class="button" href="/privacy">"Cancel"</a>
                    <button type="submit" class="button button-danger">"Erase visitor"</button>
                </div>
            </form>
        </section>
    };
    document("Erase visitor", Some(view.nav), false, content.into_any())
}
