//! The index's bookkeeping without I/O: order, lanes, pauses, pacing, windows and tails.

use super::index::{FAILING_KEY_RUNNING, Index, Lane, Read, WEBHOOK_KEY_RUNNING};
use crate::jobs::pace::SLACK_CHANNEL;
use crate::store::{IntegrationId, JobId, JobRow};

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

/// An endpoint whose attempts fail (one that hangs, timing out) holds two slots of the lane,
/// not its quarter, until an attempt succeeds; other lanes' keys are never capped.
#[test]
fn a_failing_webhook_endpoint_runs_two_at_once_until_one_attempt_succeeds() {
    let webhook = |id: i64| JobRow {
        lane: "webhook".into(),
        ..job(id, Some(&format!("conv:{id}")), Some("webhook:1"), 0)
    };
    let mut index = Index::new(256);
    for id in 1..=40 {
        index.insert(webhook(id));
    }
    let pop = |index: &mut Index, now: i64| {
        std::iter::from_fn(|| index.pop_due(Lane::Webhook, now))
            .map(|e| e.row.id.0)
            .collect::<Vec<_>>()
    };
    let first = pop(&mut index, 0);
    assert_eq!(first.len(), WEBHOOK_KEY_RUNNING);
    // Every one of them times out: each is retried later, and the endpoint counts as failing.
    for id in &first {
        index.attempt_ended(Lane::Webhook, "webhook:1", false, 0);
        index.reschedule(JobId(*id), 5000, 1, false);
    }
    assert_eq!(pop(&mut index, 0).len(), FAILING_KEY_RUNNING);
    assert!(
        pop(&mut index, 10_000).is_empty(),
        "the cap holds the retries too"
    );
    // One succeeds: the endpoint gets its quarter of the lane back.
    let running = JobId(i64::try_from(first.len()).expect("small") + 1);
    index.attempt_ended(Lane::Webhook, "webhook:1", true, 0);
    index.finish(running);
    assert_eq!(pop(&mut index, 10_000).len(), WEBHOOK_KEY_RUNNING - 1);
}

/// An endpoint with no job left (deleted, or every delivery ended) is no longer marked as
/// failing: the mark would outlive it, and new jobs of a key reused later would start capped.
/// One that still has a job waiting keeps the mark.
#[test]
fn a_failing_mark_ends_with_the_endpoints_last_job() {
    let webhook = |id: i64, key: &str| JobRow {
        lane: "webhook".into(),
        integration_id: Some(IntegrationId(if key == "webhook:1" { 1 } else { 2 })),
        ..job(id, Some(&format!("conv:{id}")), Some(key), 0)
    };
    let mut index = Index::new(256);
    index.insert(webhook(1, "webhook:1"));
    index.insert(webhook(2, "webhook:2"));
    for (id, key) in [(1, "webhook:1"), (2, "webhook:2")] {
        let popped = index.pop_due(Lane::Webhook, 0).expect("due");
        assert_eq!(popped.row.id.0, id);
        index.attempt_ended(Lane::Webhook, key, false, 0);
        index.reschedule(JobId(id), 5000, 1, false);
    }
    assert_eq!(index.remove_integration(IntegrationId(1)), 1);
    index.expire(0);
    for id in 10..50 {
        index.insert(webhook(id, "webhook:1"));
        index.insert(webhook(id + 100, "webhook:2"));
    }
    let started: Vec<_> = std::iter::from_fn(|| index.pop_due(Lane::Webhook, 0)).collect();
    let running = |key: &str| {
        started
            .iter()
            .filter(|e| e.row.rate_key.as_deref() == Some(key))
            .count()
    };
    assert_eq!(running("webhook:1"), WEBHOOK_KEY_RUNNING);
    assert_eq!(running("webhook:2"), FAILING_KEY_RUNNING);
}

/// A destination is up for ten minutes after an attempt to it succeeded, in any lane; failures
/// alone never make it so.
#[test]
fn a_destination_is_up_for_ten_minutes_after_a_success() {
    let mut index = Index::new(64);
    index.attempt_ended(Lane::Chat, "slack:1", false, 0);
    assert!(!index.is_up("slack:1", 0));
    index.attempt_ended(Lane::Chat, "slack:1", true, 1000);
    index.attempt_ended(Lane::Chat, "slack:1", false, 2000);
    assert!(index.is_up("slack:1", 1000 + 600_000));
    assert!(!index.is_up("slack:1", 1000 + 600_001));
    assert!(!index.is_up("slack:2", 1000));
    // Forgetting old successes keeps the recent ones.
    index.expire(1000 + 600_000);
    assert!(index.is_up("slack:1", 1000 + 600_000));
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

#[test]
fn removing_an_integration_ends_its_destinations_pause_and_pace() {
    let mut index = Index::new(64);
    index.insert(job(1, Some("conv:1"), Some("slack:T:C1"), 0));
    index.insert(job(2, Some("conv:2"), Some("slack:T:C1"), 0));
    assert_eq!(ids(&mut index, 0), [1, 2]);
    // Slack answered 429 with Retry-After: 3600 to both.
    index.reschedule(JobId(1), 3_600_000, 0, true);
    index.reschedule(JobId(2), 3_600_000, 0, true);
    assert_eq!(index.remove_integration(IntegrationId(1)), 2);
    // Turned on again: its jobs come back due now, and go at once, with the channel's burst.
    index.insert(job(1, Some("conv:1"), Some("slack:T:C1"), 10));
    index.insert(job(2, Some("conv:2"), Some("slack:T:C1"), 10));
    assert_eq!(ids(&mut index, 10), [1, 2]);
}

#[test]
fn a_channel_another_integration_waits_on_keeps_its_pause() {
    let mut index = Index::new(64);
    index.insert(job(1, Some("conv:1"), Some("slack:T:C1"), 0));
    let mut other = job(2, Some("conv:2"), Some("slack:T:C1"), 0);
    other.integration_id = Some(IntegrationId(2));
    index.insert(other);
    assert_eq!(ids(&mut index, 0), [1, 2]);
    index.reschedule(JobId(1), 3_600_000, 0, true);
    index.reschedule(JobId(2), 3_600_000, 0, true);
    assert_eq!(index.remove_integration(IntegrationId(1)), 1);
    index.insert(job(1, Some("conv:1"), Some("slack:T:C1"), 10));
    assert!(
        ids(&mut index, 10).is_empty(),
        "integration 2's job still waits on the channel's pause, and so does the channel"
    );
    assert_eq!(ids(&mut index, 3_600_000), [1], "then paced, one at a time");
}

#[test]
fn a_job_blocked_by_its_outcome_leaves_with_its_destinations_pause() {
    let mut index = Index::new(64);
    index.insert(job(1, Some("conv:1"), Some("slack:T:C1"), 0));
    assert_eq!(ids(&mut index, 0), [1]);
    // Turned off while it ran; its 429 came after, and SQLite blocked it instead of queuing it.
    assert_eq!(index.remove_integration(IntegrationId(1)), 0, "it runs");
    index.reschedule(JobId(1), 3_600_000, 0, true);
    index.forget_blocked(JobId(1));
    assert_eq!(index.len(), 0);
    // Turned on: read back from SQLite (its key is marked as stored), due now, and not held by
    // the pause it earned.
    serve_reads(
        &mut index,
        &[job(1, Some("conv:1"), Some("slack:T:C1"), 10)],
    );
    assert_eq!(ids(&mut index, 10), [1]);
}

/// Answers the index's reads from `stored`, the queued rows as SQLite holds them, until it asks
/// for nothing more.
fn serve_reads(index: &mut Index, stored: &[JobRow]) {
    loop {
        let reads = index.take_loads();
        if reads.is_empty() {
            return;
        }
        for read in reads {
            let rows = match &read {
                Read::Page(load) => stored
                    .iter()
                    .filter(|r| r.rate_key == load.rate_key && r.id > load.after)
                    .take(load.limit)
                    .cloned()
                    .collect(),
                Read::Fill(fill) => stored
                    .iter()
                    .filter(|r| fill.ids.iter().any(|(id, _)| *id == r.id))
                    .cloned()
                    .collect(),
            };
            index.insert_loaded(&read, rows);
        }
    }
}

/// Writes `jobs` (into `stored` and handed to the index, as the writer does), then delivers
/// whatever is due, one round at a time, until nothing is left: the ids in the order they
/// started, per round.
fn deliver_all(index: &mut Index, stored: &mut Vec<JobRow>, jobs: Vec<JobRow>) -> Vec<Vec<i64>> {
    for row in jobs {
        stored.push(row.clone());
        index.insert(row);
    }
    let mut rounds = Vec::new();
    loop {
        serve_reads(index, stored);
        let started = ids(index, 0);
        if started.is_empty() {
            break;
        }
        for id in &started {
            stored.retain(|r| r.id.0 != *id);
            index.finish(JobId(*id));
        }
        rounds.push(started);
    }
    rounds
}

#[test]
fn a_long_conversation_does_not_hold_up_the_others_at_its_destination() {
    // A window of 8 (tails of 256): one conversation with 100 posts queued, then another's.
    let key = Some("webhook:1");
    let mut jobs: Vec<JobRow> = (1..=100)
        .map(|id| job(id, Some("conv:a"), key, 0))
        .collect();
    jobs.push(job(101, Some("conv:b"), key, 0));
    let (mut index, mut stored) = (Index::new(8), Vec::new());
    let rounds = deliver_all(&mut index, &mut stored, jobs);
    assert_eq!(
        rounds[0],
        [1, 101],
        "the other conversation starts with the first"
    );
    let a: Vec<i64> = rounds
        .iter()
        .flatten()
        .copied()
        .filter(|id| *id <= 100)
        .collect();
    assert_eq!(a, (1..=100).collect::<Vec<_>>(), "in order, each once");
    assert!(stored.is_empty() && index.len() == 0);
}

#[test]
fn past_the_tails_cap_the_others_wait_their_turn_and_nothing_is_lost() {
    // A window of 8 holds tails of 256: a conversation of 300 fills them, so the other one's
    // post waits until they are down to half and the rest of the long one fits, then goes, well
    // before the long one ends.
    let key = Some("slack:T:C1");
    let mut jobs: Vec<JobRow> = (1..=300)
        .map(|id| job(id, Some("conv:a"), key, 0))
        .collect();
    jobs.push(job(301, Some("conv:b"), key, 0));
    let (mut index, mut stored) = (Index::new(8), Vec::new());
    let rounds = deliver_all(&mut index, &mut stored, jobs);
    let all: Vec<i64> = rounds.iter().flatten().copied().collect();
    let a: Vec<i64> = all.iter().copied().filter(|id| *id <= 300).collect();
    assert_eq!(a, (1..=300).collect::<Vec<_>>());
    let b_at = all.iter().position(|id| *id == 301).expect("delivered");
    assert!(
        (100..=200).contains(&b_at),
        "once the tails were down to half: at {b_at}"
    );
    assert!(stored.is_empty() && index.len() == 0);
}

/// Whether `index` holds nothing of `key` any more: a job for a new conversation is taken at
/// once and is the only one due.
fn forgets(index: &mut Index, key: Option<&str>, id: i64) -> bool {
    index.insert(job(id, Some(&format!("conv:new{id}")), key, 0));
    ids(index, 0) == [id]
}

/// Writes jobs `ids` of conversation `conv:a` at `key`, as the writer hands them in.
fn written(
    index: &mut Index,
    stored: &mut Vec<JobRow>,
    ids: std::ops::RangeInclusive<i64>,
    key: Option<&str>,
) {
    for id in ids {
        stored.push(job(id, Some("conv:a"), key, 0));
        index.insert(job(id, Some("conv:a"), key, 0));
    }
}

/// Starts job `id`, the only one due, and delivers it.
fn deliver_one(index: &mut Index, stored: &mut Vec<JobRow>, id: i64) {
    assert_eq!(ids(index, 0), [id]);
    stored.retain(|r| r.id.0 != id);
    index.finish(JobId(id));
}

#[test]
fn a_blocked_integrations_tail_leaves_and_its_window_forgets_it() {
    let key = Some("webhook:1");
    let (mut index, mut stored) = (Index::new(8), Vec::new());
    written(&mut index, &mut stored, 1..=20, key);
    serve_reads(&mut index, &stored);
    assert_eq!(
        index.remove_integration(IntegrationId(1)),
        4,
        "its jobs in memory"
    );
    // Nothing of it is read back, although its rows are still there to be read.
    assert!(index.take_loads().is_empty());
    assert_eq!(index.len(), 0);
    assert!(forgets(&mut index, key, 21));
}

#[test]
fn a_tail_read_under_way_when_the_integration_is_blocked_and_fixed_keeps_the_order() {
    let key = Some("webhook:1");
    let (mut index, mut stored) = (Index::new(8), Vec::new());
    written(&mut index, &mut stored, 1..=10, key);
    for id in [1, 2] {
        deliver_one(&mut index, &mut stored, id);
    }
    let in_flight = index
        .take_loads()
        .pop()
        .expect("the tail's read of 5 and 6");
    assert!(matches!(&in_flight, Read::Fill(_)), "{in_flight:?}");
    // Blocked (its rows leave the queue), then fixed: queued again from job 3 on.
    index.remove_integration(IntegrationId(1));
    index.expect_stored(&[(key.map(Into::into), JobId(3))]);
    serve_reads(&mut index, &stored);
    // Only now does the old read come back.
    let late = stored
        .iter()
        .filter(|r| r.id.0 == 5 || r.id.0 == 6)
        .cloned()
        .collect();
    index.insert_loaded(&in_flight, late);
    // A round now starts the oldest, not the read's.
    deliver_one(&mut index, &mut stored, 3);
    let rounds = deliver_all(&mut index, &mut stored, Vec::new());
    let order: Vec<i64> = rounds.into_iter().flatten().collect();
    assert_eq!(order, (4..=10).collect::<Vec<_>>());
    assert!(forgets(&mut index, key, 11));
}

#[test]
fn a_failed_tail_read_is_made_again_and_a_retried_older_job_goes_first() {
    let key = Some("webhook:1");
    let (mut index, mut stored) = (Index::new(8), Vec::new());
    written(&mut index, &mut stored, 10..=20, key);
    for id in [10, 11] {
        deliver_one(&mut index, &mut stored, id);
    }
    let read = index.take_loads().pop().expect("a tail read");
    index.load_failed(&read);
    assert!(index.take_loads().is_empty());
    index.retry_failed_loads();
    assert_eq!(index.take_loads(), std::slice::from_ref(&read));
    index.load_failed(&read);
    index.retry_failed_loads();
    // An admin retries job 5 of the conversation meanwhile: older than those in memory, it
    // goes in front of them, not into the tail.
    stored.insert(0, job(5, Some("conv:a"), key, 0));
    index.insert(job(5, Some("conv:a"), key, 0));
    let rounds = deliver_all(&mut index, &mut stored, Vec::new());
    let order: Vec<i64> = rounds.into_iter().flatten().collect();
    assert_eq!(order, [5].into_iter().chain(12..=20).collect::<Vec<_>>());
    assert!(forgets(&mut index, key, 21));
}

#[test]
fn a_conversation_across_two_rate_keys_is_counted_to_each_and_both_windows_empty() {
    // A Slack channel changed while the conversation had posts queued at the old one.
    let (old, new) = (Some("slack:T:C1"), Some("slack:T:C2"));
    let jobs = (1..=6)
        .map(|id| job(id, Some("conv:a"), old, 0))
        .chain((7..=12).map(|id| job(id, Some("conv:a"), new, 0)))
        .collect();
    let (mut index, mut stored) = (Index::new(8), Vec::new());
    let rounds = deliver_all(&mut index, &mut stored, jobs);
    let order: Vec<i64> = rounds.into_iter().flatten().collect();
    assert_eq!(order, (1..=12).collect::<Vec<_>>());
    assert!(forgets(&mut index, old, 13));
    assert!(forgets(&mut index, new, 14));
}
