//! The API's query strings, read as axum's `Query` reads them (the same 400 for a value that does
//! not parse or a repeated parameter), except that a parameter the endpoint does not take is
//! refused (422 `invalid`, naming it) instead of ignored: `?limt=1` answered every conversation,
//! and `?State=done` the failed jobs, plausible answers to a question that was not asked.

use axum::extract::{FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::ApiError;

/// A query string of type `T` with no parameter `T` does not know.
pub struct StrictQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for StrictQuery<T> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        let Query(query) = Query::<T>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let raw = parts.uri.query().unwrap_or_default();
        let mut unknown = Vec::new();
        // It parsed above, so only the unknown names are of interest here.
        let _ = serde_ignored::deserialize::<_, _, T>(
            serde_urlencoded::Deserializer::new(form_urlencoded::parse(raw.as_bytes())),
            |path| unknown.push(path.to_string()),
        );
        let unknown = distinct(unknown);
        if unknown.is_empty() {
            return Ok(Self(query));
        }
        let (noun, them) = if unknown.len() == 1 {
            ("parameter", "it")
        } else {
            ("parameters", "them")
        };
        Err(ApiError::invalid(format!(
            "Unknown query {noun} {}: this endpoint does not take {them} (docs/api.md).",
            listed_names(&unknown)
        ))
        .into_response())
    }
}

/// Refuses a query string on a call that takes none (422 `invalid`, naming the parameters), as
/// [`StrictQuery`] does for the calls that take some: `POST …/messages?limt=5` stored the reply
/// as if the parameter meant something. It runs before the token is checked, so its answer names
/// at most [`NAMED`] parameters, with control characters left out, and counts the rest.
pub async fn refuse_query(request: Request, next: Next) -> Response {
    let raw = request.uri().query().unwrap_or_default();
    let names = distinct(form_urlencoded::parse(raw.as_bytes()).map(|(name, _)| name.into_owned()));
    if names.is_empty() {
        return next.run(request).await;
    }
    let noun = if names.len() == 1 {
        "parameter"
    } else {
        "parameters"
    };
    ApiError::invalid(format!(
        "Unknown query {noun} {}: this endpoint takes none (docs/api.md).",
        listed_names(&names)
    ))
    .into_response()
}

/// `names` in their order, each once (a set for the check: this runs before the token is, on
/// a query string of thousands of names).
fn distinct(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    names
        .into_iter()
        .filter(|name| seen.insert(name.clone()))
        .collect()
}

/// How many unknown names a refusal names.
const NAMED: usize = 3;
/// How much of each name it shows.
const NAME_CHARS: usize = 64;

/// The unknown names a refusal lists, each in backquotes: the first [`NAMED`] and how many more,
/// each without control characters and cut after [`NAME_CHARS`] characters with "…". They are
/// echoed before the token is checked, so an answer stays small whatever was sent (a 900 KB
/// field name came back whole).
pub(super) fn listed_names(names: &[String]) -> String {
    let shown = names
        .iter()
        .take(NAMED)
        .map(|name| {
            let kept: String = name.chars().filter(|c| !c.is_control()).collect();
            match kept.char_indices().nth(NAME_CHARS) {
                Some((cut, _)) => format!("`{}…`", &kept[..cut]),
                None => format!("`{kept}`"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ");
    match names.len().saturating_sub(NAMED) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}
