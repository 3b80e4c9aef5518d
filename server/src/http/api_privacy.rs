//! A person's data over the API (admin token; docs/privacy.md, "Finding, exporting and erasing
//! a person"): find them by address or visitor id, download the same export as the privacy
//! page's, and erase them, each recorded in the audit log as the page's are (`via: api`), so
//! access and erasure requests can be answered by a script.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::Method;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::admin::privacy::json_download;
use crate::audit::Actor;
use crate::privacy::{self, PersonQuery, Requester, Via};
use crate::state::AppState;
use crate::store::{VisitorId, VisitorRecord};

use super::ApiError;
use super::auth::ApiAdmin;
use super::client_ip::ClientIp;
use super::strict_json::NoBody;
use super::strict_query::StrictQuery;

/// The query of `GET /api/v1/visitors`.
#[derive(Debug, Deserialize)]
pub struct FindQuery {
    /// An email address (any case), or a visitor id (`42` or `v42`). Left out it is empty,
    /// which is refused as any other `q` that is neither (422, not a 400 for the query string).
    #[serde(default)]
    q: String,
}

fn requester(admin: &ApiAdmin, ip: std::net::IpAddr) -> Requester {
    Requester {
        actor: Actor::user(&admin.0, ip),
        via: Via::Api,
    }
}

fn visitor_json(v: &VisitorRecord) -> Value {
    json!({
        "id": v.id,
        "site": v.site_key,
        "name": v.name,
        "email": v.email,
        "first_seen_at": v.first_seen_at,
        "last_seen_at": v.last_seen_at,
        "conversations": v.conversations,
        "messages": v.messages,
    })
}

/// `GET /api/v1/visitors?q=…`: the visitors an address (on every site) or an id names.
pub async fn find_visitors(
    State(app): State<AppState>,
    _admin: ApiAdmin,
    StrictQuery(query): StrictQuery<FindQuery>,
) -> Result<Json<Value>, ApiError> {
    let parsed = PersonQuery::parse(&query.q)
        .ok_or_else(|| ApiError::invalid("`q` is an email address or a visitor id (42 or v42)."))?;
    let mistyped = parsed.may_be_mistyped();
    let found = app
        .readers
        .read(move |c| privacy::find_people(c, &parsed))
        .await?;
    if found.is_empty() && mistyped {
        return Err(ApiError::invalid(
            "`q` is not an email address a visitor could leave, and nobody has it: check it.",
        ));
    }
    let visitors: Vec<Value> = found.iter().map(visitor_json).collect();
    Ok(Json(json!({ "visitors": visitors })))
}

/// `GET /api/v1/visitors/{id}/export`: everything about the visitor, as the privacy page's
/// *Download JSON*. A `HEAD` (a monitor, a link checker) gets the same headers and is not
/// recorded as an export: no data left.
pub async fn export_visitor(
    State(app): State<AppState>,
    method: Method,
    admin: ApiAdmin,
    ClientIp(ip): ClientIp,
    Path(id): Path<i64>,
) -> Result<Response, ApiError> {
    let visitor = VisitorId(id);
    let data = if method == Method::HEAD {
        app.readers
            .read(move |c| privacy::PersonData::read(c, visitor))
            .await?
    } else {
        let requester = requester(&admin, ip);
        privacy::export_visitor(&app.writer, &app.readers, &requester, visitor).await?
    }
    .ok_or_else(|| ApiError::not_found("visitor"))?;
    Ok(json_download(&data, &format!("porch-visitor-{id}.json")))
}

/// `POST /api/v1/visitors/{id}/erase`: erases the visitor as the privacy page does; answers
/// what went.
pub async fn erase_visitor(
    State(app): State<AppState>,
    admin: ApiAdmin,
    ClientIp(ip): ClientIp,
    Path(id): Path<i64>,
    _: NoBody,
) -> Result<Json<Value>, ApiError> {
    let requester = requester(&admin, ip);
    let deleted = privacy::erase_visitor(
        &app.writer,
        &app.readers,
        (app.chat.hub(), &app.jobs),
        &requester,
        VisitorId(id),
    )
    .await?
    .ok_or_else(|| ApiError::not_found("visitor"))?;
    Ok(Json(json!({
        "erased": {"conversations": deleted.conversations, "messages": deleted.messages}
    })))
}
