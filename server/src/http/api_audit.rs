//! `GET /api/v1/audit` (admin token): the audit log as JSON, with the audit page's filters and
//! keyset paging (`next_before`).

use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

use crate::audit::{AuditQuery, PAGE_SIZE};
use crate::state::AppState;
use crate::store::{self, AuditEventRow};

use super::ApiError;
use super::auth::ApiAdmin;
use super::strict_query::StrictQuery;

fn event_json(row: AuditEventRow) -> Value {
    // The detail is stored as JSON text by `audit::record`; a row that does not parse (never
    // expected) is shown as an empty object rather than failing the whole page.
    let detail: Value = serde_json::from_str(&row.detail).unwrap_or_else(|_| json!({}));
    json!({
        "id": row.id,
        "at": row.at,
        "last_at": row.last_at,
        "actor_id": row.actor_id,
        "actor": row.actor,
        "action": row.action,
        "target": row.target_type.map(|kind| json!({
            "type": kind,
            "id": row.target_id,
            "label": row.target_label,
        })),
        "ip": row.ip,
        "detail": detail,
        "count": row.count,
    })
}

/// `GET /api/v1/audit?actor=&action=&since=&until=&before=`: newest first, 50 at a time.
pub async fn list_audit(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    StrictQuery(query): StrictQuery<AuditQuery>,
) -> Result<Json<Value>, ApiError> {
    let filter = query.filter().map_err(ApiError::invalid)?;
    let rows = app
        .readers
        .read(move |c| store::list_audit_events(c, &filter))
        .await?;
    let next_before = (rows.len() == PAGE_SIZE as usize)
        .then(|| rows.last().map(|r| r.id))
        .flatten();
    let events: Vec<Value> = rows.into_iter().map(event_json).collect();
    Ok(Json(json!({"events": events, "next_before": next_before})))
}
