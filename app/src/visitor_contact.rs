//! The conversation page's form for the visitor's name and email, under their details: an agent
//! records who the visitor said they are, or an address to mail them at.

use leptos::prelude::*;

use crate::layout::{CsrfField, field_marks};

/// What the form shows: the stored name and email, which also ride along as `shown_…`, so a
/// save made on an old page does not overwrite a change made meanwhile.
#[derive(Debug, Clone, Default)]
pub struct ContactFormView {
    pub conversation: i64,
    pub csrf: String,
    pub name: Option<String>,
    pub email: Option<String>,
    /// The visitor signed in on the site (a verified identity), which sets both on each visit.
    pub is_verified: bool,
    /// A refused save: the form opens with what was typed, the refused field marked.
    pub refused: Option<TypedContact>,
}

/// What a refused *Save* held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypedContact {
    pub name: String,
    pub email: String,
    /// The id of the refused field (`visitor-name`, `visitor-email`).
    pub field: &'static str,
}

/// The form, folded under *Edit name and email*.
pub fn contact_form(form: ContactFormView) -> impl IntoView {
    let shown_name = form.name.unwrap_or_default();
    let shown_email = form.email.unwrap_or_default();
    let marked = form.refused.as_ref().map(|typed| typed.field);
    let (name, email) = form.refused.clone().map_or_else(
        || (shown_name.clone(), shown_email.clone()),
        |typed| (typed.name, typed.email),
    );
    let hint = Some("visitor-contact-hint");
    let source = if form.is_verified {
        "This visitor signed in on your site, which sets their name and email again on their \
         next visit. "
    } else {
        ""
    };
    view! {
        <details class="edit-visitor" id="edit-visitor" open=marked.is_some()>
            <summary>"Edit name and email"</summary>
            <form method="post" action=format!("/conversations/{}/visitor", form.conversation)
                class="inline-form">
                <CsrfField token=form.csrf/>
                <input type="hidden" name="shown_name" value=shown_name/>
                <input type="hidden" name="shown_email" value=shown_email/>
                <label for="visitor-name">"Name"</label>
                <input type="text" id="visitor-name" name="name" maxlength="200" autocomplete="off"
                    value={name} {..field_marks(marked, "visitor-name", hint)}/>
                <label for="visitor-email">"Email"</label>
                // Text, not `email`: the server's rule takes addresses in any script, which a
                // browser's email field refuses.
                <input type="text" id="visitor-email" name="email" maxlength="254" inputmode="email"
                    autocomplete="off" spellcheck="false" value={email}
                    {..field_marks(marked, "visitor-email", hint)}/>
                <p class="hint" id="visitor-contact-hint">{source}
                    "Your team sees these, and the visitor in their own data download. With an \
                     email you can mail the visitor; an empty field is cleared."</p>
                <div><button type="submit" class="button">"Save"</button></div>
            </form>
        </details>
    }
}
