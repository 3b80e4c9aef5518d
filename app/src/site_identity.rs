//! A site's known visitors (admins only): the identity secret a site's server uses to compute
//! `user_hash`, with rotating and turning off; and the link to it from the site page.

use leptos::prelude::*;

use crate::layout::{CsrfField, Nav, Notice, NoticeBox, document};

/// The known-visitors page of a site.
#[derive(Debug, Clone)]
pub struct SiteIdentityView {
    pub nav: Nav,
    pub key: String,
    pub name: String,
    /// The secret in clear; `None` while known visitors are off.
    pub secret: Option<String>,
    pub notice: Option<Notice>,
}

/// The site page's card that leads here.
pub fn known_visitors_link(key: &str) -> impl IntoView {
    view! {
        <section class="card" aria-labelledby="known-visitors-title">
            <h2 id="known-visitors-title">"Known visitors"</h2>
            <p class="hint">"Let your site tell Porch who its logged-in users are, so agents see \
                who they talk to and users find their history on every device."</p>
            <a class="button" href=format!("/sites/{key}/identity")>"Known visitors"</a>
        </section>
    }
}

/// Renders the known-visitors page.
pub fn render_site_identity(view: SiteIdentityView) -> String {
    let key = view.key;
    let csrf = view.nav.csrf.clone();
    let is_on = view.secret.is_some();
    let secret = view.secret.map(|secret| {
        view! {
            <div class="field">
                <label for="identity-secret">"Identity secret"</label>
                <input id="identity-secret" class="mono" type="text" readonly value=secret
                    aria-describedby="identity-secret-hint"/>
                <button type="button" class="button" data-copy="identity-secret">"Copy secret"</button>
                <span class="copied" role="status" data-copied></span>
                <p class="hint" id="identity-secret-hint">"Keep it on your server only. There, \
                    compute "<code>"user_hash"</code>" as the lower-case hex HMAC-SHA256 of the \
                    user's id with this text as the key, and pass it with the id to the widget."</p>
            </div>
        }
    });
    let remove = is_on.then(|| {
        view! {
            <form method="post" action=format!("/sites/{key}/identity/remove")>
                <CsrfField token=csrf.clone()/>
                <button type="submit" class="button button-danger">"Turn off"</button>
            </form>
        }
    });
    let state = if is_on {
        "On: identities with a valid user_hash are verified; others are shown as unverified."
    } else {
        "Off: every identity a page passes is shown to agents as unverified."
    };
    let button = if is_on { "Rotate secret" } else { "Turn on" };
    let title = format!("Known visitors: {}", view.name);
    let content = view! {
        <div class="page-head">
            <p class="crumb"><a href=format!("/sites/{key}")>"← "{view.name.clone()}</a></p>
            <h1>"Known visitors"</h1>
        </div>
        <NoticeBox notice=view.notice/>
        <section class="card stack" aria-label="Identity secret">
            <p data-identity-state=if is_on { "on" } else { "off" }>{state}</p>
            {secret}
            <div class="inline-controls">
                <form method="post" action=format!("/sites/{key}/identity/rotate")>
                    <CsrfField token=csrf/>
                    <button type="submit" class="button button-primary">{button}</button>
                </form>
                {remove}
            </div>
            <p class="hint">{if is_on {
                "Rotating makes a new secret; hashes made with the old one stop verifying at once. "
            } else {
                "Turning on makes a secret your server signs user ids with. "
            }}"See "<a href="/docs/widget.md#known-visitors">"Known visitors"</a>
                " in the widget guide."</p>
        </section>
    };
    document(&title, Some(view.nav), true, content.into_any())
}
