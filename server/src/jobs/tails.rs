//! A conversation's queued jobs beyond its first few, held by id only. Only the head of an
//! `order_key` queue can run, one at a time, so a conversation with hundreds of posts queued at
//! one destination gains nothing from holding them all as jobs in its rate key's window, and
//! would fill that window and hold up the destination's other conversations (docs/jobs.md,
//! "A bounded window per destination"). So an order key keeps at most [`PER_ORDER`] jobs in
//! memory; the rest of its queue, its **tail**, is kept as ids (a few bytes each, bounded per
//! rate key by the window's tail cap), and read back by id a few at a time as its head moves on.
//! The window's reads go on past the tail to the other conversations.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::store::{IntegrationId, JobId, JobRow};

/// Jobs of one order key held in memory as jobs; more are held as its tail.
pub const PER_ORDER: usize = 4;

/// A read of a tail's next jobs by id, each with its rate key (whose window counts it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fill {
    pub order_key: String,
    pub ids: Vec<(JobId, Option<String>)>,
}

/// One id in a tail.
#[derive(Debug, Clone, Copy)]
struct Held {
    id: JobId,
    /// So a blocked integration's ids leave.
    integration: Option<IntegrationId>,
    /// Its rate key, as a position in the tail's `rate_keys`: a conversation's jobs all have
    /// one, except across a change of Slack channel.
    rate: usize,
}

/// Counts of ids per rate key, for the windows.
pub type PerRateKey = Vec<(Option<String>, usize)>;

/// One order key's tail.
#[derive(Debug, Default)]
struct Tail {
    rate_keys: Vec<Option<String>>,
    /// In id order.
    ids: VecDeque<Held>,
    /// Being read by a [`Fill`].
    filling: Vec<Held>,
}

impl Tail {
    /// How many of `held` there are per rate key.
    fn count(&self, held: impl Iterator<Item = Held>) -> PerRateKey {
        let mut counts = vec![0; self.rate_keys.len()];
        for h in held {
            counts[h.rate] += 1;
        }
        self.rate_keys
            .iter()
            .cloned()
            .zip(counts)
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

/// What [`Tails::remove_integration`] took away, per rate key, for the windows' counts.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Removed {
    /// Ids that were in tails.
    pub from_tails: PerRateKey,
    /// Ids being read back (counted as waiting): their rows are dropped when the read returns.
    pub from_reads: PerRateKey,
}

/// Every order key's tail, and the fills to make.
#[derive(Debug, Default)]
pub struct Tails {
    by_order: HashMap<String, Tail>,
    fills: Vec<Fill>,
    failed: Vec<Fill>,
    /// Ids of a read under way whose integration was blocked meanwhile: the read's rows for them
    /// are dropped (they are read again, in order, when it is fixed).
    cancelled: HashSet<JobId>,
}

impl Tails {
    /// Whether `order_key` has a tail (so its next jobs join it, behind the ids already there).
    pub fn has(&self, order_key: &str) -> bool {
        self.by_order.contains_key(order_key)
    }

    /// Whether job `id` of `order_key` is in its tail or being read from it.
    pub fn knows(&self, order_key: &str, id: JobId) -> bool {
        self.by_order.get(order_key).is_some_and(|tail| {
            tail.filling.iter().any(|h| h.id == id)
                || tail.ids.binary_search_by_key(&id, |h| h.id).is_ok()
        })
    }

    /// Adds a job with an order key to its key's tail, in id order.
    pub fn push(&mut self, row: &JobRow) {
        let Some(order_key) = &row.order_key else {
            return;
        };
        let tail = self.by_order.entry(order_key.clone()).or_default();
        let rate = match tail.rate_keys.iter().position(|k| *k == row.rate_key) {
            Some(rate) => rate,
            None => {
                tail.rate_keys.push(row.rate_key.clone());
                tail.rate_keys.len() - 1
            }
        };
        let at = tail.ids.partition_point(|h| h.id < row.id);
        let held = Held {
            id: row.id,
            integration: row.integration_id,
            rate,
        };
        tail.ids.insert(at, held);
    }

    /// The order key holds `held` jobs in memory now: when that is down to half of
    /// [`PER_ORDER`] and no read is under way, its tail's next ids are read to bring it back up.
    /// Returns how many ids left the tail per rate key, for the windows' counts.
    pub fn refill(&mut self, order_key: &str, held: usize) -> PerRateKey {
        let Some(tail) = self.by_order.get_mut(order_key) else {
            return Vec::new();
        };
        if held > PER_ORDER / 2 || !tail.filling.is_empty() {
            return Vec::new();
        }
        let count = (PER_ORDER - held).min(tail.ids.len());
        let taken: Vec<Held> = tail.ids.drain(..count).collect();
        tail.filling.clone_from(&taken);
        let ids = taken
            .iter()
            .map(|h| (h.id, tail.rate_keys[h.rate].clone()))
            .collect();
        let counts = tail.count(taken.into_iter());
        if count > 0 {
            self.fills.push(Fill {
                order_key: order_key.to_owned(),
                ids,
            });
        }
        counts
    }

    /// The fills to make now.
    pub fn take_fills(&mut self) -> Vec<Fill> {
        std::mem::take(&mut self.fills)
    }

    /// A fill came back: its ids are no longer the tail's; a tail with nothing left goes.
    pub fn filled(&mut self, fill: &Fill) {
        if let Some(tail) = self.by_order.get_mut(&fill.order_key) {
            tail.filling
                .retain(|h| !fill.ids.iter().any(|(id, _)| *id == h.id));
            if tail.ids.is_empty() && tail.filling.is_empty() {
                self.by_order.remove(&fill.order_key);
            }
        }
    }

    /// Whether job `id` of a returning fill was cancelled (its integration was blocked while it
    /// was read): its row is then dropped, and its count was already given back.
    pub fn take_cancelled(&mut self, id: JobId) -> bool {
        self.cancelled.remove(&id)
    }

    /// A fill could not be read: it is made again at [`Self::retry_failed`].
    pub fn fill_failed(&mut self, fill: Fill) {
        self.failed.push(fill);
    }

    /// Makes the failed fills again.
    pub fn retry_failed(&mut self) {
        self.fills.append(&mut self.failed);
    }

    /// Drops the ids of `integration`'s jobs, also those being read back (it is blocked: they
    /// are read again, in order, when it is fixed).
    pub fn remove_integration(&mut self, integration: IntegrationId) -> Removed {
        let mut removed = Removed::default();
        let cancelled = &mut self.cancelled;
        self.by_order.retain(|_, tail| {
            let of_it = |h: &Held| h.integration == Some(integration);
            let (gone, kept): (Vec<Held>, Vec<Held>) = tail.ids.iter().partition(|h| of_it(h));
            removed.from_tails.extend(tail.count(gone.into_iter()));
            tail.ids = kept.into();
            let (gone, kept): (Vec<Held>, Vec<Held>) = tail.filling.iter().partition(|h| of_it(h));
            cancelled.extend(gone.iter().map(|h| h.id));
            removed.from_reads.extend(tail.count(gone.into_iter()));
            tail.filling = kept;
            !tail.ids.is_empty() || !tail.filling.is_empty()
        });
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(fill: &Fill) -> Vec<i64> {
        fill.ids.iter().map(|(id, _)| id.0).collect()
    }

    fn row(id: i64, order_key: &str, integration: i64) -> JobRow {
        JobRow {
            id: JobId(id),
            lane: "chat".into(),
            kind: "slack.post".into(),
            args: "{}".into(),
            integration_id: Some(IntegrationId(integration)),
            state: "queued".into(),
            order_key: Some(order_key.into()),
            rate_key: Some("slack:T:C1".into()),
            attempt: 0,
            max_attempts: 5,
            run_at: 0,
            deadline_at: None,
            is_uncertain: false,
            last_error: None,
            created_at: 0,
        }
    }

    #[test]
    fn a_tail_is_read_back_a_few_at_a_time_in_id_order_once_its_head_moves_on() {
        let mut tails = Tails::default();
        for id in [12, 10, 11, 13, 14, 15] {
            tails.push(&row(id, "conv:1", 1));
        }
        assert!(tails.has("conv:1") && tails.knows("conv:1", JobId(12)));
        assert!(
            tails.refill("conv:1", 3).is_empty(),
            "more than half still held"
        );
        assert_eq!(tails.refill("conv:1", 2), [(Some("slack:T:C1".into()), 2)]);
        assert!(tails.refill("conv:1", 0).is_empty(), "one read at a time");
        let fills = tails.take_fills();
        assert_eq!(fills.len(), 1);
        assert_eq!(ids(&fills[0]), [10, 11]);
        assert!(tails.knows("conv:1", JobId(10)), "known while it is read");
        tails.filled(&fills[0]);
        assert!(!tails.knows("conv:1", JobId(10)));
        assert_eq!(tails.refill("conv:1", 0), [(Some("slack:T:C1".into()), 4)]);
        let last = tails.take_fills().pop().expect("a fill");
        assert_eq!(ids(&last), [12, 13, 14, 15]);
        tails.filled(&last);
        assert!(!tails.has("conv:1"), "an emptied tail goes");
    }

    #[test]
    fn a_failed_fill_is_made_again_and_a_blocked_integrations_ids_leave() {
        let mut tails = Tails::default();
        for id in 1..=3 {
            tails.push(&row(id, "conv:1", 1));
        }
        tails.push(&row(4, "conv:2", 2));
        tails.refill("conv:1", 0);
        let fill = tails.take_fills().pop().expect("a fill");
        tails.fill_failed(fill.clone());
        assert!(tails.take_fills().is_empty());
        tails.retry_failed();
        assert_eq!(tails.take_fills(), std::slice::from_ref(&fill));
        assert_eq!(
            tails.remove_integration(IntegrationId(2)).from_tails,
            [(Some("slack:T:C1".into()), 1)]
        );
        assert!(!tails.has("conv:2"));
        assert!(tails.has("conv:1"), "its fill is still being read");
        tails.filled(&fill);
        assert!(!tails.has("conv:1"));
        assert!(
            !tails.take_cancelled(JobId(1)),
            "nothing of it was cancelled"
        );
    }

    #[test]
    fn a_read_under_way_when_its_integration_is_blocked_is_cancelled() {
        let mut tails = Tails::default();
        for id in 5..=8 {
            tails.push(&row(id, "conv:1", 1));
        }
        tails.refill("conv:1", 2);
        let fill = tails.take_fills().pop().expect("a fill");
        assert_eq!(ids(&fill), [5, 6]);
        let removed = tails.remove_integration(IntegrationId(1));
        assert_eq!(removed.from_tails, [(Some("slack:T:C1".into()), 2)]);
        assert_eq!(removed.from_reads, [(Some("slack:T:C1".into()), 2)]);
        // Gone at once: the jobs read again after the fix are not taken for known ones.
        assert!(!tails.has("conv:1") && !tails.knows("conv:1", JobId(5)));
        tails.filled(&fill);
        assert!(tails.take_cancelled(JobId(5)) && tails.take_cancelled(JobId(6)));
        assert!(!tails.take_cancelled(JobId(5)), "once");
    }

    #[test]
    fn ids_of_two_rate_keys_in_one_tail_are_counted_each_to_its_own() {
        // A Slack channel changed while the conversation had posts queued at the old one.
        let mut tails = Tails::default();
        tails.push(&row(1, "conv:1", 1));
        let mut moved = row(2, "conv:1", 1);
        moved.rate_key = Some("slack:T:C2".into());
        tails.push(&moved);
        tails.push(&row(3, "conv:1", 1));
        assert_eq!(
            tails.refill("conv:1", 0),
            [
                (Some("slack:T:C1".into()), 2),
                (Some("slack:T:C2".into()), 1)
            ]
        );
        let fill = tails.take_fills().pop().expect("a fill");
        assert_eq!(fill.ids[1], (JobId(2), Some("slack:T:C2".into())));
    }
}
