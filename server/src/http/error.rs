//! The one HTTP error type: a status, a stable machine code and a human message, as JSON. Anything
//! unexpected is a 500 that reveals nothing of the internals; the details go to the log once.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::chat;
use crate::store;

/// An error answered to an HTTP client.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "A valid API token is required.",
        )
    }

    /// A widget request (a visitor's own data, a file) without the visitor's token.
    pub fn visitor_unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "A valid visitor token is required.",
        )
    }

    /// The caller's input is not valid: `422 invalid` with what to change.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message)
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("No such {what}."),
        )
    }

    pub fn unavailable() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "The server cannot store or read data right now; try again shortly.",
        )
    }

    fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Something went wrong on the server.",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        let mut response = (self.status, Json(body)).into_response();
        let headers = response.headers_mut();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            headers.insert("retry-after", HeaderValue::from_static("2"));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            // RFC 6750: a 401 names the scheme it wants; an expired token is an invalid one.
            let challenge = if self.code == "token_expired" {
                r#"Bearer realm="porch", error="invalid_token""#
            } else {
                r#"Bearer realm="porch""#
            };
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
        }
        response
    }
}

/// What a storage or domain error means for whoever asked, whatever form the answer takes (JSON
/// here, an HTML page in the admin UI). Classified once, and logged once, here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    NotFound(&'static str),
    Invalid(std::borrow::Cow<'static, str>),
    /// An agent's client id (an API reply's `Idempotency-Key`) names another message.
    ClientIdReused,
    /// Try again later: full disk, busy writer, shutting down.
    Unavailable,
    /// A bug or an unexpected database error; the details are in the log only.
    Internal,
}

impl From<store::Error> for Failure {
    fn from(err: store::Error) -> Self {
        if matches!(err, store::Error::UnknownAttachment) {
            Self::Invalid("An attachment is unknown, not yours, or already sent.".into())
        } else if err.is_transient() || matches!(err, store::Error::Stopped) {
            crate::refusal_log::request_refused(&err);
            Self::Unavailable
        } else {
            tracing::error!(error = %err, "storage error");
            Self::Internal
        }
    }
}

impl From<chat::Error> for Failure {
    fn from(err: chat::Error) -> Self {
        match err {
            chat::Error::NotFound(what) => Self::NotFound(what),
            chat::Error::Invalid(invalid) => Self::Invalid(invalid.0),
            chat::Error::ClientIdReused => Self::ClientIdReused,
            chat::Error::Store(err) => err.into(),
        }
    }
}

impl From<Failure> for ApiError {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::NotFound(what) => Self::not_found(what),
            Failure::Invalid(why) => Self::invalid(why),
            Failure::ClientIdReused => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency_key_reused",
                "This Idempotency-Key was sent before with another message; a new message needs \
                 a new key.",
            ),
            Failure::Unavailable => Self::unavailable(),
            Failure::Internal => Self::internal(),
        }
    }
}

impl From<store::Error> for ApiError {
    fn from(err: store::Error) -> Self {
        Failure::from(err).into()
    }
}

impl From<chat::Error> for ApiError {
    fn from(err: chat::Error) -> Self {
        Failure::from(err).into()
    }
}
