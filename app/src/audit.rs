//! The audit log (admins only): who did what, when and from where, newest first, with filters
//! (actor, action, dates) in a plain GET form and an "Older events" link for the next page.

use leptos::prelude::*;

use crate::chars::is_invisible;
use crate::format_time;
use crate::layout::{Nav, Notice, NoticeBox, Section, document};

/// One event as shown.
#[derive(Debug, Clone)]
pub struct AuditEventView {
    pub at: i64,
    pub actor: String,
    pub action: String,
    /// "type id (label)", or empty.
    pub target: String,
    pub ip: String,
    /// The event's JSON detail, as stored.
    pub detail: String,
    /// Attempts the row stands for (above 1 only for grouped sign-in failures).
    pub count: i64,
}

/// The filters as typed, so the form shows them again.
#[derive(Debug, Clone, Default)]
pub struct AuditFiltersView {
    pub actor: String,
    pub action: String,
    pub since: String,
    pub until: String,
}

/// The audit page.
#[derive(Debug, Clone)]
pub struct AuditView {
    pub nav: Nav,
    pub events: Vec<AuditEventView>,
    pub filters: AuditFiltersView,
    /// Every action code, offered as suggestions for the action filter.
    pub actions: Vec<&'static str>,
    /// The URL of the next (older) page, if there is one.
    pub older: Option<String>,
    pub notice: Option<Notice>,
}

/// `text` with every character that shows nothing or turns the text around written out
/// (`<U+202E>`): the log shows what was typed (a failed sign-in's email is anyone's text), and
/// an override would otherwise show `\u{202E}moc.elpmaxe@nimda` as "admin@example.com".
fn plainly(text: String) -> String {
    if !text.contains(is_invisible) {
        return text;
    }
    text.chars()
        .map(|c| {
            if is_invisible(c) {
                format!("<U+{:04X}>", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[component]
fn EventRow(event: AuditEventView) -> impl IntoView {
    let (iso, text) = format_time(event.at);
    let count = (event.count > 1).then(|| format!(" ×{}", event.count));
    view! {
        <tr>
            <td><time datetime=iso>{text}</time></td>
            <td>{plainly(event.actor)}</td>
            <td><code>{event.action}</code>{count}</td>
            <td>{plainly(event.target)}</td>
            <td>{event.ip}</td>
            // An event with nothing more to say stored `{}`: a dash reads as "nothing".
            <td>{(event.detail != "{}").then(|| view! {
                <code class="small">{plainly(event.detail)}</code>
            })}</td>
        </tr>
    }
}

/// Renders the audit page.
pub fn render_audit(view: AuditView) -> String {
    debug_assert_eq!(view.nav.section, Section::Audit);
    let AuditFiltersView {
        actor,
        action,
        since,
        until,
    } = view.filters;
    let empty = view.events.is_empty();
    let rows = view
        .events
        .into_iter()
        .map(|event| view! { <EventRow event/> })
        .collect_view();
    let options = view
        .actions
        .into_iter()
        .map(|code| view! { <option value=code></option> })
        .collect_view();
    let content = view! {
        <h1>"Audit log"</h1>
        <NoticeBox notice=view.notice/>
        <form method="get" action="/audit" class="card filters">
            // Each label with its field: the row wraps between them, never inside one.
            <span class="filter">
                <label for="audit-actor">"Actor"</label>
                <input id="audit-actor" name="actor" value=actor placeholder="email or cli"/>
            </span>
            <span class="filter">
                <label for="audit-action">"Action"</label>
                <input id="audit-action" name="action" value=action list="audit-actions" placeholder="site or site.updated"/>
            </span>
            <datalist id="audit-actions">{options}</datalist>
            <span class="filter filter-date">
                <label for="audit-since">"Since"</label>
                <input id="audit-since" name="since" type="date" value=since/>
            </span>
            <span class="filter filter-date">
                <label for="audit-until">"Until"</label>
                <input id="audit-until" name="until" type="date" value=until/>
            </span>
            <button type="submit" class="button">"Filter"</button>
        </form>
        {if empty {
            view! { <p class="muted">"No events match."</p> }.into_any()
        } else {
            view! {
                <div class="table-scroll" tabindex="0" role="region" aria-label="Audit events">
                    <table class="table audit">
                        <thead>
                            <tr>
                                <th scope="col">"When"</th>
                                <th scope="col">"Who"</th>
                                <th scope="col">"Action"</th>
                                <th scope="col">"Target"</th>
                                <th scope="col">"From"</th>
                                <th scope="col">"Detail"</th>
                            </tr>
                        </thead>
                        <tbody>{rows}</tbody>
                    </table>
                </div>
            }
            .into_any()
        }}
        {view.older.map(|href| view! { <p><a href=href rel="next">"Older events"</a></p> })}
    };
    document("Audit log", Some(view.nav), false, content.into_any())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direction_controls_and_invisible_characters_are_written_out() {
        assert_eq!(
            plainly("\u{202E}moc.elpmaxe@nimda".to_owned()),
            "<U+202E>moc.elpmaxe@nimda"
        );
        assert_eq!(
            plainly("a\u{200B}b\u{2066}".to_owned()),
            "a<U+200B>b<U+2066>"
        );
        assert_eq!(plainly("tag\u{E0041}".to_owned()), "tag<U+E0041>");
        assert_eq!(plainly("Ana Lima".to_owned()), "Ana Lima");
    }
}
