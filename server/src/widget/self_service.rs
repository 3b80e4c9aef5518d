//! A visitor's own data, from the widget (docs/widget-protocol.md, "Your data"): download their
//! conversations as JSON or as a readable text file, and erase everything about them. Behind
//! the visitor token (sent as the `text/plain` body, so the browser sends no preflight), from an
//! allowed origin only, and rate-limited per visitor. A known visitor also proves the user with
//! `X-Porch-Identity`, as for files: their conversations are the user's, not the browser's.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::identity::verified_user_key;
use crate::audit::Actor;
use crate::chat::{Site, hash_token};
use crate::clock::now_ms;
use crate::http::ApiError;
use crate::privacy::{self, PersonData, Requester, Via};
use crate::state::AppState;
use crate::store;

#[derive(Debug, Default, Deserialize)]
pub struct SelfServiceQuery {
    #[serde(default)]
    site: String,
    /// `json` (the default) or `text`.
    #[serde(default)]
    format: String,
}

/// The header a request proves a known visitor with ([`verified_user_key`]).
pub(super) const IDENTITY_HEADER: &str = "x-porch-identity";

/// A checked request: the origin to allow, and the visitor's token hash.
pub(super) struct Checked {
    pub(super) origin: HeaderValue,
    pub(super) token_hash: [u8; 32],
    pub(super) site: Arc<Site>,
}

/// Adds the CORS answer for an allowed origin (the panel runs on the site's pages).
pub(super) fn allow(origin: &HeaderValue, mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    headers.insert(header::VARY, HeaderValue::from_static("Origin"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The two self-service calls. Each has a budget of its own, so exports (a click each) never
/// keep a visitor from erasing their data.
#[derive(Debug, Clone, Copy)]
enum Call {
    Export,
    Erase,
}

impl Call {
    /// Mixed into the visitor's brake key, so each call is braked apart.
    fn salt(self) -> u64 {
        match self {
            Self::Export => 0,
            Self::Erase => 0x9E37_79B9_7F4A_7C15,
        }
    }
}

/// Asks the visitor's brake for `call`, after the request was found valid (one refused for its
/// own fault costs nothing); the error is the answer. Answers with the `token_hash` the visitor
/// is stored under: a verified user's when the request proves one (the rate is then counted per
/// user, as for messages), else the token's own.
fn admit(
    app: &AppState,
    checked: &Checked,
    headers: &HeaderMap,
    call: Call,
) -> Result<[u8; 32], Box<Response>> {
    let visitor_hash =
        verified_user_key(headers.get(IDENTITY_HEADER), &checked.site, &app.secret_key)
            .unwrap_or(checked.token_hash);
    let visitor_key = u64::from_le_bytes(visitor_hash[..8].try_into().unwrap_or([0; 8]));
    let key = visitor_key ^ call.salt();
    if let Err(wait) = app.brakes.admit_self_service(key, Instant::now()) {
        let body = json!({"error": {
            "code": "rate_limited",
            "message": "Too many requests for your data.",
            "retry_after_ms": super::wire::retry_after_ms(wait),
        }});
        let refused = (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response();
        return Err(Box::new(allow(&checked.origin, refused)));
    }
    Ok(visitor_hash)
}

/// The site, if `origin` is one of its allowed origins; otherwise the refusal to answer.
pub(super) async fn allowed_origin(
    app: &AppState,
    site_key: &str,
    headers: &HeaderMap,
) -> Result<(Arc<Site>, HeaderValue), Response> {
    let origin = headers.get(header::ORIGIN).cloned();
    let site = match app.sites.find(site_key).await {
        Ok(Some(site)) => site,
        Ok(None) => return Err(ApiError::not_found("site").into_response()),
        Err(err) => {
            tracing::error!(error = %err, "site lookup failed");
            return Err(ApiError::unavailable().into_response());
        }
    };
    let Some(origin) = origin.filter(|o| o.to_str().is_ok_and(|text| site.allows_origin(text)))
    else {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "origin_not_allowed",
            "This page's origin may not use the chat of this site.",
        )
        .into_response());
    };
    Ok((site, origin))
}

/// Checks the site, the origin and the visitor token; the error is the answer.
pub(super) async fn check_visitor(
    app: &AppState,
    site_key: &str,
    headers: &HeaderMap,
    token: &str,
) -> Result<Checked, Response> {
    let (site, origin) = allowed_origin(app, site_key, headers).await?;
    let token = token.trim();
    if !app.tokens.verify(&site.key, token) {
        return Err(allow(
            &origin,
            ApiError::visitor_unauthorized().into_response(),
        ));
    }
    Ok(Checked {
        origin,
        token_hash: hash_token(token),
        site,
    })
}

/// `OPTIONS` of the widget's HTTP endpoints: lets an allowed origin send the `Authorization`
/// and `X-Porch-Identity` headers (the self-service calls need it only with the identity).
pub async fn preflight(
    State(app): State<AppState>,
    Query(query): Query<SelfServiceQuery>,
    headers: HeaderMap,
) -> Response {
    let origin = match allowed_origin(&app, &query.site, &headers).await {
        Ok((_, origin)) => origin,
        Err(refused) => return refused,
    };
    let mut response = StatusCode::NO_CONTENT.into_response();
    let out = response.headers_mut();
    out.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST"),
    );
    out.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("authorization, content-type, x-porch-identity"),
    );
    out.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    allow(&origin, response)
}

pub(super) fn storage_failed(origin: &HeaderValue, err: store::Error) -> Response {
    allow(
        origin,
        ApiError::from(crate::http::Failure::from(err)).into_response(),
    )
}

/// `POST /widget/export?site=KEY&format=json|text`, body: the visitor token. What the widget
/// shows the visitor, as a download; a visitor who never wrote gets an empty export.
pub async fn export(
    State(app): State<AppState>,
    Query(query): Query<SelfServiceQuery>,
    headers: HeaderMap,
    token: String,
) -> Response {
    let checked = match check_visitor(&app, &query.site, &headers, &token).await {
        Ok(checked) => checked,
        Err(refused) => return refused,
    };
    if !matches!(query.format.as_str(), "" | "json" | "text") {
        let unknown = ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid",
            "format must be json or text.",
        );
        return allow(&checked.origin, unknown.into_response());
    }
    let hash = match admit(&app, &checked, &headers, Call::Export) {
        Ok(hash) => hash,
        Err(refused) => return *refused,
    };
    let found = app
        .readers
        .read(
            move |c| match store::find_visitor_record_by_token_hash(c, &hash)? {
                Some(v) => PersonData::read(c, v.id),
                None => Ok(None),
            },
        )
        .await;
    let data = match found {
        Ok(Some(data)) => data,
        Ok(None) => {
            let nothing = ApiError::new(
                StatusCode::NOT_FOUND,
                "nothing_stored",
                "Nothing is stored about you: you have not written yet.",
            );
            return allow(&checked.origin, nothing.into_response());
        }
        Err(err) => return storage_failed(&checked.origin, err),
    };
    let requester = Requester {
        actor: Actor::visitor(data.visitor.id),
        via: Via::Widget,
    };
    // The record counts what the visitor gets: not agents' notes or status lines.
    let data = data.as_seen_by_visitor();
    let recorded = data.clone();
    if let Err(err) = app
        .writer
        .write(move |c| privacy::record_export(c, &requester, &recorded))
        .await
    {
        return storage_failed(&checked.origin, err);
    }
    let (body, content_type, filename) = if query.format == "text" {
        (
            data.to_text(),
            "text/plain; charset=utf-8",
            "conversation.txt",
        )
    } else {
        let json = serde_json::to_string_pretty(&data.to_json(now_ms())).unwrap_or_default();
        (json, "application/json; charset=utf-8", "conversation.json")
    };
    let mut response = body.into_response();
    let out = response.headers_mut();
    out.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{filename}\"")) {
        out.insert(header::CONTENT_DISPOSITION, value);
    }
    allow(&checked.origin, response)
}

/// `POST /widget/erase?site=KEY`, body: the visitor token. Erases everything about the visitor
/// and answers what went; their open widgets get `erased` and start again as a new visitor.
pub async fn erase(
    State(app): State<AppState>,
    Query(query): Query<SelfServiceQuery>,
    headers: HeaderMap,
    token: String,
) -> Response {
    let checked = match check_visitor(&app, &query.site, &headers, &token).await {
        Ok(checked) => checked,
        Err(refused) => return refused,
    };
    let hash = match admit(&app, &checked, &headers, Call::Erase) {
        Ok(hash) => hash,
        Err(refused) => return *refused,
    };
    // A verified user's history, and this browser's own anonymous one (their chats before they
    // signed in, which the widget cannot reach once it forgets the token below). The browser's
    // goes first: the user's open connections erase their own browser's when told of the
    // user's erasure, and this one's would then be missing from the counts answered.
    let mut whose = vec![checked.token_hash];
    if hash != checked.token_hash {
        whose.push(hash);
    }
    let mut deleted = store::Deleted::default();
    let mut browser_erased = false;
    for hash in whose {
        let erased = privacy::erase_visitor_of_token(
            &app.writer,
            &app.readers,
            (app.chat.hub(), &app.jobs),
            hash,
        );
        match erased.await {
            Ok(Some(gone)) => {
                deleted.conversations += gone.conversations;
                deleted.messages += gone.messages;
                browser_erased |= hash == checked.token_hash;
            }
            Ok(None) => {}
            Err(err) => return storage_failed(&checked.origin, err),
        }
    }
    // Uploads no message took carry the browser's token: an anonymous visitor's went with the
    // erasure; someone who never wrote may still have some.
    if !browser_erased {
        let token_hash = checked.token_hash;
        let uploads = app
            .writer
            .write(move |c| store::delete_visitor_uploads(c, &token_hash))
            .await;
        match uploads {
            Ok(0) => {}
            // As after an erasure: the files' bytes must not stay readable in the WAL.
            Ok(_) => store::truncate_wal_after_deleting(&app.writer).await,
            Err(err) => return storage_failed(&checked.origin, err),
        }
    }
    let body = json!({
        "erased": true,
        "conversations": deleted.conversations,
        "messages": deleted.messages,
    });
    allow(&checked.origin, axum::Json(body).into_response())
}
