//! Snoozing a conversation (docs/admin.md, "Snooze"): an open conversation leaves the Open list
//! and the unread counts until a time, or until the visitor writes. Snoozing and unsnoozing are
//! status lines like assigning ("Ana snoozed this conversation for 4 hours"), so every live page
//! follows them; the alarm here ends the snoozes whose time is up with a line of its own
//! ("Snooze ended"), which brings the conversation back to the top of the Open list and alerts
//! the agents it is for. Integrations and the visitor hear nothing of it.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::clock::now_ms;
use crate::hub::InboxEvent;
use crate::store::{self, ConversationId, Resnooze, SiteId, UserRow};
use crate::values::Invalid;

use super::Error;
use super::conversation::Chat;
use super::inbox::status_line;

/// The longest snooze: a year ahead.
const MAX_SNOOZE_MS: i64 = 365 * 24 * 3_600_000;

/// What the alarm's line says.
const ENDED_LINE: &str = "Snooze ended";

/// The alarm reads the next end again at least this often, so a clock that jumps (a suspended
/// VM) delays a wake-up by no more than this.
const ALARM_CHECK: Duration = Duration::from_mins(1);

/// After a failed read or write, the alarm tries again this much later.
const ALARM_RETRY: Duration = Duration::from_secs(5);

/// Snoozes ended in one go of the alarm; the rest are ended on the next, at once.
const ENDED_BATCH: u32 = 100;

/// "for 4 hours": how long a snooze of `ms` lasts, in the side panel's own words for its
/// choices (1 hour, 4 hours, 1 day, 3 days, 1 week), else rounded to the unit that reads best.
fn snooze_length(ms: i64) -> String {
    const DAY: i64 = 24 * 60;
    const WEEK: i64 = 7 * DAY;
    let minutes = (ms + 30_000) / 60_000;
    let (n, unit) = match minutes {
        0 => return "for less than a minute".to_owned(),
        m if m % WEEK == 0 => (m / WEEK, "week"),
        m if m % DAY == 0 => (m / DAY, "day"),
        m if m < 60 => (m, "minute"),
        m if m < 2 * DAY => ((m + 30) / 60, "hour"),
        m => ((m + DAY / 2) / DAY, "day"),
    };
    let plural = if n == 1 { "" } else { "s" };
    format!("for {n} {unit}{plural}")
}

impl Chat {
    /// Snoozes an open conversation until `until` (Unix ms, in the future and at most a year
    /// ahead); one snoozed already as `again` says. False when nothing changed: it is closed,
    /// snoozed until then already, or snoozed and kept so.
    ///
    /// # Errors
    /// `Invalid` for a time in the past or too far ahead; `NotFound` for no such conversation.
    pub async fn snooze_conversation(
        &self,
        id: ConversationId,
        by: &UserRow,
        until: i64,
        again: Resnooze,
    ) -> Result<bool, Error> {
        let now = now_ms();
        if until <= now {
            return Err(Error::Invalid(Invalid::from(
                "A snooze must end in the future.",
            )));
        }
        if until - now > MAX_SNOOZE_MS {
            return Err(Error::Invalid(Invalid::from(
                "A snooze can last a year at most.",
            )));
        }
        let site_id = self.inbox_item(by.id, id).await?.site_id;
        let line = format!(
            "{} snoozed this conversation {}",
            by.name,
            snooze_length(until - now)
        );
        let changed = self
            .change(site_id, id, by, line, None, move |c| {
                Ok(store::snooze_conversation(c, id, until, again)?.then(Vec::new))
            })
            .await?
            .is_some();
        if changed {
            // It may end before the one the alarm waits for.
            self.snooze_alarm.notify_one();
        }
        Ok(changed)
    }

    /// Ends a conversation's snooze now; false when it was not snoozed.
    pub async fn unsnooze_conversation(
        &self,
        id: ConversationId,
        by: &UserRow,
    ) -> Result<bool, Error> {
        let site_id = self.inbox_item(by.id, id).await?.site_id;
        let line = format!("{} unsnoozed this conversation", by.name);
        Ok(self
            .change(site_id, id, by, line, None, move |c| {
                Ok(store::unsnooze_conversation(c, id)?.then(Vec::new))
            })
            .await?
            .is_some())
    }

    /// Ends conversation `id`'s snooze if its time is up at `now`, with the line that says so.
    async fn end_snooze(&self, id: ConversationId, site_id: SiteId, now: i64) -> Result<(), Error> {
        let hub = Arc::clone(&self.hub);
        self.writer
            .write_then(
                move |c| {
                    if !store::end_snooze(c, id, now)? {
                        return Ok(None);
                    }
                    store::insert_system_message(c, id, None, None, ENDED_LINE, now).map(Some)
                },
                move |stored: &Option<store::MessageId>| {
                    if let Some(message) = *stored {
                        let line = status_line(message, id, None, ENDED_LINE.to_owned(), now);
                        let mut event = InboxEvent::new(site_id, Arc::new(line));
                        event.woke = true;
                        hub.publish_to_inbox(event);
                    }
                },
            )
            .await?;
        Ok(())
    }

    /// Ends every snooze whose time is up; how long the alarm may sleep before the next.
    async fn ring(&self) -> Result<Duration, Error> {
        let now = now_ms();
        let ended = self
            .readers
            .read(move |c| store::list_snoozes_ended(c, now, ENDED_BATCH))
            .await?;
        for (id, site_id) in &ended {
            self.end_snooze(*id, *site_id, now).await?;
        }
        let next = self.readers.read(store::next_snooze_end).await?;
        Ok(match next {
            Some(at) => {
                let wait = u64::try_from(at.saturating_sub(now_ms())).unwrap_or(0);
                Duration::from_millis(wait).min(ALARM_CHECK)
            }
            None => ALARM_CHECK,
        })
    }

    /// Runs the alarm that ends snoozes on time, until `shutdown`.
    pub fn spawn_snooze_alarm(&self, shutdown: &CancellationToken) {
        let (chat, shutdown) = (self.clone(), shutdown.clone());
        tokio::spawn(async move {
            loop {
                let wait = chat.ring().await.unwrap_or_else(|err| {
                    tracing::warn!(error = %err, "could not end the snoozes that ran out");
                    ALARM_RETRY
                });
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    // A new snooze may end sooner (a permit is kept if it came meanwhile).
                    () = chat.snooze_alarm.notified() => {}
                    () = shutdown.cancelled() => break,
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snooze_is_said_in_the_unit_that_reads_best() {
        let minute = 60_000;
        let day = 24 * 60 * minute;
        // The panel's choices, as said there (the line is written a moment after the end was
        // set, so a little less than the choice).
        for (choice, said) in [
            (60 * minute, "for 1 hour"),
            (4 * 60 * minute, "for 4 hours"),
            (day, "for 1 day"),
            (3 * day, "for 3 days"),
            (7 * day, "for 1 week"),
        ] {
            assert_eq!(snooze_length(choice - 40), said);
        }
        assert_eq!(snooze_length(5_000), "for less than a minute");
        assert_eq!(snooze_length(45 * minute), "for 45 minutes");
        assert_eq!(snooze_length(90 * minute), "for 2 hours");
        assert_eq!(snooze_length(42 * 60 * minute), "for 42 hours");
        assert_eq!(snooze_length(14 * day), "for 2 weeks");
        assert_eq!(snooze_length(5 * day + 3 * 60 * minute), "for 5 days");
    }
}
