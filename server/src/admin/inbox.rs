//! The inbox list and the conversation page with its reply or note (the other actions are in
//! `actions`). The reply is a plain form post answered with a redirect; the inbox script posts
//! the reply form with `X-Porch-Fetch: 1` and gets the new message's fragment (marked
//! `X-Porch-Fragment: message`) or an error as JSON instead.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse as _, Response};
use porch_app::conversation::{ConversationView, Refused, render_conversation, render_message};
use porch_app::inbox::{InboxView, render_inbox};
use porch_app::layout::{Notice, Section};
use serde::Deserialize;

use crate::chat::{Agent, MessageBody};
use crate::state::AppState;
use crate::store::{self, ConversationId};
use crate::values::{BODY_CONTROL, BODY_TOO_LONG, ClientId};

use super::auth::NoticeQuery;
use super::bulk::BulkDone;
use super::inbox_query::{InboxParams, InboxRequest, format_cursor};
use super::page::{PageError, html, see_other};
use super::session::{Posted, SignedIn, is_script, reject};
use super::views;

/// `GET /inbox?filter=…&status=…&assignee=…&site=…&sort=…&cursor=…`: one page of the list.
pub async fn inbox_page(
    State(app): State<AppState>,
    who: SignedIn,
    Query(params): Query<InboxParams>,
    Query(notice): Query<NoticeQuery>,
    Query(bulk): Query<BulkDone>,
) -> Result<Response, PageError> {
    let me = who.user.id;
    let choices = app.chat.inbox_choices().await?;
    let request = InboxRequest::parse(&params, me, &choices);
    let (page, last_id) = app
        .chat
        .list_inbox(me, request.query, request.cursor)
        .await?;
    let summary = request.summary(&choices, page.total, page.before, page.items.len());
    Ok(html(render_inbox(InboxView {
        nav: who.nav(Section::Inbox),
        csrf: who.csrf.clone(),
        back: request.page_href(request.cursor),
        tabs: request.tab_hrefs(),
        tabs_site: request.query.site.map(|site| site.0),
        tab: request.tab(),
        filters: request.form(&choices),
        summary,
        next: page.next.map(|c| request.page_href(Some(c))),
        first: request.cursor.map(|_| request.page_href(None)),
        live: request.live_href(),
        summary_href: request.summary_href(),
        sort: request.sort_value(),
        cursor: request.cursor.map(format_cursor).unwrap_or_default(),
        items: page
            .items
            .into_iter()
            .map(|i| views::inbox_item(i, me, &request.query))
            .collect(),
        last_id: last_id.0,
        notice: notice.notice().or_else(|| bulk.notice()),
    })))
}

#[derive(Debug, Default, Deserialize)]
pub struct ConversationQuery {
    #[serde(default)]
    error: String,
    #[serde(flatten)]
    notice: NoticeQuery,
}

/// `GET /conversations/{id}`: marks the conversation read.
pub async fn conversation_page(
    State(app): State<AppState>,
    who: SignedIn,
    Path(id): Path<i64>,
    Query(query): Query<ConversationQuery>,
) -> Result<Response, PageError> {
    let view = app
        .chat
        .open_conversation(who.user.id, ConversationId(id))
        .await?;
    let notice = match query.error.as_str() {
        "empty" => Some(Notice::Error(
            "Write something first: the reply was empty.".into(),
        )),
        "too-long" => Some(Notice::Error(
            "The reply is longer than 4,000 characters.".into(),
        )),
        "control" => Some(Notice::Error(
            "The reply holds a control character (such as NUL, often pasted along unseen): \
             remove it, only tab and line breaks are allowed."
                .into(),
        )),
        "newer" => Some(Notice::Error(
            "The older conversation stays closed: the visitor has started this one since. \
             Answer here."
                .into(),
        )),
        "assigned" => Some(Notice::Error(
            "Someone changed the assignee meanwhile, so nothing changed: it is as shown below."
                .into(),
        )),
        _ => super::actions::done_notice(&query.notice.notice, &view.item, who.user.id)
            .or_else(|| query.notice.notice()),
    };
    Ok(html(
        conversation_html(&app, &who, view, notice, None).await?,
    ))
}

/// A conversation's page as `who` reads it, with `notice` above it; `refused` is what a refused
/// form of its side panel held, kept in it.
pub(super) async fn conversation_html(
    app: &AppState,
    who: &SignedIn,
    view: crate::chat::ConversationView,
    notice: Option<Notice>,
    refused: Option<Refused>,
) -> Result<String, PageError> {
    let id = view.item.id.0;
    let last_id = view.messages.last().map_or(0, |m| m.id.0);
    let conversation = ConversationId(id);
    let (deliveries, mails) = app
        .readers
        .read(move |c| {
            let deliveries = store::list_conversation_deliveries(c, conversation)?;
            Ok((deliveries, store::list_outbound_mails(c, conversation)?))
        })
        .await?;
    let mut aside = views::aside(&view, who.user.id, &who.csrf);
    aside.refused = refused;
    let page = ConversationView {
        nav: who.nav(Section::Inbox),
        id,
        visitor: views::visitor_label(&view.item),
        messages: view
            .messages
            .iter()
            .map(|m| views::message_with_deliveries(m, &deliveries, &mails))
            .collect(),
        aside,
        last_id,
        notice,
        draft: String::new(),
        reply_id: fresh_form_id(),
        mail_id: fresh_form_id(),
        can_email: view.can_email,
        reads_replies: app.mailer.as_ref().is_some_and(|m| m.reads_replies()),
    };
    Ok(render_conversation(page))
}

/// The part of `/inbox/summary`'s query beside the list's own ([`InboxParams`]).
#[derive(Debug, Deserialize)]
pub struct Shown {
    /// How many rows the page shows now.
    #[serde(default)]
    shown: usize,
}

/// `GET /inbox/summary?…&shown=N`: the line above the list ("12 open conversations, showing
/// 1–12") for the page's filters and cursor, with `shown` rows. The inbox script asks for it when
/// the live stream has added or removed rows, so the line agrees with the list.
pub async fn inbox_summary(
    State(app): State<AppState>,
    who: SignedIn,
    Query(params): Query<InboxParams>,
    Query(Shown { shown }): Query<Shown>,
) -> Result<Response, PageError> {
    let choices = app.chat.inbox_choices().await?;
    let request = InboxRequest::parse(&params, who.user.id, &choices);
    let (total, before) = app.chat.count_inbox(request.query, request.cursor).await?;
    let line = request.summary(&choices, total, before, shown);
    Ok((
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        line,
    )
        .into_response())
}

/// A form's id for the message it sends: 128 random bits, in the `client_id` alphabet.
fn fresh_form_id() -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 16]>())
}

#[derive(Debug, Deserialize)]
pub struct ReplyForm {
    #[serde(default)]
    body: String,
    #[serde(default)]
    kind: String,
    /// Ids of the agent's uploads the reply takes, separated by commas (the script fills it
    /// after uploading; see docs/widget.md, "Attachments").
    #[serde(default)]
    attachments: String,
    /// The page's id for this message (a new one with each page and each sent message), so a
    /// form sent twice (a double click, a resend after a lost answer) stores one message.
    #[serde(default)]
    client_id: String,
}

/// The header that marks the script's success answer as the fragment it asked for: the script
/// inserts nothing without it, whatever else a proxy or sign-in wall might answer with 200.
pub const FRAGMENT_HEADER: &str = "x-porch-fragment";

/// `POST /conversations/{id}/reply`: a reply to the visitor, or a private note (`kind=note`).
pub async fn reply(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    posted: Posted<ReplyForm>,
) -> Response {
    let script = is_script(&headers);
    post_reply(&app, id, script, posted)
        .await
        .unwrap_or_else(|err| reject(script, err))
}

async fn post_reply(
    app: &AppState,
    id: i64,
    script: bool,
    Posted { who, form }: Posted<ReplyForm>,
) -> Result<Response, PageError> {
    let conversation = ConversationId(id);
    // Anything but these two is a mistake, never a reply: `Note` sent as a public reply would show
    // a private note to the visitor.
    if !matches!(form.kind.as_str(), "reply" | "note" | "") {
        return Err(PageError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Not sent",
            "kind must be reply or note.",
        ));
    }
    let attachments: Vec<String> = form
        .attachments
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
        .collect();
    // A note carries no files, so files never excuse an empty note.
    let has_files = !attachments.is_empty() && form.kind != "note";
    let body = match MessageBody::parse_beside_attachments(&form.body, has_files) {
        Ok(body) => body,
        Err(invalid) => {
            if script {
                return Err(PageError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "Not sent",
                    invalid.0,
                ));
            }
            // Named by the refusal itself: a short text holding a NUL was "longer than
            // 4,000 characters".
            let code = match invalid.0.as_ref() {
                BODY_CONTROL => "control",
                BODY_TOO_LONG => "too-long",
                _ => "empty",
            };
            return Ok(see_other(&format!("/conversations/{id}?error={code}")));
        }
    };
    let client_id = match form.client_id.as_str() {
        "" => None,
        raw => Some(ClientId::parse(raw).map_err(crate::chat::Error::from)?),
    };
    let row = if form.kind == "note" {
        app.chat
            .post_note(conversation, &who.user, body, client_id, None)
            .await?
            .row
    } else {
        let agent = Agent {
            user_id: Some(who.user.id),
            name: who.user.name.clone(),
        };
        app.chat
            .take_on_reply(conversation, &who.user, client_id.as_ref(), &attachments)
            .await?;
        app.chat
            .post_agent_message(conversation, &agent, body, attachments, client_id)
            .await?
            .row
    };
    // One's own message is read by definition.
    app.chat
        .mark_read(who.user.id, conversation, row.id)
        .await?;
    if script {
        let mut fragment = html(render_message(views::message(&row)));
        fragment
            .headers_mut()
            .insert(FRAGMENT_HEADER, HeaderValue::from_static("message"));
        return Ok(fragment);
    }
    Ok(see_other(&format!(
        "/conversations/{id}#message-{}",
        row.id
    )))
}
