//! Conversations set aside while their head waits a long retry. A rate key's window
//! ([`super::window`]) holds its oldest jobs whether or not they can start: after an endpoint has
//! failed for a while, its window fills with conversations whose head backs off for minutes and
//! the posts queued behind each head, and a new conversation's post waits in SQLite until those
//! retries come due, up to 5 minutes after the endpoint is back. So a conversation whose head is
//! retried a minute or more ahead leaves memory whole: only its key, when to read it back and
//! from which id stay. Its jobs handed in meanwhile are left in SQLite. When the time comes, its
//! queued jobs are read back (that destination's, that conversation's, oldest first, a page at a
//! time) and its head runs again, still ahead of its followers.
//!
//! Invariant, per conversation listed: every queued job of it with the listed rate key that is
//! not in memory has an id of at least `from` (parked), was handed in as `missed` or is above the
//! read's start (loading), or is above `after` (partial), so a read finds it.

use std::collections::{BTreeSet, HashMap};

use crate::store::{IntegrationId, JobId, JobRow};

use super::window::Load;

/// A conversation whose head is retried at least this far ahead is set aside.
const PARK_AFTER_MS: i64 = 60_000;
/// How many of a conversation's jobs one read brings back.
const READ_PAGE: usize = 64;

/// Whether a head due at `run_at` waits long enough at `now` for its conversation to be set aside.
pub fn waits_long(run_at: i64, now: i64) -> bool {
    run_at - now >= PARK_AFTER_MS
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing of it in memory: its queued jobs from `from` on are read at `until`.
    Parked { until: i64, from: JobId },
    /// A read is in flight; `missed` is the lowest id handed in meanwhile, which the read's
    /// snapshot may not hold.
    Loading { missed: Option<JobId> },
    /// Its oldest jobs are in memory; those above `after` are read once those have finished.
    Partial { after: JobId },
}

#[derive(Debug)]
struct Conversation {
    state: State,
    rate_key: Option<String>,
    integration: Option<IntegrationId>,
}

/// Every conversation set aside, or read back only in part.
#[derive(Debug, Default)]
pub struct Parked {
    by_order_key: HashMap<String, Conversation>,
    /// Parked conversations by when to read them back.
    due: BTreeSet<(i64, String)>,
}

impl Parked {
    /// Sets a conversation aside until `until`, its queued jobs of `rate_key` to be read back
    /// from `from` on; the caller drops them from memory. `false` (and nothing changes) when it
    /// is listed already for another destination, or parked or being read.
    pub fn park(
        &mut self,
        order_key: &str,
        rate_key: Option<&str>,
        integration: Option<IntegrationId>,
        until: i64,
        from: JobId,
    ) -> bool {
        if let Some(listed) = self.by_order_key.get(order_key)
            && (listed.rate_key.as_deref() != rate_key
                || !matches!(listed.state, State::Partial { .. }))
        {
            return false;
        }
        self.set_parked(order_key, rate_key, integration, until, from);
        true
    }

    fn set_parked(
        &mut self,
        order_key: &str,
        rate_key: Option<&str>,
        integration: Option<IntegrationId>,
        until: i64,
        from: JobId,
    ) {
        let conversation = Conversation {
            state: State::Parked { until, from },
            rate_key: rate_key.map(str::to_owned),
            integration,
        };
        self.by_order_key.insert(order_key.to_owned(), conversation);
        self.due.insert((until, order_key.to_owned()));
    }

    /// Whether a job handed in (just written, or read with its rate key's backlog) may be taken
    /// into memory: not one of a conversation set aside, whose reads bring it in its turn. A job
    /// of another destination is taken: those reads would not find it.
    pub fn admits(&mut self, row: &JobRow) -> bool {
        let Some(conversation) = row
            .order_key
            .as_ref()
            .and_then(|key| self.by_order_key.get_mut(key))
        else {
            return true;
        };
        if conversation.rate_key != row.rate_key {
            return true;
        }
        match &mut conversation.state {
            State::Parked { from, .. } => {
                *from = (*from).min(row.id);
                false
            }
            State::Loading { missed } => {
                *missed = Some(missed.map_or(row.id, |m| m.min(row.id)));
                false
            }
            // An older job queued again (an admin's retry) would be found by no read.
            State::Partial { after } => row.id <= *after,
        }
    }

    /// The reads to make at `now`: conversations whose time has come, each marked as loading
    /// until [`Self::loaded`].
    pub fn take_due(&mut self, now: i64) -> Vec<Load> {
        let mut loads = Vec::new();
        while let Some((until, _)) = self.due.first()
            && *until <= now
        {
            let Some((_, order_key)) = self.due.pop_first() else {
                break;
            };
            let Some(conversation) = self.by_order_key.get_mut(&order_key) else {
                continue;
            };
            let State::Parked { from, .. } = conversation.state else {
                continue;
            };
            conversation.state = State::Loading { missed: None };
            loads.push(Load {
                rate_key: conversation.rate_key.clone(),
                order_key: Some(order_key),
                after: JobId(from.0 - 1),
                limit: READ_PAGE,
            });
        }
        loads
    }

    /// When the next parked conversation is due to be read back.
    pub fn next_due(&self) -> Option<i64> {
        self.due.first().map(|(at, _)| *at)
    }

    /// A read came back with `count` jobs, the last with id `last` (taken into memory by the
    /// caller); `has_queue` says whether any job of the conversation is in memory now.
    pub fn loaded(&mut self, load: &Load, count: usize, last: Option<JobId>, has_queue: bool) {
        let Some(order_key) = &load.order_key else {
            return;
        };
        let Some(conversation) = self.by_order_key.get_mut(order_key) else {
            return;
        };
        let State::Loading { missed } = conversation.state else {
            return;
        };
        let mut after = last.unwrap_or(load.after).max(load.after);
        if let Some(missed) = missed {
            after = after.min(JobId(missed.0 - 1));
        }
        if count < load.limit && missed.is_none() {
            self.by_order_key.remove(order_key);
        } else if has_queue {
            conversation.state = State::Partial { after };
        } else {
            // Nothing in memory to finish and set off the next read: read again now.
            let (rate_key, integration) = (conversation.rate_key.clone(), conversation.integration);
            let from = JobId(after.0 + 1);
            self.set_parked(order_key, rate_key.as_deref(), integration, i64::MIN, from);
        }
    }

    /// A read failed: it is made again at `retry_at`.
    pub fn load_failed(&mut self, load: &Load, retry_at: i64) {
        let Some(order_key) = &load.order_key else {
            return;
        };
        let Some(conversation) = self.by_order_key.get(order_key) else {
            return;
        };
        let State::Loading { missed } = conversation.state else {
            return;
        };
        let from = JobId(load.after.0 + 1).min(missed.unwrap_or(JobId(i64::MAX)));
        let (rate_key, integration) = (conversation.rate_key.clone(), conversation.integration);
        self.set_parked(order_key, rate_key.as_deref(), integration, retry_at, from);
    }

    /// The conversation's last job in memory finished: what it has left in SQLite is read now.
    pub fn emptied(&mut self, order_key: &str) {
        let Some(conversation) = self.by_order_key.get(order_key) else {
            return;
        };
        if let State::Partial { after } = conversation.state {
            let (rate_key, integration) = (conversation.rate_key.clone(), conversation.integration);
            let from = JobId(after.0 + 1);
            self.set_parked(order_key, rate_key.as_deref(), integration, i64::MIN, from);
        }
    }

    /// Forgets an integration's conversations: it is blocked, and when it is fixed its jobs are
    /// queued again and read like any backlog.
    pub fn forget_integration(&mut self, integration: IntegrationId) {
        let due = &mut self.due;
        self.by_order_key.retain(|order_key, conversation| {
            if conversation.integration != Some(integration) {
                return true;
            }
            if let State::Parked { until, .. } = conversation.state {
                due.remove(&(until, order_key.clone()));
            }
            false
        });
    }
}
