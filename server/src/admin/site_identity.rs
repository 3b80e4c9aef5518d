//! A site's known visitors (admins only): show the identity secret, make or rotate it, turn it
//! off. Each change is audited and drops the widget's cached copy of the site.

use axum::extract::{Path, Query, State};
use axum::response::Response;
use porch_app::layout::Notice;
use porch_app::site_identity::{SiteIdentityView, render_site_identity};

use crate::audit::Actor;
use crate::chat;
use crate::http::ClientIp;
use crate::state::AppState;

use super::auth::{NoFields, NoticeQuery};
use super::page::{PageError, html, see_other};
use super::session::{Admin, AdminPosted};
use super::sites::find_site;

/// `GET /sites/{key}/identity`.
pub async fn identity_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Path(key): Path<String>,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    let site = find_site(&app, &key).await?;
    let secret = chat::find_identity_secret(&app.readers, &app.secret_key, site.id).await?;
    let notice = match query.notice.as_str() {
        "identity-rotated" => Some(Notice::Success(
            "New secret made. Hashes made with an earlier one no longer verify.".to_owned(),
        )),
        "identity-removed" => Some(Notice::Success(
            "Known visitors are off: every identity is shown as unverified.".to_owned(),
        )),
        _ => None,
    };
    Ok(html(render_site_identity(SiteIdentityView {
        nav: who.nav(porch_app::layout::Section::Sites),
        key: site.key,
        name: site.settings.name,
        secret,
        notice,
    })))
}

/// `POST /sites/{key}/identity/rotate`: turns known visitors on, or replaces the secret.
pub async fn rotate_identity(
    State(app): State<AppState>,
    Path(key): Path<String>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    let site = find_site(&app, &key).await?;
    chat::rotate_identity_secret(
        (&app.writer, &app.sites, &app.secret_key),
        &Actor::user(&who.user, ip),
        (site.id, &site.key, &site.settings.name),
    )
    .await?;
    Ok(see_other(&format!(
        "/sites/{key}/identity?notice=identity-rotated"
    )))
}

/// `POST /sites/{key}/identity/remove`: turns known visitors off.
pub async fn remove_identity(
    State(app): State<AppState>,
    Path(key): Path<String>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    let site = find_site(&app, &key).await?;
    chat::remove_identity_secret(
        (&app.writer, &app.sites),
        &Actor::user(&who.user, ip),
        (site.id, &site.key, &site.settings.name),
    )
    .await?;
    Ok(see_other(&format!(
        "/sites/{key}/identity?notice=identity-removed"
    )))
}
