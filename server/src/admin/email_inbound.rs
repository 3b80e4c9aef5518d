//! The email page's card on replies by email (admins only): the IMAP mailbox, the reader's
//! health and the latest mails it took, and "Check now", which starts a round at once.

use axum::extract::{Path, State};
use axum::response::Response;
use porch_app::email_inbound::{InboundMailView, InboundView, MailboxView, ReaderHealthView};

use crate::state::AppState;
use crate::store;

use super::auth::NoFields;
use super::destinations::find_site;
use super::page::{PageError, see_other};
use super::session::AdminPosted;

/// How many of the latest mails the card lists.
const LATEST_MAILS: u32 = 20;

/// The card's content: off without `PORCH_IMAP_URL`.
pub(super) async fn inbound_view(app: &AppState) -> Result<InboundView, PageError> {
    let Some(reader) = &app.mail_reader else {
        return Ok(InboundView::Off);
    };
    let settings = reader.settings();
    let health = reader.health();
    let health = match (health.checked_at, health.error) {
        (None, _) => ReaderHealthView::NotYet,
        (Some(at), None) => ReaderHealthView::Healthy { at },
        (Some(at), Some(error)) => ReaderHealthView::Failing { error, at },
    };
    let rows = app
        .readers
        .read(|c| store::list_inbound_mail(c, LATEST_MAILS))
        .await?;
    Ok(InboundView::Reading {
        mailbox: MailboxView {
            server: format!("{}:{}", settings.host, settings.port),
            tls: if settings.tls { "implicit TLS" } else { "none" },
            user: settings.user.clone(),
            folder: settings.folder.clone(),
            poll_secs: settings.poll.as_secs(),
        },
        health,
        mails: rows
            .into_iter()
            .map(|row| InboundMailView {
                received_at: row.received_at,
                sender: row.sender,
                subject: row.subject,
                outcome: row.outcome,
                reason: row.reason,
                conversation_id: row.conversation_id.map(|id| id.0),
            })
            .collect(),
    })
}

/// `POST /sites/{key}/email/check`: the reader looks at the mailbox now.
pub async fn check_mailbox(
    State(app): State<AppState>,
    Path(key): Path<String>,
    AdminPosted { .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    find_site(&app, &key).await?;
    if let Some(reader) = &app.mail_reader {
        reader.check_now();
    }
    Ok(see_other(&format!(
        "/sites/{key}/email?notice=imap-checking"
    )))
}
