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
            |path| unknown.push(format!("`{path}`")),
        );
        if unknown.is_empty() {
            return Ok(Self(query));
        }
        Err(ApiError::invalid(format!(
            "Unknown query parameter {}: this endpoint does not take it (docs/api.md).",
            unknown.join(", ")
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
    let mut named: Vec<String> = Vec::new();
    let mut more = std::collections::HashSet::new();
    for (name, _) in form_urlencoded::parse(raw.as_bytes()) {
        let name: String = name.chars().filter(|c| !c.is_control()).collect();
        if named.contains(&name) {
            continue;
        }
        if named.len() < NAMED {
            named.push(name);
        } else {
            more.insert(name);
        }
    }
    if named.is_empty() {
        return next.run(request).await;
    }
    let list = named
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let (noun, rest) = match (named.len(), more.len()) {
        (1, _) => ("parameter", String::new()),
        (_, 0) => ("parameters", String::new()),
        (_, n) => ("parameters", format!(" and {n} more")),
    };
    ApiError::invalid(format!(
        "Unknown query {noun} {list}{rest}: this endpoint takes none (docs/api.md)."
    ))
    .into_response()
}

/// How many unknown parameters a refusal names.
const NAMED: usize = 3;
