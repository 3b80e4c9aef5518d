//! A site's Slack connection (admins only): its status and last error, and the form to connect
//! it or fix it. Secrets are never shown back; leaving a secret field empty keeps the stored one.

use leptos::prelude::*;

use crate::destination::{Health, HealthView, IntegrationControls};
use crate::layout::{CsrfField, Nav, Notice, NoticeBox, Section, document};

/// A connected Slack integration as the page shows it.
#[derive(Debug, Clone)]
pub struct SlackStatusView {
    pub id: i64,
    pub team_id: String,
    pub channel_id: String,
    /// "Socket Mode", "Events API" or both.
    pub mode: String,
    /// Where Slack sends events in Events API mode.
    pub events_url: String,
    /// Where Slack sends `/porch` commands and shortcuts in Events API mode (the manifest's
    /// slash command URL and interactivity request URL).
    pub commands_url: String,
    pub interactive_url: String,
    pub health: HealthView,
    pub is_enabled: bool,
    /// Which secrets are stored (never their values).
    pub has_signing_secret: bool,
    pub has_app_token: bool,
}

/// The Slack page of a site.
#[derive(Debug, Clone)]
pub struct SlackPageView {
    pub nav: Nav,
    pub site_key: String,
    pub site_name: String,
    pub status: Option<SlackStatusView>,
    /// A refused form's channel id, shown again as typed (the secrets never are).
    pub typed_channel: Option<String>,
    pub notice: Option<Notice>,
}

fn secret_field(
    id: &'static str,
    label: &'static str,
    hint: &'static str,
    is_stored: bool,
) -> impl IntoView {
    let hint_id = format!("{id}-hint");
    let placeholder = if is_stored {
        "Stored (leave empty to keep)"
    } else {
        ""
    };
    view! {
        <div class="field">
            <label for=id>{label}</label>
            <input id=id name=id type="password" autocomplete="off" class="mono" placeholder=placeholder
                aria-describedby=hint_id.clone()/>
            <p class="hint" id=hint_id>{hint}</p>
        </div>
    }
}

/// Renders the Slack page.
pub fn render_slack(view: SlackPageView) -> String {
    let csrf = view.nav.csrf.clone();
    let nav = Nav {
        section: Section::Sites,
        ..view.nav
    };
    let key = view.site_key;
    let is_connected = view.status.is_some();
    let channel = view
        .typed_channel
        .clone()
        .or_else(|| view.status.as_ref().map(|s| s.channel_id.clone()))
        .unwrap_or_default();
    let has_signing_secret = view.status.as_ref().is_some_and(|s| s.has_signing_secret);
    let has_app_token = view.status.as_ref().is_some_and(|s| s.has_app_token);
    let status = view.status.map(|s| {
        let base = format!("/sites/{key}/integrations/{}", s.id);
        view! {
            <section class="card" aria-labelledby="status-title">
                <h2 id="status-title">"Status"</h2>
                <Health health=s.health/>
                <dl class="details">
                    <dt>"Workspace"</dt><dd class="mono">{s.team_id}</dd>
                    <dt>"Channel"</dt><dd class="mono">{s.channel_id}</dd>
                    <dt>"Replies arrive by"</dt><dd>{s.mode}</dd>
                    <dt>"Events URL"</dt><dd class="mono">{s.events_url}</dd>
                    <dt>"Slash command URL"</dt><dd class="mono">{s.commands_url}</dd>
                    <dt>"Interactivity URL"</dt><dd class="mono">{s.interactive_url}</dd>
                </dl>
                <form method="post" action=format!("/sites/{key}/slack/check")>
                    <CsrfField token=csrf.clone()/>
                    <button type="submit" class="button">"Check connection"</button>
                </form>
                <IntegrationControls base is_enabled=s.is_enabled csrf=csrf.clone()/>
            </section>
        }
    });
    let button = if is_connected {
        "Save Slack settings"
    } else {
        "Connect Slack"
    };
    let content = view! {
        <div class="page-head">
            <p class="crumb"><a href=format!("/sites/{key}")>"← "{view.site_name}</a></p>
            <h1>"Slack"</h1>
            <p class="muted">"Every conversation becomes a thread in one channel; a reply in the thread \
                reaches the visitor, and a reply starting with "<code>"note:"</code>" stays private. \
                Setup steps and the app manifest are in "
                <a href="/docs/integrations/slack.md">"the Slack guide"</a>"."</p>
        </div>
        <NoticeBox notice=view.notice/>
        {status}
        <form method="post" action=format!("/sites/{key}/slack") class="card stack" aria-label="Slack settings">
            <CsrfField token=csrf/>
            {secret_field("bot_token", "Bot token", "Starts with xoxb-; from OAuth & Permissions after installing the app.", is_connected)}
            <div class="field">
                <label for="channel_id">"Channel id"</label>
                <input id="channel_id" name="channel_id" type="text" required class="mono" value=channel
                    aria-describedby="channel-hint"/>
                <p class="hint" id="channel-hint">"Starts with C or G (channel details, About). Invite the bot there first."</p>
            </div>
            {secret_field("signing_secret", "Signing secret (Events API)", "From Basic Information; needed when Slack sends events to Porch's URL.", has_signing_secret)}
            {secret_field("app_token", "App-level token (Socket Mode)", "Starts with xapp-, scope connections:write; needed when Porch has no public URL.", has_app_token)}
            <button type="submit" class="button button-primary">{button}</button>
        </form>
    };
    document("Slack", Some(nav), false, content.into_any())
}
