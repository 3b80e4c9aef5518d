//! `/docs` and `/docs/{path}`: the documentation compiled into this binary
//! (`porch_app::docs`), for anyone signed in.

use axum::extract::Path;
use axum::response::Response;
use porch_app::layout::Section;

use super::page::{PageError, html};
use super::session::SignedIn;

/// `GET /docs`: the list of documents.
pub async fn docs_index(who: SignedIn) -> Response {
    html(porch_app::docs::render_index(who.nav(Section::Docs)))
}

/// `GET /docs/{*path}`: one document, such as `integrations/slack.md`.
pub async fn doc_page(who: SignedIn, Path(path): Path<String>) -> Result<Response, PageError> {
    let doc = porch_app::docs::find(&path).ok_or_else(|| PageError::not_found("document"))?;
    Ok(html(porch_app::docs::render_doc(
        who.nav(Section::Docs),
        doc,
    )))
}
