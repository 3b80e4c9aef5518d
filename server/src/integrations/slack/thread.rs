//! Porch's thread headers as Slack holds them: a header post that timed out or was cut off by a
//! crash is found in the channel's history (by its metadata) and adopted instead of posted again,
//! and a reply in a thread Porch never recorded is traced back to its conversation by its root.
//! Reading only; what to store is the caller's business.

use std::time::Duration;

use serde_json::Value;

use crate::store::ConversationId;

use super::{CallError, SlackApi, SlackConfig};

/// `metadata.event_type` of a conversation's header post.
pub const HEADER_EVENT_TYPE: &str = "porch_conversation";
/// Messages per history page (Slack advises at most 200).
const PAGE: u32 = 200;
/// Most pages read looking for a header: 2,000 channel messages since the first attempt. Thread
/// replies are not in the channel's history, so that is 2,000 headers or other posts.
const MAX_PAGES: usize = 10;
/// The history is read from this long before the first attempt, as Slack's clock (which makes the
/// `ts`) and Porch's (which recorded the attempt) may differ.
pub const CLOCK_MARGIN: Duration = Duration::from_mins(5);

/// What a search of the history found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderSearch {
    /// The conversation's headers in the pages read, oldest first (maybe none).
    pub headers: Vec<String>,
    /// False if more than [`MAX_PAGES`] pages followed the first attempt: a header may be
    /// further back than the search went.
    pub is_complete: bool,
}

/// The conversation `message` is the header of, if Porch's bot posted it with Porch's metadata.
pub fn header_conversation(message: &Value, config: &SlackConfig) -> Option<ConversationId> {
    let metadata = &message["metadata"];
    if !is_by_our_bot(message, config) || metadata["event_type"].as_str() != Some(HEADER_EVENT_TYPE)
    {
        return None;
    }
    let id = &metadata["event_payload"]["conversation_id"];
    // Slack keeps the payload's JSON types, but a string is accepted too.
    id.as_i64()
        .or_else(|| id.as_str().and_then(|s| s.parse().ok()))
        .map(ConversationId)
}

/// Whether Porch's bot posted `message` (a header without readable metadata is still ours).
pub fn is_by_our_bot(message: &Value, config: &SlackConfig) -> bool {
    message["user"].as_str() == Some(config.bot_user_id.as_str())
        || (config.bot_id.is_some() && message["bot_id"].as_str() == config.bot_id.as_deref())
}

/// A Slack timestamp (`seconds.micros`) for `ms` milliseconds since the epoch, minus the margin.
fn oldest_ts(since_ms: i64) -> String {
    let margin = i64::try_from(CLOCK_MARGIN.as_millis()).unwrap_or(i64::MAX);
    let ms = since_ms.saturating_sub(margin).max(0);
    format!("{}.{:06}", ms / 1000, (ms % 1000) * 1000)
}

/// Reads the channel's history since the first attempt (`since_ms`, minus [`CLOCK_MARGIN`]) and
/// returns the conversation's headers, oldest first.
///
/// # Errors
/// Slack's answer when a page cannot be read (`missing_scope` without `channels:history`, …).
pub async fn find_headers(
    api: &SlackApi,
    token: &str,
    config: &SlackConfig,
    conversation: ConversationId,
    since_ms: i64,
) -> Result<HeaderSearch, CallError> {
    let oldest = oldest_ts(since_ms);
    let mut found = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let page = api
            .history(
                token,
                &config.channel_id,
                &oldest,
                None,
                PAGE,
                cursor.as_deref(),
            )
            .await?;
        found.extend(
            page.messages
                .iter()
                .filter(|m| header_conversation(m, config) == Some(conversation))
                .filter_map(|m| m["ts"].as_str().map(str::to_owned)),
        );
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    // Pages run newest first; `ts` strings order as the numbers they are.
    found.sort_by(|a, b| ts_value(a).total_cmp(&ts_value(b)));
    found.dedup();
    Ok(HeaderSearch {
        headers: found,
        is_complete: cursor.is_none(),
    })
}

fn ts_value(ts: &str) -> f64 {
    ts.parse().unwrap_or(f64::MAX)
}

/// The root message of the thread `thread_ts` in the configured channel, with its metadata;
/// `None` if Slack has no such message.
///
/// # Errors
/// Slack's answer when the history cannot be read.
pub async fn find_root(
    api: &SlackApi,
    token: &str,
    channel: &str,
    thread_ts: &str,
) -> Result<Option<Value>, CallError> {
    let page = api
        .history(token, channel, thread_ts, Some(thread_ts), 1, None)
        .await?;
    Ok(page
        .messages
        .into_iter()
        .find(|m| m["ts"].as_str() == Some(thread_ts)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config() -> SlackConfig {
        SlackConfig {
            team_id: "T1".into(),
            channel_id: "C1".into(),
            bot_user_id: "UBOT".into(),
            bot_id: Some("BBOT".into()),
        }
    }

    #[test]
    fn only_our_bots_posts_with_our_metadata_are_headers() {
        let header = |user: &str, event_type: &str, id: Value| json!({"user": user, "ts": "1.000001", "metadata": {"event_type": event_type, "event_payload": {"conversation_id": id}}});
        assert_eq!(
            header_conversation(&header("UBOT", HEADER_EVENT_TYPE, json!(7)), &config()),
            Some(ConversationId(7))
        );
        assert_eq!(
            header_conversation(&header("UBOT", HEADER_EVENT_TYPE, json!("7")), &config()),
            Some(ConversationId(7))
        );
        assert_eq!(
            header_conversation(&header("U-HUMAN", HEADER_EVENT_TYPE, json!(7)), &config()),
            None,
            "someone else's post with our event type"
        );
        assert_eq!(
            header_conversation(&header("UBOT", "porch_message", json!(7)), &config()),
            None
        );
        let by_bot_id = json!({"bot_id": "BBOT", "metadata": {"event_type": HEADER_EVENT_TYPE, "event_payload": {"conversation_id": 3}}});
        assert_eq!(
            header_conversation(&by_bot_id, &config()),
            Some(ConversationId(3))
        );
    }

    /// Against the Slack mock over loopback: the search follows the cursor past one page and
    /// returns only this conversation's headers, oldest first.
    #[tokio::test]
    async fn the_search_pages_through_the_history_for_every_header() {
        let mock = crate::loadtest::SlackMock::start(([127, 0, 0, 1], 0).into(), Duration::ZERO)
            .await
            .expect("mock");
        let _ = rustls::crypto::ring::default_provider().install_default();
        let api = SlackApi::new(reqwest::Client::new(), &mock.api_url());
        let config = SlackConfig {
            team_id: crate::loadtest::TEAM_ID.into(),
            channel_id: "C1".into(),
            bot_user_id: crate::loadtest::BOT_USER_ID.into(),
            bot_id: Some(crate::loadtest::BOT_ID.into()),
        };
        let since = crate::clock::now_ms();
        let mut ours = Vec::new();
        for n in 0..(PAGE + 20) {
            let conversation = if n == 3 || n == PAGE + 10 { 7 } else { 8 };
            let post = json!({"channel": "C1", "text": "header", "metadata":
                {"event_type": HEADER_EVENT_TYPE, "event_payload": {"conversation_id": conversation}}});
            let ts = api.post_message("xoxb-test", &post).await.expect("post");
            if conversation == 7 {
                ours.push(ts);
            }
        }
        let search = find_headers(&api, "xoxb-test", &config, ConversationId(7), since)
            .await
            .expect("search");
        assert_eq!(
            search,
            HeaderSearch {
                headers: ours,
                is_complete: true
            }
        );
    }

    #[test]
    fn the_history_starts_a_margin_before_the_first_attempt() {
        assert_eq!(oldest_ts(1_700_000_300_250), "1700000000.250000");
        assert_eq!(oldest_ts(5), "0.000000");
    }
}
