//! The runner's in-memory view of unfinished jobs: which are ready per lane, in `run_at` order;
//! only the head of each `order_key` queue is eligible (a conversation's deliveries to one
//! destination stay in order); a `rate_key` paused by a 429, or paced ([`Pacer`]), holds back
//! only its own jobs. Each rate key holds a bounded window of its jobs ([`Windows`]); the rest
//! wait in SQLite. Pure data, no I/O, so it is unit-tested directly.

use std::collections::{BTreeSet, HashMap, VecDeque};

use crate::store::{IntegrationId, JobId, JobRow};

use super::pace::Pacer;
use super::window::{Load, Windows};

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

/// How many deliveries of one webhook endpoint (one rate key) may run at once: half the lane, so
/// an endpoint that never answers holds at most half of it for its timeout, and the others keep
/// the rest (docs/jobs.md, "Lanes").
pub const WEBHOOK_KEY_RUNNING: usize = 32;

/// The most jobs of one rate key that may run at once in `lane`, if the lane limits it.
fn running_cap(lane: Lane) -> Option<usize> {
    (lane == Lane::Webhook).then_some(WEBHOOK_KEY_RUNNING)
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
    /// How soon each paced rate key may start its next job.
    pacer: Pacer,
    /// How many jobs of each rate key are in memory, and which keys have more in SQLite.
    windows: Windows,
}

impl Index {
    /// An empty index holding at most `window` waiting jobs per rate key.
    pub fn new(window: usize) -> Self {
        Self {
            jobs: HashMap::new(),
            order: HashMap::new(),
            ready: Default::default(),
            capped: HashMap::new(),
            held: HashMap::new(),
            pacer: Pacer::default(),
            windows: Windows::new(window),
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
        if self.windows.admit(row.rate_key.as_deref(), row.id) {
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

    /// The reads of queued jobs to make now: windows half empty with more in SQLite.
    pub fn take_loads(&mut self) -> Vec<Load> {
        self.windows.take_loads()
    }

    /// What a [`Load`] read, oldest first: taken into memory.
    pub fn insert_loaded(&mut self, load: &Load, rows: Vec<JobRow>) {
        let (count, last) = (rows.len(), rows.last().map(|row| row.id));
        for row in rows {
            if let Some(lane) = self.lane_of_new(&row) {
                self.windows.admit_loaded(row.rate_key.as_deref());
                self.place(row, lane);
            }
        }
        self.windows.loaded(load, count, last);
    }

    /// A [`Load`] could not be read; see [`Self::retry_failed_loads`].
    pub fn load_failed(&mut self, load: &Load) {
        self.windows.load_failed(load);
    }

    /// Asks again for the reads that failed.
    pub fn retry_failed_loads(&mut self) {
        self.windows.retry_failed_loads();
    }

    /// The lane of a job not yet known, or `None` to ignore it.
    fn lane_of_new(&self, row: &JobRow) -> Option<Lane> {
        let Some(lane) = Lane::parse(&row.lane) else {
            tracing::warn!(job = %row.id, lane = row.lane, "job in an unknown lane ignored");
            return None;
        };
        (!self.jobs.contains_key(&row.id)).then_some(lane)
    }

    /// Puts a job into its order queue and, if it heads it, into its lane's ready set.
    fn place(&mut self, row: JobRow, lane: Lane) {
        let id = row.id;
        let run_at = row.run_at;
        let is_head = match &row.order_key {
            Some(key) => {
                let queue = self.order.entry(key.clone()).or_default();
                // Ids grow with creation; a reloaded older job goes in front of newer ones.
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
                && running_cap(lane).is_some_and(|cap| self.windows.running(key) >= cap)
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

    /// Removes every job of an integration (it is blocked until an admin fixes it); returns how
    /// many were removed. Running ones are left to finish and are then forgotten by `finish`.
    pub fn remove_integration(&mut self, integration: IntegrationId) -> usize {
        let ids: Vec<JobId> = self
            .jobs
            .iter()
            .filter(|(_, e)| e.row.integration_id == Some(integration) && !e.is_running)
            .map(|(id, _)| *id)
            .collect();
        for id in &ids {
            self.finish(*id);
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

    /// Forgets pauses that have ended and paced keys that are rested, so the maps do not grow.
    pub fn expire(&mut self, now: i64) {
        self.held.retain(|_, until| *until > now);
        self.pacer.expire(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::pace::SLACK_CHANNEL;

    fn job(id: i64, order_key: Option<&str>, rate_key: Option<&str>, run_at: i64) -> JobRow {
        JobRow {
            id: JobId(id),
            lane: "chat".into(),
            kind: "slack.post".into(),
            args: "{}".into(),
            integration_id: Some(IntegrationId(1)),
            state: "queued".into(),
            order_key: order_key.map(Into::into),
            rate_key: rate_key.map(Into::into),
            attempt: 0,
            max_attempts: 5,
            run_at,
            deadline_at: None,
            is_uncertain: false,
            last_error: None,
            created_at: 0,
        }
    }

    fn ids(index: &mut Index, now: i64) -> Vec<i64> {
        std::iter::from_fn(|| index.pop_due(Lane::Chat, now))
            .map(|e| e.row.id.0)
            .collect()
    }

    #[test]
    fn a_conversation_is_delivered_in_order_and_others_in_parallel() {
        let mut index = Index::new(64);
        index.insert(job(1, Some("conv:1"), None, 0));
        index.insert(job(2, Some("conv:1"), None, 0));
        index.insert(job(3, Some("conv:2"), None, 0));
        assert_eq!(ids(&mut index, 0), [1, 3], "one head per conversation");
        index.finish(JobId(1));
        assert_eq!(ids(&mut index, 0), [2]);
    }

    #[test]
    fn a_retried_head_holds_back_its_queue_until_it_runs_again() {
        let mut index = Index::new(64);
        index.insert(job(1, Some("conv:1"), None, 0));
        index.insert(job(2, Some("conv:1"), None, 0));
        assert_eq!(ids(&mut index, 0), [1]);
        index.reschedule(JobId(1), 100, 1, false);
        assert!(ids(&mut index, 50).is_empty());
        assert_eq!(index.next_due(Lane::Chat), Some(100));
        assert_eq!(ids(&mut index, 100), [1]);
    }

    #[test]
    fn one_webhook_endpoint_runs_at_most_its_share_of_the_lane() {
        let webhook = |id: i64, key: &str| JobRow {
            lane: "webhook".into(),
            ..job(id, Some(&format!("conv:{id}")), Some(key), 0)
        };
        let mut index = Index::new(256);
        let cap = i64::try_from(WEBHOOK_KEY_RUNNING).expect("small");
        for id in 1..=cap + 8 {
            index.insert(webhook(id, "webhook:1"));
        }
        index.insert(webhook(100, "webhook:2"));
        let pop = |index: &mut Index| {
            std::iter::from_fn(|| index.pop_due(Lane::Webhook, 0))
                .map(|e| e.row.id.0)
                .collect::<Vec<_>>()
        };
        let started = pop(&mut index);
        assert_eq!(started.len(), WEBHOOK_KEY_RUNNING + 1, "{started:?}");
        assert!(
            started.contains(&100),
            "the other endpoint is not held back"
        );
        // Set aside, not ready: the dispatcher has nothing due to wake for.
        assert_eq!(index.next_due(Lane::Webhook), None);
        // One of the endpoint's deliveries ends (or waits for a retry): one more may start.
        index.finish(JobId(1));
        assert_eq!(pop(&mut index), [cap + 1]);
        index.reschedule(JobId(2), 500, 1, false);
        assert_eq!(pop(&mut index), [cap + 2]);
        // Removing the integration's waiting jobs (the six set aside and the one waiting for
        // its retry) forgets those set aside too: a slot freed later starts none of them.
        assert_eq!(index.remove_integration(IntegrationId(1)), 7);
        index.finish(JobId(3));
        assert!(pop(&mut index).is_empty());
        assert_eq!(index.next_due(Lane::Webhook), None);
    }

    #[test]
    fn a_paused_rate_key_holds_back_only_its_own_jobs() {
        let mut index = Index::new(64);
        index.insert(job(1, Some("conv:1"), Some("discord:1"), 0));
        index.insert(job(2, Some("conv:2"), Some("discord:1"), 0));
        index.insert(job(3, Some("conv:3"), Some("discord:2"), 0));
        assert_eq!(ids(&mut index, 0), [1, 2, 3]);
        index.reschedule(JobId(1), 1000, 0, true);
        index.reschedule(JobId(2), 10, 0, false);
        index.finish(JobId(3));
        index.insert(job(4, Some("conv:4"), Some("discord:2"), 10));
        assert_eq!(
            ids(&mut index, 10),
            [4],
            "discord:1 waits for its pause, discord:2 does not"
        );
        assert_eq!(ids(&mut index, 1000), [1, 2]);
    }

    #[test]
    fn a_slack_channel_is_not_paced_until_slack_refuses_it() {
        let mut index = Index::new(64);
        for id in 1..=5 {
            index.insert(job(id, Some(&format!("conv:{id}")), Some("slack:T:C1"), 0));
        }
        assert_eq!(ids(&mut index, 0), [1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_refused_slack_channel_starts_one_job_an_interval_oldest_first() {
        let t = SLACK_CHANNEL.interval_ms;
        let mut index = Index::new(64);
        for id in 1..=3 {
            index.insert(job(id, Some(&format!("conv:{id}")), Some("slack:T:C1"), 0));
        }
        index.insert(job(4, Some("conv:1"), Some("slack:T:C1"), 0));
        index.pause("slack:T:C1", 0);
        assert_eq!(ids(&mut index, 0), [1]);
        assert_eq!(
            index.next_due(Lane::Chat),
            Some(t),
            "the runner sleeps until then"
        );
        assert!(ids(&mut index, t - 1).is_empty());
        // conv:1's next message becomes due now, but queues behind the jobs already waiting.
        index.finish(JobId(1));
        assert_eq!(ids(&mut index, t), [2]);
        assert_eq!(ids(&mut index, 2 * t), [3]);
        assert_eq!(ids(&mut index, 3 * t), [4]);
    }

    #[test]
    fn a_paced_channel_holds_back_only_its_own_jobs() {
        let mut index = Index::new(64);
        for id in 1..=4 {
            index.insert(job(id, Some(&format!("conv:{id}")), Some("slack:T:C1"), 0));
        }
        index.insert(job(5, Some("conv:5"), Some("slack:T:C2"), 0));
        index.insert(job(6, Some("conv:6"), Some("slack:T:C2"), 0));
        index.insert(job(7, Some("conv:7"), Some("webhook:9"), 0));
        index.insert(job(8, Some("conv:8"), Some("webhook:9"), 0));
        index.pause("slack:T:C1", 0);
        assert_eq!(ids(&mut index, 0), [1, 5, 6, 7, 8]);
    }

    #[test]
    fn after_a_429_a_slack_channel_starts_one_job_then_keeps_its_pace() {
        let t = SLACK_CHANNEL.interval_ms;
        let mut index = Index::new(64);
        for id in 1..=4 {
            index.insert(job(id, Some(&format!("conv:{id}")), Some("slack:T:C1"), 0));
        }
        assert_eq!(ids(&mut index, 0), [1, 2, 3, 4]);
        index.finish(JobId(1));
        index.reschedule(JobId(2), 5000, 0, true);
        index.reschedule(JobId(3), 5000, 0, true);
        index.reschedule(JobId(4), 10, 1, false);
        assert!(ids(&mut index, 4999).is_empty());
        assert_eq!(ids(&mut index, 5000), [2], "no burst after the pause");
        assert!(ids(&mut index, 5000 + t - 1).is_empty());
        assert_eq!(ids(&mut index, 5000 + t), [3]);
        assert_eq!(ids(&mut index, 5000 + 2 * t), [4]);
    }

    #[test]
    fn a_job_that_posted_twice_delays_its_paced_channels_next_start() {
        let t = SLACK_CHANNEL.interval_ms;
        let mut index = Index::new(64);
        for id in 1..=2 {
            index.insert(job(id, Some(&format!("conv:{id}")), Some("slack:T:C1"), 0));
        }
        index.pause("slack:T:C1", 0);
        assert_eq!(ids(&mut index, 0), [1]);
        index.spend("slack:T:C1", 1, 10);
        assert!(ids(&mut index, t).is_empty());
        assert_eq!(ids(&mut index, 2 * t), [2]);
    }

    #[test]
    fn an_older_job_reloaded_later_goes_first() {
        let mut index = Index::new(64);
        index.insert(job(5, Some("conv:1"), None, 0));
        index.insert(job(4, Some("conv:1"), None, 0));
        assert_eq!(ids(&mut index, 0), [4]);
    }

    #[test]
    fn removing_an_integration_forgets_its_waiting_jobs() {
        let mut index = Index::new(64);
        index.insert(job(1, Some("conv:1"), None, 0));
        index.insert(job(2, Some("conv:1"), None, 0));
        assert_eq!(index.remove_integration(IntegrationId(1)), 2);
        assert_eq!(index.len(), 0);
        assert!(ids(&mut index, 0).is_empty());
    }
}
