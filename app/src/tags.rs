//! Tags (docs/admin.md, "Tags"): a conversation's tags as badges in the inbox list, and the side
//! panel's *Tags* section, where each links to the inbox of that tag and can be removed, and
//! new ones are typed (several at once, separated by commas) with the team's tags suggested.

use leptos::prelude::*;

use crate::layout::{CsrfField, field_marks};

/// The id of the field for new tags, which a refusal names (`Notice::Invalid`).
pub const TAG_FIELD: &str = "tag-add";

/// Longest tag, in characters (the server's `values/tag.rs` reads tags by it).
pub const MAX_TAG_CHARS: usize = 40;

/// Most characters the field for new tags takes: twenty tags of the longest, with commas and
/// spaces between them.
const MAX_FIELD_CHARS: usize = 900;

/// A conversation's tag in the side panel.
#[derive(Debug, Clone)]
pub struct TagView {
    pub name: String,
    /// The inbox list of that tag.
    pub href: String,
}

/// A conversation's tags as badges, in an inbox row (where the row is one link, so these are
/// not).
pub(crate) fn tag_badges(tags: Vec<String>) -> Option<impl IntoView> {
    (!tags.is_empty()).then(|| {
        let badges = tags
            .into_iter()
            .map(|name| view! { <li class="badge tag">{name}</li> })
            .collect_view();
        view! { <ul class="tags" aria-label="Tags">{badges}</ul> }
    })
}

/// The side panel's *Tags* section: the conversation's tags, each a link to its inbox list with
/// a button that removes it, and the form that adds new ones (`known` are suggested). `refused`
/// is what was typed in it when the server refused it: kept in the field, which is marked
/// invalid, described by the page's error and focused.
pub(crate) fn tags_panel(
    id: i64,
    csrf: &str,
    (tags, known): (Vec<TagView>, Vec<String>),
    refused: Option<String>,
) -> impl IntoView + use<> {
    let action = format!("/conversations/{id}/tags");
    let marked = refused.is_some().then_some(TAG_FIELD);
    let listed = (!tags.is_empty()).then(|| {
        let items = tags
            .into_iter()
            .map(|tag| {
                let label = format!("Remove the tag {}", tag.name);
                view! {
                    <li class="tag-item">
                        <a class="badge tag" href=tag.href>{tag.name.clone()}</a>
                        <form method="post" action=action.clone()>
                            <CsrfField token=csrf.to_owned()/>
                            <input type="hidden" name="remove" value=tag.name/>
                            <button type="submit" class="tag-remove" aria-label=label.clone()
                                title=label>"×"</button>
                        </form>
                    </li>
                }
            })
            .collect_view();
        view! { <ul class="tags tag-list">{items}</ul> }
    });
    let suggestions = known
        .into_iter()
        .map(|name| view! { <option value=name></option> })
        .collect_view();
    view! {
        <section class="panel">
            <h2>"Tags"</h2>
            {listed}
            // `t` puts the focus in the field (keys.js).
            <form method="post" action=action class="inline-form">
                <CsrfField token=csrf.to_owned()/>
                <label for="tag-add">"Add tags"</label>
                <div class="inline-controls">
                    <input id="tag-add" name="add" list="tag-suggestions" autocomplete="off"
                        maxlength=MAX_FIELD_CHARS required value={refused}
                        {..field_marks(marked, TAG_FIELD, Some("tag-add-hint"))}/>
                    <button type="submit" class="button">"Add"</button>
                </div>
                <p class="hint" id="tag-add-hint">{format!(
                    "Separate tags with commas; each up to {MAX_TAG_CHARS} characters."
                )}</p>
                <datalist id="tag-suggestions">{suggestions}</datalist>
            </form>
        </section>
    }
}
