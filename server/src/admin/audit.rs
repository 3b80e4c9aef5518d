//! The audit log page (admins only): newest first, filtered by actor, action and dates, paged
//! by event id. Recording happens in the use cases (`crate::audit`); this only reads.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use porch_app::audit::{AuditEventView, AuditFiltersView, AuditView, render_audit};
use porch_app::layout::{Notice, Section};

use crate::audit::{AuditAction, AuditQuery, PAGE_SIZE};
use crate::state::AppState;
use crate::store::{self, AuditEventRow};

use super::page::{PageError, html_with_status};
use super::session::Admin;

fn event_view(row: AuditEventRow) -> AuditEventView {
    let target = match (row.target_type, row.target_id, row.target_label) {
        // A label that only repeats the kind and id ("visitor 2") is not said twice.
        (Some(kind), Some(id), Some(label))
            if !label.is_empty() && label != format!("{kind} {id}") =>
        {
            format!("{kind} {id} ({label})")
        }
        (Some(kind), Some(id), _) => format!("{kind} {id}"),
        _ => String::new(),
    };
    AuditEventView {
        at: row.last_at,
        actor: row.actor,
        action: row.action,
        target,
        ip: row.ip,
        detail: row.detail,
        count: row.count,
    }
}

/// The next page's URL: the same filters, before the last event shown.
fn older_url(query: &AuditQuery, last_id: i64) -> String {
    let pairs = [
        ("actor", query.actor.as_str()),
        ("action", query.action.as_str()),
        ("since", query.since.as_str()),
        ("until", query.until.as_str()),
    ];
    let mut encoded = serde_urlencoded::to_string(
        pairs
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .collect::<Vec<_>>(),
    )
    .unwrap_or_default();
    if !encoded.is_empty() {
        encoded.push('&');
    }
    format!("/audit?{encoded}before={last_id}")
}

/// `GET /audit`.
pub async fn audit_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Query(query): Query<AuditQuery>,
) -> Result<Response, PageError> {
    let (events, notice, status) = match query.filter() {
        Ok(filter) => {
            let rows = app
                .readers
                .read(move |c| store::list_audit_events(c, &filter))
                .await?;
            (rows, None, StatusCode::OK)
        }
        Err(message) => (
            Vec::new(),
            Some(Notice::Error(message)),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
    };
    let older = (events.len() == PAGE_SIZE as usize)
        .then(|| events.last().map(|e| older_url(&query, e.id)))
        .flatten();
    Ok(html_with_status(
        status,
        render_audit(AuditView {
            nav: who.nav(Section::Audit),
            events: events.into_iter().map(event_view).collect(),
            filters: AuditFiltersView {
                actor: query.actor,
                action: query.action,
                since: query.since,
                until: query.until,
            },
            actions: AuditAction::ALL.iter().map(|a| a.as_str()).collect(),
            older,
            notice,
        }),
    ))
}
