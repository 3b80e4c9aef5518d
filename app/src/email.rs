//! A site's email settings (admins only): when the agents' digest and the replies to away
//! visitors are due, its health, turning it off, on or deleting it; and the server's SMTP
//! setting (`PORCH_SMTP_URL`, read-only here, never its password) with a test mail to the
//! signed-in admin; and replies by email (`email_inbound`).

use leptos::prelude::*;

use crate::destination::{
    HEALTH, Health, HealthView, IntegrationControls, TestOutcome, TestOutcomeView,
};
use crate::email_inbound::{InboundView, mail_replies};
use crate::layout::{
    CsrfField, Nav, Notice, NoticeBox, Section, document, field_marks, hinted_field,
};

/// The SMTP server as configured.
#[derive(Debug, Clone)]
pub struct SmtpView {
    pub host: String,
    pub port: u16,
    pub tls: String,
    pub has_login: bool,
    pub sender: String,
}

/// A site's email integration.
#[derive(Debug, Clone)]
pub struct EmailSettingsView {
    pub id: i64,
    pub is_enabled: bool,
    pub health: HealthView,
}

/// The email page of a site.
#[derive(Debug, Clone)]
pub struct EmailPageView {
    pub nav: Nav,
    pub site_key: String,
    pub site_name: String,
    /// `None`: `PORCH_SMTP_URL` (or `PORCH_MAIL_FROM`) is not set.
    pub smtp: Option<SmtpView>,
    pub settings: Option<EmailSettingsView>,
    /// The form's values, in seconds (the stored ones, or the defaults).
    pub unanswered_after_secs: u32,
    pub reply_delay_secs: u32,
    /// Where the test mail goes: the signed-in admin's address.
    pub admin_email: String,
    /// The latest test mail (any admin's: SMTP is the server's), if any.
    pub test: Option<TestOutcomeView>,
    /// Replies by email: the IMAP mailbox, its reader's health and the latest mails.
    pub inbound: InboundView,
    pub notice: Option<Notice>,
}

fn seconds_field(
    (id, label, hint): (&'static str, &'static str, &'static str),
    value: u32,
    refused: Option<&'static str>,
) -> impl IntoView {
    hinted_field((id, label, hint), move |hint_id| {
        view! {
            <input id=id name=id type="number" min="0" max="604800" required
                {..field_marks(refused, id, Some(&hint_id))} value=value.to_string()/>
        }
    })
}

/// The site's own card: whether it mails (first, as other pages send admins here to turn it on),
/// its health and controls once on, and its delays with the button that turns it on or saves.
fn site_email_card(
    key: &str,
    csrf: &str,
    (settings, has_smtp, refused): (Option<EmailSettingsView>, bool, Option<&'static str>),
    (unanswered_after_secs, reply_delay_secs): (u32, u32),
) -> impl IntoView {
    let is_on = settings.is_some();
    let state = match settings {
        Some(s) => {
            let base = format!("/sites/{key}/integrations/{}", s.id);
            view! {
                <Health health=s.health id=HEALTH/>
                <IntegrationControls base is_enabled=s.is_enabled csrf=csrf.to_owned()/>
            }
            .into_any()
        }
        // Without SMTP the button below cannot turn it on: the hint under it says what to set.
        None => view! {
            <p data-email-state="off"><strong>"Off"</strong>": nothing is mailed for this site. "
                {if has_smtp { "Choose the delays and turn it on below." } else { "It needs the SMTP server above first." }}</p>
        }
        .into_any(),
    };
    let button = if is_on {
        "Save email settings"
    } else {
        "Turn on email"
    };
    view! {
        <section class="card stack" aria-labelledby="site-email-title">
            <h2 id="site-email-title">"Email for this site"</h2>
            {state}
            <form method="post" action=format!("/sites/{key}/email") class="stack" aria-label="Email settings">
                <CsrfField token=csrf.to_owned()/>
                {seconds_field(("unanswered_after_secs", "Digest to agents after (seconds)",
                    "A new conversation with no agent reply after this long goes into one mail to every agent."),
                    unanswered_after_secs, refused)}
                {seconds_field(("reply_delay_secs", "Mail replies to away visitors after (seconds)",
                    "An agent's reply is mailed to a visitor who left an address if they are still away this long after it. \
                     The transcript of a closing waits as long, so a close undone meanwhile mails nothing."),
                    reply_delay_secs, refused)}
                <button type="submit" class="button button-primary" disabled=!has_smtp
                    aria-describedby=(!has_smtp).then_some("no-smtp-hint")>{button}</button>
                {(!has_smtp).then(|| view! {
                    <p class="hint" id="no-smtp-hint">"Needs the SMTP server above: set it, restart Porch, \
                        then turn email on here."</p>
                })}
            </form>
        </section>
    }
}

/// Renders the email page.
pub fn render_email(view: EmailPageView) -> String {
    let csrf = view.nav.csrf.clone();
    let nav = Nav {
        section: Section::Sites,
        ..view.nav
    };
    let key = view.site_key;
    let refused = view.notice.as_ref().and_then(Notice::field);
    let reload = format!("/sites/{key}/email");
    let test = view
        .test
        .map(|outcome| view! { <TestOutcome outcome reload/> });
    // Without SMTP the server refuses the settings (nothing could be sent): the button says so
    // before the admin tries.
    let has_smtp = view.smtp.is_some();
    let smtp = match view.smtp {
        Some(smtp) => view! {
            <dl class="details" data-smtp="set">
                <dt>"Server"</dt><dd class="mono">{format!("{}:{}", smtp.host, smtp.port)}</dd>
                <dt>"TLS"</dt><dd>{smtp.tls}</dd>
                <dt>"Login"</dt><dd>{if smtp.has_login { "yes (password not shown)" } else { "none" }}</dd>
                <dt>"Sender"</dt><dd class="mono">{smtp.sender}</dd>
            </dl>
            <form method="post" action=format!("/sites/{key}/email/test")>
                <CsrfField token=csrf.clone()/>
                <button type="submit" class="button">"Send test mail"</button>
                <p class="hint">"Goes to "{view.admin_email}" through the job runner; this page shows \
                    whether the SMTP server took it."</p>
            </form>
        }
        .into_any(),
        None => view! {
            <p class="notice notice-error" data-smtp="unset">"Email is not configured: set \
                PORCH_SMTP_URL and PORCH_MAIL_FROM and restart Porch ("
                <a href="/docs/configuration.md">"configuration"</a>")."</p>
        }
        .into_any(),
    };
    let content = view! {
        <div class="page-head">
            <p class="crumb"><a href=format!("/sites/{key}")>"← "{view.site_name}</a></p>
            <h1>"Email"</h1>
            <p class="muted">"Agents get a digest of conversations nobody answered in time; visitors \
                who left an address get agents' replies while they are away, and the transcript when \
                the conversation is closed. Setup steps are in "
                <a href="/docs/integrations/email.md">"the email guide"</a>"."</p>
        </div>
        <NoticeBox notice=view.notice/>
        {test}
        <section class="card" aria-labelledby="smtp-title">
            <h2 id="smtp-title">"SMTP server"</h2>
            <p class="hint">"Set by the server's environment (PORCH_SMTP_URL, PORCH_MAIL_FROM) for \
                every site; it cannot be changed here."</p>
            {smtp}
        </section>
        {site_email_card(&key, &csrf, (view.settings, has_smtp, refused),
            (view.unanswered_after_secs, view.reply_delay_secs))}
        {mail_replies(view.inbound, &format!("/sites/{key}/email"), &csrf)}
    };
    document("Email", Some(nav), true, content.into_any())
}
