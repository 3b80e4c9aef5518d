//! The conversation page's reply box (docs/admin.md, "Replies and notes"): *Reply* or *Private
//! note*, chosen before writing, files and canned replies; `reply.js` adds sending with fetch,
//! drafts, typing and uploads.

use leptos::prelude::*;

use crate::layout::CsrfField;

/// The reply box: *Reply* or *Private note*, chosen before writing; files and canned replies.
/// `draft` is already escaped for a textarea ([`crate::textarea_text`]). The box takes the focus
/// unless `focus_elsewhere` (another form of the page was refused: its field has it).
#[component]
pub fn ReplyForm(
    id: i64,
    csrf: String,
    reply_id: String,
    draft: String,
    closed: AnyView,
    focus_elsewhere: bool,
) -> impl IntoView {
    view! {
        <form method="post" action=format!("/conversations/{id}/reply") id="reply-form"
            class="reply" data-typing=format!("/conversations/{id}/typing")
            data-attachments=format!("/conversations/{id}/attachments")>
            {closed}
            <CsrfField token=csrf/>
            // Files are uploaded by the script (with the CSRF token in a header), which
            // shows this control and fills `attachments`; without it a reply is text only.
            <input type="hidden" name="attachments" value=""/>
            // The script makes a new one for each message it sends.
            <input type="hidden" name="client_id" value=reply_id/>
            <ul class="reply-files" id="reply-files" aria-label="Files to send" aria-live="polite" hidden></ul>
            // The mode is chosen before writing, so that a note in progress never tells
            // the visitor "typing…" (reply.js sends typing in reply mode only).
            <fieldset class="reply-mode">
                <legend class="visually-hidden">"Send as"</legend>
                <label><input type="radio" name="kind" value="reply" checked/>" Reply"</label>
                <label><input type="radio" name="kind" value="note"/>" Private note"</label>
            </fieldset>
            <label for="reply-body" class="visually-hidden">"Your reply"</label>
            <textarea id="reply-body" name="body" rows="3" required maxlength="4000"
                autofocus=!focus_elsewhere
                placeholder="Write a reply…" aria-describedby="reply-hint reply-error"
                aria-autocomplete="list" aria-controls="canned-list"
                data-canned=format!("/conversations/{id}/canned")>{draft}</textarea>
            // Filled by canned.js while a `/shortcut` is being typed.
            <ul id="canned-list" class="canned-picker" role="listbox"
                aria-label="Canned replies" hidden></ul>
            // Shown by canned.js when the button asks for the list and there is none to offer.
            <p id="canned-empty" class="hint canned-empty" hidden>
                "You have no canned replies yet: add them on "<a href="/canned">"Canned replies"</a>"."
            </p>
            <div class="reply-bar">
                // On a touch screen Enter starts a new line (a phone's keyboard has no Shift+Enter)
                // and the button sends, so the keys are not said there (admin.css, reply.js).
                <p class="hint" id="reply-hint">
                    <span class="enter-keys"><kbd>"Enter"</kbd>" sends · "<kbd>"Shift"</kbd>"+"
                    <kbd>"Enter"</kbd>" new line · "</span>"notes are never shown to the visitor"
                </p>
                <div class="reply-buttons">
                    // The picker for whoever does not know the `/` shortcut (canned.js shows
                    // it: without the script there is no picker).
                    <button type="button" class="button reply-canned" data-canned-open hidden
                        aria-controls="canned-list" title="Or type / in the box">"Canned reply"</button>
                    <span class="reply-attach" hidden>
                        <input type="file" id="reply-file" multiple class="visually-hidden"
                            accept="image/png,image/jpeg,image/gif,image/webp,application/pdf,text/plain"/>
                        <label for="reply-file" class="button">"Attach files"</label>
                    </span>
                    // One of the two shows, after the mode (admin.css).
                    <button type="submit" class="button button-primary reply-send">"Send reply"</button>
                    <button type="submit" class="button button-primary note-send">"Add note"</button>
                </div>
            </div>
            // Why a send failed, filled by reply.js and emptied when the box is edited: in the
            // page from the start, as screen readers announce what comes into an alert already
            // there; it describes the box (empty, it adds nothing to the description).
            <p class="reply-error" id="reply-error" role="alert"></p>
        </form>
    }
}
