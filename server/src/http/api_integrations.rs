//! Admin API for integrations and delivery jobs: connect Slack, fix a broken integration (its
//! blocked jobs then resume), list and retry failed or blocked jobs. Until the admin pages for
//! integrations exist, this is how an admin connects Slack.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use crate::clock::now_ms;
use crate::slack::{SlackConfig, SlackIntegration, SlackSecrets};
use crate::state::AppState;
use crate::store::{self, IntegrationId, JobId, JobRow, NewIntegration};

use super::ApiError;
use super::auth::ApiUser;

/// Most jobs listed at once.
const LIST_LIMIT: u32 = 500;

fn require_admin(user: &ApiUser) -> Result<(), ApiError> {
    if user.0.role == "admin" {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "Only admins manage integrations and jobs.",
        ))
    }
}

fn job_json(job: &JobRow) -> serde_json::Value {
    json!({
        "id": job.id,
        "kind": job.kind,
        "state": job.state,
        "integration_id": job.integration_id,
        "attempt": job.attempt,
        "run_at": job.run_at,
        "last_error": job.last_error,
        "created_at": job.created_at,
    })
}

#[derive(Debug, Deserialize)]
pub struct SlackSetup {
    bot_token: String,
    channel_id: String,
    #[serde(default)]
    signing_secret: Option<String>,
    #[serde(default)]
    app_token: Option<String>,
}

/// Checks the bot token with `auth.test` and builds the stored settings.
async fn checked_slack(app: &AppState, setup: SlackSetup) -> Result<SlackIntegration, ApiError> {
    let channel = setup.channel_id.trim();
    if channel.is_empty() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            "channel_id is required (C… or G…).",
        ));
    }
    if setup.signing_secret.is_none() && setup.app_token.is_none() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            "Give a signing_secret (Events API) or an app_token (Socket Mode), or replies cannot reach Porch.",
        ));
    }
    let auth = app
        .slack
        .api
        .auth_test(setup.bot_token.trim())
        .await
        .map_err(|err| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "slack_refused",
                format!("Slack did not accept the bot token: {err}"),
            )
        })?;
    Ok(SlackIntegration {
        config: SlackConfig {
            team_id: auth.team_id,
            channel_id: channel.to_owned(),
            bot_user_id: auth.user_id,
            bot_id: auth.bot_id,
        },
        secrets: SlackSecrets {
            bot_token: setup.bot_token.trim().to_owned(),
            signing_secret: setup
                .signing_secret
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty()),
            app_token: setup
                .app_token
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty()),
        },
    })
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

/// `POST /api/v1/sites/{key}/integrations/slack`: connects a site to a Slack channel.
pub async fn create_slack(
    State(app): State<AppState>,
    user: ApiUser,
    Path(key): Path<String>,
    Json(setup): Json<SlackSetup>,
) -> Result<Response, ApiError> {
    require_admin(&user)?;
    let site = app
        .sites
        .find(&key)
        .await?
        .ok_or_else(|| ApiError::not_found("site"))?;
    let slack = checked_slack(&app, setup).await?;
    let (config, secrets) = (to_json(&slack.config)?, to_json(&slack.secrets)?);
    let site_id = site.id;
    let id = app
        .writer
        .write(move |c| {
            store::insert_integration(
                c,
                &NewIntegration {
                    site_id,
                    kind: "slack",
                    name: "Slack",
                    config: &config,
                    secrets: &secrets,
                    now: now_ms(),
                },
            )
        })
        .await?;
    app.slack.rescan.notify_one();
    let events_url = format!("{}/integrations/slack/{id}/events", app.public_url);
    Ok((
        StatusCode::CREATED,
        Json(json!({"id": id, "team_id": slack.config.team_id, "channel_id": slack.config.channel_id, "events_url": events_url})),
    )
        .into_response())
}

/// `PUT /api/v1/integrations/{id}/slack`: replaces a Slack integration's settings (for example
/// a new token after a revocation). Its blocked jobs are queued again.
pub async fn update_slack(
    State(app): State<AppState>,
    user: ApiUser,
    Path(id): Path<i64>,
    Json(setup): Json<SlackSetup>,
) -> Result<Response, ApiError> {
    require_admin(&user)?;
    let id = IntegrationId(id);
    let existing = app
        .readers
        .read(move |c| store::find_integration(c, id))
        .await?;
    if existing.is_none_or(|row| row.kind != "slack") {
        return Err(ApiError::not_found("integration"));
    }
    let slack = checked_slack(&app, setup).await?;
    let (config, secrets) = (to_json(&slack.config)?, to_json(&slack.secrets)?);
    let resumed = app
        .writer
        .write(move |c| {
            let now = now_ms();
            store::update_integration_settings(c, id, &config, &secrets, now)?;
            store::resume_integration_jobs(c, id, now)
        })
        .await?;
    let count = resumed.len();
    app.jobs.submit(resumed);
    app.slack.rescan.notify_one();
    Ok(Json(json!({"id": id, "status": "ok", "resumed_jobs": count})).into_response())
}

#[derive(Debug, Deserialize)]
pub struct JobFilter {
    #[serde(default = "failed")]
    state: String,
}

fn failed() -> String {
    "failed".to_owned()
}

/// `GET /api/v1/jobs?state=failed|blocked|queued|running|done`: deliveries in a state.
pub async fn list_jobs(
    State(app): State<AppState>,
    user: ApiUser,
    Query(filter): Query<JobFilter>,
) -> Result<Response, ApiError> {
    require_admin(&user)?;
    if !["queued", "running", "done", "failed", "blocked"].contains(&filter.state.as_str()) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            "Unknown job state.",
        ));
    }
    let jobs = app
        .readers
        .read(move |c| store::list_jobs_in_state(c, &filter.state, LIST_LIMIT))
        .await?;
    Ok(Json(json!({"jobs": jobs.iter().map(job_json).collect::<Vec<_>>()})).into_response())
}

/// `POST /api/v1/jobs/{id}/retry`: queues one failed or blocked job again.
pub async fn retry_job(
    State(app): State<AppState>,
    user: ApiUser,
    Path(id): Path<i64>,
) -> Result<Response, ApiError> {
    require_admin(&user)?;
    let jobs = app
        .writer
        .write(move |c| store::retry_jobs(c, Some(JobId(id)), now_ms()))
        .await?;
    if jobs.is_empty() {
        return Err(ApiError::not_found("failed or blocked job"));
    }
    app.jobs.submit(jobs);
    Ok(Json(json!({"retried": 1})).into_response())
}

/// `POST /api/v1/jobs/retry`: queues every failed or blocked job again.
pub async fn retry_all_jobs(
    State(app): State<AppState>,
    user: ApiUser,
) -> Result<Response, ApiError> {
    require_admin(&user)?;
    let jobs = app
        .writer
        .write(move |c| store::retry_jobs(c, None, now_ms()))
        .await?;
    let count = jobs.len();
    app.jobs.submit(jobs);
    Ok(Json(json!({"retried": count})).into_response())
}
