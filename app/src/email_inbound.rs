//! The email page's card on replies by email: the IMAP mailbox as configured (never its
//! password), the reader's health with "Check now", and the latest mails it took, each posted,
//! refused or skipped with the reason; and the form that sets the mailbox from the page, with
//! "Test connection" (`mailbox_form`).

use leptos::prelude::*;

use crate::layout::CsrfField;
use crate::time::format_time;

/// The mailbox as `PORCH_IMAP_URL` sets it.
#[derive(Debug, Clone)]
pub struct MailboxView {
    pub server: String,
    /// `implicit TLS` or `none`.
    pub tls: &'static str,
    pub user: String,
    pub folder: String,
    pub poll_secs: u64,
}

/// The reader's last round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReaderHealthView {
    /// No round has ended since the start.
    NotYet,
    Healthy {
        at: i64,
    },
    Failing {
        error: String,
        at: i64,
    },
}

/// One mail the reader took.
#[derive(Debug, Clone)]
pub struct InboundMailView {
    pub received_at: i64,
    pub sender: String,
    pub subject: String,
    /// `posted`, `refused` or `skipped`.
    pub outcome: String,
    pub reason: String,
    pub conversation_id: Option<i64>,
}

/// What the reader is doing.
#[derive(Debug, Clone)]
pub struct ReadingView {
    pub mailbox: MailboxView,
    pub health: ReaderHealthView,
    pub mails: Vec<InboundMailView>,
}

/// The card's content.
#[derive(Debug, Clone)]
pub enum InboundView {
    /// SMTP is not configured: there are no mails to answer, so nothing to read.
    Off,
    On {
        /// `PORCH_IMAP_URL` sets the mailbox: it wins, the form is shown disabled.
        is_from_env: bool,
        /// `None` while no mailbox is set.
        reading: Option<Box<ReadingView>>,
        form: Box<crate::email_mailbox::MailboxFormView>,
    },
}

fn health_line(health: ReaderHealthView) -> impl IntoView {
    match health {
        ReaderHealthView::NotYet => view! {
            <div class="health" data-reader="pending"><p>"Health "
                <span class="badge">"Not checked yet"</span></p></div>
        }
        .into_any(),
        ReaderHealthView::Healthy { at } => {
            let (iso, text) = format_time(at);
            view! {
                <div class="health" data-reader="healthy"><p>"Health "
                    <span class="badge badge-open">"Healthy"</span>" (checked "
                    <time datetime=iso>{text}</time>")"</p></div>
            }
            .into_any()
        }
        ReaderHealthView::Failing { error, at } => {
            let (iso, text) = format_time(at);
            view! {
                <div class="health" data-reader="failing"><p>"Health "
                    <span class="badge badge-danger">"Failing"</span></p>
                    <p class="notice notice-error" role="alert">"Failing: "<bdi>{error}</bdi>" ("
                        <time datetime=iso>{text}</time>"). Porch tries again at the next interval."</p>
                </div>
            }
            .into_any()
        }
    }
}

fn mail_row(mail: InboundMailView) -> impl IntoView {
    let (iso, text) = format_time(mail.received_at);
    let conversation = mail.conversation_id.map(|id| {
        view! { <a href=format!("/conversations/{id}")>{format!("#{id}")}</a> }
    });
    let outcome = mail.outcome.clone();
    view! {
        <tr data-outcome=outcome>
            <td><time datetime=iso>{text}</time></td>
            <td class="mono">{mail.sender}</td>
            <td>{mail.subject}</td>
            <td>{mail.outcome}</td>
            <td>{mail.reason}</td>
            <td>{conversation}</td>
        </tr>
    }
}

fn reading_view(reading: ReadingView, check_action: String, csrf: String) -> impl IntoView {
    let ReadingView {
        mailbox,
        health,
        mails,
    } = reading;
    let table = if mails.is_empty() {
        view! { <p class="hint">"No mail read yet."</p> }.into_any()
    } else {
        view! {
            <div class="table-scroll" tabindex="0" role="region" aria-label="Latest mails read">
                <table class="table" aria-label="Latest mails read">
                    <thead><tr><th>"Received"</th><th>"From"</th><th>"Subject"</th>
                        <th>"Outcome"</th><th>"Why"</th><th>"Conversation"</th></tr></thead>
                    <tbody>{mails.into_iter().map(mail_row).collect_view()}</tbody>
                </table>
            </div>
        }
        .into_any()
    };
    view! {
        <dl class="details" data-imap="set">
            <dt>"Server"</dt><dd class="mono">{mailbox.server}</dd>
            <dt>"TLS"</dt><dd>{mailbox.tls}</dd>
            <dt>"User"</dt><dd class="mono">{mailbox.user}" (password not shown)"</dd>
            <dt>"Folder"</dt><dd class="mono">{mailbox.folder}</dd>
            <dt>"Looks every"</dt><dd>{format!("{} s", mailbox.poll_secs)}</dd>
        </dl>
        {health_line(health)}
        <form method="post" action=check_action>
            <CsrfField token=csrf/>
            <button type="submit" class="button">"Check now"</button>
        </form>
        {table}
    }
}

/// The "Replies by email" card; `base` is the email page's path (`/sites/{key}/email`).
pub fn mail_replies(inbound: InboundView, base: &str, csrf: &str) -> impl IntoView + use<> {
    let body = match inbound {
        InboundView::Off => view! {
            <p class="hint" data-imap="unset">"Replies are not read: they answer Porch's mails, \
                and SMTP is not configured (PORCH_SMTP_URL, PORCH_MAIL_FROM)."</p>
        }
        .into_any(),
        InboundView::On {
            is_from_env,
            reading,
            form,
        } => {
            let source = if is_from_env {
                view! { <p class="hint" data-imap-source="env">"Set by the server's environment \
                (PORCH_IMAP_URL) for every site: the environment wins over this page, so the \
                form below is locked. Unset PORCH_IMAP_URL and restart Porch to set the \
                mailbox here."</p> }
                .into_any()
            } else {
                view! { <p class="hint" data-imap-source="page">"Set on this page for every site \
                (PORCH_IMAP_URL is not set; if it were, it would win)."</p> }
                .into_any()
            };
            let reading = match reading {
                Some(reading) => {
                    reading_view(*reading, format!("{base}/check"), csrf.to_owned()).into_any()
                }
                None => view! { <p class="hint" data-imap="unset">"Replies are not read: no \
                mailbox is set."</p> }
                .into_any(),
            };
            let form = crate::email_mailbox::mailbox_form(*form, base, csrf, is_from_env);
            view! { {source} {reading} {form} }.into_any()
        }
    };
    view! {
        <section class="card stack" aria-labelledby="imap-title">
            <h2 id="imap-title">"Replies by email"</h2>
            <p class="hint">"A visitor's answer to Porch's mail is read from this mailbox into \
                their conversation, if it comes from the address they left. One mailbox for \
                every site."</p>
            {body}
        </section>
    }
}
