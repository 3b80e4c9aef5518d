//! Admin API for Discord integrations and outgoing webhook endpoints: connect, change (a fixed
//! integration's blocked jobs resume), rotate a webhook secret, read an endpoint's delivery log
//! and replay a delivery from it.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use crate::clock::now_ms;
use crate::jobs::discord::{DiscordConfig, DiscordSecrets};
use crate::jobs::ssrf;
use crate::jobs::webhook::{WebhookConfig, WebhookSecrets, new_secret};
use crate::state::AppState;
use crate::store::{self, IntegrationId, IntegrationRow, JobId, NewIntegration, SiteId};

use super::ApiError;
use super::auth::ApiAdmin;

/// Attempts shown in a delivery log at once.
const LOG_LIMIT: u32 = 200;

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message)
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, ApiError> {
    serde_json::to_string(value).map_err(|_| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Could not store the settings.",
        )
    })
}

async fn site_id(app: &AppState, key: &str) -> Result<SiteId, ApiError> {
    Ok(app
        .sites
        .find(key)
        .await?
        .ok_or_else(|| ApiError::not_found("site"))?
        .id)
}

async fn integration_of_kind(
    app: &AppState,
    id: i64,
    kind: &'static str,
) -> Result<IntegrationRow, ApiError> {
    let id = IntegrationId(id);
    app.readers
        .read(move |c| store::find_integration(c, id))
        .await?
        .filter(|row| row.kind == kind)
        .ok_or_else(|| ApiError::not_found("integration"))
}

async fn insert(
    app: &AppState,
    site_id: SiteId,
    kind: &'static str,
    name: &'static str,
    config: String,
    secrets: String,
) -> Result<IntegrationId, ApiError> {
    Ok(app
        .writer
        .write(move |c| {
            store::insert_integration(
                c,
                &NewIntegration {
                    site_id,
                    kind,
                    name,
                    config: &config,
                    secrets: &secrets,
                    now: now_ms(),
                },
            )
        })
        .await?)
}

/// Saves new settings, turns the integration back on and queues its blocked jobs again.
async fn replace_settings(
    app: &AppState,
    id: IntegrationId,
    config: String,
    secrets: String,
) -> Result<usize, ApiError> {
    let resumed = app
        .writer
        .write(move |c| {
            let now = now_ms();
            store::update_integration_settings(c, id, &config, &secrets, now)?;
            store::enable_integration(c, id, now)?;
            store::resume_integration_jobs(c, id, now)
        })
        .await?;
    let count = resumed.len();
    app.jobs.submit(resumed);
    Ok(count)
}

#[derive(Debug, Deserialize)]
pub struct DiscordSetup {
    webhook_url: String,
    /// The webhook's channel is a forum: one thread per conversation.
    #[serde(default)]
    forum: bool,
}

/// Checks that the URL is a Discord webhook (under the configured API base) and that Discord
/// knows it, and builds the stored settings.
async fn checked_discord(
    app: &AppState,
    setup: DiscordSetup,
) -> Result<(DiscordConfig, DiscordSecrets), ApiError> {
    let base = app.config.discord_api_url.trim_end_matches('/');
    let url = setup.webhook_url.trim();
    let url = url.split(['?', '#']).next().unwrap_or(url);
    let rest = url
        .strip_prefix(&format!("{base}/webhooks/"))
        .or_else(|| url.strip_prefix("https://discordapp.com/api/webhooks/"))
        .ok_or_else(|| {
            invalid(format!(
                "webhook_url must be a Discord webhook URL ({base}/webhooks/…)."
            ))
        })?;
    let mut segments = rest.trim_end_matches('/').split('/');
    let (Some(webhook_id), Some(token), None) = (segments.next(), segments.next(), segments.next())
    else {
        return Err(invalid("webhook_url must end in /webhooks/{id}/{token}."));
    };
    if webhook_id.is_empty() || token.is_empty() {
        return Err(invalid("webhook_url must end in /webhooks/{id}/{token}."));
    }
    // A GET on a webhook URL returns the webhook: a wrong or deleted one is refused now rather
    // than at the first delivery.
    let probe = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|_| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "Could not build an HTTP client.",
            )
        })?;
    let known = probe.get(url).send().await.map(|r| r.status());
    match known {
        Ok(status) if status.is_success() => {}
        Ok(status) => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "discord_refused",
                format!("Discord does not know this webhook (HTTP {status})."),
            ));
        }
        Err(err) => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "discord_unreachable",
                format!("Could not reach Discord: {}", err.without_url()),
            ));
        }
    }
    Ok((
        DiscordConfig {
            is_forum: setup.forum,
            webhook_id: webhook_id.to_owned(),
        },
        DiscordSecrets {
            webhook_url: url.to_owned(),
        },
    ))
}

/// `POST /api/v1/sites/{key}/integrations/discord`: connects a site to a Discord channel webhook.
pub async fn create_discord(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    Path(key): Path<String>,
    Json(setup): Json<DiscordSetup>,
) -> Result<Response, ApiError> {
    let site = site_id(&app, &key).await?;
    let (config, secrets) = checked_discord(&app, setup).await?;
    let forum = config.is_forum;
    let id = insert(
        &app,
        site,
        "discord",
        "Discord",
        to_json(&config)?,
        to_json(&secrets)?,
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({"id": id, "forum": forum, "webhook_id": config.webhook_id})),
    )
        .into_response())
}

/// `PUT /api/v1/integrations/{id}/discord`: replaces the webhook (for example after Discord
/// deleted the old one); blocked jobs resume.
pub async fn update_discord(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    Path(id): Path<i64>,
    Json(setup): Json<DiscordSetup>,
) -> Result<Response, ApiError> {
    let row = integration_of_kind(&app, id, "discord").await?;
    let (config, secrets) = checked_discord(&app, setup).await?;
    let resumed = replace_settings(&app, row.id, to_json(&config)?, to_json(&secrets)?).await?;
    Ok(Json(json!({"id": row.id, "status": "ok", "resumed_jobs": resumed})).into_response())
}

#[derive(Debug, Deserialize)]
pub struct WebhookSetup {
    url: String,
    events: Vec<String>,
}

async fn checked_webhook(app: &AppState, setup: WebhookSetup) -> Result<WebhookConfig, ApiError> {
    if setup.events.is_empty() {
        return Err(invalid(format!(
            "Choose at least one event: {}.",
            store::WEBHOOK_EVENTS.join(", ")
        )));
    }
    if let Some(unknown) = setup
        .events
        .iter()
        .find(|e| !store::WEBHOOK_EVENTS.contains(&e.as_str()))
    {
        return Err(invalid(format!(
            "Unknown event {unknown}; events are {}.",
            store::WEBHOOK_EVENTS.join(", ")
        )));
    }
    let url = ssrf::check_url(&setup.url, app.config.allow_private_networks)
        .await
        .map_err(|refused| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "url_refused",
                format!("The URL is refused: {refused}."),
            )
        })?;
    let mut events = setup.events;
    events.sort();
    events.dedup();
    Ok(WebhookConfig {
        url: url.to_string(),
        events,
    })
}

/// `POST /api/v1/sites/{key}/integrations/webhooks`: adds an endpoint; the answer carries its
/// signing secret (`whsec_…`).
pub async fn create_webhook(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    Path(key): Path<String>,
    Json(setup): Json<WebhookSetup>,
) -> Result<Response, ApiError> {
    let site = site_id(&app, &key).await?;
    let config = checked_webhook(&app, setup).await?;
    let secrets = WebhookSecrets {
        secret: new_secret(),
        previous: None,
        previous_until: None,
    };
    let id = insert(
        &app,
        site,
        "webhook",
        "Webhook",
        to_json(&config)?,
        to_json(&secrets)?,
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(
            json!({"id": id, "url": config.url, "events": config.events, "secret": secrets.secret}),
        ),
    )
        .into_response())
}

/// `PUT /api/v1/integrations/{id}/webhook`: changes the URL or events; also turns an endpoint
/// disabled by a 410 back on. Blocked deliveries resume.
pub async fn update_webhook(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    Path(id): Path<i64>,
    Json(setup): Json<WebhookSetup>,
) -> Result<Response, ApiError> {
    let row = integration_of_kind(&app, id, "webhook").await?;
    let config = checked_webhook(&app, setup).await?;
    let resumed = replace_settings(&app, row.id, to_json(&config)?, row.secrets.clone()).await?;
    Ok(Json(json!({"id": row.id, "status": "ok", "resumed_jobs": resumed})).into_response())
}

/// `POST /api/v1/integrations/{id}/webhook/rotate`: a new signing secret; the previous one keeps
/// signing alongside it (two signatures per delivery) for 24 hours.
pub async fn rotate_webhook_secret(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    Path(id): Path<i64>,
) -> Result<Response, ApiError> {
    let row = integration_of_kind(&app, id, "webhook").await?;
    let current: WebhookSecrets = serde_json::from_str(&row.secrets)
        .map_err(|_| invalid("The endpoint's secret is unreadable; delete and add it again."))?;
    let now = now_ms();
    let rotated = current.rotated(now);
    let secrets = to_json(&rotated)?;
    let (config, integration) = (row.config.clone(), row.id);
    app.writer
        .write(move |c| store::update_integration_settings(c, integration, &config, &secrets, now))
        .await?;
    Ok(Json(json!({
        "id": row.id,
        "secret": rotated.secret,
        "previous_valid_until": rotated.previous_until,
    }))
    .into_response())
}

/// `GET /api/v1/integrations/{id}/deliveries`: the endpoint's delivery log, newest first (one
/// row per attempt: event, attempt, status code, latency, error).
pub async fn list_deliveries(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    Path(id): Path<i64>,
) -> Result<Response, ApiError> {
    let row = integration_of_kind(&app, id, "webhook").await?;
    let integration = row.id;
    let log = app
        .readers
        .read(move |c| store::list_delivery_log(c, integration, LOG_LIMIT))
        .await?;
    Ok(Json(json!({
        "id": row.id,
        "is_enabled": row.is_enabled,
        "status": row.status,
        "last_error": row.last_error,
        "deliveries": log,
    }))
    .into_response())
}

/// `POST /api/v1/integrations/{id}/deliveries/{job}/replay`: sends a finished delivery again
/// (same `webhook-id`, fresh timestamp and signature) as a new job.
pub async fn replay_delivery(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    Path((id, job)): Path<(i64, i64)>,
) -> Result<Response, ApiError> {
    let row = integration_of_kind(&app, id, "webhook").await?;
    let integration = row.id;
    let replay = app
        .writer
        .write(move |c| store::replay_webhook_job(c, integration, JobId(job), now_ms()))
        .await?
        .ok_or_else(|| ApiError::not_found("finished delivery"))?;
    let new_id = replay.id;
    app.jobs.submit(vec![replay]);
    Ok((StatusCode::ACCEPTED, Json(json!({"job_id": new_id}))).into_response())
}

fn mailer(app: &AppState) -> Result<crate::jobs::email::Mailer, ApiError> {
    let (Some(url), Some(from)) = (&app.config.smtp_url, &app.config.mail_from) else {
        return Err(invalid(
            "Email is not configured: set PORCH_SMTP_URL and PORCH_MAIL_FROM.",
        ));
    };
    crate::jobs::email::Mailer::new(url.expose(), from).map_err(|err| invalid(err.to_string()))
}

#[derive(Debug, Deserialize)]
pub struct EmailSetup {
    /// Agents get the digest when a new conversation has no reply after this long.
    #[serde(default = "default_unanswered_after")]
    unanswered_after_secs: u32,
    /// An agent reply is mailed to a visitor who left an address if they are still away this
    /// long after it.
    #[serde(default = "default_reply_delay")]
    reply_delay_secs: u32,
}

fn default_unanswered_after() -> u32 {
    300
}

fn default_reply_delay() -> u32 {
    30
}

/// `POST /api/v1/sites/{key}/integrations/email`: turns on email for a site (the unanswered
/// digest to agents, replies and transcripts to visitors who left an address).
pub async fn create_email(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    Path(key): Path<String>,
    Json(setup): Json<EmailSetup>,
) -> Result<Response, ApiError> {
    mailer(&app)?;
    let site = site_id(&app, &key).await?;
    let config = json!({
        "unanswered_after_ms": i64::from(setup.unanswered_after_secs) * 1000,
        "reply_delay_ms": i64::from(setup.reply_delay_secs) * 1000,
    });
    let id = insert(
        &app,
        site,
        "email",
        "Email",
        config.to_string(),
        "{}".into(),
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({"id": id, "config": config})),
    )
        .into_response())
}

#[derive(Debug, Deserialize)]
pub struct TestEmail {
    to: String,
}

/// `POST /api/v1/email/test`: sends a test mail through the configured SMTP server.
pub async fn test_email(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    Json(test): Json<TestEmail>,
) -> Result<Response, ApiError> {
    let mailer = mailer(&app)?;
    mailer.send_test(test.to.trim()).await.map_err(|err| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "smtp_failed",
            format!("The test mail was not sent: {err}"),
        )
    })?;
    Ok(Json(json!({"sent": true})).into_response())
}

/// `GET /api/v1/sites/{key}/integrations`: the site's integrations of every kind with their
/// settings and health, never their secrets.
pub async fn list_integrations(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    Path(key): Path<String>,
) -> Result<Response, ApiError> {
    let site = site_id(&app, &key).await?;
    let rows = app
        .readers
        .read(move |c| store::list_site_integrations(c, site))
        .await?;
    let integrations: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            json!({
                "id": row.id,
                "kind": row.kind,
                "name": row.name,
                "config": serde_json::from_str::<serde_json::Value>(&row.config).unwrap_or_default(),
                "is_enabled": row.is_enabled,
                "status": row.status,
                "last_error": row.last_error,
            })
        })
        .collect();
    Ok(Json(json!({"integrations": integrations})).into_response())
}
