//! A site's pre-chat form (admins only): which of name, email and the site's own question the
//! widget asks before the first message, each off, optional or required; and the card on the
//! site page that leads here.

use leptos::prelude::*;

use crate::layout::{CsrfField, Nav, Notice, NoticeBox, document};

/// The pre-chat page of a site, with the form's values as typed or stored.
#[derive(Debug, Clone)]
pub struct SitePrechatView {
    pub nav: Nav,
    pub key: String,
    pub name: String,
    /// `off`, `optional` or `required`.
    pub name_field: String,
    pub email_field: String,
    pub question: String,
    pub question_field: String,
    /// Whether the site has a form now; without one, the fields show a suggestion.
    pub is_on: bool,
    pub notice: Option<Notice>,
}

/// The site page's card that leads here.
pub fn prechat_link(key: &str) -> impl IntoView {
    view! {
        <section class="card" aria-labelledby="prechat-title">
            <h2 id="prechat-title">"Pre-chat form"</h2>
            <p class="hint">"Ask visitors their name, email or a question of your own before \
                their first message."</p>
            <a class="button" href=format!("/sites/{key}/prechat")>"Pre-chat form"</a>
        </section>
    }
}

/// Three radio buttons (off, optional, required) for the field `field`, labelled by `label_id`.
fn choices(field: &'static str, label_id: String, current: &str) -> impl IntoView {
    let choices = [
        ("off", "Off"),
        ("optional", "Optional"),
        ("required", "Required"),
    ]
    .into_iter()
    .map(|(value, text)| {
        view! {
            <label><input type="radio" name=field value=value checked=current == value/>
                " "{text}</label>
        }
    })
    .collect_view();
    view! { <div class="radios" role="radiogroup" aria-labelledby=label_id>{choices}</div> }
}

/// A field's fieldset: its legend and its three choices.
fn modes(field: &'static str, legend: &'static str, current: &str) -> impl IntoView {
    let id = format!("{field}-label");
    view! {
        <fieldset>
            <legend id=id.clone()>{legend}</legend>
            {choices(field, id, current)}
        </fieldset>
    }
}

/// The site's own question: its text, then its three choices, under one legend (the text box
/// once had a label of its own beside a legend that read as unfinished, "Your question is").
fn question(text: String, current: &str) -> impl IntoView {
    let id = "question_field-label".to_owned();
    view! {
        <fieldset class="stack">
            <legend id=id.clone()>"Your own question"</legend>
            <div class="field">
                <label for="question">"Question text"</label>
                <input id="question" name="question" type="text" maxlength="1000" value=text
                    placeholder="For example: What is your order number?"
                    aria-describedby="question-hint"/>
                <p class="hint" id="question-hint">"Asked after name and email, as you write it \
                    here. Write it before choosing Optional or Required."</p>
            </div>
            {choices("question_field", id, current)}
        </fieldset>
    }
}

/// Renders the pre-chat page.
pub fn render_site_prechat(view: SitePrechatView) -> String {
    let key = view.key;
    let title = format!("Pre-chat form: {}", view.name);
    let content = view! {
        <div class="page-head">
            <p class="crumb"><a href=format!("/sites/{key}")>"← "{view.name.clone()}</a></p>
            <h1>"Pre-chat form"</h1>
            <p class="muted">"What visitors see and where the answers go: "
                <a href="/docs/widget.md#pre-chat-form">"Pre-chat form"</a>" in the widget guide."</p>
        </div>
        <NoticeBox notice=view.notice/>
        <form method="post" action=format!("/sites/{key}/prechat") class="card stack"
            aria-label="Pre-chat form">
            <CsrfField token=view.nav.csrf.clone()/>
            <p data-prechat-state=if view.is_on { "on" } else { "off" }><strong>{if view.is_on {
                "On: the widget asks these before a visitor's first message."
            } else {
                "No pre-chat form: the widget asks nothing. Below is a suggestion; Save form turns it on."
            }}</strong></p>
            <p class="hint">"Shown before a visitor's first message; a visitor who answered is not \
                asked again. With every field off there is no form."</p>
            {modes("name_field", "Name", &view.name_field)}
            {modes("email_field", "Email", &view.email_field)}
            {question(view.question, &view.question_field)}
            <button type="submit" class="button button-primary">"Save form"</button>
        </form>
    };
    document(&title, Some(view.nav), true, content.into_any())
}
