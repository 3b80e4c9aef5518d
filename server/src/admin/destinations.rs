//! What the destination pages (Slack, Discord, webhooks, email) share: finding a site and one
//! of its integrations, an integration's health, a queued test's outcome, and turning any
//! integration off, on, or deleting it (admins only).

use axum::extract::{Path, State};
use axum::response::Response;
use porch_app::destination::{HealthView, TestOutcomeView, TestState};

use crate::audit::Actor;
use crate::http::ClientIp;
use crate::integrations::{Health, delete_integration, turn_off_integration, turn_on_integration};
use crate::jobs::JobKind;
use crate::state::AppState;
use crate::store::{self, IntegrationId, IntegrationRow, SiteRow};

use super::auth::NoFields;
use super::page::{PageError, see_other};
use super::session::AdminPosted;
use super::sites::find_site;

/// The site with this key.
/// The site and its integration `id`, which must belong to it (and be of `kind`, if given).
pub(super) async fn find_site_integration(
    app: &AppState,
    key: &str,
    id: i64,
    kind: Option<&'static str>,
) -> Result<(SiteRow, IntegrationRow), PageError> {
    let site = find_site(app, key).await?;
    let id = IntegrationId(id);
    let row = app
        .readers
        .read(move |c| store::find_integration(c, id))
        .await?
        .filter(|row| row.site_id == site.id && kind.is_none_or(|k| row.kind == k))
        .ok_or_else(|| PageError::not_found("integration"))?;
    Ok((site, row))
}

/// How a page shows an integration's health.
pub(super) fn health_view(health: Health) -> HealthView {
    match health {
        Health::Healthy => HealthView::Healthy,
        Health::Blocked { reason } => HealthView::Blocked { reason },
        Health::Failing {
            error,
            at,
            is_given_up,
        } => HealthView::Failing {
            error,
            at,
            is_given_up,
        },
    }
}

/// Reads an integration's newest attempt and returns its health.
pub(super) async fn load_health(
    app: &AppState,
    row: &IntegrationRow,
) -> Result<HealthView, PageError> {
    let row = row.clone();
    let health = app.readers.read(move |c| Health::read(c, &row)).await?;
    Ok(health_view(health))
}

/// The latest test of `kind` through `integration` (`None`: the server's own test mail), as its
/// job stands now.
pub(super) fn latest_test(
    conn: &rusqlite::Connection,
    kind: JobKind,
    integration: Option<IntegrationId>,
) -> Result<Option<TestOutcomeView>, store::Error> {
    let job = store::latest_test_job(conn, kind.as_str(), integration)?;
    Ok(job.map(|job| TestOutcomeView {
        queued_at: job.created_at,
        state: match job.state.as_str() {
            "done" => TestState::Sent,
            "failed" | "blocked" => TestState::Failed {
                error: job
                    .last_error
                    .unwrap_or_else(|| "no reason given".to_owned()),
            },
            _ => TestState::Queued,
        },
    }))
}

/// The page of an integration of this kind, where its forms return to.
pub(super) fn page_of(key: &str, row: &IntegrationRow) -> String {
    match row.kind.as_str() {
        "webhook" => format!("/sites/{key}/webhooks/{}", row.id),
        kind => format!("/sites/{key}/{kind}"),
    }
}

/// `POST /sites/{key}/integrations/{id}/disable`.
pub async fn disable_integration(
    State(app): State<AppState>,
    Path((key, id)): Path<(String, i64)>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    let (_, row) = find_site_integration(&app, &key, id, None).await?;
    turn_off_integration((&app.writer, &app.jobs), &Actor::user(&who.user, ip), &row).await?;
    app.slack.rescan.notify_one();
    Ok(see_other(&format!(
        "{}?notice=integration-off",
        page_of(&key, &row)
    )))
}

/// `POST /sites/{key}/integrations/{id}/enable`.
pub async fn enable_integration(
    State(app): State<AppState>,
    Path((key, id)): Path<(String, i64)>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    let (_, row) = find_site_integration(&app, &key, id, None).await?;
    turn_on_integration((&app.writer, &app.jobs), &Actor::user(&who.user, ip), &row).await?;
    app.slack.rescan.notify_one();
    Ok(see_other(&format!(
        "{}?notice=integration-on",
        page_of(&key, &row)
    )))
}

/// `POST /sites/{key}/integrations/{id}/delete`: back to the site page (the webhooks list for
/// an endpoint).
pub async fn remove_integration(
    State(app): State<AppState>,
    Path((key, id)): Path<(String, i64)>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    let (_, row) = find_site_integration(&app, &key, id, None).await?;
    delete_integration(&app.writer, &Actor::user(&who.user, ip), &row).await?;
    app.slack.rescan.notify_one();
    let back = if row.kind == "webhook" {
        format!("/sites/{key}/webhooks")
    } else {
        format!("/sites/{key}")
    };
    Ok(see_other(&format!("{back}?notice=integration-deleted")))
}
