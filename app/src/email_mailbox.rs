//! The form that sets the IMAP mailbox of replies by email from the email page: server, port,
//! TLS, user, password (never shown again: an empty field keeps it), folder and interval, with
//! "Test connection" and "Remove" (docs/integrations/email.md#replies-by-email).

use leptos::prelude::*;

use crate::layout::{CsrfField, hinted_field};
use crate::time::format_time;

/// An admin's last connection test.
#[derive(Debug, Clone)]
pub struct MailboxTestView {
    pub at: i64,
    /// `None` when it worked.
    pub error: Option<String>,
}

/// The form's values: the mailbox set on the page, or empty ones.
#[derive(Debug, Clone, Default)]
pub struct MailboxFormView {
    pub host: String,
    /// Empty for the TLS mode's default.
    pub port: String,
    pub is_tls: bool,
    pub user: String,
    pub folder: String,
    pub poll_secs: String,
    /// A password is saved (the field may stay empty to keep it).
    pub has_password: bool,
    /// A mailbox is saved on the page (so it can be tested and removed).
    pub is_saved: bool,
    pub last_test: Option<MailboxTestView>,
}

/// A text input of the mailbox form, with its hint.
fn field(
    named: (&'static str, &'static str, &'static str),
    value: String,
    kind: &'static str,
    locked: bool,
) -> impl IntoView {
    let id = named.0;
    hinted_field(named, move |hint_id| {
        view! {
            <input type=kind id=id name=id value=value disabled=locked aria-describedby=hint_id/>
        }
    })
}

fn test_line(last: Option<MailboxTestView>) -> impl IntoView {
    last.map(|last| {
        let (iso, text) = format_time(last.at);
        match last.error {
            None => view! {
                <p class="notice" data-imap-test="ok">"Test connection: the server took the login \
                    and opened the folder ("<time datetime=iso>{text}</time>")."</p>
            }
            .into_any(),
            Some(error) => view! {
                <p class="notice notice-error" role="alert" data-imap-test="failed">
                    "Test connection failed: "<bdi>{error}</bdi>" ("<time datetime=iso>{text}</time>")"</p>
            }
            .into_any(),
        }
    })
}

/// The mailbox form; `base` is the email page's path. Locked (disabled) when
/// `PORCH_IMAP_URL` sets the mailbox.
pub fn mailbox_form(form: MailboxFormView, base: &str, csrf: &str, locked: bool) -> impl IntoView {
    let password_hint = if form.has_password {
        "Saved, not shown: leave empty to keep it."
    } else {
        "An app password where the provider has them."
    };
    let tested = (form.is_saved && !locked).then(|| {
        view! {
            <form method="post" action=format!("{base}/imap/test") class="inline-form">
                <CsrfField token=csrf.to_owned()/>
                <button type="submit" class="button">"Test connection"</button>
            </form>
            <form method="post" action=format!("{base}/imap/delete") class="inline-form">
                <CsrfField token=csrf.to_owned()/>
                <button type="submit" class="button">"Remove mailbox"</button>
            </form>
        }
    });
    view! {
        {test_line(form.last_test)}
        <form method="post" action=format!("{base}/imap") class="stack" aria-label="Mailbox">
            <CsrfField token=csrf.to_owned()/>
            {field(("imap_host", "IMAP server", "Its host name, such as imap.example.com."),
                form.host, "text", locked)}
            {hinted_field(("imap_tls", "TLS", "Without TLS the password would cross the network \
                readable, so only a server on this host is taken."), move |hint_id| view! {
                <select id="imap_tls" name="imap_tls" disabled=locked aria-describedby=hint_id>
                    <option value="implicit" selected=form.is_tls>"Implicit TLS (port 993)"</option>
                    <option value="none" selected=!form.is_tls>"None (same host only, port 143)"</option>
                </select>
            })}
            {field(("imap_port", "Port", "Empty: the TLS mode's port (993, or 143 without TLS)."),
                form.port, "text", locked)}
            {field(("imap_user", "User", "Usually the mailbox's address."), form.user, "text", locked)}
            {hinted_field(("imap_password", "Password", password_hint), move |hint_id| view! {
                <input type="password" id="imap_password" name="imap_password"
                    autocomplete="new-password" disabled=locked aria-describedby=hint_id/>
            })}
            {field(("imap_folder", "Folder", "Empty: INBOX."), form.folder, "text", locked)}
            {field(("imap_poll_secs", "Look every (seconds)", "1 to 3600: replies reach the inbox \
                within about this long."), form.poll_secs, "text", locked)}
            <button type="submit" class="button button-primary" disabled=locked>"Save mailbox"</button>
        </form>
        {tested}
    }
}
