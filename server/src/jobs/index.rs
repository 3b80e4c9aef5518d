//! The runner's in-memory view of unfinished jobs: which are ready per lane, in `run_at` order;
//! only the head of each `order_key` queue is eligible (a conversation's deliveries to one
//! destination stay in order); a `rate_key` paused by a 429, or paced ([`Pacer`]), holds back
//! only its own jobs. Each rate key holds a bounded window of its jobs ([`Windows`]); the rest
//! wait in SQLite. A conversation holds a few jobs; the rest of its queue is held as ids
//! ([`Tails`]). Pure data, no I/O, so it is unit-tested directly (`index_tests`).

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use crate::store::{IntegrationId, JobId, JobRow};

use super::pace::Pacer;
use super::tails::{Fill, PER_ORDER, Tails};
use super::window::{Load, Windows};

/// A read of queued jobs the runner makes for the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// A rate key's next jobs in id order: its window is half empty with more in SQLite.
    Page(Load),
    /// A conversation's next jobs from its tail, by id.
    Fill(Fill),
}

/// Delivery lanes; each has its own concurrency limit so a slow kind cannot starve another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lane {
    Chat,
    Webhook,
    Email,
    Maint,
}

impl Lane {
    pub const ALL: [Lane; 4] = [Lane::Chat, Lane::Webhook, Lane::Email, Lane::Maint];

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "chat" => Some(Self::Chat),
            "webhook" => Some(Self::Webhook),
            "email" => Some(Self::Email),
            "maint" => Some(Self::Maint),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Webhook => "webhook",
            Self::Email => "email",
            Self::Maint => "maint",
        }
    }

    /// Position in [`Lane::ALL`], for per-lane arrays.
    pub(crate) fn slot(self) -> usize {
        match self {
            Self::Chat => 0,
            Self::Webhook => 1,
            Self::Email => 2,
            Self::Maint => 3,
        }
    }
}

/// A job the runner knows about.
#[derive(Debug, Clone)]
pub struct Entry {
    pub row: JobRow,
    pub lane: Lane,
    is_running: bool,
}

/// How many deliveries of one webhook endpoint (one rate key) may run at once: a quarter of the
/// lane, so endpoints that start hanging together hold at most that much each for their timeout,
/// and it takes four at the same moment to fill the lane (docs/jobs.md, "Lanes").
pub const WEBHOOK_KEY_RUNNING: usize = 16;
/// The same for an endpoint whose last attempt failed, until one succeeds: enough to find out
/// that it is back, and a hung endpoint's retries hold two slots at a time, not a quarter.
pub const FAILING_KEY_RUNNING: usize = 2;
/// A destination with a successful attempt this recent (10 minutes, in ms) is up: a delivery
/// failing meanwhile is the problem itself (docs/jobs.md, "Retries").
const UP_WINDOW_MS: i64 = 10 * 60 * 1000;

/// The most jobs of `rate_key` that may run at once in `lane`, if the lane limits it; `failing`
/// holds the keys whose last attempt failed.
fn running_cap(lane: Lane, failing: &HashSet<String>, rate_key: &str) -> Option<usize> {
    (lane == Lane::Webhook).then(|| {
        if failing.contains(rate_key) {
            FAILING_KEY_RUNNING
        } else {
            WEBHOOK_KEY_RUNNING
        }
    })
}

/// The index. Invariant: a job is in `ready`, or in `capped` under its rate key, iff it is not
/// running and is the head of its order queue (or has none).
#[derive(Debug)]
pub struct Index {
    jobs: HashMap<JobId, Entry>,
    order: HashMap<String, VecDeque<JobId>>,
    ready: [BTreeSet<(i64, JobId)>; 4],
    /// Ready jobs set aside because their rate key runs as many as its lane allows
    /// ([`running_cap`]); back in `ready` when one of the key's jobs stops running. Kept out of
    /// `ready`, so the dispatcher never wakes for a job it may not start.
    capped: HashMap<String, BTreeSet<(i64, JobId)>>,
    /// Per rate key, the time its waiting jobs were last moved to (the end of a 429's pause, or
    /// the pace's next start). A job of the key that is due earlier (the next message of a
    /// conversation just delivered) is moved there too, so it joins the waiting jobs in
    /// (`run_at`, id) order instead of overtaking them: no conversation starves a busy channel.
    held: HashMap<String, i64>,
    /// Webhook endpoints (rate keys) whose last attempt failed: they run at most
    /// [`FAILING_KEY_RUNNING`] at once until one of their attempts succeeds.
    failing: HashSet<String>,
    /// When an attempt to each rate key last succeeded (Unix ms): a failure while others
    /// succeed is the delivery's problem, not the destination's (`decision::decide`). One entry
    /// per destination that ever answered, as the pacer keeps.
    succeeded_at: HashMap<String, i64>,
    /// How soon each paced rate key may start its next job.
    pacer: Pacer,
    /// How many jobs of each rate key are in memory, and which keys have more in SQLite.
    windows: Windows,
    /// Each conversation's jobs beyond its first [`PER_ORDER`], as ids.
    tails: Tails,
}

impl Index {
    /// An empty index holding at most `window` waiting jobs per rate key.
    pub fn new(window: usize) -> Self {
        Self {
            jobs: HashMap::new(),
            order: HashMap::new(),
            ready: Default::default(),
            capped: HashMap::new(),
            failing: HashSet::new(),
            succeeded_at: HashMap::new(),
            held: HashMap::new(),
            pacer: Pacer::default(),
            windows: Windows::new(window),
            tails: Tails::default(),
        }
    }

    /// Number of jobs in memory (running ones included).
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Adds a queued job handed in by the runner (ignored if known or of an unknown lane). A job
    /// its rate key's window has no room for is left in SQLite, to be read in its turn.
    pub fn insert(&mut self, row: JobRow) {
        let Some(lane) = self.lane_of_new(&row) else {
            return;
        };
        let as_tail = self.joins_tail(&row);
        if self.windows.admit(row.rate_key.as_deref(), row.id, as_tail) {
            self.take(row, lane, as_tail);
        }
    }

    /// Whether a job joins its conversation's tail: the conversation has one already, or holds
    /// [`PER_ORDER`] jobs in memory; not a job older than those in memory (queued again by an
    /// admin), which goes in front of them as it would without a tail.
    fn joins_tail(&self, row: &JobRow) -> bool {
        row.order_key.as_deref().is_some_and(|key| {
            let queue = self.order.get(key);
            let is_older = queue
                .and_then(VecDeque::back)
                .is_some_and(|newest| row.id < *newest);
            !is_older && (self.tails.has(key) || queue.is_some_and(|q| q.len() >= PER_ORDER))
        })
    }

    fn take(&mut self, row: JobRow, lane: Lane, as_tail: bool) {
        if as_tail {
            self.tails.push(&row);
        } else {
            self.place(row, lane);
        }
    }

    /// Rate keys with queued jobs in SQLite from the id given on, which may not be in memory (at
    /// start-up, or queued again in bulk): read a window at a time.
    pub fn expect_stored(&mut self, oldest: &[(Option<String>, JobId)]) {
        for (key, id) in oldest {
            self.windows.expect_stored(key.as_deref(), *id);
        }
    }

    /// The reads of queued jobs to make now: windows half empty with more in SQLite, and
    /// conversations whose jobs in memory are down to half with more in their tails.
    pub fn take_loads(&mut self) -> Vec<Read> {
        let pages = self.windows.take_loads().into_iter().map(Read::Page);
        let fills = self.tails.take_fills().into_iter().map(Read::Fill);
        pages.chain(fills).collect()
    }

    /// What a [`Read`] read, oldest first: taken into memory.
    pub fn insert_loaded(&mut self, read: &Read, rows: Vec<JobRow>) {
        match read {
            Read::Page(load) => self.insert_page(load, rows),
            Read::Fill(fill) => self.insert_fill(fill, rows),
        }
    }

    /// A window's page: each job taken as a job or into its conversation's tail, until the
    /// tails are full (the rest is read again once they have room).
    fn insert_page(&mut self, load: &Load, rows: Vec<JobRow>) {
        let count = rows.len();
        let (mut last, mut stopped) = (None, false);
        for row in rows {
            let id = row.id;
            if let Some(lane) = self.lane_of_new(&row) {
                let as_tail = self.joins_tail(&row);
                if !self.windows.admit_loaded(row.rate_key.as_deref(), as_tail) {
                    stopped = true;
                    break;
                }
                self.take(row, lane, as_tail);
            }
            last = Some(id);
        }
        self.windows.loaded(load, count, last, stopped);
    }

    /// A tail's next jobs (the window counted them as waiting when the fill was made); one no
    /// longer queued (delivered by another process, blocked meanwhile) is forgotten.
    fn insert_fill(&mut self, fill: &Fill, rows: Vec<JobRow>) {
        self.tails.filled(fill);
        // Those whose integration was blocked during the read: dropped, already counted out.
        let cancelled: Vec<JobId> = fill
            .ids
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| self.tails.take_cancelled(*id))
            .collect();
        let mut found = Vec::with_capacity(rows.len());
        for row in rows {
            if cancelled.contains(&row.id) {
                continue;
            }
            if let Some(lane) = self.lane_of_new(&row) {
                found.push(row.id);
                self.place(row, lane);
            }
        }
        let missing = fill
            .ids
            .iter()
            .filter(|(id, _)| !found.contains(id) && !cancelled.contains(id));
        for (_, rate_key) in missing {
            self.windows.forget(rate_key.as_deref(), false);
        }
        self.refill(&fill.order_key);
    }

    /// A [`Read`] could not be made; see [`Self::retry_failed_loads`].
    pub fn load_failed(&mut self, read: &Read) {
        match read {
            Read::Page(load) => self.windows.load_failed(load),
            Read::Fill(fill) => self.tails.fill_failed(fill.clone()),
        }
    }

    /// Asks again for the reads that failed.
    pub fn retry_failed_loads(&mut self) {
        self.windows.retry_failed_loads();
        self.tails.retry_failed();
    }

    /// Reads the next jobs of `order_key`'s tail when those in memory are down to half.
    fn refill(&mut self, order_key: &str) {
        let held = self.order.get(order_key).map_or(0, VecDeque::len);
        for (rate_key, count) in self.tails.refill(order_key, held) {
            self.windows.read_from_tail(rate_key.as_deref(), count);
        }
    }

    /// The lane of a job not yet known, or `None` to ignore it.
    fn lane_of_new(&self, row: &JobRow) -> Option<Lane> {
        let Some(lane) = Lane::parse(&row.lane) else {
            tracing::warn!(job = %row.id, lane = row.lane, "job in an unknown lane ignored");
            return None;
        };
        let is_known = self.jobs.contains_key(&row.id)
            || row
                .order_key
                .as_deref()
                .is_some_and(|key| self.tails.knows(key, row.id));
        (!is_known).then_some(lane)
    }

    /// Puts a job into its order queue and, if it heads it, into its lane's ready set.
    fn place(&mut self, row: JobRow, lane: Lane) {
        let id = row.id;
        let run_at = row.run_at;
        let is_head = match &row.order_key {
            Some(key) => {
                let queue = self.order.entry(key.clone()).or_default();
                // Ids grow with creation; a reloaded older job goes in front of newer ones (never
                // into a tail behind them, `joins_tail`).
                let at = queue.partition_point(|other| *other < id);
                queue.insert(at, id);
                at == 0
            }
            None => true,
        };
        if is_head {
            // A job displaced from the head by an older one is no longer eligible.
            if let Some(key) = &row.order_key
                && let Some(&next) = self.order.get(key).and_then(|q| q.get(1))
                && let Some(entry) = self.jobs.get(&next)
                && !entry.is_running
            {
                let at = (entry.row.run_at, next);
                let rate_key = entry.row.rate_key.clone();
                self.ready[entry.lane.slot()].remove(&at);
                if let Some(rate_key) = rate_key {
                    self.uncap_one(&rate_key, at);
                }
            }
            self.ready[lane.slot()].insert((run_at, id));
        }
        self.jobs.insert(
            id,
            Entry {
                row,
                lane,
                is_running: false,
            },
        );
    }

    /// Takes the next job of `lane` due at `now` and marks it running (which spends a start of
    /// its paced rate key). Jobs whose rate key is paused, or paced and not yet allowed to
    /// start, are moved to when it will be, so the runner sleeps until then.
    pub fn pop_due(&mut self, lane: Lane, now: i64) -> Option<Entry> {
        loop {
            let &(run_at, id) = self.ready[lane.slot()].first()?;
            if run_at > now {
                return None;
            }
            self.ready[lane.slot()].remove(&(run_at, id));
            let entry = self.jobs.get_mut(&id)?;
            if let Some(key) = &entry.row.rate_key
                && running_cap(lane, &self.failing, key)
                    .is_some_and(|cap| self.windows.running(key) >= cap)
            {
                self.capped
                    .entry(key.clone())
                    .or_default()
                    .insert((run_at, id));
                continue;
            }
            if let Some(key) = &entry.row.rate_key {
                // Held first: a job that must wait anyway spends nothing of the key's pace.
                let until = match self.held.get(key) {
                    Some(held) if *held > run_at => Some(*held),
                    _ => match self.pacer.try_start(key, now) {
                        Ok(()) => None,
                        Err(next) => {
                            self.held.insert(key.clone(), next);
                            Some(next)
                        }
                    },
                };
                if let Some(until) = until {
                    entry.row.run_at = until;
                    self.ready[lane.slot()].insert((until, id));
                    continue;
                }
            }
            entry.is_running = true;
            self.windows.started(entry.row.rate_key.as_deref());
            return Some(entry.clone());
        }
    }

    /// Records how an attempt of `lane` to `rate_key` ended at `now`: when it succeeded (see
    /// [`Self::is_up`]); and after a failure a webhook endpoint runs at most
    /// [`FAILING_KEY_RUNNING`] jobs at once, after a success as many as its lane allows again.
    pub fn attempt_ended(&mut self, lane: Lane, rate_key: &str, succeeded: bool, now: i64) {
        if succeeded {
            match self.succeeded_at.get_mut(rate_key) {
                Some(at) => *at = now,
                None => {
                    self.succeeded_at.insert(rate_key.to_owned(), now);
                }
            }
        }
        if lane != Lane::Webhook {
            return;
        }
        if succeeded {
            self.failing.remove(rate_key);
        } else if !self.failing.contains(rate_key) {
            self.failing.insert(rate_key.to_owned());
        }
    }

    /// Whether the destination `rate_key` names is up at `now`: an attempt to it succeeded
    /// within [`UP_WINDOW_MS`].
    pub fn is_up(&self, rate_key: &str, now: i64) -> bool {
        self.succeeded_at
            .get(rate_key)
            .is_some_and(|at| now - *at <= UP_WINDOW_MS)
    }

    /// When the next job of `lane` is due, if any is waiting.
    pub fn next_due(&self, lane: Lane) -> Option<i64> {
        self.ready[lane.slot()].first().map(|(at, _)| *at)
    }

    /// The job finished for good (delivered, failed): forget it; the next of its order queue
    /// becomes eligible.
    pub fn finish(&mut self, id: JobId) {
        let Some(entry) = self.jobs.remove(&id) else {
            return;
        };
        self.windows
            .forget(entry.row.rate_key.as_deref(), entry.is_running);
        self.ready[entry.lane.slot()].remove(&(entry.row.run_at, id));
        if let Some(key) = &entry.row.rate_key {
            if entry.is_running {
                self.uncap(key);
            } else {
                self.uncap_one(key, (entry.row.run_at, id));
            }
        }
        let Some(key) = entry.row.order_key else {
            return;
        };
        let Some(queue) = self.order.get_mut(&key) else {
            return;
        };
        queue.retain(|other| *other != id);
        match queue.front().copied() {
            Some(next) => {
                if let Some(next_entry) = self.jobs.get(&next)
                    && !next_entry.is_running
                {
                    self.ready[next_entry.lane.slot()].insert((next_entry.row.run_at, next));
                }
            }
            None => {
                self.order.remove(&key);
            }
        }
        self.refill(&key);
    }

    /// The job will run again at `run_at` (it stays at the head of its order queue). With
    /// `pause_rate_key`, every job of its rate key waits until then too.
    pub fn reschedule(&mut self, id: JobId, run_at: i64, attempt: u32, pause_rate_key: bool) {
        let Some(entry) = self.jobs.get_mut(&id) else {
            return;
        };
        let was_running = entry.is_running;
        if was_running {
            self.windows.stopped(entry.row.rate_key.as_deref());
        }
        entry.is_running = false;
        entry.row.run_at = run_at;
        entry.row.attempt = attempt;
        self.ready[entry.lane.slot()].insert((run_at, id));
        let rate_key = entry.row.rate_key.clone();
        if let Some(key) = rate_key {
            if was_running {
                self.uncap(&key);
            }
            if pause_rate_key {
                self.pause(&key, run_at);
            }
        }
    }

    /// Forgets job `id`, rescheduled by its attempt's outcome but not queued in SQLite (its
    /// integration was turned off or blocked while it ran), with its destination's pause and
    /// pacing, as [`Self::remove_integration`] does: the turn-on or fix reads it back, due at
    /// once. Its key is marked as stored from its id on, so a turn-on's read that came first,
    /// and skipped the job as known, is made again.
    pub fn forget_blocked(&mut self, id: JobId) {
        let Some(entry) = self.jobs.get(&id) else {
            return;
        };
        let (is_running, rate_key) = (entry.is_running, entry.row.rate_key.clone());
        // One taken to start again in the same round did not start (it is not queued), and its
        // round ends it as such (`not_queued`).
        if !is_running {
            self.finish(id);
        }
        self.windows.expect_stored(rate_key.as_deref(), id);
        if let Some(key) = rate_key {
            self.release_key(&key);
        }
    }

    /// Ends `rate_key`'s pause and pacing, unless jobs of it remain in memory: a Slack channel
    /// two integrations post to keeps the pause its destination asked for while the other's
    /// jobs wait on it.
    fn release_key(&mut self, rate_key: &str) {
        if self
            .jobs
            .values()
            .any(|e| e.row.rate_key.as_deref() == Some(rate_key))
        {
            return;
        }
        self.held.remove(rate_key);
        self.pacer.forget(rate_key);
    }

    /// Removes every job of an integration (it is blocked until an admin fixes it); returns how
    /// many were removed. Running ones are left to finish and are then forgotten by `finish`.
    pub fn remove_integration(&mut self, integration: IntegrationId) -> usize {
        // The tails first, so no job of the integration is read back as the others leave.
        let removed = self.tails.remove_integration(integration);
        let mut rate_keys: HashSet<String> = HashSet::new();
        for (rate_key, count) in removed.from_tails {
            self.windows.forget_tail(rate_key.as_deref(), count);
            rate_keys.extend(rate_key);
        }
        for (rate_key, count) in removed.from_reads {
            for _ in 0..count {
                self.windows.forget(rate_key.as_deref(), false);
            }
            rate_keys.extend(rate_key);
        }
        let ids: Vec<JobId> = self
            .jobs
            .iter()
            .filter(|(_, e)| e.row.integration_id == Some(integration) && !e.is_running)
            .map(|(id, _)| *id)
            .collect();
        for id in &ids {
            if let Some(entry) = self.jobs.get(id) {
                rate_keys.extend(entry.row.rate_key.clone());
            }
            self.finish(*id);
        }
        // Its destinations' pauses and pacing go too: turning an integration off and on is how
        // an admin sends what waits out a 429 now (docs/jobs.md, "Pacing"), and its jobs, queued
        // again with `run_at` now, would otherwise still wait for the pause.
        for key in &rate_keys {
            self.release_key(key);
        }
        ids.len()
    }

    /// A job of `rate_key` stopped running: the jobs set aside for its cap are ready again (any
    /// beyond the cap are set aside again as they come up).
    fn uncap(&mut self, rate_key: &str) {
        let Some(set) = self.capped.remove(rate_key) else {
            return;
        };
        for (run_at, id) in set {
            if let Some(entry) = self.jobs.get(&id) {
                self.ready[entry.lane.slot()].insert((run_at, id));
            }
        }
    }

    /// Forgets one job set aside for its key's cap (it finished, or is no longer its queue's
    /// head).
    fn uncap_one(&mut self, rate_key: &str, at: (i64, JobId)) {
        if let Some(set) = self.capped.get_mut(rate_key) {
            set.remove(&at);
            if set.is_empty() {
                self.capped.remove(rate_key);
            }
        }
    }

    /// Holds back every job of `rate_key` until `until` (the destination's budget is spent);
    /// a paced key then starts one job at `until` and keeps its pace from there.
    pub fn pause(&mut self, rate_key: &str, until: i64) {
        let held = self.held.entry(rate_key.to_owned()).or_insert(until);
        *held = (*held).max(until);
        self.pacer.refused_until(rate_key, until);
    }

    /// A job of `rate_key` made `calls` more calls than its start was paced for: its key's next
    /// start comes that much later.
    pub fn spend(&mut self, rate_key: &str, calls: u32, now: i64) {
        self.pacer.spend(rate_key, calls, now);
    }

    /// Forgets pauses that have ended, paced keys that are rested, successes too old to make a
    /// destination up, and failing marks of endpoints with no job left (one deleted, or whose
    /// deliveries all ended), so the maps hold only destinations in use.
    pub fn expire(&mut self, now: i64) {
        self.held.retain(|_, until| *until > now);
        self.pacer.expire(now);
        self.succeeded_at.retain(|_, at| now - *at <= UP_WINDOW_MS);
        let windows = &self.windows;
        self.failing.retain(|key| windows.holds(key));
    }
}
