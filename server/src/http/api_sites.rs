//! Sites over the API (docs/api.md): the list and one site for any token, so a script can name
//! the `site` of a conversation; a site's retention setting and attachment size limit (admins
//! only), each read and replaced with the same validation and audit record (`site.updated`) as
//! the site page.

use axum::Json;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use crate::attachments::HARD_CAP_BYTES;
use crate::audit::Actor;
use crate::chat::{self, SiteSettingsInput};
use crate::state::AppState;
use crate::store::{self, SiteRow};

use super::ApiError;
use super::auth::{ApiAdmin, ApiUser};
use super::client_ip::ClientIp;
use super::strict_json::StrictJson;

/// The body of `PUT /api/v1/sites/{key}/retention`.
#[derive(Debug, Deserialize)]
pub struct RetentionBody {
    /// Days; `null` keeps conversations for ever. Required, `null` included: a body without it
    /// (a misspelt key) is refused rather than read as "keep for ever". Read as any whole number,
    /// so `-1` is told the field's range (the form's check) rather than a Rust type's.
    #[serde(deserialize_with = "Option::deserialize")]
    retention_days: Option<i64>,
}

async fn find_site(app: &AppState, key: &str) -> Result<SiteRow, ApiError> {
    let owned = key.to_owned();
    app.readers
        .read(move |c| store::find_site_by_key(c, &owned))
        .await?
        .ok_or_else(|| ApiError::not_found("site"))
}

/// A site as the API shows it: what a script needs to name and place it, not its look or limits.
fn site_json(site: &SiteRow) -> serde_json::Value {
    json!({
        "key": site.key,
        "name": site.settings.name,
        "origins": site.settings.origins,
        "created_at": site.created_at,
    })
}

/// `GET /api/v1/sites`: every site, oldest first.
pub async fn list_sites(State(app): State<AppState>, _user: ApiUser) -> Result<Response, ApiError> {
    let sites = app.readers.read(store::list_sites).await?;
    let sites: Vec<_> = sites.iter().map(site_json).collect();
    Ok(Json(json!({ "sites": sites })).into_response())
}

/// `GET /api/v1/sites/{key}`: one site, in the shape of the list's items.
pub async fn get_site(
    State(app): State<AppState>,
    _user: ApiUser,
    Path(key): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(site_json(&find_site(&app, &key).await?)).into_response())
}

fn answer(key: &str, days: Option<u32>) -> Response {
    Json(json!({"site": key, "retention_days": days})).into_response()
}

/// `GET /api/v1/sites/{key}/retention`.
pub async fn get_retention(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    Path(key): Path<String>,
) -> Result<Response, ApiError> {
    let site = find_site(&app, &key).await?;
    Ok(answer(&key, site.settings.retention_days))
}

/// `PUT /api/v1/sites/{key}/retention` with `{"retention_days": 30}` or `null`.
pub async fn put_retention(
    State(app): State<AppState>,
    ApiAdmin(admin): ApiAdmin,
    ClientIp(ip): ClientIp,
    Path(key): Path<String>,
    StrictJson(body): StrictJson<RetentionBody>,
) -> Result<Response, ApiError> {
    let site = find_site(&app, &key).await?;
    // Through the form's parse, so the API and the page accept exactly the same values.
    let input = SiteSettingsInput {
        retention_days: body
            .retention_days
            .map_or_else(String::new, |d| d.to_string()),
        ..SiteSettingsInput::from(&site.settings)
    };
    let settings = input
        .parse()
        .map_err(|refused| ApiError::invalid(refused.reason.0))?;
    let days = settings.retention_days;
    chat::update_site(
        &app.chat,
        &app.sites,
        &Actor::user(&admin, ip),
        &key,
        settings,
    )
    .await?;
    Ok(answer(&key, days))
}

/// The body of `PUT /api/v1/sites/{key}/attachments`.
#[derive(Debug, Deserialize)]
pub struct AttachmentLimitBody {
    /// Largest file accepted, in bytes: 0 (no attachments) to 26,214,400 (25 MiB).
    max_bytes: u64,
}

fn limit_answer(key: &str, bytes: u64) -> Response {
    Json(json!({"site": key, "max_bytes": bytes})).into_response()
}

/// `GET /api/v1/sites/{key}/attachments`: the largest attachment the site accepts.
pub async fn get_attachment_limit(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    Path(key): Path<String>,
) -> Result<Response, ApiError> {
    let site = find_site(&app, &key).await?.id;
    let bytes = app
        .readers
        .read(move |c| store::find_attachment_limit(c, site))
        .await?;
    Ok(limit_answer(&key, bytes))
}

/// `PUT /api/v1/sites/{key}/attachments` with `{"max_bytes": 5242880}`; recorded as
/// `site.updated`.
pub async fn put_attachment_limit(
    State(app): State<AppState>,
    ApiAdmin(admin): ApiAdmin,
    ClientIp(ip): ClientIp,
    Path(key): Path<String>,
    StrictJson(body): StrictJson<AttachmentLimitBody>,
) -> Result<Response, ApiError> {
    if body.max_bytes > HARD_CAP_BYTES {
        return Err(ApiError::invalid(
            "max_bytes must be between 0 and 26214400 (25 MiB).",
        ));
    }
    let site = find_site(&app, &key).await?;
    let actor = Actor::user(&admin, ip);
    chat::set_attachment_limit((&app.writer, &app.sites), &actor, &site, body.max_bytes).await?;
    Ok(limit_answer(&key, body.max_bytes))
}
