//! A site's pre-chat form (admins only): show and save it. A change is validated (the form comes
//! back with the error), audited, and drops the widget's cached copy of the site.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use porch_app::layout::{Notice, Section};
use porch_app::site_prechat::{SitePrechatView, render_site_prechat};

use crate::audit::Actor;
use crate::chat::{self, SitePrechatInput};
use crate::http::ClientIp;
use crate::state::AppState;
use crate::store::SiteRow;

use super::auth::NoticeQuery;
use super::page::{PageError, html, html_with_status, see_other};
use super::session::{Admin, AdminPosted, SignedIn};
use super::sites::find_site;

fn page(
    who: &SignedIn,
    site: &SiteRow,
    (input, is_on): (SitePrechatInput, bool),
    notice: Option<Notice>,
) -> String {
    render_site_prechat(SitePrechatView {
        nav: who.nav(Section::Sites),
        key: site.key.clone(),
        name: site.settings.name.clone(),
        name_field: input.name_field,
        email_field: input.email_field,
        question: input.question,
        question_field: input.question_field,
        is_on,
        notice,
    })
}

/// `GET /sites/{key}/prechat`.
pub async fn prechat_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Path(key): Path<String>,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    let site = find_site(&app, &key).await?;
    let form = chat::find_site_prechat(&app.readers, site.id).await?;
    let input = form
        .as_ref()
        .map_or_else(SitePrechatInput::suggested, SitePrechatInput::from);
    let notice = match query.notice.as_str() {
        "prechat-saved" => Some("Pre-chat form saved."),
        // Every field off: the page shows the suggestion again, which is not what was saved.
        "prechat-removed" => Some("Pre-chat form removed: the widget asks nothing."),
        _ => None,
    }
    .map(|text| Notice::Success(text.to_owned()));
    Ok(html(page(&who, &site, (input, form.is_some()), notice)))
}

/// `POST /sites/{key}/prechat`: saves it (every field off removes the form), or shows the form
/// again with what was wrong.
pub async fn save_prechat(
    State(app): State<AppState>,
    Path(key): Path<String>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, form }: AdminPosted<SitePrechatInput>,
) -> Result<Response, PageError> {
    let site = find_site(&app, &key).await?;
    let parsed = match form.parse() {
        Ok(parsed) => parsed,
        Err(invalid) => {
            let is_on = chat::find_site_prechat(&app.readers, site.id)
                .await?
                .is_some();
            let notice = Some(Notice::Error(invalid.0.into()));
            let body = page(&who, &site, (form, is_on), notice);
            return Ok(html_with_status(StatusCode::UNPROCESSABLE_ENTITY, body));
        }
    };
    let notice = if parsed.is_on() {
        "prechat-saved"
    } else {
        "prechat-removed"
    };
    chat::save_site_prechat(
        (&app.writer, &app.sites),
        &Actor::user(&who.user, ip),
        (site.id, &site.key, &site.settings.name),
        parsed,
    )
    .await?;
    Ok(see_other(&format!("/sites/{key}/prechat?notice={notice}")))
}
