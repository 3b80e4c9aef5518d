//! Who is asking: the session cookie, the CSRF check on every form post, and the role checks.
//! Extractors make the checks impossible to forget: a handler that takes `Posted<T>` only runs
//! for a signed-in person whose form carried their session's CSRF token; `AdminPosted<T>` and
//! `Admin` also require the admin role. A request from the inbox script is refused with a
//! status and JSON (`401 signed_out`, `403 form_expired`) where a browser's own is redirected
//! to sign-in or shown a page.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use subtle::ConstantTimeEq;

use crate::accounts::{SESSION_COOKIE, SESSION_LIFETIME};
use crate::state::AppState;
use crate::store::UserRow;

use super::page::{PageError, see_other};

/// Before anyone is signed in (setup, sign-in, invitation links), forms are protected by a
/// random token in this cookie that the form must repeat (double submit).
pub const FORM_COOKIE: &str = "porch_form";
/// Over https the cookies carry the `__Host-` prefix: the browser then accepts them only from
/// this origin (Secure, `Path=/`, no `Domain`), so a page on a sibling origin of the same site
/// cannot plant a session or a form token of its own (login CSRF by cookie tossing). Plain
/// http cannot use the prefix (it requires Secure); see "Security" in docs/admin.md. The prefix
/// stays here with [`cookie`], which sets the attributes a browser demands before it accepts it.
const HOST_PREFIX: &str = "__Host-";
/// Between a right password and the second factor: the token of the half-finished sign-in
/// (`accounts::challenge`), never a session.
pub const SECOND_STEP_COOKIE: &str = "porch_2fa";

fn is_https(app: &AppState) -> bool {
    app.public_url.starts_with("https://")
}

/// The name of cookie `base` for this server: with the `__Host-` prefix over https.
pub fn cookie_name(app: &AppState, base: &str) -> String {
    if is_https(app) {
        format!("{HOST_PREFIX}{base}")
    } else {
        base.to_owned()
    }
}

/// The name of the session cookie for this server.
pub fn session_cookie_name(app: &AppState) -> String {
    cookie_name(app, SESSION_COOKIE)
}

/// The name of the form cookie for this server.
pub fn form_cookie_name(app: &AppState) -> String {
    cookie_name(app, FORM_COOKIE)
}

/// The name of the second-step cookie for this server.
pub fn second_step_cookie_name(app: &AppState) -> String {
    cookie_name(app, SECOND_STEP_COOKIE)
}

/// The value of cookie `name`, if the request has it exactly once. Two cookies of one name
/// mean someone else set one (another path, or a sibling origin), and the browser does not
/// say which is ours: neither is trusted.
pub fn read_cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut found = cookie_values(headers, name);
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// Every value of cookie `name` the request carries, in the order the browser sent them.
fn cookie_values<'a, 'n>(
    headers: &'a HeaderMap,
    name: &'n str,
) -> impl Iterator<Item = &'a str> + use<'a, 'n> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(move |(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// Most paths a doubled cookie is deleted at (a page's path has a few segments).
const MOST_PATHS_CLEARED: usize = 8;

/// Deletes cookie `name` at each path of `path` but `/` (`/conversations`, `/conversations/`,
/// `/conversations/5`…): a copy planted there (plain http only; see docs/admin.md, "Cookie
/// tossing") sorts first and doubles the name on this page alone, while the sign-in page, at
/// `/`, sees only the browser's own and sends the agent back here; without this they would go
/// round for ever. A segment that could say more than a path in the header (`;`, `,`, `=`,
/// space) ends the list: the request's path must not add attributes to the answer's cookies.
fn delete_planted_copies(response: &mut Response, name: &str, path: &str) {
    let mut at = String::new();
    for segment in path
        .split('/')
        .filter(|s| !s.is_empty())
        .take(MOST_PATHS_CLEARED)
    {
        if !segment
            .bytes()
            .all(|b| b.is_ascii_graphic() && !b";,=".contains(&b))
        {
            break;
        }
        at.push('/');
        at.push_str(segment);
        for path in [at.clone(), format!("{at}/")] {
            if let Ok(value) = HeaderValue::from_str(&format!("{name}=; Path={path}; Max-Age=0")) {
                response.headers_mut().append(header::SET_COOKIE, value);
            }
        }
    }
}

/// A `Set-Cookie` value: `HttpOnly`, `Path=/`, `SameSite`, `Secure` when served over https.
/// `max_age` of zero deletes the cookie.
pub fn cookie(
    app: &AppState,
    name: &str,
    value: &str,
    max_age: std::time::Duration,
    same_site: &str,
) -> HeaderValue {
    let secure = if is_https(app) { "; Secure" } else { "" };
    let text = format!(
        "{name}={value}; HttpOnly; SameSite={same_site}; Path=/; Max-Age={}{secure}",
        max_age.as_secs()
    );
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static("invalid=1"))
}

/// The cookie that signs a browser in.
pub fn session_cookie(app: &AppState, value: &str) -> HeaderValue {
    // Lax, not Strict: following a link to Porch from elsewhere (an email, Slack) keeps the
    // session; cross-site posts carry no cookie, and every post also needs the CSRF token.
    cookie(
        app,
        &session_cookie_name(app),
        value,
        SESSION_LIFETIME,
        "Lax",
    )
}

/// The cookie of a session a sign-in just started in the browser that sent `headers`, ending the
/// session that browser held until now, if any (`Accounts::end_replaced_session`: the new
/// cookie overwrites the old, which nobody could sign out afterwards).
pub async fn new_session_cookie(
    app: &AppState,
    (headers, ip): (&HeaderMap, std::net::IpAddr),
    value: &str,
) -> HeaderValue {
    if let Some(old) = read_cookie(headers, &session_cookie_name(app))
        && let Err(err) = app.accounts.end_replaced_session(old, ip).await
    {
        // The new session is made: the sign-in stands, and the old session ends at its expiry.
        tracing::warn!(%err, "could not end the session a sign-in replaced");
    }
    session_cookie(app, value)
}

/// The live session whose cookie the browser that sent `headers` holds, if any.
pub async fn browser_session(
    app: &AppState,
    headers: &HeaderMap,
) -> Result<Option<crate::store::SessionRow>, PageError> {
    Ok(match read_cookie(headers, &session_cookie_name(app)) {
        Some(value) => app.accounts.find_session(value).await?,
        None => None,
    })
}

/// The cookie of a half-finished sign-in: Strict (only our own pages need it), and gone from
/// the browser when the sign-in expires on the server.
pub fn second_step_cookie(app: &AppState, value: &str) -> HeaderValue {
    cookie(
        app,
        &second_step_cookie_name(app),
        value,
        crate::accounts::SECOND_STEP_LIFETIME,
        "Strict",
    )
}

/// Clears the second-step cookie (the sign-in finished).
pub fn expired_second_step_cookie(app: &AppState) -> HeaderValue {
    cookie(
        app,
        &second_step_cookie_name(app),
        "",
        std::time::Duration::ZERO,
        "Strict",
    )
}

/// Clears the session cookie.
pub fn expired_session_cookie(app: &AppState) -> HeaderValue {
    cookie(
        app,
        &session_cookie_name(app),
        "",
        std::time::Duration::ZERO,
        "Lax",
    )
}

/// The header the inbox script sets on its requests. It only chooses the shape of the answer
/// (`fetch` would follow a redirect to the sign-in page and take that page for success); every
/// check still applies. Forms cannot set it, so plain posts keep their redirects and pages.
pub const SCRIPT_HEADER: &str = "x-porch-fetch";

/// True when the inbox script, not the browser's own form handling, sent the request.
pub fn is_script(headers: &HeaderMap) -> bool {
    headers.contains_key(SCRIPT_HEADER)
}

/// `err` in the shape its requester reads: JSON for the script, else a page.
pub fn reject(script: bool, err: PageError) -> Response {
    if script {
        err.into_script_response()
    } else {
        err.into_response()
    }
}

/// True if `given` equals `expected`, in constant time.
pub fn tokens_match(given: &str, expected: &str) -> bool {
    !expected.is_empty() && bool::from(given.as_bytes().ct_eq(expected.as_bytes()))
}

/// A signed-in person: their user row and their session's CSRF token.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub user: UserRow,
    pub csrf: String,
    /// The cookie value, so a password change can keep this session and end the others.
    pub cookie_value: String,
}

impl SignedIn {
    pub fn is_admin(&self) -> bool {
        self.user.role == "admin"
    }

    /// The navigation of a page in `section`.
    pub fn nav(&self, section: porch_app::layout::Section) -> porch_app::layout::Nav {
        porch_app::layout::Nav {
            name: self.user.name.clone(),
            is_admin: self.is_admin(),
            csrf: self.csrf.clone(),
            section,
        }
    }
}

/// Sends someone who is not signed in to the sign-in page, to come back afterwards. The script
/// gets `401 signed_out` instead, so it can keep the agent's text and say what happened.
fn to_login(parts: &Parts) -> Response {
    if is_script(&parts.headers) {
        return PageError::signed_out().into_script_response();
    }
    let back = parts.uri.path_and_query().map_or("/inbox", |p| p.as_str());
    if parts.method == axum::http::Method::GET && back != "/" {
        let next: String = url_encode(back);
        see_other(&format!("/login?next={next}"))
    } else {
        see_other("/login")
    }
}

/// Percent-encodes everything but unreserved characters (for a `next` parameter).
pub fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~/".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

async fn signed_in(parts: &Parts, app: &AppState) -> Result<SignedIn, Response> {
    let name = session_cookie_name(app);
    let Some(value) = read_cookie(&parts.headers, &name) else {
        let mut response = to_login(parts);
        if cookie_values(&parts.headers, &name).nth(1).is_some() {
            delete_planted_copies(&mut response, &name, parts.uri.path());
        }
        return Err(response);
    };
    match find_signed_in(value, app).await {
        Ok(Some(who)) => Ok(who),
        Ok(None) => Err(to_login(parts)),
        Err(err) => Err(reject(is_script(&parts.headers), err.into())),
    }
}

/// Who the session cookie `value` signs in, if it names a live session.
async fn find_signed_in(
    value: &str,
    app: &AppState,
) -> Result<Option<SignedIn>, crate::accounts::Error> {
    Ok(app
        .accounts
        .find_session(value)
        .await?
        .map(|session| SignedIn {
            user: session.user,
            csrf: session.csrf_token,
            cookie_value: value.to_owned(),
        }))
}

/// The session cookie's value among `headers`, if there is one (kept past the request for a
/// page shown either way, an error page).
pub fn session_cookie_value(headers: &HeaderMap, app: &AppState) -> Option<String> {
    read_cookie(headers, &session_cookie_name(app)).map(str::to_owned)
}

/// Who the session cookie `value` signs in, if anyone; a failed read counts as nobody.
pub async fn session_of_cookie(value: &str, app: &AppState) -> Option<SignedIn> {
    find_signed_in(value, app).await.ok().flatten()
}

impl FromRequestParts<AppState> for SignedIn {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, Response> {
        signed_in(parts, app).await
    }
}

/// A signed-in admin.
#[derive(Debug, Clone)]
pub struct Admin(pub SignedIn);

impl FromRequestParts<AppState> for Admin {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, Response> {
        let who = signed_in(parts, app).await?;
        if who.is_admin() {
            Ok(Self(who))
        } else {
            Err(reject(is_script(&parts.headers), PageError::forbidden()))
        }
    }
}

#[derive(Deserialize)]
struct CsrfField {
    #[serde(default)]
    csrf: String,
}

/// Parses a form body (`application/x-www-form-urlencoded`) after checking its CSRF field.
fn parse_form<T: DeserializeOwned>(body: &Bytes, expected: &str) -> Result<T, PageError> {
    let csrf: CsrfField = serde_urlencoded::from_bytes(body).map_err(|_| PageError::bad_csrf())?;
    if !tokens_match(&csrf.csrf, expected) {
        return Err(PageError::bad_csrf());
    }
    serde_urlencoded::from_bytes(body).map_err(|_| {
        PageError::new(
            StatusCode::BAD_REQUEST,
            "Form not understood",
            "The form was incomplete. Go back and try again.",
        )
    })
}

/// True for `application/x-www-form-urlencoded`, with or without parameters. Only such a body
/// is read as a form: a `text/plain` post (which a page elsewhere can send without a preflight)
/// that happens to look like one is refused, not guessed at.
fn is_url_encoded(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(FORM_TYPE))
}

const FORM_TYPE: &str = "application/x-www-form-urlencoded";

/// The body of a form post, refused with 415 unless it is sent as a form.
async fn form_body(req: Request, app: &AppState) -> Result<Bytes, Response> {
    if !is_url_encoded(req.headers()) {
        let err = PageError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Form not understood",
            format!("A form is sent as {FORM_TYPE}. Go back and try again."),
        );
        return Err(reject(is_script(req.headers()), err));
    }
    Bytes::from_request(req, app)
        .await
        .map_err(IntoResponse::into_response)
}

/// A form posted by a signed-in person with their session's CSRF token.
pub struct Posted<T> {
    pub who: SignedIn,
    pub form: T,
}

impl<T: DeserializeOwned> FromRequest<AppState> for Posted<T> {
    type Rejection = Response;

    async fn from_request(req: Request, app: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let script = is_script(&parts.headers);
        let who = SignedIn::from_request_parts(&mut parts, app).await?;
        let bytes = form_body(Request::from_parts(parts, body), app).await?;
        let form = parse_form(&bytes, &who.csrf).map_err(|err| reject(script, err))?;
        Ok(Self { who, form })
    }
}

/// A form posted by a signed-in admin with their session's CSRF token.
pub struct AdminPosted<T> {
    pub who: SignedIn,
    pub form: T,
}

impl<T: DeserializeOwned> FromRequest<AppState> for AdminPosted<T> {
    type Rejection = Response;

    async fn from_request(req: Request, app: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let script = is_script(&parts.headers);
        let Admin(who) = Admin::from_request_parts(&mut parts, app).await?;
        let bytes = form_body(Request::from_parts(parts, body), app).await?;
        let form = parse_form(&bytes, &who.csrf).map_err(|err| reject(script, err))?;
        Ok(Self { who, form })
    }
}

/// A form posted before signing in, checked against the form cookie (double submit).
pub struct PublicForm<T> {
    pub form: T,
    /// The form cookie's value, to render the form again with the same token.
    pub csrf: String,
}

impl<T: DeserializeOwned> FromRequest<AppState> for PublicForm<T> {
    type Rejection = Response;

    async fn from_request(req: Request, app: &AppState) -> Result<Self, Response> {
        let expected = read_cookie(req.headers(), &form_cookie_name(app))
            .unwrap_or("")
            .to_owned();
        let bytes = form_body(req, app).await?;
        let form = parse_form(&bytes, &expected).map_err(IntoResponse::into_response)?;
        Ok(Self {
            form,
            csrf: expected,
        })
    }
}

/// The form token of a public page: the browser's existing one, or a new one to set.
pub fn form_token(app: &AppState, headers: &HeaderMap) -> (String, Option<HeaderValue>) {
    match read_cookie(headers, &form_cookie_name(app)) {
        Some(token) if token.len() >= 32 => (token.to_owned(), None),
        _ => {
            let token = crate::accounts::new_form_token();
            // Strict: this cookie is only ever needed on our own pages.
            let header = cookie(
                app,
                &form_cookie_name(app),
                &token,
                std::time::Duration::from_hours(12),
                "Strict",
            );
            (token, Some(header))
        }
    }
}

/// Adds a `Set-Cookie` header to a response.
pub fn with_cookie(mut response: Response, cookie: Option<HeaderValue>) -> Response {
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}
