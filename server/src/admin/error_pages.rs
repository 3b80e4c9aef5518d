//! Error pages with the top bar for whoever is signed in. A [`PageError`](super::page::PageError)
//! is rendered where it happens, without knowing who asked (the framework's own refusals, an
//! extractor's 403), with a single "Sign in" link; this layer renders it again with the
//! navigation when the request carries a live session, so a signed-in agent who meets a 404 or
//! an admins-only page goes on from the top bar, as on every other page.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::Response;
use porch_app::layout::Section;

use crate::state::AppState;

use super::page::ErrorPage;
use super::session::session_of;

/// The layer (`axum::middleware::from_fn_with_state`); it reads the session only for an error
/// page, so other answers cost nothing more.
pub async fn with_navigation(
    State(app): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let cookies: HeaderMap = (request.headers().get_all(header::COOKIE).iter())
        .map(|value| (header::COOKIE, value.clone()))
        .collect();
    let response = next.run(request).await;
    let Some(page) = response.extensions().get::<ErrorPage>().cloned() else {
        return response;
    };
    let Some(who) = session_of(&cookies, &app).await else {
        return response;
    };
    let (mut parts, _) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, page.render(Some(who.nav(Section::None))).into())
}
