//! Admin API for Discord integrations and outgoing webhook endpoints: connect, change (a fixed
//! integration's blocked jobs resume), rotate a webhook secret, read an endpoint's delivery log
//! and replay a delivery from it.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use crate::audit::Actor;
use crate::clock::now_ms;
use crate::integrations::discord::{DiscordConfig, DiscordSecrets, DiscordSetup, check_discord};
use crate::integrations::email::{
    EmailSetup, Mailer, Saved, checked_delay, email_config, save_email,
};
use crate::integrations::webhook::{WebhookSecrets, WebhookSetup, check_webhook, new_secret};
use crate::integrations::{
    CheckedSettings, EndpointChange, Health, Sole, add_integration, add_webhook_endpoint,
    fix_integration, fix_webhook_endpoint, open_secrets_as, rotate_webhook_secret as rotate_secret,
};
use crate::jobs::plan_webhook_replay;
use crate::state::AppState;
use crate::store::{self, IntegrationId, IntegrationRow, JobId, SiteId};

use super::ApiError;
use super::api_integrations::resumed_answer;
use super::auth::ApiAdmin;
use super::client_ip::ClientIp;
use super::strict_json::{NoBody, StrictJson};

/// Attempts shown in a delivery log at once.
const LOG_LIMIT: u32 = 200;

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

/// Integration `id`, of `kind` when given: one of another kind is 404, as a missing one is (this
/// URL names nothing), with a message that says what it is instead.
pub(super) async fn integration_of_kind(
    app: &AppState,
    id: i64,
    kind: Option<&'static str>,
) -> Result<IntegrationRow, ApiError> {
    let id = IntegrationId(id);
    let row = app
        .readers
        .read(move |c| store::find_integration(c, id))
        .await?
        .ok_or_else(|| ApiError::not_found("integration"))?;
    match kind {
        Some(kind) if row.kind != kind => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!(
                "Integration {} is {}, not {}.",
                row.id,
                kind_words(&row.kind),
                kind_words(kind)
            ),
        )),
        _ => Ok(row),
    }
}

/// An integration kind as a sentence names it.
fn kind_words(kind: &str) -> &str {
    match kind {
        "slack" => "a Slack integration",
        "discord" => "a Discord integration",
        "webhook" => "a webhook endpoint",
        "email" => "an email integration",
        other => other,
    }
}

/// `POST /api/v1/sites/{key}/integrations/discord`: connects a site to a Discord channel webhook.
pub async fn create_discord(
    State(app): State<AppState>,
    ApiAdmin(admin): ApiAdmin,
    ClientIp(ip): ClientIp,
    Path(key): Path<String>,
    StrictJson(setup): StrictJson<DiscordSetup>,
) -> Result<Response, ApiError> {
    let site = site_id(&app, &key).await?;
    let (config, secrets) =
        check_discord(&app.http.known_hosts, &app.config.discord_api_url, setup).await?;
    let forum = config.is_forum;
    let settings = CheckedSettings {
        kind: "discord",
        name: "Discord",
        config: to_json(&config)?,
        secrets: to_json(&secrets)?,
    };
    let id = add_integration(
        (&app.writer, &app.secret_key),
        &Actor::user(&admin, ip),
        site,
        settings,
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
    ApiAdmin(admin): ApiAdmin,
    ClientIp(ip): ClientIp,
    Path(id): Path<i64>,
    StrictJson(change): StrictJson<DiscordChange>,
) -> Result<Response, ApiError> {
    let row = integration_of_kind(&app, id, Some("discord")).await?;
    // `forum` left out keeps the stored choice, as a Slack `PUT` keeps what it leaves out: an
    // admin swapping the URL must not turn a forum's threads into plain posts.
    let forum = change.forum.unwrap_or_else(|| {
        serde_json::from_str::<DiscordConfig>(&row.config).is_ok_and(|stored| stored.is_forum)
    });
    // A URL left out (or empty) keeps the stored one, as the page's empty field does: changing
    // only `forum` needs no copy of the secret URL.
    let stored = || open_secrets_as::<DiscordSecrets>(&app.secret_key, &row).map(|s| s.webhook_url);
    let webhook_url = match change.webhook_url.filter(|url| !url.trim().is_empty()) {
        Some(given) => given,
        None => stored().ok_or_else(|| {
            ApiError::invalid("webhook_url is required: no webhook is stored to keep.")
        })?,
    };
    let setup = DiscordSetup { webhook_url, forum };
    let (config, secrets) =
        check_discord(&app.http.known_hosts, &app.config.discord_api_url, setup).await?;
    let resumed = fix_integration(
        (&app.writer, &app.jobs, &app.secret_key),
        &Actor::user(&admin, ip),
        &row,
        to_json(&config)?,
        Some(to_json(&secrets)?),
    )
    .await?;
    resumed_answer(&app, row.id, resumed).await
}

/// The body of `PUT /api/v1/integrations/{id}/discord`.
#[derive(Deserialize)]
pub struct DiscordChange {
    webhook_url: Option<String>,
    forum: Option<bool>,
}

/// `POST /api/v1/sites/{key}/integrations/webhooks`: adds an endpoint; the answer carries its
/// signing secret (`whsec_…`).
pub async fn create_webhook(
    State(app): State<AppState>,
    ApiAdmin(admin): ApiAdmin,
    ClientIp(ip): ClientIp,
    Path(key): Path<String>,
    StrictJson(setup): StrictJson<WebhookSetup>,
) -> Result<Response, ApiError> {
    let site = site_id(&app, &key).await?;
    let config = check_webhook(setup, app.config.allow_private_networks).await?;
    let secrets = WebhookSecrets {
        secret: new_secret(),
        previous: None,
        previous_until: None,
    };
    let settings = CheckedSettings {
        kind: "webhook",
        name: "Webhook",
        config: to_json(&config)?,
        secrets: to_json(&secrets)?,
    };
    let added = add_webhook_endpoint(
        (&app.writer, &app.secret_key),
        &Actor::user(&admin, ip),
        site,
        settings,
        config.url.clone(),
    )
    .await?;
    let id = match added {
        Sole::Added(id) => id,
        Sole::Exists(row) => return Err(url_taken(&row)),
    };
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
    ApiAdmin(admin): ApiAdmin,
    ClientIp(ip): ClientIp,
    Path(id): Path<i64>,
    StrictJson(setup): StrictJson<WebhookSetup>,
) -> Result<Response, ApiError> {
    let row = integration_of_kind(&app, id, Some("webhook")).await?;
    let config = check_webhook(setup, app.config.allow_private_networks).await?;
    let changed = fix_webhook_endpoint(
        (&app.writer, &app.jobs),
        &Actor::user(&admin, ip),
        &row,
        to_json(&config)?,
        config.url.clone(),
    )
    .await?;
    match changed {
        EndpointChange::Saved(resumed) => resumed_answer(&app, row.id, resumed).await,
        EndpointChange::UrlTaken(other) => Err(url_taken(&other)),
    }
}

/// The answer to an add or a change that would give a second endpoint of the site the URL of
/// `other`: every event would reach that receiver twice.
fn url_taken(other: &IntegrationRow) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "conflict",
        format!(
            "This site already has an endpoint for this URL (id {}): change that one.",
            other.id.0
        ),
    )
}

/// `POST /api/v1/integrations/{id}/webhook/rotate`: a new signing secret; the previous one keeps
/// signing alongside it (two signatures per delivery) for 24 hours.
pub async fn rotate_webhook_secret(
    State(app): State<AppState>,
    ApiAdmin(admin): ApiAdmin,
    ClientIp(ip): ClientIp,
    Path(id): Path<i64>,
    _: NoBody,
) -> Result<Response, ApiError> {
    let row = integration_of_kind(&app, id, Some("webhook")).await?;
    let rotated = rotate_secret(
        (&app.writer, &app.jobs, &app.secret_key),
        &Actor::user(&admin, ip),
        &row,
    )
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
    let row = integration_of_kind(&app, id, Some("webhook")).await?;
    let integration = row.id;
    let judged = row.clone();
    let (log, health) = app
        .readers
        .read(move |c| {
            let log = store::list_delivery_log(c, integration, LOG_LIMIT)?;
            Ok((log, Health::read(c, &judged)?))
        })
        .await?;
    Ok(Json(json!({
        "id": row.id,
        "is_enabled": row.is_enabled,
        "status": row.status,
        "last_error": row.last_error,
        "health": health_json(&health),
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
    _: NoBody,
) -> Result<Response, ApiError> {
    let row = integration_of_kind(&app, id, Some("webhook")).await?;
    let integration = row.id;
    let replay = app
        .writer
        .write(move |c| plan_webhook_replay(c, integration, JobId(job), now_ms()))
        .await?
        .ok_or_else(|| ApiError::not_found("finished delivery"))?;
    let new_id = replay.id;
    app.jobs.submit(vec![replay]);
    Ok((StatusCode::ACCEPTED, Json(json!({"job_id": new_id}))).into_response())
}

/// The configured SMTP server, or why there is none.
fn mailer(app: &AppState) -> Result<&Mailer, ApiError> {
    app.mailer.as_deref().ok_or_else(|| {
        ApiError::invalid("Email is not configured: set PORCH_SMTP_URL and PORCH_MAIL_FROM.")
    })
}

/// `POST /api/v1/sites/{key}/integrations/email`: turns on email for a site (the unanswered
/// digest to agents, replies and transcripts to visitors who left an address), 201; on a site
/// that has it, saves the delays and turns it on again if it was off, 200, as the page does.
pub async fn create_email(
    State(app): State<AppState>,
    ApiAdmin(admin): ApiAdmin,
    ClientIp(ip): ClientIp,
    Path(key): Path<String>,
    StrictJson(setup): StrictJson<EmailSetup>,
) -> Result<Response, ApiError> {
    mailer(&app)?;
    for (secs, field) in [
        (setup.unanswered_after_secs, "unanswered_after_secs"),
        (setup.reply_delay_secs, "reply_delay_secs"),
    ] {
        checked_delay(secs, field).map_err(ApiError::invalid)?;
    }
    let site = site_id(&app, &key).await?;
    let handles = (&app.writer, &app.jobs, &app.secret_key);
    let actor = Actor::user(&admin, ip);
    let (status, id) = match save_email(handles, &actor, site, &setup).await? {
        Saved::Created(id) => (StatusCode::CREATED, id),
        Saved::Updated(id) => (StatusCode::OK, id),
    };
    let config = email_config(&setup);
    Ok((status, Json(json!({"id": id, "config": config}))).into_response())
}

#[derive(Debug, Deserialize)]
pub struct TestEmail {
    to: String,
}

/// `POST /api/v1/email/test`: sends a test mail through the configured SMTP server.
pub async fn test_email(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    StrictJson(test): StrictJson<TestEmail>,
) -> Result<Response, ApiError> {
    let mailer = mailer(&app)?;
    // A mistyped address is the request's fault, not the SMTP server's.
    if test.to.trim().parse::<lettre::message::Mailbox>().is_err() {
        return Err(ApiError::invalid("`to` is not an email address."));
    }
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
        .read(move |c| {
            let rows = store::list_site_integrations(c, site)?;
            rows.into_iter()
                .map(|row| Ok((Health::read(c, &row)?, row)))
                .collect::<Result<Vec<_>, store::Error>>()
        })
        .await?;
    let integrations: Vec<serde_json::Value> = rows
        .iter()
        .map(|(health, row)| {
            json!({
                "id": row.id,
                "kind": row.kind,
                "name": row.name,
                "config": serde_json::from_str::<serde_json::Value>(&row.config).unwrap_or_default(),
                "is_enabled": row.is_enabled,
                "status": row.status,
                "last_error": row.last_error,
                "health": health_json(health),
            })
        })
        .collect();
    Ok(Json(json!({"integrations": integrations})).into_response())
}

/// An integration's health as the destination pages judge it: `{"state": "healthy"}`,
/// `{"state": "blocked", "reason"}` or `{"state": "failing", "error", "at"}` (`at` in Unix
/// milliseconds, when the failed attempt started).
fn health_json(health: &Health) -> serde_json::Value {
    match health {
        Health::Healthy => json!({"state": "healthy"}),
        Health::Blocked { reason } => json!({"state": "blocked", "reason": reason}),
        Health::Failing {
            error,
            at,
            is_given_up,
        } => json!({"state": "failing", "error": error, "at": at, "given_up": is_given_up}),
    }
}
