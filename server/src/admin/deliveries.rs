//! Deliveries that need an admin (admins only): failed and blocked jobs, retry one or all, and
//! dismiss failed ones.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use porch_app::deliveries::{DeliveriesCut, DeliveriesView, DeliveryItemView, render_deliveries};
use porch_app::layout::Section;

use crate::audit::Actor;
use crate::http::ClientIp;
use crate::jobs::{JobKind, Retried, dismiss_failed_jobs, dismiss_job, retry_all_jobs, retry_job};
use crate::state::AppState;
use crate::store::{self, JobId};

use super::auth::{NoFields, NoticeQuery};
use super::page::{PageError, html, see_other};
use super::session::{Admin, AdminPosted};

/// Most deliveries listed per state.
const LIST_LIMIT: u32 = 200;
/// Deliveries in a state are counted up to this many; the page then says "more than".
const COUNT_CAP: u32 = 10_000;

/// `GET /deliveries`.
pub async fn deliveries_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    let (jobs, totals) = app
        .readers
        .read(|c| {
            let mut jobs = Vec::new();
            let mut totals = Vec::new();
            for state in ["blocked", "failed"] {
                let listed = store::list_deliveries_in_state_with_context(c, state, LIST_LIMIT)?;
                let total = store::count_deliveries_in_state(c, state, COUNT_CAP + 1)?;
                if total > LIST_LIMIT {
                    totals.push(DeliveriesCut {
                        state,
                        shown: LIST_LIMIT,
                        total: total.min(COUNT_CAP),
                        is_more: total > COUNT_CAP,
                    });
                }
                jobs.extend(listed);
            }
            Ok((jobs, totals))
        })
        .await?;
    let items = jobs
        .into_iter()
        .map(|found| DeliveryItemView {
            id: found.job.id.0,
            // In words; a kind from a newer Porch as it is stored.
            kind: JobKind::parse(&found.job.kind)
                .map_or(found.job.kind, |kind| kind.carries().to_owned()),
            state: found.job.state,
            tries: found.tries,
            last_error: found.job.last_error,
            created_at: found.job.created_at,
            destination: found.destination,
            site_name: found.site_name,
            conversation_id: found.conversation_id.map(|id| id.0),
        })
        .collect();
    Ok(html(render_deliveries(DeliveriesView {
        nav: who.nav(Section::Deliveries),
        items,
        cut: totals,
        notice: query.notice(),
    })))
}

/// `POST /deliveries/{id}/retry`.
pub async fn retry_delivery(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    _admin: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    let notice = match retry_job(&app.writer, &app.jobs, JobId(id)).await? {
        Retried::Waits => "waits-for-fix",
        Retried::Queued => "retried",
        // Retried meanwhile by someone else, or never there: saying "queued" would be wrong.
        Retried::NotRetryable => "not-retried",
    };
    Ok(see_other(&format!("/deliveries?notice={notice}")))
}

/// `POST /deliveries/retry`: every failed and blocked delivery.
pub async fn retry_all_deliveries(
    State(app): State<AppState>,
    _admin: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    retry_all_jobs(&app.writer, &app.jobs).await?;
    Ok(see_other("/deliveries?notice=retried"))
}

/// `POST /deliveries/{id}/dismiss`: deletes one failed delivery.
pub async fn dismiss_delivery(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    Path(id): Path<i64>,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    let actor = Actor::user(&who.user, ip);
    let notice = if dismiss_job(&app.writer, &actor, JobId(id)).await? {
        "dismissed"
    } else {
        // Retried or dismissed meanwhile, or gone with its integration.
        "not-dismissed"
    };
    Ok(see_other(&format!("/deliveries?notice={notice}")))
}

/// `POST /deliveries/dismiss`: deletes every failed delivery (test messages left out).
pub async fn dismiss_all_deliveries(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    let notice = match dismiss_failed_jobs(&app.writer, &Actor::user(&who.user, ip)).await? {
        0 => "none-failed",
        _ => "dismissed",
    };
    Ok(see_other(&format!("/deliveries?notice={notice}")))
}
