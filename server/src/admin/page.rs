//! Responses of the admin UI: HTML pages with the security headers every page carries,
//! redirects, and the one error type, rendered as an HTML page, or as JSON for the inbox
//! script's own requests (never internals either way).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::accounts;
use crate::chat;
use crate::http::Failure;
use crate::store;

/// Only our own scripts and styles; no frames; forms post only to us. With this, even a bug that
/// let visitor text into the markup could not run a script.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
    connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// HSTS for a year when the public URL is https: after one visit, the browser never tries
/// plain http for this host again (no downgrade, no cookie sent in clear).
pub async fn strict_transport(
    axum::extract::State(app): axum::extract::State<crate::state::AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let mut response = next.run(request).await;
    if app.public_url.starts_with("https://") {
        response.headers_mut().insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000"),
        );
    }
    response
}

/// A complete page with `status`.
pub fn html_with_status(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    // Invitation and reset links carry their token in the path: never leak it in a Referer.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Pages show private conversations: never keep them in a shared or back-forward cache.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A complete page.
pub fn html(body: String) -> Response {
    html_with_status(StatusCode::OK, body)
}

/// `303 See Other`: where a form post sends the browser next.
pub fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// An error shown as a page (or, to the inbox script, as JSON).
#[derive(Debug)]
pub struct PageError {
    pub status: StatusCode,
    /// A stable machine code, for the inbox script: it decides what to tell the agent by it.
    pub code: &'static str,
    pub title: &'static str,
    pub message: String,
}

impl PageError {
    pub fn new(status: StatusCode, title: &'static str, message: impl Into<String>) -> Self {
        let code = match status {
            StatusCode::BAD_REQUEST => "bad_request",
            StatusCode::UNAUTHORIZED => "unauthorized",
            StatusCode::FORBIDDEN => "forbidden",
            StatusCode::NOT_FOUND => "not_found",
            StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
            StatusCode::CONFLICT => "conflict",
            StatusCode::GONE => "gone",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            StatusCode::UNPROCESSABLE_ENTITY => "invalid",
            StatusCode::TOO_MANY_REQUESTS => "rate_limited",
            StatusCode::SERVICE_UNAVAILABLE => "unavailable",
            _ => "internal",
        };
        Self {
            status,
            code,
            title,
            message: message.into(),
        }
    }

    /// The session is gone (signed out, expired, password changed, user disabled). Only the
    /// script is told so; a browser's own request is sent to the sign-in page instead.
    pub fn signed_out() -> Self {
        Self {
            code: "signed_out",
            ..Self::new(
                StatusCode::UNAUTHORIZED,
                "Signed out",
                "Your session has ended. Sign in again.",
            )
        }
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "Not found",
            format!("There is no such {what}. It may have been deleted."),
        )
    }

    pub fn forbidden() -> Self {
        Self {
            code: "admins_only",
            ..Self::new(
                StatusCode::FORBIDDEN,
                "Admins only",
                "Only admins can open this page. Ask an admin if you need access.",
            )
        }
    }

    pub fn bad_csrf() -> Self {
        Self {
            code: "form_expired",
            ..Self::new(
                StatusCode::FORBIDDEN,
                "Form expired",
                "This form is no longer valid (it may be from an older session). Go back, reload \
                 the page and try again.",
            )
        }
    }

    /// The error as the inbox script reads it: the same status, and
    /// `{"error": {"code", "message"}}` like the API's errors, never a page it could mistake
    /// for the fragment it asked for.
    pub fn into_script_response(self) -> Response {
        self.into_script_response_pointing(None)
    }

    /// [`Self::into_script_response`] with `href`, the page where the agent goes on (the newer
    /// conversation of a refused reopen), which the script offers as a link.
    pub fn into_script_response_pointing(self, href: Option<&str>) -> Response {
        let mut error = serde_json::json!({ "code": self.code, "message": self.message });
        if let Some(href) = href {
            error["href"] = href.into();
        }
        let body = serde_json::json!({ "error": error });
        let mut response = (self.status, body.to_string()).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }

    fn unavailable() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "Try again shortly",
            "The server cannot store or read data right now. Try again in a moment.",
        )
    }

    pub(super) fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Something went wrong",
            "Something went wrong on the server. The details are in the server log.",
        )
    }
}

/// An unknown URL outside the API: an HTML page people can read (the API answers JSON).
pub async fn not_found_page() -> Response {
    PageError::not_found("page").into_response()
}

/// The page for a request the framework refused by itself with a bare answer: an address
/// opened with a method it does not take (a form's address typed or reloaded in the address
/// bar), a path or query that does not parse (`/conversations/abc`), a form that is not whole.
pub fn refused_page(status: StatusCode, method: &axum::http::Method) -> Response {
    let is_visit = matches!(*method, axum::http::Method::GET | axum::http::Method::HEAD);
    let (title, message) = match status {
        StatusCode::METHOD_NOT_ALLOWED if is_visit => (
            "Not a page",
            "This address takes a form's submission, not a visit. Go back and use the page's \
             button.",
        ),
        // A form or a script sent something to a page that is only for visiting.
        StatusCode::METHOD_NOT_ALLOWED => (
            "Not accepted here",
            "This address is a page to open, not a form to send. Go back, reload the page and \
             try again.",
        ),
        StatusCode::BAD_REQUEST => (
            "Not a valid address",
            "Part of this address could not be read. Check the link, or go back and try again.",
        ),
        StatusCode::REQUEST_TIMEOUT => (
            "Too slow",
            "The request took longer than the server allows. Try again.",
        ),
        StatusCode::PAYLOAD_TOO_LARGE => (
            "Too large",
            "What was sent is larger than the server accepts.",
        ),
        _ => (
            "Not accepted",
            "The server could not take this request. Go back, reload the page and try again.",
        ),
    };
    PageError::new(status, title, message).into_response()
}

/// An error page's parts, kept in its response's extensions so that
/// [`super::error_pages::with_navigation`] can render it again for whoever is signed in.
#[derive(Debug, Clone)]
pub struct ErrorPage {
    pub status: StatusCode,
    pub title: &'static str,
    pub message: String,
}

impl ErrorPage {
    /// The page, with the top bar of `nav`'s person when someone is signed in.
    pub fn render(&self, nav: Option<porch_app::layout::Nav>) -> String {
        porch_app::auth::render_error(porch_app::auth::ErrorView {
            nav,
            status: self.status.as_u16(),
            title: self.title.to_owned(),
            message: self.message.clone(),
        })
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let page = ErrorPage {
            status: self.status,
            title: self.title,
            message: self.message,
        };
        let mut response = html_with_status(self.status, page.render(None));
        response.extensions_mut().insert(page);
        response
    }
}

impl From<Failure> for PageError {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::NotFound(what) => Self::not_found(what),
            Failure::Invalid(why) => Self::new(StatusCode::UNPROCESSABLE_ENTITY, "Not saved", why),
            Failure::ClientIdReused => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Not sent",
                "This form already sent another message: reload the page.",
            ),
            Failure::Unavailable => Self::unavailable(),
            Failure::Internal => Self::internal(),
        }
    }
}

impl From<store::Error> for PageError {
    fn from(err: store::Error) -> Self {
        Failure::from(err).into()
    }
}

impl From<chat::Error> for PageError {
    fn from(err: chat::Error) -> Self {
        Failure::from(err).into()
    }
}

impl From<accounts::Error> for PageError {
    fn from(err: accounts::Error) -> Self {
        use accounts::Error as E;
        match err {
            E::Invalid(invalid) => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "Not saved", invalid.0)
            }
            E::Conflict(text) | E::NoPassword(text) => {
                Self::new(StatusCode::CONFLICT, "Not saved", text)
            }
            E::NotFound(what) => Self::not_found(what),
            E::LinkInvalid => Self::new(
                StatusCode::GONE,
                "Link expired",
                "This link is not valid: it was already used, was replaced by a newer one, has \
                 expired, or is not whole (a link split over two lines in a mail: copy all of \
                 it). Ask an admin for a new one, or get one yourself with Forgot your password? \
                 on the sign-in page.",
            ),
            E::SetupClosed => Self::new(
                StatusCode::GONE,
                "Already set up",
                "This Porch server already has an admin. Sign in instead.",
            ),
            E::SignInExpired => Self::new(
                StatusCode::GONE,
                "Sign-in expired",
                "That sign-in waited too long for its code. Sign in again.",
            ),
            E::Disabled => Self::new(
                StatusCode::FORBIDDEN,
                "Account disabled",
                "This account is disabled. Ask an admin of your team to enable it again.",
            ),
            E::BadCredentials | E::BadCode | E::BadSetupToken | E::Throttled(_) => Self::new(
                StatusCode::UNAUTHORIZED,
                "Not signed in",
                "Those details were not accepted.",
            ),
            E::Hashing => {
                tracing::error!("password hashing failed");
                Self::internal()
            }
            E::Store(err) => err.into(),
        }
    }
}
