//! Admin API for integrations and delivery jobs: connect Slack, fix a broken integration (its
//! blocked jobs then resume), list and retry failed or blocked jobs.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use crate::audit::Actor;
use crate::integrations::SetupError;
use crate::integrations::slack::{self, SlackSetup, connect_slack};
use crate::jobs::{self, Retried};
use crate::state::AppState;
use crate::store::{self, IntegrationId, JobId, JobRow};

use super::api_deliveries::integration_of_kind;
use super::auth::ApiAdmin;
use super::client_ip::ClientIp;
use super::strict_json::{NoBody, StrictJson};
use super::strict_query::StrictQuery;
use super::{ApiError, paging};

/// Most jobs listed at once.
const LIST_LIMIT: u32 = 500;

fn job_json((job, external_ref): &(JobRow, Option<String>)) -> serde_json::Value {
    json!({
        "id": job.id,
        "kind": job.kind,
        "state": job.state,
        "integration_id": job.integration_id,
        "attempt": job.attempt,
        "run_at": job.run_at,
        "last_error": job.last_error,
        "external_ref": external_ref,
        "created_at": job.created_at,
    })
}

impl From<SetupError> for ApiError {
    fn from(err: SetupError) -> Self {
        match err {
            SetupError::Invalid(why) => Self::invalid(why),
            SetupError::Refused { code, message } => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
            }
            SetupError::Taken(why) => Self::new(StatusCode::CONFLICT, "conflict", why),
            SetupError::Store(err) => err.into(),
        }
    }
}

/// `POST /api/v1/sites/{key}/integrations/slack`: connects a site to a Slack channel.
pub async fn create_slack(
    State(app): State<AppState>,
    ApiAdmin(admin): ApiAdmin,
    ClientIp(ip): ClientIp,
    Path(key): Path<String>,
    StrictJson(setup): StrictJson<SlackSetup>,
) -> Result<Response, ApiError> {
    let site = app
        .sites
        .find(&key)
        .await?
        .ok_or_else(|| ApiError::not_found("site"))?;
    let (id, config) = connect_slack(&app.slack, &Actor::user(&admin, ip), site.id, setup).await?;
    let url = |endpoint: &str| format!("{}/integrations/slack/{id}/{endpoint}", app.public_url);
    let body = json!({
        "id": id, "team_id": config.team_id, "channel_id": config.channel_id,
        "events_url": url("events"), "commands_url": url("commands"),
        "interactive_url": url("interactive"),
    });
    Ok((StatusCode::CREATED, Json(body)).into_response())
}

/// `PUT /api/v1/integrations/{id}/slack`: replaces a Slack integration's settings (for example
/// a new token after a revocation). Its blocked jobs are queued again.
pub async fn update_slack(
    State(app): State<AppState>,
    ApiAdmin(admin): ApiAdmin,
    ClientIp(ip): ClientIp,
    Path(id): Path<i64>,
    StrictJson(setup): StrictJson<SlackSetup>,
) -> Result<Response, ApiError> {
    let existing = integration_of_kind(&app, id, Some("slack")).await?;
    let id = existing.id;
    let resumed =
        slack::update_slack(&app.slack, &Actor::user(&admin, ip), &existing, setup).await?;
    resumed_answer(&app, id, resumed).await
}

/// The answer to saving an integration's settings: how many blocked jobs were queued again, and
/// its status once that ended (`broken` when a delivery blocked it again or an admin turned it
/// off meanwhile, which stops the resume: docs/jobs.md, "Blocking").
pub(super) async fn resumed_answer(
    app: &AppState,
    id: IntegrationId,
    resumed: usize,
) -> Result<Response, ApiError> {
    let row = app
        .readers
        .read(move |c| store::find_integration(c, id))
        .await?
        .ok_or_else(|| ApiError::not_found("integration"))?;
    let answer = json!({"id": id, "status": row.status, "resumed_jobs": resumed});
    Ok(Json(answer).into_response())
}

#[derive(Debug, Deserialize)]
pub struct JobFilter {
    #[serde(default = "failed")]
    state: String,
    /// Jobs on a page, 1 to [`LIST_LIMIT`] (text, so a bad value gets this API's JSON error).
    limit: Option<String>,
    /// The previous page's `next`: the id of its last job.
    before: Option<String>,
}

fn failed() -> String {
    "failed".to_owned()
}

/// `GET /api/v1/jobs?state=failed|blocked|queued|running|done&limit=…&before=…`: deliveries in
/// a state, newest first, a page at a time; `next` is the cursor of the following page.
pub async fn list_jobs(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    StrictQuery(filter): StrictQuery<JobFilter>,
) -> Result<Response, ApiError> {
    if !["queued", "running", "done", "failed", "blocked"].contains(&filter.state.as_str()) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            "Unknown job state.",
        ));
    }
    let limit = paging::limit(filter.limit.as_deref(), LIST_LIMIT)?;
    let before = match filter.before.as_deref() {
        None => None,
        Some(raw) => Some(
            raw.parse::<i64>()
                .ok()
                .filter(|id| *id > 0)
                .map(JobId)
                .ok_or_else(|| {
                    ApiError::invalid("before must be the `next` value of a previous page.")
                })?,
        ),
    };
    let rows = app
        .readers
        .read(move |c| {
            store::list_jobs_in_state(c, &filter.state, before, paging::rows_to_read(limit))
        })
        .await?;
    let (jobs, next) = paging::page(rows, limit, |(job, _)| job.id.to_string());
    Ok(
        Json(json!({"jobs": jobs.iter().map(job_json).collect::<Vec<_>>(), "next": next}))
            .into_response(),
    )
}

/// `POST /api/v1/jobs/{id}/retry`: queues one failed or blocked job again.
pub async fn retry_job(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    Path(id): Path<i64>,
    _: NoBody,
) -> Result<Response, ApiError> {
    match jobs::retry_job(&app.writer, &app.jobs, JobId(id)).await? {
        Retried::Queued => Ok(Json(json!({"retried": 1, "waiting": 0})).into_response()),
        // Its integration is broken or off: it got its fresh budget and waits for the fix.
        Retried::Waits => Ok(Json(json!({"retried": 0, "waiting": 1})).into_response()),
        Retried::NotRetryable => Err(ApiError::not_found("failed or blocked job")),
    }
}

/// `POST /api/v1/jobs/retry`: queues every failed or blocked job again.
pub async fn retry_all_jobs(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    _: NoBody,
) -> Result<Response, ApiError> {
    let count = jobs::retry_all_jobs(&app.writer, &app.jobs).await?;
    Ok(Json(json!({"retried": count})).into_response())
}

/// `DELETE /api/v1/jobs/{id}`: dismisses one failed job (deleted, with an audit event).
pub async fn dismiss_job(
    State(app): State<AppState>,
    ApiAdmin(admin): ApiAdmin,
    ClientIp(ip): ClientIp,
    Path(id): Path<i64>,
    _: NoBody,
) -> Result<Response, ApiError> {
    if jobs::dismiss_job(&app.writer, &Actor::user(&admin, ip), JobId(id)).await? {
        Ok(Json(json!({"id": id, "dismissed": true})).into_response())
    } else {
        Err(ApiError::not_found("failed job"))
    }
}

/// `POST /api/v1/jobs/dismiss`: dismisses every failed job but test messages.
pub async fn dismiss_failed_jobs(
    State(app): State<AppState>,
    ApiAdmin(admin): ApiAdmin,
    ClientIp(ip): ClientIp,
    _: NoBody,
) -> Result<Response, ApiError> {
    let count = jobs::dismiss_failed_jobs(&app.writer, &Actor::user(&admin, ip)).await?;
    Ok(Json(json!({"dismissed": count})).into_response())
}
