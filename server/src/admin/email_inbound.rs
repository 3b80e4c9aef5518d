//! The email page's card on replies by email (admins only): the IMAP mailbox, the reader's
//! health and the latest mails it took, and "Check now", which starts a round at once; and
//! setting the mailbox from the page (saved, tested, removed, each audited), unless
//! `PORCH_IMAP_URL` sets it.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use porch_app::email_inbound::{
    InboundMailView, InboundView, MailboxView, ReaderHealthView, ReadingView,
};
use porch_app::email_mailbox::{MailboxFormView, MailboxTestView};
use serde::Deserialize;

use crate::audit::Actor;
use crate::http::ClientIp;
use crate::integrations::email::inbound::{
    MailReader, MailboxError, MailboxInput, MailboxSource, record_mailbox_test, remove_mailbox,
    resolve_mailbox, save_mailbox,
};
use crate::state::AppState;
use crate::store;

use super::auth::NoFields;
use super::page::{PageError, see_other};
use super::session::AdminPosted;
use super::sites::find_site;

/// How many of the latest mails the card lists.
const LATEST_MAILS: u32 = 20;

/// The card's content: off without SMTP. `typed`: a refused mailbox form, shown again as typed.
pub(super) async fn inbound_view(
    app: &AppState,
    typed: Option<&MailboxForm>,
) -> Result<InboundView, PageError> {
    let Some(reader) = &app.mail_reader else {
        return Ok(InboundView::Off);
    };
    let is_from_env = reader.source() == MailboxSource::Environment;
    let settings = reader.settings();
    let mut form = Box::new(match (&settings, is_from_env) {
        (Some(s), false) => MailboxFormView {
            host: s.host.clone(),
            port: s.port.to_string(),
            is_tls: s.tls,
            user: s.user.clone(),
            folder: s.folder.clone(),
            poll_secs: s.poll.as_secs().to_string(),
            has_password: true,
            is_saved: true,
            last_test: reader.last_test().map(|t| MailboxTestView {
                at: t.at,
                error: t.outcome.err(),
            }),
        },
        _ => MailboxFormView {
            is_tls: true,
            poll_secs: "60".into(),
            ..MailboxFormView::default()
        },
    });
    if let Some(typed) = typed {
        typed.show_in(&mut form);
    }
    let Some(settings) = settings else {
        return Ok(InboundView::On {
            is_from_env,
            reading: None,
            form,
        });
    };
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
    let reading = ReadingView {
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
    };
    Ok(InboundView::On {
        is_from_env,
        reading: Some(Box::new(reading)),
        form,
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

/// The mailbox form's fields (no `Debug`: it holds the password).
#[derive(Default, Deserialize)]
#[serde(default)]
pub struct MailboxForm {
    #[serde(rename = "imap_host")]
    host: String,
    #[serde(rename = "imap_port")]
    port: String,
    #[serde(rename = "imap_tls")]
    tls: String,
    #[serde(rename = "imap_user")]
    user: String,
    #[serde(rename = "imap_password")]
    password: String,
    #[serde(rename = "imap_folder")]
    folder: String,
    #[serde(rename = "imap_poll_secs")]
    poll_secs: String,
}

impl MailboxForm {
    /// Puts what was typed into the card's form, so a refusal loses none of it (the password
    /// field stays empty: a page never holds a password).
    fn show_in(&self, form: &mut MailboxFormView) {
        form.host.clone_from(&self.host);
        form.port.clone_from(&self.port);
        form.is_tls = self.tls != "none";
        form.user.clone_from(&self.user);
        form.folder.clone_from(&self.folder);
        form.poll_secs.clone_from(&self.poll_secs);
    }
}

fn not_saved(message: impl Into<String>) -> PageError {
    PageError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Mailbox not saved",
        message,
    )
}

/// The reader whose mailbox the page may set: refused without SMTP, or when `PORCH_IMAP_URL`
/// sets it (the environment wins).
fn page_reader(app: &AppState) -> Result<&Arc<MailReader>, PageError> {
    let reader = app.mail_reader.as_ref().ok_or_else(|| {
        not_saved("SMTP is not configured (PORCH_SMTP_URL, PORCH_MAIL_FROM): replies answer Porch's mails.")
    })?;
    if reader.source() == MailboxSource::Environment {
        return Err(PageError::new(
            StatusCode::CONFLICT,
            "Mailbox not saved",
            "PORCH_IMAP_URL sets the mailbox, and the environment wins over this page.",
        ));
    }
    Ok(reader)
}

impl From<MailboxError> for PageError {
    fn from(err: MailboxError) -> Self {
        match err {
            MailboxError::Invalid(message) => not_saved(message),
            MailboxError::Store(err) => err.into(),
        }
    }
}

/// `POST /sites/{key}/email/imap`: saves the mailbox (its password sealed) and reads from it
/// at once. A refusal answers the email page with the form as typed and the reason.
pub async fn save_page_mailbox(
    State(app): State<AppState>,
    Path(key): Path<String>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, mut form }: AdminPosted<MailboxForm>,
) -> Result<Response, PageError> {
    find_site(&app, &key).await?;
    let reader = page_reader(&app)?;
    let input = MailboxInput {
        host: form.host.clone(),
        port: form.port.clone(),
        tls: form.tls.clone(),
        user: form.user.clone(),
        password: std::mem::take(&mut form.password),
        folder: form.folder.clone(),
        poll_secs: form.poll_secs.clone(),
    };
    let checked = match input.check(reader.settings().as_ref()) {
        Ok(settings) => resolve_mailbox(&settings, reader.reach())
            .await
            .map(|_| settings),
        Err(MailboxError::Invalid(message)) => Err(message.to_owned()),
        Err(MailboxError::Store(err)) => return Err(err.into()),
    };
    let settings = match checked {
        Ok(settings) => settings,
        Err(message) => {
            return super::email::refused_mailbox(&app, &who, &key, &form, message).await;
        }
    };
    let actor = Actor::user(&who.user, ip);
    save_mailbox(&app.writer, &app.secret_key, &actor, &settings).await?;
    reader.replace(Some(settings));
    Ok(see_other(&format!("/sites/{key}/email?notice=imap-saved")))
}

/// `POST /sites/{key}/email/imap/test`: logs in and opens the folder now; the card shows the
/// outcome.
pub async fn test_page_mailbox(
    State(app): State<AppState>,
    Path(key): Path<String>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    find_site(&app, &key).await?;
    let reader = page_reader(&app)?;
    let (reader, writer) = (Arc::clone(reader), Arc::clone(&app.writer));
    let actor = Actor::user(&who.user, ip);
    // A task of its own, so a request cut short (its timeout, a closed tab) still leaves the
    // outcome on the card and in the audit log.
    let tested = tokio::spawn(async move {
        let outcome = reader.test().await;
        record_mailbox_test(&writer, &actor, &outcome).await
    });
    match tested.await {
        Ok(recorded) => recorded?,
        Err(_) => return Err(PageError::internal()),
    }
    Ok(see_other(&format!("/sites/{key}/email#imap-title")))
}

/// `POST /sites/{key}/email/imap/delete`: forgets the page's mailbox; replies are no longer
/// read.
pub async fn remove_page_mailbox(
    State(app): State<AppState>,
    Path(key): Path<String>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    find_site(&app, &key).await?;
    let reader = page_reader(&app)?;
    remove_mailbox(&app.writer, &Actor::user(&who.user, ip)).await?;
    reader.replace(None);
    Ok(see_other(&format!(
        "/sites/{key}/email?notice=imap-removed"
    )))
}
