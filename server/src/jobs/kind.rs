//! The kinds of job and what each one's kind decides: its lane, how many attempts it gets and
//! how long it may take. The kind's name is what the `jobs.kind` column stores.

use std::time::Duration;

use super::Lane;

/// What a job does. Each kind has one delivery in `integrations`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKind {
    /// A message posted to a Slack channel, in its conversation's thread.
    SlackPost,
    /// A conversation's Slack thread header rewritten to show its state (status, assignee).
    SlackHeader,
    /// A message posted to a Discord channel webhook.
    DiscordPost,
    /// One event sent to one outgoing webhook endpoint.
    WebhookDeliver,
    /// The agents' digest of conversations nobody answered yet.
    EmailUnanswered,
    /// An agent's reply mailed to a visitor who is away.
    EmailReply,
    /// The transcript mailed to the visitor when a conversation is closed.
    EmailTranscript,
    /// An invitation or password-reset link mailed to a team member.
    EmailAccountLink,
    /// An admin's test post to a Discord integration (one attempt: the page shows its outcome).
    DiscordTest,
    /// An admin's test mail to their own address (one attempt: the page shows its outcome).
    EmailTest,
    /// A mail an agent wrote to a visitor from the conversation page, sent at once.
    EmailAgent,
}

/// Attempts before a chat delivery is given up (with its deadline, whichever comes first): as
/// many as [`super::policy::backoff`] makes in the deadline, so the deadline is what ends an
/// outage's retries (about 17 in the first hour, then one every 30 minutes).
const CHAT_MAX_ATTEMPTS: u32 = 64;
/// Attempts before a chat delivery is given up while other deliveries to its destination
/// succeed (about an hour and a half: the 19th comes 84 to 100 minutes after the first): the
/// destination is up and this delivery is the problem, so it should not hold its
/// conversation's queue for a day.
const CHAT_ATTEMPTS_WHILE_UP: u32 = 19;
/// The same for mail (about 15 minutes: a server that takes others' mail but refuses this one
/// for longer will not take it).
const EMAIL_ATTEMPTS_WHILE_UP: u32 = 10;
/// A chat delivery a day late helps nobody.
const CHAT_DEADLINE: Duration = Duration::from_hours(24);
/// The deadline of a job whose kind this Porch does not know (from a newer version).
pub(super) const DEFAULT_DEADLINE: Duration = CHAT_DEADLINE;
/// The Standard Webhooks schedule has eight attempts (immediately, 5 s, 5 min, 30 min, 2 h,
/// 5 h, 10 h, 10 h: about 27.6 hours).
const WEBHOOK_MAX_ATTEMPTS: u32 = 8;
/// The schedule plus room for pauses.
const WEBHOOK_DEADLINE: Duration = Duration::from_hours(30);
/// SMTP 4xx and network errors are retried, on the chat deliveries' schedule: a mail server
/// down for hours delays the mail rather than failing it.
const EMAIL_MAX_ATTEMPTS: u32 = CHAT_MAX_ATTEMPTS;
/// An email a day late helps nobody.
const EMAIL_DEADLINE: Duration = Duration::from_hours(24);
/// A test answers "does it work now?": its one attempt's outcome is the answer, so it is never
/// retried later behind the admin's back.
const TEST_MAX_ATTEMPTS: u32 = 1;

impl JobKind {
    pub const ALL: [JobKind; 11] = [
        Self::SlackPost,
        Self::SlackHeader,
        Self::DiscordPost,
        Self::WebhookDeliver,
        Self::EmailUnanswered,
        Self::EmailReply,
        Self::EmailTranscript,
        Self::EmailAccountLink,
        Self::DiscordTest,
        Self::EmailTest,
        Self::EmailAgent,
    ];

    /// The name stored in `jobs.kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SlackPost => "slack.post",
            Self::SlackHeader => "slack.header",
            Self::DiscordPost => "discord.post",
            Self::WebhookDeliver => "webhook.deliver",
            Self::EmailUnanswered => "email.unanswered",
            Self::EmailReply => "email.reply",
            Self::EmailTranscript => "email.transcript",
            Self::EmailAccountLink => "email.account_link",
            Self::DiscordTest => "discord.test",
            Self::EmailTest => "email.test",
            Self::EmailAgent => "email.agent",
        }
    }

    /// What a delivery of this kind carries, as the Deliveries page says it beside where it goes
    /// ("Slack · Shop · the thread's header").
    pub fn carries(self) -> &'static str {
        match self {
            Self::SlackPost | Self::DiscordPost => "a message",
            Self::SlackHeader => "the thread's header",
            Self::WebhookDeliver => "an event",
            Self::EmailUnanswered => "the agents' digest",
            Self::EmailReply => "a reply mailed to the visitor",
            Self::EmailTranscript => "the transcript mailed to the visitor",
            Self::EmailAccountLink => "an invitation or reset link",
            Self::DiscordTest => "a test post",
            Self::EmailTest => "a test mail",
            Self::EmailAgent => "an agent's mail to the visitor",
        }
    }

    /// The kind a stored name stands for, if any.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// The lane it runs in: lanes have their own concurrency, so slow mail never holds up chat.
    pub fn lane(self) -> Lane {
        match self {
            Self::SlackPost | Self::SlackHeader | Self::DiscordPost | Self::DiscordTest => {
                Lane::Chat
            }
            Self::WebhookDeliver => Lane::Webhook,
            Self::EmailUnanswered
            | Self::EmailReply
            | Self::EmailTranscript
            | Self::EmailAccountLink
            | Self::EmailTest
            | Self::EmailAgent => Lane::Email,
        }
    }

    /// An admin's test message: it answers "does it work now?", so it is tried once, never
    /// waits blocked for a fix, and is left out of the delivery pages and "retry all".
    pub fn is_test(self) -> bool {
        matches!(self, Self::DiscordTest | Self::EmailTest)
    }

    /// Attempts before it is given up.
    pub fn max_attempts(self) -> u32 {
        if self.is_test() {
            return TEST_MAX_ATTEMPTS;
        }
        match self.lane() {
            Lane::Webhook => WEBHOOK_MAX_ATTEMPTS,
            Lane::Email => EMAIL_MAX_ATTEMPTS,
            Lane::Chat | Lane::Maint => CHAT_MAX_ATTEMPTS,
        }
    }

    /// Attempts before it is given up while other deliveries to its destination (its rate key)
    /// succeed: fewer than [`Self::max_attempts`] for chat posts and mail, whose long budget is
    /// for outages.
    pub fn attempts_while_up(self) -> u32 {
        let short = match self.lane() {
            Lane::Webhook => u32::MAX,
            Lane::Email => EMAIL_ATTEMPTS_WHILE_UP,
            Lane::Chat | Lane::Maint => CHAT_ATTEMPTS_WHILE_UP,
        };
        short.min(self.max_attempts())
    }

    /// How long after it was (re)queued it is given up, attempts left or not.
    pub fn deadline(self) -> Duration {
        match self.lane() {
            Lane::Webhook => WEBHOOK_DEADLINE,
            Lane::Email => EMAIL_DEADLINE,
            Lane::Chat | Lane::Maint => CHAT_DEADLINE,
        }
    }
}

impl std::fmt::Display for JobKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_parses_back_from_its_stored_name() {
        for kind in JobKind::ALL {
            assert_eq!(JobKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(JobKind::parse("slack.reply"), None);
    }

    /// Health leaves test messages out by their name (`store::deliveries`, `*.test`): exactly
    /// the test kinds are named so.
    #[test]
    fn only_test_messages_are_named_as_tests() {
        for kind in JobKind::ALL {
            // As SQL's LIKE reads `%.test`: without regard to case.
            let named = kind
                .as_str()
                .rsplit_once('.')
                .is_some_and(|(_, last)| last.eq_ignore_ascii_case("test"));
            assert_eq!(named, kind.is_test(), "{}", kind.as_str());
        }
    }
}
