//! A site's Discord page (admins only): add or change the webhook (checked by the same
//! `check_discord` as the API), and queue a test post through the job runner.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use porch_app::destination::{TEST_OUTCOME, TestOutcomeView};
use porch_app::discord::{DiscordPageView, DiscordStatusView, render_discord};
use porch_app::layout::{Notice, Section};
use serde::Deserialize;

use crate::audit::Actor;
use crate::clock::now_ms;
use crate::http::ClientIp;
use crate::integrations::discord::{DiscordConfig, DiscordSecrets, DiscordSetup, check_discord};
use crate::integrations::{
    CheckedSettings, SetupError, add_integration, fix_integration, open_secrets_as, settings_json,
};
use crate::jobs::{JobKind, plan_discord_test};
use crate::state::AppState;
use crate::store::{self, IntegrationRow, SiteRow};

use super::auth::{NoFields, NoticeQuery};
use super::checkbox::Checkbox;
use super::destinations::{latest_test, load_health};
use super::page::{PageError, html, html_with_status, see_other};
use super::session::{Admin, AdminPosted, SignedIn};
use super::sites::find_site;

/// The site, its Discord destination and the destination's latest test, read together: the
/// round that records a test's refusal blocks the integration in the same write, so the page
/// never shows a failed test beside a healthy integration.
async fn load(app: &AppState, key: &str) -> Result<Loaded, PageError> {
    let site = find_site(app, key).await?;
    let id = site.id;
    let (row, test) = app
        .readers
        .read(move |c| {
            let row = store::find_site_integration(c, id, "discord")?;
            let test = match &row {
                Some(row) => latest_test(c, JobKind::DiscordTest, Some(row.id))?,
                None => None,
            };
            Ok((row, test))
        })
        .await?;
    Ok((site, row, test))
}

type Loaded = (SiteRow, Option<IntegrationRow>, Option<TestOutcomeView>);

/// Which webhook is stored, without its token: host, webhook id and the token's last four
/// characters (enough to tell two webhooks apart).
fn webhook_hint(config: &DiscordConfig, secrets: &DiscordSecrets) -> String {
    let host = reqwest::Url::parse(&secrets.webhook_url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_default();
    let token = secrets.webhook_url.rsplit('/').next().unwrap_or_default();
    let tail: String = token
        .chars()
        .rev()
        .take(4)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("{host} · webhook {} · token …{tail}", config.webhook_id)
}

async fn status(app: &AppState, row: &IntegrationRow) -> Result<DiscordStatusView, PageError> {
    let config: Option<DiscordConfig> = serde_json::from_str(&row.config).ok();
    let secrets: Option<DiscordSecrets> = open_secrets_as(&app.secret_key, row);
    let (webhook_hint, is_forum) = match (&config, &secrets) {
        (Some(config), Some(secrets)) => (webhook_hint(config, secrets), config.is_forum),
        _ => ("unreadable: save the webhook URL again".to_owned(), false),
    };
    Ok(DiscordStatusView {
        id: row.id.0,
        webhook_hint,
        is_forum,
        is_enabled: row.is_enabled,
        health: load_health(app, row).await?,
    })
}

async fn page(
    app: &AppState,
    who: &SignedIn,
    (site, row): (&SiteRow, Option<&IntegrationRow>),
    test: Option<TestOutcomeView>,
    notice: Option<Notice>,
) -> Result<String, PageError> {
    let status = match row {
        Some(row) => Some(status(app, row).await?),
        None => None,
    };
    Ok(render_discord(DiscordPageView {
        nav: who.nav(Section::Sites),
        site_key: site.key.clone(),
        site_name: site.settings.name.clone(),
        status,
        test,
        notice,
    }))
}

/// `GET /sites/{key}/discord`.
pub async fn discord_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Path(key): Path<String>,
    Query(notice): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    let (site, row, test) = load(&app, &key).await?;
    let body = page(&app, &who, (&site, row.as_ref()), test, notice.notice()).await?;
    Ok(html(body))
}

#[derive(Debug, Deserialize)]
pub struct DiscordForm {
    #[serde(default)]
    webhook_url: String,
    #[serde(default)]
    forum: Checkbox,
}

/// `POST /sites/{key}/discord`: adds the destination, or saves a changed one (an empty URL keeps
/// the stored webhook; blocked deliveries resume).
pub async fn save_discord(
    State(app): State<AppState>,
    Path(key): Path<String>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, form }: AdminPosted<DiscordForm>,
) -> Result<Response, PageError> {
    let (site, row, test) = load(&app, &key).await?;
    let stored_url = row
        .as_ref()
        .and_then(|row| open_secrets_as::<DiscordSecrets>(&app.secret_key, row))
        .map(|secrets| secrets.webhook_url);
    let webhook_url = match (form.webhook_url.trim(), stored_url) {
        ("", Some(stored)) => stored,
        (given, _) => given.to_owned(),
    };
    let setup = DiscordSetup {
        webhook_url,
        forum: form.forum.0,
    };
    let actor = Actor::user(&who.user, ip);
    let saved = async {
        let (config, secrets) =
            check_discord(&app.http.known_hosts, &app.config.discord_api_url, setup).await?;
        let (config, secrets) = (settings_json(&config), settings_json(&secrets));
        match &row {
            Some(existing) => {
                let handles = (&app.writer, &app.jobs, &app.secret_key);
                fix_integration(handles, &actor, existing, config, Some(secrets)).await?;
                Ok::<_, SetupError>("discord-saved")
            }
            None => {
                let settings = CheckedSettings {
                    kind: "discord",
                    name: "Discord",
                    config,
                    secrets,
                };
                add_integration((&app.writer, &app.secret_key), &actor, site.id, settings).await?;
                Ok("discord-connected")
            }
        }
    }
    .await;
    match saved {
        Ok(notice) => Ok(see_other(&format!("/sites/{key}/discord?notice={notice}"))),
        Err(SetupError::Store(err)) => Err(err.into()),
        Err(err) => {
            let notice = Some(Notice::Error(err.to_string()));
            let body = page(&app, &who, (&site, row.as_ref()), test, notice).await?;
            Ok(html_with_status(StatusCode::UNPROCESSABLE_ENTITY, body))
        }
    }
}

/// `POST /sites/{key}/discord/test`: queues a test post; the page then shows its outcome
/// (scrolled to it).
pub async fn test_discord(
    State(app): State<AppState>,
    Path(key): Path<String>,
    _admin: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    let (_, row, _) = load(&app, &key).await?;
    let row = row.ok_or_else(|| PageError::not_found("Discord destination"))?;
    let id = row.id;
    let queued = app
        .writer
        .write(move |c| plan_discord_test(c, id, now_ms()))
        .await?;
    app.jobs.submit(queued.into_iter().collect());
    Ok(see_other(&format!("/sites/{key}/discord#{TEST_OUTCOME}")))
}
