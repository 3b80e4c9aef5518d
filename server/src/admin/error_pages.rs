//! Error pages with the top bar for whoever is signed in. A [`PageError`](super::page::PageError)
//! is rendered where it happens, without knowing who asked (the framework's own refusals, an
//! extractor's 403), with a single "Sign in" link; this layer renders it again with the
//! navigation when the request carries a live session, so a signed-in agent who meets a 404 or
//! an admins-only page goes on from the top bar, as on every other page.

use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use porch_app::layout::Section;

use crate::state::AppState;

use super::page::ErrorPage;
use super::session::{session_cookie_value, session_of_cookie};

/// The longest the session lookup may add to an error page: past it, the page goes out as it
/// is (this layer runs outside the request timeout).
const LOOKUP_BUDGET: Duration = Duration::from_millis(250);

/// The layer (`axum::middleware::from_fn_with_state`). It reads the session only for a 4xx
/// page other than a timeout's: a 5xx or a 408 means the server is struggling (a busy or full
/// disk), when one more read is the last thing to add.
pub async fn with_navigation(
    State(app): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    // Most requests (API calls, the widget's, probes) carry no cookie at all: nothing to keep.
    let cookie = (request.headers().contains_key(header::COOKIE))
        .then(|| session_cookie_value(request.headers(), &app))
        .flatten();
    let response = next.run(request).await;
    let Some(cookie) = cookie else {
        return response;
    };
    let status = response.status();
    if !status.is_client_error() || status == axum::http::StatusCode::REQUEST_TIMEOUT {
        return response;
    }
    let Some(page) = response.extensions().get::<ErrorPage>().cloned() else {
        return response;
    };
    let Ok(Some(who)) = tokio::time::timeout(LOOKUP_BUDGET, session_of_cookie(&cookie, &app)).await
    else {
        return response;
    };
    let (mut parts, _) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, page.render(Some(who.nav(Section::None))).into())
}
