//! The canned replies page: the shared replies and the agent's own, each editable in place by
//! whoever may change it (its owner; admins for shared ones), and a form to add one. The body
//! is shown in a `<textarea>`, so it goes through `textarea_text`.

use leptos::prelude::*;

use crate::layout::{CsrfField, Nav, Notice, NoticeBox, Section, document, field_marks};

/// One reply.
#[derive(Debug, Clone)]
pub struct CannedReplyView {
    pub id: i64,
    pub shortcut: String,
    pub body: String,
    pub is_shared: bool,
    /// The reader may change or delete it.
    pub may_edit: bool,
}

/// The canned replies page.
#[derive(Debug, Clone)]
pub struct CannedPageView {
    pub nav: Nav,
    pub replies: Vec<CannedReplyView>,
    pub notice: Option<Notice>,
    /// What the add form held when it was refused.
    pub draft_shortcut: String,
    pub draft_body: String,
    pub draft_shared: bool,
}

const PLACEHOLDER_HINT: &str = "Placeholders: {visitor.name}, {visitor.email}, {agent.name}, \
    {site.name}. An unknown visitor name or email becomes empty, or what follows a bar: \
    {visitor.name|there}.";

#[component]
fn Reply(reply: CannedReplyView, csrf: String) -> impl IntoView {
    let id = reply.id;
    let scope = if reply.is_shared {
        "Shared"
    } else {
        "Personal"
    };
    if !reply.may_edit {
        return view! {
            <li class="canned">
                <p><code>{format!("/{}", reply.shortcut)}</code>" "<span class="badge">{scope}</span></p>
                <p class="canned-body">{reply.body}</p>
            </li>
        }
        .into_any();
    }
    let shortcut_id = format!("canned-shortcut-{id}");
    let body_id = format!("canned-body-{id}");
    view! {
        <li class="canned">
            <form method="post" action=format!("/canned/{id}") class="stack">
                <CsrfField token=csrf.clone()/>
                <p><span class="badge">{scope}</span></p>
                <div class="field">
                    <label for=shortcut_id.clone()>"Shortcut"</label>
                    <input id=shortcut_id name="shortcut" type="text" required maxlength="33"
                        value=reply.shortcut.clone()/>
                </div>
                <div class="field">
                    <label for=body_id.clone()>"Text"</label>
                    <textarea id=body_id name="body" rows="3" required maxlength="4000">{crate::textarea_text(&reply.body)}</textarea>
                </div>
                <div class="actions">
                    // Named with its reply, as Delete is: three "Save" buttons read alike.
                    <button type="submit" class="button">"Save"
                        <span class="visually-hidden">{format!(" /{}", reply.shortcut)}</span></button>
                </div>
            </form>
            <form method="post" action=format!("/canned/{id}/delete")
                data-confirm=format!("Delete the canned reply /{}? This cannot be undone.", reply.shortcut)>
                <CsrfField token=csrf/>
                <button type="submit" class="button button-danger">
                    {format!("Delete /{}", reply.shortcut)}
                </button>
            </form>
        </li>
    }
    .into_any()
}

/// Renders the canned replies page.
pub fn render_canned(view: CannedPageView) -> String {
    let csrf = view.nav.csrf.clone();
    let is_admin = view.nav.is_admin;
    let nav = Nav {
        section: Section::Canned,
        ..view.nav
    };
    let empty = view.replies.is_empty();
    let refused = view.notice.as_ref().and_then(Notice::field);
    let replies = view
        .replies
        .into_iter()
        .map(|reply| view! { <Reply reply csrf=csrf.clone()/> })
        .collect_view();
    let scope = is_admin.then(|| {
        view! {
            <div class="field">
                <label for="canned-scope">"For"</label>
                <select id="canned-scope" name="scope">
                    <option value="personal" selected=!view.draft_shared>"Me only"</option>
                    <option value="shared" selected=view.draft_shared>"Everyone (shared)"</option>
                </select>
            </div>
        }
    });
    let content = view! {
        <div class="page-head"><h1>"Canned replies"</h1></div>
        <NoticeBox notice=view.notice/>
        <p class="hint">
            "In a conversation's reply box, type / and the start of a shortcut, then pick a \
             reply with the arrow keys and Enter. "{PLACEHOLDER_HINT}
        </p>
        {if empty {
            view! { <p class="muted">"No canned replies yet."</p> }.into_any()
        } else {
            view! { <ul class="card list canned-list">{replies}</ul> }.into_any()
        }}
        <section class="card" aria-labelledby="canned-add-title">
            <h2 id="canned-add-title">"Add a canned reply"</h2>
            <form method="post" action="/canned" class="stack">
                <CsrfField token=csrf.clone()/>
                <div class="field">
                    <label for="canned-new-shortcut">"Shortcut"</label>
                    <input id="canned-new-shortcut" name="shortcut" type="text" required
                        maxlength="33" placeholder="thanks"
                        {..field_marks(refused, "canned-new-shortcut", None)}
                        value=view.draft_shortcut/>
                </div>
                <div class="field">
                    <label for="canned-new-body">"Text"</label>
                    <textarea id="canned-new-body" name="body" rows="3" required maxlength="4000"
                        {..field_marks(refused, "canned-new-body", None)} placeholder="Thanks {visitor.name|there}, happy to help!">{crate::textarea_text(&view.draft_body)}</textarea>
                </div>
                {scope}
                <div class="actions">
                    <button type="submit" class="button button-primary">"Add"</button>
                </div>
            </form>
        </section>
    };
    document("Canned replies", Some(nav), false, content.into_any())
}
