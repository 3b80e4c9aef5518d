//! A conversation's actions: assign, close, reopen, snooze, tag, mark unread. A browser's own form
//! post is answered with a redirect to the conversation page, which then says what was done (`?notice=`) or why
//! nothing was (`?error=`). The inbox script (the `e` and `a` keys and *Undo* on the inbox list,
//! docs/admin.md "Keyboard") sends `X-Porch-Fetch: 1` and gets `204 No Content` when done, or
//! the error as JSON, so that it can say which it was without leaving the list.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse as _, Response};
use jiff::civil::Time;
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};
use porch_app::layout::Notice;
use serde::Deserialize;

use crate::chat::{Invalid, Tag};
use crate::clock::now_ms;
use crate::state::AppState;
use crate::store::{self, ConversationId, UserId};

use super::auth::NoFields;
use super::page::{PageError, see_other};
use super::session::{Posted, is_script, reject};

/// What the conversation page says after one of these actions (`?notice=`), so that the change
/// is confirmed in words, not only by the side panel changing. The assignee named is the one
/// the page shows now.
pub fn done_notice(code: &str, item: &store::InboxItemRow, me: UserId) -> Option<Notice> {
    let text = match code {
        "closed" => "Conversation closed. Reopen undoes it until the visitor writes again: their \
                     next message starts a new conversation."
            .to_owned(),
        "reopened" => "Conversation reopened.".to_owned(),
        "snoozed" => "Snoozed: the conversation is out of Open until the snooze ends or the \
                      visitor writes."
            .to_owned(),
        "unsnoozed" => "Unsnoozed: the conversation is back in Open.".to_owned(),
        "tagged" => "Tags saved.".to_owned(),
        "tags_unchanged" => "Nothing changed: the conversation had those tags already.".to_owned(),
        "assignee" => match (item.assignee_id, &item.assignee_name) {
            (Some(id), _) if id == me => "Assigned to you.".to_owned(),
            (Some(_), Some(name)) => format!("Assigned to {name}."),
            _ => "Unassigned: nobody has this conversation now.".to_owned(),
        },
        _ => return None,
    };
    Some(Notice::Success(text))
}

/// How an action is answered, by who sent it.
struct Answer {
    script: bool,
    id: i64,
}

impl Answer {
    fn new(headers: &HeaderMap, id: i64) -> Self {
        Self {
            script: is_script(headers),
            id,
        }
    }

    /// Done: the conversation page with `notice`, or `204` to the script.
    fn done(&self, notice: &str) -> Response {
        if self.script {
            StatusCode::NO_CONTENT.into_response()
        } else {
            see_other(&format!("/conversations/{}?notice={notice}", self.id))
        }
    }

    /// Nothing was done because the conversation changed meanwhile: the page at `location`
    /// (which says why), or `409` with `code` and `message` to the script, and `location` as
    /// `href` when it is another conversation's page.
    fn conflict(&self, location: &str, code: &'static str, message: &str) -> Response {
        if self.script {
            let err = PageError {
                code,
                ..PageError::new(StatusCode::CONFLICT, "Changed meanwhile", message)
            };
            let own = format!("/conversations/{}", self.id);
            let elsewhere = !location.starts_with(&format!("{own}?")) && location != own;
            err.into_script_response_pointing(elsewhere.then_some(location))
        } else {
            see_other(location)
        }
    }

    fn refused(&self, err: PageError) -> Response {
        reject(self.script, err)
    }
}

#[derive(Debug, Deserialize)]
pub struct AssignForm {
    /// A user id, `me` (the keyboard shortcut on the list), or empty for nobody.
    #[serde(default)]
    assignee: String,
    /// The assignee the form was shown with (a user id, or empty for nobody): if someone changed
    /// it meanwhile, nothing changes and the page says so. Without it, whoever has it.
    from: Option<String>,
}

/// Reads an [`AssignForm`] user field: empty for nobody, else a user id.
fn user_field(raw: &str) -> Result<Option<UserId>, PageError> {
    match raw.trim() {
        "" => Ok(None),
        raw => raw
            .parse::<i64>()
            .map(|id| Some(UserId(id)))
            .map_err(|_| PageError::not_found("agent")),
    }
}

/// `POST /conversations/{id}/assign`.
pub async fn assign(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    posted: Posted<AssignForm>,
) -> Response {
    let answer = Answer::new(&headers, id);
    post_assign(&app, &answer, posted)
        .await
        .unwrap_or_else(|err| answer.refused(err))
}

async fn post_assign(
    app: &AppState,
    answer: &Answer,
    Posted { who, form }: Posted<AssignForm>,
) -> Result<Response, PageError> {
    let target = match form.assignee.trim() {
        "me" => Some(who.user.id),
        raw => user_field(raw)?,
    };
    let expected = match form.from.as_deref() {
        Some(from) => store::Expected::Is(user_field(from)?),
        None => store::Expected::Any,
    };
    let conversation = ConversationId(answer.id);
    // The assignee the page showed, sent back as it was: nothing to change (also when that is
    // someone disabled since, who could not be assigned anew), unless it changed meanwhile.
    let unchanged = expected == store::Expected::Is(target);
    if !unchanged {
        let assignee = match target {
            Some(user) => Some(app.chat.find_agent(user).await?),
            None => None,
        };
        let changed = app
            .chat
            .assign_conversation(conversation, &who.user, assignee.as_ref(), expected, None)
            .await?;
        if changed || expected == store::Expected::Any {
            return Ok(answer.done("assignee"));
        }
    }
    let now = app.chat.inbox_item(who.user.id, conversation).await?;
    if now.assignee_id != target {
        return Ok(answer.conflict(
            &format!("/conversations/{}?error=assigned", answer.id),
            "assignee_changed",
            "Someone changed the assignee meanwhile, so nothing changed.",
        ));
    }
    Ok(answer.done("assignee"))
}

/// `POST /conversations/{id}/close`.
pub async fn close(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    Posted { who, .. }: Posted<NoFields>,
) -> Response {
    let answer = Answer::new(&headers, id);
    match app
        .chat
        .close_conversation(ConversationId(id), &who.user, None)
        .await
    {
        Ok(true) => answer.done("closed"),
        // A colleague closed it meanwhile: the page shows it closed, and the script must not
        // offer an Undo that would reopen the colleague's close.
        Ok(false) => answer.conflict(
            &format!("/conversations/{id}"),
            "already_closed",
            "Someone closed it already.",
        ),
        Err(err) => answer.refused(err.into()),
    }
}

/// `POST /conversations/{id}/reopen`.
pub async fn reopen(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    Posted { who, .. }: Posted<NoFields>,
) -> Response {
    let answer = Answer::new(&headers, id);
    match app
        .chat
        .reopen_conversation(ConversationId(id), &who.user, None)
        .await
    {
        Ok(()) => answer.done("reopened"),
        // The visitor started a newer conversation meanwhile: the agent is taken there.
        Err(crate::chat::Error::Invalid(_)) => {
            match app
                .chat
                .conversation_to_answer_instead_of(ConversationId(id))
                .await
            {
                Ok(newer) => answer.conflict(
                    &match newer {
                        Some(newer) => format!("/conversations/{}?error=newer", newer.0),
                        None => format!("/conversations/{id}"),
                    },
                    "newer_conversation",
                    "The visitor has started a newer conversation since, so this one stays \
                     closed. Answer in the newer one.",
                ),
                Err(err) => answer.refused(err.into()),
            }
        }
        Err(err) => answer.refused(err.into()),
    }
}

/// `POST /conversations/{id}/unread`: the conversation is unread for the signed-in agent again,
/// until they next read it (docs/admin.md, "Unread"). The browser is taken to the inbox, since
/// the conversation page, left open, would read it again; the script (`u` on the list) gets 204.
pub async fn mark_unread(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    Posted { who, .. }: Posted<NoFields>,
) -> Response {
    let script = is_script(&headers);
    match app.chat.mark_unread(who.user.id, ConversationId(id)).await {
        Ok(()) if script => StatusCode::NO_CONTENT.into_response(),
        Ok(()) => see_other("/inbox?notice=marked-unread"),
        Err(err) => reject(script, err.into()),
    }
}

#[derive(Debug, Deserialize)]
pub struct TagsForm {
    /// Tags to add, separated by commas.
    #[serde(default)]
    add: String,
    /// Tags to remove, separated by commas (the side panel's × sends one).
    #[serde(default)]
    remove: String,
}

/// `POST /conversations/{id}/tags`: adds and removes tags (docs/admin.md, "Tags").
pub async fn tags(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    Posted { who, form }: Posted<TagsForm>,
) -> Response {
    let answer = Answer::new(&headers, id);
    let parsed =
        Tag::parse_list(&form.add).and_then(|add| Ok((add, Tag::parse_list(&form.remove)?)));
    let (add, remove) = match parsed {
        Ok(tags) => tags,
        Err(invalid) => return answer.refused(crate::chat::Error::Invalid(invalid).into()),
    };
    if add.is_empty() && remove.is_empty() {
        let err = crate::chat::Error::Invalid(Invalid::from("Type a tag to add."));
        return answer.refused(err.into());
    }
    match app
        .chat
        .change_tags(ConversationId(id), &who.user, add, remove)
        .await
    {
        Ok(true) => answer.done("tagged"),
        Ok(false) => answer.done("tags_unchanged"),
        Err(err) => answer.refused(err.into()),
    }
}

#[derive(Debug, Deserialize)]
pub struct SnoozeForm {
    /// How long, in minutes, or `tomorrow` or `monday` (the side panel's choices,
    /// `app/src/snooze.rs`).
    #[serde(default)]
    minutes: String,
    /// The agent's IANA time zone, for `tomorrow` and `monday` (sent by the browser).
    #[serde(default)]
    time_zone: String,
}

const MINUTE_MS: i64 = 60_000;

/// When a snooze chosen at `now` ends: `minutes` from now, or (`tomorrow`, `monday`) 9:00
/// tomorrow or on the next Monday (a week ahead on a Monday) in the agent's `time_zone`, with
/// its daylight-saving rules (UTC for a name it does not know). `None` for anything else.
pub(super) fn snooze_end(minutes: &str, time_zone: &str, now: i64) -> Option<i64> {
    let zone = TimeZone::get(time_zone.trim()).unwrap_or(TimeZone::UTC);
    let today = Timestamp::from_millisecond(now)
        .ok()?
        .to_zoned_datetime(zone.clone())
        .date();
    let days_ahead: i64 = match minutes.trim() {
        "tomorrow" => 1,
        "monday" => 7 - i64::from(today.weekday().to_monday_zero_offset()),
        other => {
            let minutes = other.parse::<i64>().ok().filter(|m| *m > 0)?;
            return Some(now.saturating_add(minutes.saturating_mul(MINUTE_MS)));
        }
    };
    let morning = today
        .checked_add(days_ahead.days())
        .ok()?
        .to_datetime(Time::new(9, 0, 0, 0).ok()?)
        .to_zoned_datetime(zone)
        .ok()?;
    Some(morning.timestamp().as_millisecond())
}

/// `POST /conversations/{id}/snooze`: out of the Open list and the counts until the snooze ends
/// or the visitor writes (docs/admin.md, "Snooze").
pub async fn snooze(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    Posted { who, form }: Posted<SnoozeForm>,
) -> Response {
    let answer = Answer::new(&headers, id);
    let Some(until) = snooze_end(&form.minutes, &form.time_zone, now_ms()) else {
        let err = crate::chat::Error::Invalid(Invalid::from("Choose how long to snooze for."));
        return answer.refused(err.into());
    };
    match app
        .chat
        .snooze_conversation(ConversationId(id), &who.user, until, store::Resnooze::Keep)
        .await
    {
        Ok(true) => answer.done("snoozed"),
        Ok(false) => answer.conflict(
            &format!("/conversations/{id}"),
            "not_open",
            "Only an open conversation can be snoozed, and this one is closed.",
        ),
        Err(err) => answer.refused(err.into()),
    }
}

/// `POST /conversations/{id}/unsnooze`: back in Open now.
pub async fn unsnooze(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    headers: HeaderMap,
    Posted { who, .. }: Posted<NoFields>,
) -> Response {
    let answer = Answer::new(&headers, id);
    match app
        .chat
        .unsnooze_conversation(ConversationId(id), &who.user)
        .await
    {
        Ok(true) => answer.done("unsnoozed"),
        // Its time ran out, or the visitor wrote, or a colleague unsnoozed it meanwhile.
        Ok(false) => answer.conflict(
            &format!("/conversations/{id}"),
            "not_snoozed",
            "It is not snoozed any more.",
        ),
        Err(err) => answer.refused(err.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY_MS: i64 = 24 * 60 * MINUTE_MS;

    #[test]
    fn a_snooze_ends_after_its_minutes_or_at_nine_where_the_agent_is() {
        // Wednesday 2 December 2026, 22:30 UTC.
        let now = 1_796_250_600_000;
        assert_eq!(snooze_end("60", "", now), Some(now + 3_600_000));
        // Tomorrow at 9:00 UTC: Thursday 3 December.
        assert_eq!(snooze_end("tomorrow", "", now), Some(1_796_288_400_000));
        // In Tokyo it is already Thursday 07:30: tomorrow is Friday 9:00 there, Friday 00:00 UTC.
        assert_eq!(
            snooze_end("tomorrow", "Asia/Tokyo", now),
            Some(1_796_342_400_000)
        );
        // In New York it is Wednesday 17:30: Thursday 9:00 there is 14:00 UTC.
        assert_eq!(
            snooze_end("tomorrow", "America/New_York", now),
            Some(1_796_306_400_000)
        );
        // Monday 7 December, 9:00 UTC.
        assert_eq!(snooze_end("monday", "", now), Some(1_796_634_000_000));
        // A zone it does not know: UTC.
        assert_eq!(
            snooze_end("tomorrow", "Mars/Olympus", now),
            snooze_end("tomorrow", "", now)
        );
        for refused in ["", "0", "-5", "soon"] {
            assert_eq!(snooze_end(refused, "", now), None, "{refused:?}");
        }
    }

    #[test]
    fn on_a_monday_the_next_monday_is_a_week_ahead() {
        // Monday 7 December 2026, 08:00 UTC.
        let monday = 1_796_630_400_000;
        assert_eq!(
            snooze_end("monday", "", monday),
            Some(monday + 7 * DAY_MS + 3_600_000)
        );
    }

    #[test]
    fn nine_oclock_is_kept_across_a_change_of_daylight_saving() {
        // Friday 30 October 2026, 14:00 UTC (10:00 in New York, still on summer time); Monday
        // 2 November is on winter time (UTC-5), so its 9:00 is 14:00 UTC.
        let friday = 1_793_368_800_000;
        assert_eq!(
            snooze_end("monday", "America/New_York", friday),
            Some(1_793_628_000_000)
        );
    }
}
