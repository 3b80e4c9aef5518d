//! How many of each rate key's queued jobs the runner holds in memory. A destination that falls
//! behind (a Slack channel held to one post a second, a webhook that is down) can gather a
//! backlog of any size; holding it all would cost memory in proportion (about a kilobyte a
//! job). Each rate key instead keeps at most `cap` waiting jobs in memory, its oldest by id (a
//! conversation's tail read back may take it a few past that), and up to `tail_cap` more as ids
//! in conversations' tails (`super::tails`); the rest wait in SQLite and are read back in id
//! order as the window empties. A key's window is per key, not one for all: a window of the
//! oldest jobs overall would fill with a slow channel's backlog and starve every other
//! destination.
//!
//! Invariant, per key: every queued job of the key with an id up to `through` is in memory, as
//! a job or as an id in a tail, except those the runner has finished. Jobs above it are in
//! memory only while the key has not spilled; once it has, they are read from SQLite
//! (`id > through`, oldest first). A job handed
//! in with an id at or below `through` (queued again by an admin's retry) is taken while there is
//! room; otherwise `through` moves below it, so the next read finds it (reading jobs already in
//! memory again costs a little and changes nothing: they are known and skipped). While a read is
//! in flight nothing is taken, and the lowest id handed in meanwhile decides where the next read
//! starts: the read's snapshot may not hold it.

use std::collections::HashMap;

use crate::store::JobId;

/// A read the runner should make: the next `limit` queued jobs of `rate_key` with ids above
/// `after`, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Load {
    pub rate_key: Option<String>,
    pub after: JobId,
    pub limit: usize,
}

/// What SQLite may hold of a key beyond what memory has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stored {
    /// Nothing: every queued job of the key is in memory.
    Nothing,
    /// Queued jobs above `through`; `is_wanted` once listed in `Windows::wanting`.
    More { is_wanted: bool },
    /// A [`Load`] is in flight; `missed` is the lowest id turned away or queued again meanwhile:
    /// the load's snapshot may not hold it, so the next load starts below it.
    Loading { missed: Option<JobId> },
}

/// One rate key's share of memory.
#[derive(Debug)]
struct Window {
    /// Its jobs in memory that are not running: what `cap` bounds.
    waiting: usize,
    /// Its jobs in memory that are running (bounded by the lanes' concurrency).
    running: usize,
    /// Its jobs held as ids in conversations' tails (`super::tails`): what the tail cap bounds.
    tails: usize,
    /// A job was turned away because the tails were full: no read is made until they are down
    /// to half, as one made sooner would read a page to take the few ids that left.
    tails_full: bool,
    through: JobId,
    stored: Stored,
}

impl Default for Window {
    fn default() -> Self {
        Self {
            waiting: 0,
            running: 0,
            tails: 0,
            tails_full: false,
            through: JobId(0),
            stored: Stored::Nothing,
        }
    }
}

/// Ids a rate key holds in tails, per job its window holds: 8,192 for the window of 256, a few
/// hundred kilobytes, shared by the destination's conversations; past that, newer conversations
/// wait for room as they did before tails.
const TAILS_PER_WINDOW_JOB: usize = 32;

/// Jobs without a rate key share one window under this name, which no rate key has.
const KEYLESS: &str = "";

fn slot(rate_key: Option<&str>) -> &str {
    rate_key.unwrap_or(KEYLESS)
}

/// Every rate key's window.
#[derive(Debug)]
pub struct Windows {
    cap: usize,
    tail_cap: usize,
    by_key: HashMap<String, Window>,
    /// Keys whose window is at most half full with more in SQLite, in the order they got there.
    wanting: Vec<String>,
}

impl Windows {
    /// Windows of at most `cap` waiting jobs per rate key (at least 2).
    pub fn new(cap: usize) -> Self {
        Self {
            cap: cap.max(2),
            tail_cap: cap.max(2) * TAILS_PER_WINDOW_JOB,
            by_key: HashMap::new(),
            wanting: Vec::new(),
        }
    }

    fn window(&mut self, rate_key: Option<&str>) -> &mut Window {
        self.by_key.entry(slot(rate_key).to_owned()).or_default()
    }

    /// A job of `rate_key` handed in (just written, or found by the safety poll): whether it is
    /// taken into memory, as a job or, `as_tail`, as an id in its conversation's tail. One
    /// turned away stays in SQLite and is read when its turn comes.
    pub fn admit(&mut self, rate_key: Option<&str>, id: JobId, as_tail: bool) -> bool {
        let (cap, tail_cap) = (self.cap, self.tail_cap);
        // Looked up before it is made: the key is copied only for a key with nothing in memory.
        let Some(window) = self.by_key.get_mut(slot(rate_key)) else {
            let window = Window {
                waiting: usize::from(!as_tail),
                tails: usize::from(as_tail),
                through: id,
                ..Window::default()
            };
            self.by_key.insert(slot(rate_key).to_owned(), window);
            return true;
        };
        let has_room = if as_tail {
            window.tails < tail_cap
        } else {
            window.waiting < cap
        };
        window.tails_full |= as_tail && !has_room;
        let is_new = id > window.through;
        match &mut window.stored {
            Stored::Loading { missed } => {
                *missed = Some(missed.map_or(id, |m| m.min(id)));
                return false;
            }
            Stored::Nothing if is_new && has_room => window.through = id,
            // An older job queued again (a retry): no read would find it, so it is taken while
            // there is room; without room, the next reads start below it.
            _ if !is_new && has_room => {}
            stored => {
                if !is_new {
                    window.through = JobId(id.0 - 1);
                }
                if *stored == Stored::Nothing {
                    *stored = Stored::More { is_wanted: false };
                }
                return false;
            }
        }
        if as_tail {
            window.tails += 1;
        } else {
            window.waiting += 1;
        }
        true
    }

    /// Marks `rate_key` as having queued jobs in SQLite from id `oldest` on that may not be in
    /// memory (at start-up, or queued again in bulk): its next loads read from there. Reading
    /// jobs already in memory again is harmless (they are known and skipped).
    pub fn expect_stored(&mut self, rate_key: Option<&str>, oldest: JobId) {
        let window = self.window(rate_key);
        match &mut window.stored {
            Stored::Loading { missed } => *missed = Some(missed.map_or(oldest, |m| m.min(oldest))),
            stored => {
                window.through = window.through.min(JobId(oldest.0 - 1));
                if *stored == Stored::Nothing {
                    *stored = Stored::More { is_wanted: false };
                }
            }
        }
        self.settle(slot(rate_key));
    }

    /// The loads to make now (each key's window is marked as loading until [`Self::loaded`]).
    pub fn take_loads(&mut self) -> Vec<Load> {
        let wanting = std::mem::take(&mut self.wanting);
        wanting
            .into_iter()
            .filter_map(|key| {
                let window = self.by_key.get_mut(&key)?;
                window.stored = Stored::Loading { missed: None };
                Some(Load {
                    after: window.through,
                    limit: self.cap - window.waiting.min(self.cap),
                    rate_key: (key != KEYLESS).then_some(key),
                })
            })
            .collect()
    }

    /// A job read by a load, counted as waiting (the load's limit bounds these), or `as_tail`
    /// as held in a tail while the tails have room. False when they have none: the load stops
    /// before it ([`Self::loaded`] with `stopped`).
    pub fn admit_loaded(&mut self, rate_key: Option<&str>, as_tail: bool) -> bool {
        let tail_cap = self.tail_cap;
        let window = self.window(rate_key);
        if !as_tail {
            window.waiting += 1;
        } else if window.tails < tail_cap {
            window.tails += 1;
        } else {
            window.tails_full = true;
            return false;
        }
        true
    }

    /// A load came back: `count` jobs read, those up to id `last` taken (each counted with
    /// [`Self::admit_loaded`]); `stopped` when it stopped short for lack of room in the tails.
    pub fn loaded(&mut self, load: &Load, count: usize, last: Option<JobId>, stopped: bool) {
        let key = slot(load.rate_key.as_deref());
        let Some(window) = self.by_key.get_mut(key) else {
            return;
        };
        let missed = match window.stored {
            Stored::Loading { missed } => missed,
            _ => None,
        };
        window.through = last.unwrap_or(load.after).max(load.after);
        if let Some(missed) = missed {
            window.through = window.through.min(JobId(missed.0 - 1));
        }
        window.stored = if count >= load.limit || missed.is_some() || stopped {
            Stored::More { is_wanted: false }
        } else {
            Stored::Nothing
        };
        self.settle(key);
    }

    /// A load failed: its key is asked for again at the next [`Self::retry_failed_loads`].
    pub fn load_failed(&mut self, load: &Load) {
        if let Some(window) = self.by_key.get_mut(slot(load.rate_key.as_deref())) {
            window.stored = Stored::More { is_wanted: false };
        }
    }

    /// Asks again for every key with more in SQLite that is neither loading nor listed (after
    /// failed loads).
    pub fn retry_failed_loads(&mut self) {
        let keys: Vec<String> = self
            .by_key
            .iter()
            .filter(|(_, w)| w.stored == Stored::More { is_wanted: false })
            .map(|(key, _)| key.clone())
            .collect();
        for key in keys {
            self.settle(&key);
        }
    }

    /// `count` ids of `rate_key` left a tail to be read back as jobs: counted as waiting from
    /// now (so the read's jobs are), and the tails have room again.
    pub fn read_from_tail(&mut self, rate_key: Option<&str>, count: usize) {
        self.leave_tails(rate_key, count, count);
    }

    /// `count` ids of `rate_key` left a tail for good (their integration was blocked).
    pub fn forget_tail(&mut self, rate_key: Option<&str>, count: usize) {
        self.leave_tails(rate_key, count, 0);
    }

    /// `count` ids left `rate_key`'s tails, `waiting` of them to be read back as jobs.
    fn leave_tails(&mut self, rate_key: Option<&str>, count: usize, waiting: usize) {
        let tail_cap = self.tail_cap;
        if let Some(window) = self.by_key.get_mut(slot(rate_key)) {
            window.tails = window.tails.saturating_sub(count);
            window.waiting += waiting;
            if window.tails <= tail_cap / 2 {
                window.tails_full = false;
            }
        }
        self.settle(slot(rate_key));
    }

    /// Whether any job of `rate_key` is in memory or waits in SQLite.
    pub fn holds(&self, rate_key: &str) -> bool {
        self.by_key.contains_key(rate_key)
    }

    /// How many jobs of `rate_key` are running.
    pub fn running(&self, rate_key: &str) -> usize {
        self.by_key.get(rate_key).map_or(0, |w| w.running)
    }

    /// A waiting job of `rate_key` started running.
    pub fn started(&mut self, rate_key: Option<&str>) {
        if let Some(window) = self.by_key.get_mut(slot(rate_key)) {
            window.waiting = window.waiting.saturating_sub(1);
            window.running += 1;
        }
        self.settle(slot(rate_key));
    }

    /// A running job of `rate_key` waits again (a retry, a round that could not be written).
    pub fn stopped(&mut self, rate_key: Option<&str>) {
        if let Some(window) = self.by_key.get_mut(slot(rate_key)) {
            window.running = window.running.saturating_sub(1);
            window.waiting += 1;
        }
    }

    /// A job of `rate_key` left memory for good (finished, or its integration blocked).
    pub fn forget(&mut self, rate_key: Option<&str>, was_running: bool) {
        if let Some(window) = self.by_key.get_mut(slot(rate_key)) {
            let count = if was_running {
                &mut window.running
            } else {
                &mut window.waiting
            };
            *count = count.saturating_sub(1);
        }
        self.settle(slot(rate_key));
    }

    /// After a change: lists the key for a load if its window is at most half full and more
    /// waits in SQLite, or forgets the window once nothing of the key is left anywhere.
    fn settle(&mut self, key: &str) {
        let Some(window) = self.by_key.get_mut(key) else {
            return;
        };
        match window.stored {
            Stored::More { is_wanted: false }
                if window.waiting <= self.cap / 2 && !window.tails_full =>
            {
                window.stored = Stored::More { is_wanted: true };
                self.wanting.push(key.to_owned());
            }
            Stored::Nothing if window.waiting == 0 && window.running == 0 && window.tails == 0 => {
                self.by_key.remove(key);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Admits ids `from..=to` of `k`, returning those taken.
    fn admit_all(windows: &mut Windows, k: Option<&str>, from: i64, to: i64) -> Vec<i64> {
        (from..=to)
            .filter(|id| windows.admit(k, JobId(*id), false))
            .collect()
    }

    /// A window of 4 for `k` given jobs `from..=to` (more than fit), its 4 started: it is empty
    /// with more in SQLite, and its load is in flight.
    fn loading_after_a_spill(k: Option<&str>, from: i64, to: i64) -> (Windows, Load) {
        let mut windows = Windows::new(4);
        admit_all(&mut windows, k, from, to);
        for _ in 0..4 {
            windows.started(k);
        }
        let load = windows.take_loads().pop().expect("a load");
        (windows, load)
    }

    #[test]
    fn a_key_takes_up_to_its_cap_and_then_spills_to_sqlite() {
        let mut windows = Windows::new(4);
        let slow = Some("slack:T:C1");
        assert_eq!(admit_all(&mut windows, slow, 1, 10), [1, 2, 3, 4]);
        assert!(
            windows.take_loads().is_empty(),
            "a full window asks for nothing"
        );
        // Another key is not held back by the first one's backlog.
        assert_eq!(admit_all(&mut windows, Some("webhook:1"), 11, 12), [11, 12]);
    }

    #[test]
    fn a_half_empty_window_reads_the_next_jobs_in_id_order() {
        let mut windows = Windows::new(4);
        let k = Some("slack:T:C1");
        admit_all(&mut windows, k, 1, 10);
        windows.started(k);
        assert!(windows.take_loads().is_empty(), "three of four still wait");
        windows.started(k);
        let loads = windows.take_loads();
        assert_eq!(
            loads,
            [Load {
                rate_key: k.map(Into::into),
                after: JobId(4),
                limit: 2
            }]
        );
        assert!(windows.take_loads().is_empty(), "one load at a time");
        // Jobs handed in while it is spilled wait in SQLite, even with room.
        windows.forget(k, true);
        assert!(!windows.admit(k, JobId(11), false));
        for _ in 5..=6 {
            windows.admit_loaded(k, false);
        }
        windows.loaded(&loads[0], 2, Some(JobId(6)), false);
        assert!(
            windows.take_loads().is_empty(),
            "a full page leaves it spilled, but it is full again"
        );
        assert!(!windows.admit(k, JobId(12), false), "still spilled");
    }

    #[test]
    fn a_short_load_ends_the_spill_unless_a_job_was_turned_away_meanwhile() {
        let k = Some("slack:T:C1");
        let (mut windows, load) = loading_after_a_spill(k, 1, 5);
        assert!(
            !windows.admit(k, JobId(6), false),
            "turned away while loading"
        );
        windows.admit_loaded(k, false);
        windows.loaded(&load, 1, Some(JobId(5)), false);
        let again = windows
            .take_loads()
            .pop()
            .expect("read again: the load may have missed 6");
        assert_eq!(again.after, JobId(5));
        windows.loaded(&again, 0, None, false);
        assert!(
            windows.admit(k, JobId(7), false),
            "nothing more in SQLite: taken directly"
        );
    }

    #[test]
    fn an_older_job_queued_again_is_taken_while_there_is_room_and_read_later_if_not() {
        let mut windows = Windows::new(2);
        let k = Some("discord:1");
        assert_eq!(admit_all(&mut windows, k, 5, 6), [5, 6]);
        windows.started(k);
        assert!(
            windows.admit(k, JobId(3), false),
            "room for it, and no read would find it"
        );
        // Full: an admin's "retry all" of thousands must not all land in memory.
        assert!(!windows.admit(k, JobId(2), false));
        windows.started(k);
        windows.started(k);
        let load = windows.take_loads().pop().expect("a load");
        assert_eq!(load.after, JobId(1), "read again from below it");
    }

    #[test]
    fn an_older_job_queued_again_during_a_load_is_read_by_the_next_one() {
        let k = Some("slack:T:C1");
        let (mut windows, load) = loading_after_a_spill(k, 1, 5);
        assert_eq!(load.after, JobId(4));
        // Job 6 was blocked when the load's snapshot was taken; an admin retries it now.
        assert!(!windows.admit(k, JobId(6), false));
        for _ in [5, 7, 8] {
            windows.admit_loaded(k, false);
        }
        windows.loaded(&load, 3, Some(JobId(8)), false);
        windows.started(k);
        let again = windows
            .take_loads()
            .pop()
            .expect("read again once half empty");
        assert_eq!(again.after, JobId(5), "from just below job 6");
    }

    #[test]
    fn a_key_with_nothing_left_is_forgotten() {
        let mut windows = Windows::new(2);
        let k = Some("webhook:1");
        assert!(windows.admit(k, JobId(1), false));
        windows.started(k);
        windows.forget(k, true);
        assert!(windows.by_key.is_empty());
    }

    #[test]
    fn start_up_reads_every_key_with_queued_jobs() {
        let mut windows = Windows::new(8);
        windows.expect_stored(Some("slack:T:C1"), JobId(1));
        windows.expect_stored(None, JobId(7));
        let loads = windows.take_loads();
        assert_eq!(loads.len(), 2);
        assert!(loads.iter().all(|l| l.after == JobId(0) && l.limit == 8));
        windows.load_failed(&loads[1]);
        windows.retry_failed_loads();
        assert_eq!(windows.take_loads().len(), 1, "only the failed one again");
    }

    #[test]
    fn jobs_queued_again_below_a_loads_start_are_read_after_it() {
        let k = Some("slack:T:C1");
        let (mut windows, load) = loading_after_a_spill(k, 50, 60);
        assert_eq!(load.after, JobId(53));
        // An admin fixes an integration whose blocked jobs on this key start at id 10.
        windows.expect_stored(k, JobId(10));
        windows.loaded(&load, 4, Some(JobId(57)), false);
        let again = windows.take_loads().pop().expect("read again");
        assert_eq!(again.after, JobId(9), "from the jobs queued again");
    }
}
