//! The privacy page (admins only, docs/privacy.md): find a person, download their export (a
//! CSRF-protected POST, recorded in the audit log), and erase them after a confirmation page.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use porch_app::layout::Section;
use porch_app::privacy::{EraseView, PersonView, PrivacyView, render_erase, render_privacy};
use serde::Deserialize;

use crate::audit::Actor;
use crate::clock::now_ms;
use crate::http::ClientIp;
use crate::privacy::{self, PersonData, PersonQuery, Requester, Via};
use crate::state::AppState;
use crate::store::{VisitorId, VisitorRecord};

use super::page::{PageError, html, see_other};
use super::session::{Admin, AdminPosted};

#[derive(Debug, Default, Deserialize)]
pub struct PrivacyQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    notice: String,
}

/// A form with nothing but its CSRF token (checked by [`AdminPosted`]).
#[derive(Debug, Deserialize)]
pub struct NoFields {}

fn person(v: VisitorRecord) -> PersonView {
    PersonView {
        id: v.id.0,
        site_name: v.site_name,
        name: v.name,
        email: v.email,
        first_seen_at: v.first_seen_at,
        last_seen_at: v.last_seen_at,
        conversations: v.conversations,
        messages: v.messages,
    }
}

fn requester(who: &super::session::SignedIn, ip: std::net::IpAddr) -> Requester {
    Requester {
        actor: Actor::user(&who.user, ip),
        via: Via::Admin,
    }
}

/// `GET /privacy?q=…`: the search box, and who it finds.
pub async fn privacy_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Query(query): Query<PrivacyQuery>,
) -> Result<Response, PageError> {
    let parsed = PersonQuery::parse(&query.q);
    let mistyped = parsed.as_ref().is_some_and(PersonQuery::may_be_mistyped);
    let people: Option<Vec<_>> = match parsed {
        Some(parsed) => Some(
            app.readers
                .read(move |c| privacy::find_people(c, &parsed))
                .await?
                .into_iter()
                .map(person)
                .collect(),
        ),
        None => None,
    };
    // Nobody found with a mistyped address, or a query that is neither: said, never "nobody".
    let people = people.filter(|found| !(mistyped && found.is_empty()));
    let notice = if people.is_none() && !query.q.trim().is_empty() {
        Some(porch_app::layout::Notice::Error(
            "That is neither an email address nor a visitor id (42 or v42): check it, so that \
             nobody is missed."
                .to_owned(),
        ))
    } else {
        (query.notice == "erased").then(|| {
            porch_app::layout::Notice::Success(
                "Erased. The audit log records it, without the data.".to_owned(),
            )
        })
    };
    Ok(html(render_privacy(PrivacyView {
        nav: who.nav(Section::Privacy),
        query: query.q,
        people,
        notice,
    })))
}

/// `POST /privacy/visitors/{id}/export`: the JSON export as a download.
pub async fn export(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    let visitor = VisitorId(id);
    let data = privacy::export_visitor(&app.writer, &app.readers, &requester(&who, ip), visitor)
        .await?
        .ok_or_else(|| PageError::not_found("visitor"))?;
    Ok(json_download(&data, &format!("porch-visitor-{id}.json")))
}

/// The export document as an attachment named `filename`.
pub fn json_download(data: &PersonData, filename: &str) -> Response {
    let body = serde_json::to_string_pretty(&data.to_json(now_ms())).unwrap_or_default();
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{filename}\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `GET /privacy/visitors/{id}/erase`: what erasing would delete, and the button.
pub async fn erase_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Path(id): Path<i64>,
) -> Result<Response, PageError> {
    let data = app
        .readers
        .read(move |c| PersonData::read(c, VisitorId(id)))
        .await?
        .ok_or_else(|| PageError::not_found("visitor"))?;
    let conversations = data
        .conversations
        .iter()
        .map(|c| (c.id.0, c.created_at, c.messages.len()))
        .collect();
    Ok(html(render_erase(EraseView {
        nav: who.nav(Section::Privacy),
        jobs: data.jobs.len(),
        files: data.files.len(),
        conversations,
        person: person(data.visitor),
    })))
}

/// `POST /privacy/visitors/{id}/erase`: erases, then back to the search page.
pub async fn erase(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    privacy::erase_visitor(
        &app.writer,
        &app.readers,
        (app.chat.hub(), &app.jobs),
        &requester(&who, ip),
        VisitorId(id),
    )
    .await?
    .ok_or_else(|| PageError::not_found("visitor"))?;
    Ok(see_other("/privacy?notice=erased"))
}
