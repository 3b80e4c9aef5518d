//! The team (admins only): everyone with their role and state, inviting, changing roles and
//! names, disabling, and making reset links. Links are shown once, with a copy button.

use leptos::prelude::*;

use crate::layout::{CsrfField, Nav, Notice, NoticeBox, Section, document, field_marks};
use crate::time::format_time;

/// A member of the team. Each flag is one independent fact the row shows.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone)]
pub struct MemberView {
    pub id: i64,
    pub name: String,
    pub email: String,
    pub is_admin: bool,
    pub is_disabled: bool,
    pub is_me: bool,
    pub has_two_factor: bool,
    pub joined: Joined,
}

/// Whether someone has joined: a password or a single sign-on link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joined {
    Yes,
    /// Not yet; their invitation link works until `until` (Unix ms).
    Invited {
        until: i64,
    },
    /// Not yet, and no invitation link of theirs works any more: *Reset link* makes a new one.
    InvitationExpired,
    /// Not yet, and never invited (added without a password by `porch user add`): *Reset link*
    /// makes an invitation.
    NotInvited,
}

/// A just-made invitation or reset link.
#[derive(Debug, Clone)]
pub struct NewLink {
    /// Whom it is for.
    pub who: String,
    /// What it is: "Invitation link", "Password reset link".
    pub what: String,
    pub url: String,
    /// How long it works: "7 days".
    pub lasts: String,
    /// Whether it is being mailed to them too (SMTP is configured).
    pub mailed: bool,
}

/// The team page.
#[derive(Debug, Clone)]
pub struct TeamView {
    pub nav: Nav,
    pub members: Vec<MemberView>,
    pub notice: Option<Notice>,
    /// A just-made invitation or reset link, shown once.
    pub new_link: Option<NewLink>,
    /// The team requires two-factor sign-in.
    pub two_factor_required: bool,
}

#[component]
fn Member(member: MemberView, csrf: String) -> impl IntoView {
    let id = member.id;
    let state = if member.is_disabled {
        view! { <span class="badge badge-muted">"Disabled"</span> }.into_any()
    } else if member.is_admin {
        view! { <span class="badge badge-open">"Admin"</span> }.into_any()
    } else {
        view! { <span class="badge">"Agent"</span> }.into_any()
    };
    let controls = (!member.is_me).then(|| {
        let role_form = view! {
            <form method="post" action=format!("/team/{id}/role") class="inline-controls">
                <CsrfField token=csrf.clone()/>
                <label for=format!("role-{id}") class="visually-hidden">
                    "Role of "{member.name.clone()}
                </label>
                <select id=format!("role-{id}") name="role">
                    <option value="agent" selected=!member.is_admin>"Agent"</option>
                    <option value="admin" selected=member.is_admin>"Admin"</option>
                </select>
                <button type="submit" class="button"
                    aria-label=format!("Change role of {}", member.name)>"Change role"</button>
            </form>
        };
        let (action, label, class, question) = if member.is_disabled {
            ("enable", "Enable", "button", None)
        } else {
            let question = format!(
                "Disable {}? They are signed out at once and their API tokens stop working.",
                member.name
            );
            ("disable", "Disable", "button button-danger", Some(question))
        };
        let reset_question = format!(
            "Reset the two-factor sign-in of {}? Their sessions end, and they sign in with their \
             password alone.",
            member.name
        );
        let reset = member.has_two_factor.then(|| {
            view! {
                <form method="post" action=format!("/team/{id}/two-factor/reset")
                    data-confirm=reset_question>
                    <CsrfField token=csrf.clone()/>
                    <button type="submit" class="button"
                        aria-label=format!("Reset two-factor of {}", member.name)>"Reset two-factor"</button>
                </form>
            }
        });
        // Closed by default: a name is rarely changed, and the row stays one line.
        let rename_form = view! {
            <details class="rename">
                <summary class="button" aria-label=format!("Rename {}", member.name)>"Rename"</summary>
                <form method="post" action=format!("/team/{id}/name") class="inline-controls">
                    <CsrfField token=csrf.clone()/>
                    <label for=format!("name-{id}") class="visually-hidden">
                        "New name for "{member.name.clone()}
                    </label>
                    <input id=format!("name-{id}") name="name" type="text" required maxlength="80"
                        value=member.name.clone()/>
                    <button type="submit" class="button"
                        aria-label=format!("Save name of {}", member.name)>"Save name"</button>
                </form>
            </details>
        };
        view! {
            {role_form}
            {rename_form}
            {reset}
            // A disabled account's link could not be used: enabling comes first.
            {(!member.is_disabled).then(|| view! {
                <form method="post" action=format!("/team/{id}/link")>
                    <CsrfField token=csrf.clone()/>
                    <button type="submit" class="button"
                        aria-label=format!("Reset link for {}", member.name)>"Reset link"</button>
                </form>
            })}
            <form method="post" action=format!("/team/{id}/{action}") data-confirm=question>
                <CsrfField token=csrf.clone()/>
                <button type="submit" class=class
                    aria-label=format!("{label} {}", member.name)>{label}</button>
            </form>
        }
    });
    view! {
        <li class="member" class:disabled=member.is_disabled>
            <div class="member-main">
                <p class="member-name">{member.name.clone()}{member.is_me.then_some(" (you)")}" "{state}
                    {member.has_two_factor.then(|| view! { " "<span class="badge">"Two-factor"</span> })}
                    {invited_badge(member.joined)}</p>
                <p class="muted small">{member.email}</p>
            </div>
            <div class="member-actions">{controls}</div>
        </li>
    }
}

/// "Invited" (until when their link works, in words anyone reads, not a tooltip) for someone
/// who has not joined yet, "Invitation expired" once their link no longer works (an admin could
/// not tell waiting for them from a dead link), or "Not invited" for someone added without one.
fn invited_badge(joined: Joined) -> Option<impl IntoView + use<>> {
    let (class, text, until) = match joined {
        Joined::Yes => return None,
        Joined::Invited { until } => ("badge badge-muted", "Invited", Some(format_time(until))),
        Joined::InvitationExpired => ("badge badge-danger", "Invitation expired", None),
        Joined::NotInvited => ("badge badge-muted", "Not invited", None),
    };
    Some(view! {
        " "<span class=class title="They have not set a password yet">{text}</span>
        {until.map(|(iso, when)| view! {
            " "<span class="muted small">"link works until "<time datetime=iso>{when}</time></span>
        })}
    })
}

/// Renders the team page.
pub fn render_team(view: TeamView) -> String {
    let csrf = view.nav.csrf.clone();
    let refused = view.notice.as_ref().and_then(Notice::field);
    let nav = Nav {
        section: Section::Team,
        ..view.nav
    };
    let link = view.new_link.map(|NewLink { who, what, url, lasts, mailed }| {
        let how = if mailed {
            "It is being emailed to them; you can also copy it here."
        } else {
            "Send this link to them yourself."
        };
        view! {
            <section class="card card-highlight" aria-labelledby="link-title">
                <h2 id="link-title">{what}" for "{who}</h2>
                <p class="hint">{format!(
                    "{how} It works once, for {lasts}, and is shown only now."
                )}</p>
                <div class="copy-row">
                    // Focused on arrival (the page's news), named by the heading: "Invitation
                    // link for Ben".
                    <input id="new-link" class="mono" type="text" readonly value=url
                        aria-labelledby="link-title" autofocus/>
                    <button type="button" class="button" data-copy="new-link">"Copy link"</button>
                    <span class="copied" role="status" data-copied></span>
                </div>
            </section>
        }
    });
    let members = view
        .members
        .into_iter()
        .map(|member| view! { <Member member csrf=csrf.clone()/> })
        .collect_view();
    let content = view! {
        <div class="page-head"><h1>"Team"</h1></div>
        <NoticeBox notice=view.notice/>
        {link}
        <ul class="card list">{members}</ul>
        <section class="card" aria-labelledby="two-factor-title">
            <h2 id="two-factor-title">"Two-factor sign-in"</h2>
            <p class="hint">"When required, everyone without it is signed out and sets it up at \
                their next sign-in, before anything else. Set it up for yourself first. Single \
                sign-on asks for no code: the sign-in provider's own two-factor covers it."</p>
            <form method="post" action="/team/two-factor" class="inline-controls"
                data-confirm=(!view.two_factor_required).then_some(
                    "Require two-factor sign-in? Everyone without it is signed out now.",
                )
                data-confirm-when="required">
                <CsrfField token=csrf.clone()/>
                <label>
                    <input type="checkbox" name="required" value="on" checked=view.two_factor_required/>
                    " Require two-factor sign-in for the team"
                </label>
                <button type="submit" class="button">"Save"</button>
            </form>
        </section>
        <section class="card" aria-labelledby="invite-title">
            <h2 id="invite-title">"Invite someone"</h2>
            <p class="hint">"Agents answer chats. Admins also manage sites and the team."</p>
            <form method="post" action="/team/invite" class="field-grid">
                <CsrfField token=csrf.clone()/>
                <div class="field">
                    <label for="invite-name">"Name"</label>
                    <input id="invite-name" name="name" type="text" required maxlength="80"
                        {..field_marks(refused, "invite-name", None)}/>
                </div>
                <div class="field">
                    <label for="invite-email">"Email"</label>
                    <input id="invite-email" name="email" type="email" required
                        {..field_marks(refused, "invite-email", None)}/>
                </div>
                <div class="field">
                    <label for="invite-role">"Role"</label>
                    <select id="invite-role" name="role">
                        <option value="agent" selected>"Agent"</option>
                        <option value="admin">"Admin"</option>
                    </select>
                </div>
                <div class="field field-end">
                    <button type="submit" class="button button-primary">"Create invitation link"</button>
                </div>
            </form>
        </section>
    };
    document("Team", Some(nav), true, content.into_any())
}
