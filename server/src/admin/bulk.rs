//! Several conversations at once from the inbox list (docs/admin.md, "Several at once"): one
//! action for the rows ticked on the page, each done as its own button would do it (status
//! line, integrations' notices, live pages), and the list again with how many it changed.
//! Rows that the action does not change (closed already, taken meanwhile, gone) are counted and
//! left as they are: a list watched live can change under the agent's pointer.

use std::collections::HashSet;

use axum::extract::State;
use axum::response::Response;
use porch_app::counted;
use porch_app::layout::Notice;
use serde::Deserialize;

use crate::chat::{Error, Invalid};
use crate::clock::now_ms;
use crate::state::AppState;
use crate::store::{ConversationId, Expected, Resnooze, UserRow};

use super::page::{PageError, see_other};
use super::session::{Posted, reject};
use super::snooze::snooze_end;

/// Rows at most in one go (a page watched live grows past the 200 it started with).
const MAX_ROWS: usize = porch_app::bulk::BULK_MAX_ROWS;
/// The refusal past [`MAX_ROWS`] (a test holds the number in it to the constant).
const TOO_MANY: &str = "At most 500 conversations at once: tick fewer, or reload the list.";

/// What the form asks for (`app/src/bulk.rs` offers the same values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Close,
    AssignMe,
    Unassign,
    /// Until then (Unix ms).
    Snooze(i64),
    Unread,
}

impl Action {
    fn parse(value: &str, time_zone: &str, now: i64) -> Option<Self> {
        Some(match value {
            "close" => Self::Close,
            "assign-me" => Self::AssignMe,
            "unassign" => Self::Unassign,
            "snooze-60" => Self::Snooze(snooze_end("60", "", time_zone, now)?),
            "snooze-tomorrow" => Self::Snooze(snooze_end("tomorrow", "", time_zone, now)?),
            "unread" => Self::Unread,
            _ => return None,
        })
    }

    /// The `bulk=` code of the answer.
    fn code(self) -> &'static str {
        match self {
            Self::Close => "closed",
            Self::AssignMe => "assigned",
            Self::Unassign => "unassigned",
            Self::Snooze(_) => "snoozed",
            Self::Unread => "unread",
        }
    }

    /// Does it to one conversation as `by`; whether that changed it. A conversation that is
    /// gone, or that the action does not fit (marking unread one without a visitor message),
    /// is not changed.
    async fn apply(self, app: &AppState, id: ConversationId, by: &UserRow) -> Result<bool, Error> {
        let chat = &app.chat;
        let changed = match self {
            Self::Close => chat.close_conversation(id, by, None).await,
            // Only one nobody has, as the `a` key: a colleague's is taken over on its own page.
            Self::AssignMe => {
                let nobody = Expected::Is(None);
                chat.assign_conversation(id, by, Some(by), nobody, None)
                    .await
            }
            Self::Unassign => {
                chat.assign_conversation(id, by, None, Expected::Any, None)
                    .await
            }
            // One snoozed already keeps its end, as `b` leaves it (the API moves it).
            Self::Snooze(until) => {
                chat.snooze_conversation(id, by, until, Resnooze::Keep)
                    .await
            }
            Self::Unread => chat.mark_unread(by.id, id).await.map(|()| true),
        };
        match changed {
            Err(Error::NotFound(_) | Error::Invalid(_)) => Ok(false),
            other => other,
        }
    }
}

/// The list's address the form came from: only the inbox, never another page (an open
/// redirect), and the inbox itself for anything else: an address the page would not have
/// written (anything but printable ASCII, or one that carries an answer already).
fn back_to(raw: &str) -> &str {
    let is_inbox = raw == "/inbox" || raw.starts_with("/inbox?");
    let is_plain = raw.bytes().all(|b| b.is_ascii_graphic()) && !raw.contains(['\\', '#']);
    let answers = ["bulk=", "done=", "skipped=", "failed="]
        .iter()
        .any(|said| raw.contains(said));
    if is_inbox && is_plain && !raw.contains("//") && !answers {
        raw
    } else {
        "/inbox"
    }
}

/// `POST /inbox/bulk` (`csrf`, `action`, `id` once per row, `back`, `time_zone`): does the
/// action to each conversation and returns to the list with `bulk`, `done`, `skipped` and
/// `failed`.
pub async fn bulk(
    State(app): State<AppState>,
    Posted { who, form }: Posted<Vec<(String, String)>>,
) -> Response {
    let field = |name: &str| {
        form.iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    };
    let refuse =
        |why: &'static str| reject(false, PageError::from(Error::Invalid(Invalid::from(why))));
    let Some(action) = Action::parse(field("action"), field("time_zone"), now_ms()) else {
        return refuse("Choose what to do with the selected conversations.");
    };
    // Each once, in the order ticked; an id that is not a number names no conversation. Read no
    // further than one past the limit: a body of a hundred thousand ids costs no more.
    let mut ids: Vec<Option<ConversationId>> = Vec::new();
    let mut seen = HashSet::new();
    for (_, value) in form.iter().filter(|(k, _)| k == "id") {
        let id = value.trim().parse().ok().map(ConversationId);
        if id.is_none_or(|id| seen.insert(id)) {
            ids.push(id);
        }
        if ids.len() > MAX_ROWS {
            return refuse(TOO_MANY);
        }
    }
    // Every row is tried and counted, also past a row that failed (a full write queue, a full
    // disk): what was changed is said, never hidden behind an error page.
    let (mut done, mut skipped, mut failed) = (0_usize, 0_usize, 0_usize);
    for id in ids {
        let Some(id) = id else {
            skipped += 1;
            continue;
        };
        match action.apply(&app, id, &who.user).await {
            Ok(true) => done += 1,
            Ok(false) => skipped += 1,
            Err(err) => {
                tracing::warn!(error = %err, conversation = %id, "a bulk action failed on a row");
                failed += 1;
            }
        }
    }
    let back = back_to(field("back"));
    let joint = if back.contains('?') { '&' } else { '?' };
    see_other(&format!(
        "{back}{joint}bulk={}&done={done}&skipped={skipped}&failed={failed}",
        action.code()
    ))
}

/// What the list says after a bulk action (`bulk=…&done=…&skipped=…&failed=…`): fixed words
/// and numbers, never text from the address.
#[derive(Debug, Default, Deserialize)]
pub struct BulkDone {
    #[serde(default)]
    bulk: String,
    #[serde(default)]
    done: Option<usize>,
    #[serde(default)]
    skipped: Option<usize>,
    #[serde(default)]
    failed: Option<usize>,
}

impl BulkDone {
    pub fn notice(&self) -> Option<Notice> {
        let (done, skipped) = (self.done?, self.skipped.unwrap_or(0));
        let failed = self.failed.unwrap_or(0);
        let them = counted(done, "conversation");
        let what = match self.bulk.as_str() {
            "closed" => format!("Closed {them}."),
            "assigned" => format!("Assigned {them} to you."),
            "unassigned" => format!("Unassigned {them}."),
            "snoozed" => format!("Snoozed {them}."),
            "unread" => format!("Marked {them} unread for you."),
            _ => return None,
        };
        // Numbers from the address: any size may come.
        if done.saturating_add(skipped).saturating_add(failed) == 0 {
            return Some(Notice::Error(
                "Nothing was selected: tick the conversations first.".to_owned(),
            ));
        }
        let why = "(already so, someone else's, closed, or gone)";
        // Sentences: what changed (unless nothing did), what was left, what failed.
        let mut said = Vec::new();
        match (done, skipped) {
            (0, 0) => said.push("No conversation changed.".to_owned()),
            (0, 1) => said.push(format!("Nothing changed: it was left as it was {why}.")),
            (0, n) => said.push(format!(
                "Nothing changed: all {n} were left as they were {why}."
            )),
            (_, 0) => said.push(what),
            (_, 1) => said.extend([what, format!("1 was left as it was {why}.")]),
            (_, n) => said.extend([what, format!("{n} were left as they were {why}.")]),
        }
        if failed > 0 {
            let them = counted(failed, "conversation");
            said.push(format!("{them} could not be changed now: try again."));
            return Some(Notice::Error(said.join(" ")));
        }
        Some(Notice::Success(said.join(" ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_the_limit() {
        assert!(TOO_MANY.starts_with(&format!("At most {MAX_ROWS} ")));
    }

    #[test]
    fn the_answer_goes_back_to_the_inbox_only() {
        assert_eq!(
            back_to("/inbox?status=open&site=s_1"),
            "/inbox?status=open&site=s_1"
        );
        assert_eq!(back_to("/inbox"), "/inbox");
        for elsewhere in [
            "https://evil.example/inbox",
            "//evil.example/inbox",
            "/inbox?x=//evil",
            "/team",
            "/inboxes",
            "/inbox?\\evil",
            "/inbox?x\r\nSet-Cookie:a=b",
            "/inbox?x=\u{e9}",
            "/inbox?status=open&bulk=closed&done=1",
            "",
        ] {
            assert_eq!(back_to(elsewhere), "/inbox", "{elsewhere}");
        }
    }

    #[test]
    fn the_notice_counts_what_changed_and_what_did_not() {
        let said = |bulk: &str, done, skipped| {
            let notice = BulkDone {
                bulk: bulk.into(),
                done: Some(done),
                skipped: Some(skipped),
                failed: Some(0),
            }
            .notice();
            match notice {
                Some(Notice::Success(text) | Notice::Error(text)) => text,
                _ => String::new(),
            }
        };
        assert_eq!(said("closed", 3, 0), "Closed 3 conversations.");
        assert_eq!(
            said("snoozed", 1, 1),
            "Snoozed 1 conversation. 1 was left as it was (already so, someone else's, closed, \
             or gone)."
        );
        let failed = BulkDone {
            bulk: "closed".into(),
            done: Some(2),
            skipped: None,
            failed: Some(1),
        }
        .notice();
        let expected =
            "Closed 2 conversations. 1 conversation could not be changed now: try again.";
        assert!(
            matches!(&failed, Some(Notice::Error(text)) if text == expected),
            "{failed:?}"
        );
        assert_eq!(
            said("closed", 0, 0),
            "Nothing was selected: tick the conversations first."
        );
        assert_eq!(said("<script>", 1, 0), "", "only fixed codes");
        assert_eq!(
            said("assigned", 0, 2),
            "Nothing changed: all 2 were left as they were (already so, someone else's, closed, \
             or gone)."
        );
        // Numbers from the address are any size: no overflow.
        assert!(said("closed", usize::MAX, usize::MAX).starts_with("Closed 18446744073709551615"));
    }
}
