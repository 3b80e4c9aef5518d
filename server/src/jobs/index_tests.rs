//! The index's unit tests: pure data, driven directly.

use super::*;
use crate::jobs::pace::SLACK_CHANNEL;
use crate::jobs::parked::waits_long;
use crate::jobs::window::Load;

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

/// Conversation `conv`'s job `id` to the endpoint `hook`, due at `run_at`.
fn post(id: i64, conv: &str, run_at: i64) -> JobRow {
    job(id, Some(conv), Some("hook"), run_at)
}

fn read_ids(load: &Load) -> (Option<&str>, i64) {
    (load.order_key.as_deref(), load.after.0)
}

/// The case the parking is for: an endpoint's window full of one conversation backing off
/// (`Index::new(4)`: four waiting jobs per rate key). A new conversation's posts run meanwhile;
/// the first conversation is read back whole when its retry is due, its head still first.
#[test]
fn a_conversation_whose_head_waits_long_leaves_memory_so_others_run() {
    let mut index = Index::new(4);
    for id in 1..=4 {
        index.insert(post(id, "conv:a", 0));
    }
    index.insert(post(5, "conv:b", 0));
    assert_eq!(index.len(), 4, "the window is full: b waits in SQLite");
    assert_eq!(ids(&mut index, 0), [1]);
    index.reschedule(JobId(1), 120_000, 1, false);
    index.set_aside(JobId(1), 120_000);
    assert_eq!(index.len(), 0, "a left memory whole");
    assert_eq!(index.next_read_back(), Some(120_000));
    let loads = index.take_loads(0);
    assert_eq!(loads.iter().map(read_ids).collect::<Vec<_>>(), [(None, 4)]);
    // The endpoint's next page holds b's post and a later post of a, which stays in SQLite.
    index.insert_loaded(
        &loads[0],
        vec![post(5, "conv:b", 0), post(6, "conv:a", 0)],
        0,
    );
    index.insert(post(7, "conv:a", 0));
    assert_eq!(ids(&mut index, 0), [5], "b runs while a waits");
    index.finish(JobId(5));
    assert!(
        index
            .take_loads(119_999)
            .iter()
            .all(|l| l.order_key.is_none())
    );
    let loads = index.take_loads(120_000);
    let read = loads
        .iter()
        .find(|l| l.order_key.is_some())
        .expect("a is read");
    assert_eq!(read_ids(read), (Some("conv:a"), 0));
    let rows = (1..=7)
        .filter(|id| *id != 5)
        .map(|id| post(id, "conv:a", 120_000));
    index.insert_loaded(read, rows.collect(), 120_000);
    assert_eq!(index.next_read_back(), None, "all of a is in memory");
    for expected in [1, 2, 3, 4, 6, 7] {
        assert_eq!(ids(&mut index, 120_000), [expected], "a's order holds");
        index.finish(JobId(expected));
    }
    assert_eq!(index.len(), 0);
}

/// A post handed in while its conversation is being read may be missing from the read: it is
/// read again once what came back has finished, after it and not before.
#[test]
fn a_post_handed_in_during_a_conversations_read_is_read_after_it() {
    let mut index = Index::new(64);
    index.insert(post(1, "conv:a", 0));
    assert_eq!(ids(&mut index, 0), [1]);
    index.reschedule(JobId(1), 60_000, 1, false);
    index.set_aside(JobId(1), 60_000);
    let loads = index.take_loads(60_000);
    assert_eq!(
        loads.iter().map(read_ids).collect::<Vec<_>>(),
        [(Some("conv:a"), 0)]
    );
    index.insert(post(2, "conv:a", 0));
    index.insert_loaded(&loads[0], vec![post(1, "conv:a", 60_000)], 60_000);
    assert_eq!(index.len(), 1, "2 waits for its turn in SQLite");
    assert_eq!(ids(&mut index, 60_000), [1]);
    index.finish(JobId(1));
    let loads = index.take_loads(60_000);
    assert_eq!(
        loads.iter().map(read_ids).collect::<Vec<_>>(),
        [(Some("conv:a"), 1)]
    );
    index.insert_loaded(&loads[0], vec![post(2, "conv:a", 0)], 60_000);
    assert_eq!(ids(&mut index, 60_000), [2]);
    // A read that fails is made again at the time given, from where it started.
    index.reschedule(JobId(2), 200_000, 1, false);
    index.set_aside(JobId(2), 200_000);
    let loads = index.take_loads(200_000);
    index.load_failed(&loads[0], 205_000);
    assert!(index.take_loads(204_999).is_empty());
    let again = index.take_loads(205_000);
    assert_eq!(
        again.iter().map(read_ids).collect::<Vec<_>>(),
        [(Some("conv:a"), 1)]
    );
}

/// A head waits long from a minute on. A conversation holding another destination's post, or
/// whose head no longer waits for that time, stays in memory; a blocked integration's
/// conversations are forgotten, to be read again when it is fixed.
#[test]
fn only_a_whole_conversation_whose_head_waits_for_that_retry_is_set_aside() {
    assert!(!waits_long(59_999, 0));
    assert!(waits_long(60_000, 0));
    let mut index = Index::new(64);
    index.insert(post(1, "conv:a", 0));
    index.insert(post(2, "conv:c", 0));
    index.insert(job(3, Some("conv:c"), Some("other"), 0));
    assert_eq!(ids(&mut index, 0), [1, 2]);
    index.reschedule(JobId(1), 120_000, 1, false);
    index.reschedule(JobId(2), 600_000, 1, false);
    index.set_aside(JobId(1), 60_000);
    index.set_aside(JobId(2), 600_000);
    assert_eq!(index.len(), 3);
    assert_eq!(index.next_read_back(), None);
    index.set_aside(JobId(1), 120_000);
    assert_eq!(index.len(), 2);
    // Another destination's post of a parked conversation is taken: no read of a would find it.
    index.insert(job(4, Some("conv:a"), Some("other"), 0));
    assert_eq!(index.len(), 3);
    index.remove_integration(IntegrationId(1));
    assert_eq!(
        index.next_read_back(),
        None,
        "a blocked integration's parking is forgotten"
    );
}

/// After a restart a rate key's first read finds a conversation whose head waits minutes for
/// its retry: it is set aside at once, and the read goes on past its posts.
#[test]
fn a_read_that_finds_a_head_waiting_minutes_sets_its_conversation_aside() {
    let mut index = Index::new(4);
    index.expect_stored(&[(Some("hook".to_owned()), JobId(1))]);
    let loads = index.take_loads(0);
    assert_eq!(loads.iter().map(read_ids).collect::<Vec<_>>(), [(None, 0)]);
    let rows = vec![
        post(1, "conv:a", 300_000),
        post(2, "conv:a", 0),
        post(3, "conv:b", 0),
        post(4, "conv:a", 0),
    ];
    index.insert_loaded(&loads[0], rows, 0);
    assert_eq!(index.len(), 1, "only b is in memory");
    assert_eq!(index.next_read_back(), Some(300_000));
    assert_eq!(ids(&mut index, 0), [3]);
    let loads = index.take_loads(0);
    assert_eq!(
        loads.iter().map(read_ids).collect::<Vec<_>>(),
        [(None, 4)],
        "and reads on"
    );
}
