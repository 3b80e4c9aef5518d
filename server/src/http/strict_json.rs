//! The API's JSON bodies, read as axum's `Json` reads them (the same 415 and 400 refusals), except
//! that a field the endpoint does not take is refused (422 `invalid`, naming it) instead of
//! ignored. Ignoring it turned a typo into a silent success: `{"bot_tokn": …}` in a token rotation
//! answered 200 and kept the old token, and a misspelled email delay saved the default.

use axum::Json;
use axum::extract::{FromRequest, Request};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::ApiError;

/// A JSON body of type `T` with no field `T` does not know.
pub struct StrictJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for StrictJson<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        let Json(value) = Json::<serde_json::Value>::from_request(request, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let mut unknown = Vec::new();
        let body = serde_ignored::deserialize(value, |path| unknown.push(path.to_string()))
            .map_err(|err| ApiError::invalid(err.to_string()).into_response())?;
        if !unknown.is_empty() {
            let fields = unknown
                .iter()
                .map(|field| format!("`{field}`"))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(ApiError::invalid(format!(
                "Unknown field {fields}: this endpoint does not take it (docs/api.md)."
            ))
            .into_response());
        }
        Ok(Self(body))
    }
}
