//! A site's Discord destination (admins only): its health, the form to add it or change its
//! webhook, a test post, and turning it off, on or deleting it. The webhook URL carries a token,
//! so it is never shown back: only a hint of which webhook is stored.

use leptos::prelude::*;

use crate::destination::{
    HEALTH, Health, HealthView, IntegrationControls, TestOutcome, TestOutcomeView,
};
use crate::layout::{CsrfField, Nav, Notice, NoticeBox, Section, document};

/// A stored Discord destination as the page shows it.
#[derive(Debug, Clone)]
pub struct DiscordStatusView {
    pub id: i64,
    /// Which webhook is stored, for example `discord.com · webhook 1234 · token …abcd`.
    pub webhook_hint: String,
    pub is_forum: bool,
    pub is_enabled: bool,
    pub health: HealthView,
}

/// The Discord page of a site.
#[derive(Debug, Clone)]
pub struct DiscordPageView {
    pub nav: Nav,
    pub site_key: String,
    pub site_name: String,
    pub status: Option<DiscordStatusView>,
    /// The latest test post, if any.
    pub test: Option<TestOutcomeView>,
    pub notice: Option<Notice>,
}

/// Renders the Discord page.
pub fn render_discord(view: DiscordPageView) -> String {
    let csrf = view.nav.csrf.clone();
    let nav = Nav {
        section: Section::Sites,
        ..view.nav
    };
    let key = view.site_key;
    let is_connected = view.status.is_some();
    let is_forum = view.status.as_ref().is_some_and(|s| s.is_forum);
    let reload = format!("/sites/{key}/discord");
    let test = view.test.map(|outcome| {
        view! { <TestOutcome outcome reload=reload.clone()/> }
    });
    let status = view.status.map(|s| {
        let base = format!("/sites/{key}/integrations/{}", s.id);
        let channel = if s.is_forum {
            "a forum channel: one thread per conversation"
        } else {
            "a text channel"
        };
        view! {
            <section class="card" aria-labelledby="status-title">
                <h2 id="status-title">"Status"</h2>
                <Health health=s.health id=HEALTH/>
                <dl class="details">
                    <dt>"Webhook"</dt><dd class="mono" data-hint="webhook">{s.webhook_hint}</dd>
                    <dt>"Posts into"</dt><dd>{channel}</dd>
                </dl>
                <form method="post" action=format!("/sites/{key}/discord/test")>
                    <CsrfField token=csrf.clone()/>
                    <button type="submit" class="button">"Send test message"</button>
                </form>
                <IntegrationControls base is_enabled=s.is_enabled csrf=csrf.clone()/>
            </section>
        }
    });
    let (button, placeholder, required) = if is_connected {
        (
            "Save Discord settings",
            "Stored (leave empty to keep)",
            false,
        )
    } else {
        ("Add Discord", "https://discord.com/api/webhooks/…", true)
    };
    let content = view! {
        <div class="page-head">
            <p class="crumb"><a href=format!("/sites/{key}")>"← "{view.site_name}</a></p>
            <h1>"Discord"</h1>
            <p class="muted">"Every visitor message and agent reply is posted to a Discord channel \
                through a webhook. Replies from Discord do not reach the visitor. Setup steps are in "
                <a href="/docs/integrations/discord.md">"the Discord guide"</a>"."</p>
        </div>
        <NoticeBox notice=view.notice/>
        {test}
        {status}
        <form method="post" action=format!("/sites/{key}/discord") class="card stack" aria-label="Discord settings">
            <CsrfField token=csrf/>
            <div class="field">
                <label for="webhook_url">"Webhook URL"</label>
                <input id="webhook_url" name="webhook_url" type="password" autocomplete="off" class="mono"
                    placeholder=placeholder required=required aria-describedby="webhook-hint"/>
                <p class="hint" id="webhook-hint">"Channel settings, Integrations, Webhooks, New Webhook, \
                    Copy Webhook URL. It contains the webhook's token: Porch stores it and never shows it again."</p>
            </div>
            <div class="field">
                <label><input type="checkbox" name="forum" value="on" checked=is_forum/>
                    " The channel is a forum (one thread per conversation)"</label>
            </div>
            <button type="submit" class="button button-primary">{button}</button>
        </form>
    };
    document("Discord", Some(nav), true, content.into_any())
}
