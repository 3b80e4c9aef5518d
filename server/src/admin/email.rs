//! A site's email page (admins only): turn email on with its delays (checked and saved by the
//! same `save_email` as the API), and the server's SMTP setting with a test mail to the signed-in
//! admin, sent through the job runner. The card on replies by email is `email_inbound`'s.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use porch_app::destination::TEST_OUTCOME;
use porch_app::email::{EmailPageView, EmailSettingsView, SmtpView, render_email};
use porch_app::layout::{Notice, Section};
use serde::Deserialize;

use crate::audit::Actor;
use crate::http::ClientIp;
use crate::integrations::email::{
    EmailSetup, MAX_DELAY_SECS, checked_delay, delay_rule, queue_test_mail,
    save_email as save_settings,
};
use crate::jobs::{EmailDelays, JobKind};
use crate::state::AppState;
use crate::store::{self, IntegrationRow, SiteRow};

use super::auth::{NoFields, NoticeQuery};
use super::destinations::{latest_test, load_health};
use super::email_inbound::MailboxForm;
use super::page::{PageError, html, html_with_status, see_other};
use super::session::{Admin, AdminPosted, SignedIn};
use super::sites::find_site;

const NOT_CONFIGURED: &str =
    "Email is not configured: set PORCH_SMTP_URL and PORCH_MAIL_FROM and restart Porch.";

async fn load(app: &AppState, key: &str) -> Result<(SiteRow, Option<IntegrationRow>), PageError> {
    let site = find_site(app, key).await?;
    let id = site.id;
    let row = app
        .readers
        .read(move |c| store::find_site_integration(c, id, "email"))
        .await?;
    Ok((site, row))
}

fn secs(duration: std::time::Duration) -> u32 {
    u32::try_from(duration.as_secs()).unwrap_or(MAX_DELAY_SECS)
}

/// The email page; `typed_mailbox`: a refused mailbox form, shown again as typed.
async fn page(
    app: &AppState,
    who: &SignedIn,
    (site, row): (&SiteRow, Option<&IntegrationRow>),
    (notice, typed_mailbox): (Option<Notice>, Option<&MailboxForm>),
) -> Result<String, PageError> {
    let delays = row.map_or(EmailDelays::DEFAULT, |row| {
        EmailDelays::from_config(&row.config)
    });
    let test = app
        .readers
        .read(|c| latest_test(c, JobKind::EmailTest, None))
        .await?;
    let settings = match row {
        Some(row) => Some(EmailSettingsView {
            id: row.id.0,
            is_enabled: row.is_enabled,
            health: load_health(app, row).await?,
        }),
        None => None,
    };
    let smtp = app
        .mailer
        .as_ref()
        .and_then(|mailer| mailer.summary.clone())
        .map(|s| SmtpView {
            host: s.host,
            port: s.port,
            tls: s.tls.to_owned(),
            has_login: s.has_login,
            sender: s.sender,
        });
    Ok(render_email(EmailPageView {
        nav: who.nav(Section::Sites),
        site_key: site.key.clone(),
        site_name: site.settings.name.clone(),
        smtp,
        settings,
        unanswered_after_secs: secs(delays.unanswered_after),
        reply_delay_secs: secs(delays.reply_delay),
        admin_email: who.user.email.clone(),
        test,
        inbound: super::email_inbound::inbound_view(app, typed_mailbox).await?,
        notice,
    }))
}

/// `GET /sites/{key}/email`.
pub async fn email_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Path(key): Path<String>,
    Query(notice): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    let (site, row) = load(&app, &key).await?;
    let body = page(&app, &who, (&site, row.as_ref()), (notice.notice(), None)).await?;
    Ok(html(body))
}

/// The email page answering a refused mailbox form: the reason, and the form as typed.
pub(super) async fn refused_mailbox(
    app: &AppState,
    who: &SignedIn,
    key: &str,
    typed: &MailboxForm,
    reason: String,
) -> Result<Response, PageError> {
    let (site, row) = load(app, key).await?;
    let shown = (Some(Notice::Error(reason)), Some(typed));
    let body = page(app, who, (&site, row.as_ref()), shown).await?;
    Ok(html_with_status(StatusCode::UNPROCESSABLE_ENTITY, body))
}

#[derive(Debug, Deserialize)]
pub struct EmailForm {
    #[serde(default)]
    unanswered_after_secs: String,
    #[serde(default)]
    reply_delay_secs: String,
}

/// The delay in seconds; refused, an error about the field `id` (the form's control).
fn parse_secs(text: &str, (id, what): (&'static str, &str)) -> Result<u32, Notice> {
    let invalid = |text| Notice::Invalid { field: id, text };
    let secs = text
        .trim()
        .parse::<u32>()
        .map_err(|_| invalid(delay_rule(what)))?;
    checked_delay(secs, what).map_err(invalid)
}

/// `POST /sites/{key}/email`: turns email on for the site, or saves its delays.
pub async fn save_email(
    State(app): State<AppState>,
    Path(key): Path<String>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, form }: AdminPosted<EmailForm>,
) -> Result<Response, PageError> {
    let (site, row) = load(&app, &key).await?;
    let checked = parse_secs(
        &form.unanswered_after_secs,
        ("unanswered_after_secs", "The digest delay"),
    )
    .and_then(|unanswered| {
        let reply = parse_secs(
            &form.reply_delay_secs,
            ("reply_delay_secs", "The reply delay"),
        )?;
        if row.is_none() && app.mailer.is_none() {
            return Err(Notice::Error(NOT_CONFIGURED.to_owned()));
        }
        Ok(EmailSetup {
            unanswered_after_secs: unanswered,
            reply_delay_secs: reply,
        })
    });
    let setup = match checked {
        Ok(setup) => setup,
        Err(notice) => {
            let body = page(&app, &who, (&site, row.as_ref()), (Some(notice), None)).await?;
            return Ok(html_with_status(StatusCode::UNPROCESSABLE_ENTITY, body));
        }
    };
    let actor = Actor::user(&who.user, ip);
    let handles = (&app.writer, &app.jobs, &app.secret_key);
    save_settings(handles, &actor, site.id, &setup).await?;
    Ok(see_other(&format!("/sites/{key}/email?notice=email-saved")))
}

/// `POST /sites/{key}/email/test`: queues a test mail to the signed-in admin; the page then
/// shows whether the SMTP server took it (scrolled to it).
pub async fn test_email(
    State(app): State<AppState>,
    Path(key): Path<String>,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    let (site, row) = load(&app, &key).await?;
    if app.mailer.is_none() {
        let notice = Some(Notice::Error(NOT_CONFIGURED.into()));
        let body = page(&app, &who, (&site, row.as_ref()), (notice, None)).await?;
        return Ok(html_with_status(StatusCode::UNPROCESSABLE_ENTITY, body));
    }
    queue_test_mail(&app.writer, &app.jobs, who.user.email.clone()).await?;
    Ok(see_other(&format!("/sites/{key}/email#{TEST_OUTCOME}")))
}
