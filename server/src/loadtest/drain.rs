//! What a per-channel limit on the Slack mock did to one stair (`--slack-channel-limit`): how
//! fast each channel drained, and whether every thread still got its messages once each and
//! in message order. Reads the mock's recorded posts; decides nothing about passing.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use crate::metrics::loadtest_report::ChannelLimitStair;

use super::{ChannelLimit, Post};

/// The figures from the posts the mock accepted (in the order it recorded them) and the 429s
/// it answered; `window` is the stair's measured window.
#[allow(clippy::cast_precision_loss)]
pub(super) fn figures(
    limit: ChannelLimit,
    posts: &[Post],
    rate_limited: u64,
    window: (Instant, Instant),
) -> ChannelLimitStair {
    let channels: HashSet<&str> = posts.iter().map(|p| p.channel.as_str()).collect();
    let in_window = posts
        .iter()
        .filter(|p| p.received_at >= window.0 && p.received_at < window.1)
        .count();
    let seconds = window.1.duration_since(window.0).as_secs_f64();
    let (out_of_order, duplicates) = order(posts);
    ChannelLimitStair {
        limit: limit.to_string(),
        channels: channels.len() as u64,
        drain_per_channel_per_sec: in_window as f64 / channels.len().max(1) as f64 / seconds,
        rate_limited,
        out_of_order,
        duplicates,
    }
}

/// Replies posted after a later message of their thread, and posts repeated (a message, or a
/// conversation's thread header, posted more than once). Recording order is delivery order:
/// a conversation's next post starts only once the previous one was answered.
fn order(posts: &[Post]) -> (u64, u64) {
    let mut last_in_thread: HashMap<&str, i64> = HashMap::new();
    let mut messages = HashSet::new();
    let mut headers = HashSet::new();
    let (mut out_of_order, mut duplicates) = (0, 0);
    for post in posts {
        let payload = &post.body["metadata"]["event_payload"];
        if let Some(conversation) = payload["conversation_id"].as_i64() {
            duplicates += u64::from(!headers.insert(conversation));
            continue;
        }
        let Some(id) = payload["message_id"].as_i64() else {
            continue;
        };
        if !messages.insert(id) {
            duplicates += 1;
            continue;
        }
        let thread = post.thread_ts.as_deref().unwrap_or(&post.ts);
        if last_in_thread
            .insert(thread, id)
            .is_some_and(|before| before > id)
        {
            out_of_order += 1;
        }
    }
    (out_of_order, duplicates)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn post(thread: &str, payload: &serde_json::Value) -> Post {
        Post {
            channel: "C000001".into(),
            thread_ts: Some(thread.into()),
            text: String::new(),
            username: None,
            ts: "1.000001".into(),
            body: json!({"metadata": {"event_payload": payload}}),
            content_type: None,
            received_at: Instant::now(),
        }
    }

    fn message(thread: &str, id: i64) -> Post {
        post(thread, &json!({"message_id": id}))
    }

    #[test]
    fn threads_in_message_order_pass_whatever_the_interleaving() {
        let posts = [
            message("1.1", 1),
            message("2.1", 2),
            message("2.1", 4),
            message("1.1", 3),
        ];
        assert_eq!(order(&posts), (0, 0));
    }

    #[test]
    fn a_reply_after_a_later_message_of_its_thread_is_out_of_order() {
        let posts = [message("1.1", 1), message("1.1", 5), message("1.1", 3)];
        assert_eq!(order(&posts), (1, 0));
    }

    #[test]
    fn a_message_or_a_thread_header_posted_twice_is_a_duplicate() {
        let header = |c: i64| post("", &json!({"conversation_id": c}));
        let posts = [header(7), message("1.1", 1), message("1.1", 1), header(7)];
        assert_eq!(order(&posts), (0, 2));
    }
}
