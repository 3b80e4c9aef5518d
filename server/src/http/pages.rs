//! Server-rendered pages (Leptos components from `porch-app`).

use axum::extract::State;
use axum::response::{Html, IntoResponse, Response};

use crate::state::AppState;

/// `GET /`: what this server is and where to go next.
pub async fn home(State(app): State<AppState>) -> Response {
    let view = porch_app::HomeView {
        version: env!("CARGO_PKG_VERSION"),
        public_url: app.public_url.clone(),
    };
    Html(porch_app::render_home(view)).into_response()
}
