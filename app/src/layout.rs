//! The page shell every admin page shares: document head, the top navigation for signed-in
//! people, and the main landmark. Also the small form pieces every page uses.

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
    Account,
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
}

/// The hidden field carrying the CSRF token; every form has one.
#[component]
pub fn CsrfField(token: String) -> impl IntoView {
    view! { <input type="hidden" name="csrf" value=token/> }
}

/// A notice, announced to screen readers.
#[component]
pub fn NoticeBox(notice: Option<Notice>) -> impl IntoView {
    notice.map(|notice| match notice {
        Notice::Success(text) => view! {
            <p class="notice notice-success" role="status">{text}</p>
        }
        .into_any(),
        Notice::Error(text) => view! {
            <p class="notice notice-error" role="alert">{text}</p>
        }
        .into_any(),
    })
}

fn nav_link(href: &'static str, label: &'static str, current: bool) -> impl IntoView {
    view! {
        <a href=href aria-current=current.then_some("page")>{label}</a>
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
        }
    });
    view! {
        <header class="topbar">
            <a class="brand" href="/inbox">
                <span class="brand-mark" aria-hidden="true"></span>
                "Porch"
            </a>
            <nav aria-label="Main">
                {nav_link("/inbox", "Inbox", nav.section == Section::Inbox)}
                {nav_link("/search", "Search", nav.section == Section::Search)}
                {nav_link("/canned", "Canned replies", nav.section == Section::Canned)}
                {admin_links}
            </nav>
            <div class="account">
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

/// Renders a complete HTML document: `title`, the navigation if someone is signed in, and
/// `content` inside `<main>`. `script` adds the inbox script (live updates, reply keys).
pub fn document(title: &str, nav: Option<Nav>, script: bool, content: AnyView) -> String {
    let title = format!("{title} · Porch");
    let shell_class = if nav.is_some() {
        "app"
    } else {
        "app app-plain"
    };
    let html = view! {
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light"/>
                <title>{title}</title>
                <link rel="stylesheet" href="/assets/admin.css"/>
                {script.then(|| view! { <script src="/assets/inbox.js" defer></script> })}
            </head>
            <body class=shell_class>
                <a class="skip-link" href="#main">"Skip to content"</a>
                {nav.map(|nav| view! { <TopNav nav/> })}
                <main id="main" tabindex="-1">{content}</main>
            </body>
        </html>
    }
    .to_html();
    format!("<!DOCTYPE html>{html}")
}
