//! The page shell every admin page shares: document head, the top navigation for signed-in
//! people (with the unread count and the alert switches `notify.js` drives), the keyboard help
//! dialog, and the main landmark. Also the small form pieces every page uses.

use leptos::prelude::*;

/// Which top-level section a page belongs to (highlighted in the navigation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Inbox,
    Search,
    Canned,
    Sites,
    Team,
    Deliveries,
    Capacity,
    Audit,
    Privacy,
    Account,
    Docs,
    /// A page of no section (an error page): nothing is highlighted.
    None,
}

/// Who is signed in, for the navigation and the forms' CSRF field.
#[derive(Debug, Clone)]
pub struct Nav {
    pub name: String,
    pub is_admin: bool,
    pub csrf: String,
    pub section: Section,
}

/// A message shown at the top of a page after an action (or a form error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    Success(String),
    Error(String),
    /// A refused form's error about one field: `field` is the id of that field's control, which
    /// [`field_marks`] marks, so the error is heard where it is to be fixed.
    Invalid {
        field: &'static str,
        text: String,
    },
}

impl Notice {
    /// The id of the control this notice's error is about, if it is one field's.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            Self::Invalid { field, .. } => Some(field),
            Self::Success(_) | Self::Error(_) => None,
        }
    }
}

/// The id of the element holding a refused form's error, which describes the refused field.
pub const FORM_ERROR_ID: &str = "form-error";

/// The attributes of the control `id` after a refused form whose error is about
/// `refused_field`: that control is marked invalid, described by the error (first, so it is
/// heard before the longer hint) and its hint, and takes the focus (a screen reader then reads
/// the label, "invalid" and the reason, where it is to be fixed; an alert already in the page
/// when it loads is not announced). Any other control is described by its hint alone.
pub fn field_marks(
    refused_field: Option<&str>,
    id: &str,
    hint: Option<&str>,
) -> impl leptos::attr::Attribute + use<> {
    let is_refused = refused_field == Some(id);
    let describedby = match (is_refused, hint) {
        (true, Some(hint)) => Some(format!("{FORM_ERROR_ID} {hint}")),
        (true, None) => Some(FORM_ERROR_ID.to_owned()),
        (false, hint) => hint.map(str::to_owned),
    };
    view! {
        <{..} aria-invalid=is_refused.then_some("true") aria-describedby=describedby
            autofocus=is_refused/>
    }
}

/// A labelled control with its hint below, which describes it (`aria-describedby`): the forms'
/// one shape of a field. `control` is given the hint's id.
pub fn hinted_field<V: IntoView>(
    (id, label, hint): (&'static str, &'static str, &'static str),
    control: impl FnOnce(String) -> V,
) -> impl IntoView {
    let hint_id = format!("{id}-hint");
    view! {
        <div class="field">
            <label for=id>{label}</label>
            {control(hint_id.clone())}
            <p class="hint" id=hint_id>{hint}</p>
        </div>
    }
}

/// The hidden field carrying the CSRF token; every form has one.
#[component]
pub fn CsrfField(token: String) -> impl IntoView {
    view! { <input type="hidden" name="csrf" value=token/> }
}

/// A notice, announced to screen readers. An error takes the focus when the page loads (it is
/// the first `autofocus`), so whoever sent a refused form hears why and goes on from there,
/// unless `keeps_focus` leaves it where the page puts it (the reply box, with the draft). An
/// error about one field leaves the focus to that field, which it describes ([`field_marks`]).
#[component]
pub fn NoticeBox(notice: Option<Notice>, #[prop(optional)] keeps_focus: bool) -> impl IntoView {
    notice.map(|notice| match notice {
        Notice::Success(text) => view! {
            <p class="notice notice-success" role="status">{text}</p>
        }
        .into_any(),
        Notice::Error(text) if keeps_focus => view! {
            <p class="notice notice-error" role="alert">{text}</p>
        }
        .into_any(),
        Notice::Error(text) => view! {
            <p class="notice notice-error" role="alert" tabindex="-1" autofocus>{text}</p>
        }
        .into_any(),
        Notice::Invalid { text, .. } => view! {
            <p class="notice notice-error" role="alert" id=FORM_ERROR_ID>{text}</p>
        }
        .into_any(),
    })
}

fn nav_link(href: &'static str, label: &'static str, current: bool) -> impl IntoView {
    view! {
        <a href=href aria-current=current.then_some("page")>{label}</a>
    }
}

/// The unread count `notify.js` fills in (`data-unread` names which one); hidden until then.
#[component]
pub fn UnreadCount(which: &'static str) -> impl IntoView {
    view! {
        <span class="count" data-unread=which hidden>
            <span data-n></span>
            <span class="visually-hidden">" unread"</span>
        </span>
    }
}

#[component]
fn TopNav(nav: Nav) -> impl IntoView {
    let admin_links = nav.is_admin.then(|| {
        view! {
            {nav_link("/sites", "Sites", nav.section == Section::Sites)}
            {nav_link("/team", "Team", nav.section == Section::Team)}
            {nav_link("/deliveries", "Deliveries", nav.section == Section::Deliveries)}
            {nav_link("/capacity", "Capacity", nav.section == Section::Capacity)}
            {nav_link("/audit", "Audit log", nav.section == Section::Audit)}
            {nav_link("/privacy", "Privacy", nav.section == Section::Privacy)}
        }
    });
    view! {
        <header class="topbar">
            <a class="brand" href="/inbox">
                <span class="brand-mark" aria-hidden="true"></span>
                "Porch"
            </a>
            <nav aria-label="Main">
                <a href="/inbox" aria-current=(nav.section == Section::Inbox).then_some("page")>
                    "Inbox"<UnreadCount which="needs"/>
                </a>
                {nav_link("/search", "Search", nav.section == Section::Search)}
                {nav_link("/canned", "Canned replies", nav.section == Section::Canned)}
                {admin_links}
            </nav>
            <div class="account">
                <div class="alert-switches" data-alert-switches hidden>
                    <button type="button" class="link-button" data-sound aria-pressed="false">
                        "Sound"
                    </button>
                    <button type="button" class="link-button" data-desktop aria-pressed="false">
                        "Desktop alerts"
                    </button>
                </div>
                <a href="/docs" aria-current=(nav.section == Section::Docs).then_some("page")>"Help"</a>
                <a href="/account" aria-current=(nav.section == Section::Account).then_some("page")>
                    {nav.name}
                </a>
                <form method="post" action="/logout">
                    <CsrfField token=nav.csrf/>
                    <button type="submit" class="link-button">"Sign out"</button>
                </form>
            </div>
        </header>
    }
}

/// The keys `keys.js` answers, listed by `?`. A native modal `<dialog>`: the page behind it is
/// inert (focus stays inside) and Escape closes it.
#[component]
fn KeysHelp() -> impl IntoView {
    let keys = [
        ("j", "Next conversation"),
        ("k", "Previous conversation"),
        ("e", "Close the conversation"),
        ("z", "Undo the last close made with e on the inbox list"),
        ("a", "Assign an unassigned conversation to me"),
        ("u", "Mark the conversation unread"),
        ("b", "Snooze the conversation (an hour from the inbox list)"),
        ("t", "Add tags to the conversation (on its page)"),
        (
            "x",
            "Select the conversation on the inbox list, for several at once",
        ),
        ("/", "Search"),
        ("?", "Show these keys"),
        (
            "Esc",
            "Leave the reply box (then the keys work); close this list",
        ),
    ]
    .into_iter()
    .map(|(key, what)| view! { <dt><kbd>{key}</kbd></dt><dd>{what}</dd> })
    .collect_view();
    view! {
        <dialog id="keys-help" class="keys-help" aria-labelledby="keys-help-title">
            <h2 id="keys-help-title">"Keyboard shortcuts"</h2>
            <p class="hint">"On the inbox and conversation pages, when no text field has focus."</p>
            <dl class="keys">{keys}</dl>
            <p><KeysSwitch/></p>
            <form method="dialog">
                <button type="submit" class="button">"Close"</button>
            </form>
        </dialog>
    }
}

/// Where keys.js says what a key did (or why it could not): rendered empty, since screen readers
/// announce what comes into a status region that was already there, not one made with its text.
#[component]
pub fn KeysSaid() -> impl IntoView {
    view! { <div id="keys-said" role="status"></div> }
}

/// The switch for the single-key shortcuts, kept in this browser by keys.js: off, no single key
/// does anything (for speech input, or a stray keystroke that would close a conversation).
#[component]
pub fn KeysSwitch() -> impl IntoView {
    view! {
        <label><input type="checkbox" data-keys-switch checked/>
            " Single-key shortcuts (j, k, e, z, a, u, b, t, x, / and ?)"</label>
    }
}

/// Renders a complete HTML document: `title`, the navigation if someone is signed in, and
/// `content` inside `<main>`. `script` adds the inbox script (live updates, reply keys).
pub fn document(title: &str, nav: Option<Nav>, script: bool, content: AnyView) -> String {
    document_with_skip(title, nav, script, None, content)
}

/// [`document`] with a first skip link (`href`, label) before "Skip to content".
pub fn document_with_skip(
    title: &str,
    nav: Option<Nav>,
    script: bool,
    skip: Option<(&'static str, &'static str)>,
    content: AnyView,
) -> String {
    let title = format!("{title} · Porch");
    let signed_in = nav.is_some();
    let shell_class = if signed_in { "app" } else { "app app-plain" };
    let html = view! {
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <title>{title}</title>
                <link rel="icon" href="/assets/favicon.svg" type="image/svg+xml"/>
                <link rel="stylesheet" href="/assets/admin.css"/>
                // Deferred scripts run in this order: time.js and streams.js first, as inbox.js
                // and notify.js use them.
                {signed_in.then(|| view! {
                    <script src="/assets/time.js" defer></script>
                    <script src="/assets/streams.js" defer></script>
                })}
                {script.then(|| view! { <script src="/assets/inbox.js" defer></script> })}
                {signed_in.then(|| view! {
                    <script src="/assets/notify.js" defer></script>
                    <script src="/assets/keys.js" defer></script>
                    <script src="/assets/confirm.js" defer></script>
                })}
            </head>
            <body class=shell_class>
                {skip.map(|(href, label)| view! { <a class="skip-link" href=href>{label}</a> })}
                <a class="skip-link" href="#main">"Skip to content"</a>
                {nav.map(|nav| view! { <TopNav nav/> })}
                <main id="main" tabindex="-1">{content}</main>
                {signed_in.then(|| view! { <KeysHelp/> })}
            </body>
        </html>
    }
    .to_html();
    format!("<!DOCTYPE html>{html}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(refused: Option<&str>, id: &'static str, hint: Option<&str>) -> String {
        view! { <input {..field_marks(refused, id, hint)} id=id/> }.to_html()
    }

    #[test]
    fn the_refused_control_is_invalid_focused_and_described_by_the_error_then_its_hint() {
        let html = input(Some("name"), "name", Some("name-hint"));
        assert!(html.contains(r#"aria-invalid="true""#), "{html}");
        assert!(
            html.contains(r#"aria-describedby="form-error name-hint""#),
            "{html}"
        );
        assert!(html.contains("autofocus"), "{html}");
    }

    #[test]
    fn another_control_keeps_its_hint_alone() {
        let html = input(Some("name"), "origins", Some("origins-hint"));
        assert!(!html.contains("aria-invalid"), "{html}");
        assert!(
            html.contains(r#"aria-describedby="origins-hint""#),
            "{html}"
        );
        assert!(!html.contains("autofocus"), "{html}");
        assert!(!input(None, "origins", None).contains("aria-describedby"));
    }

    #[test]
    fn an_error_about_a_field_leaves_the_focus_to_it() {
        let notice = Notice::Invalid {
            field: "name",
            text: "Bad.".to_owned(),
        };
        let html = view! { <NoticeBox notice=Some(notice)/> }.to_html();
        assert!(html.contains(r#"id="form-error""#), "{html}");
        assert!(!html.contains("autofocus"), "{html}");
    }
}
