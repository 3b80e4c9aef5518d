//! Slack deliveries across timeouts and crashes of a real `porch` process: one thread per
//! conversation when Slack answers a header post too late or Porch dies mid-post (the retry finds
//! the header in the channel's history and adopts it), jobs left running are delivered after a
//! restart, and replies in every thread Porch started reach the visitor; a site has one
//! integration per channel, so no thread gets a message twice.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use porch::loadtest::{Failure, Post, SlackMock};
use serde_json::json;

use crate::helpers::{Exchange as _, Http, ORIGIN, TestDb, WAIT, Widget, ok_if, wait_until};
use crate::process::{Served, porch};
use crate::slack::{Fixture, SECRET, now_secs, reply_event};

/// Shorter than the mock's hold, so a held header post times out in Porch.
const CLIENT_TIMEOUT: &str = "500ms";
/// How long the mock holds a header's answer: past [`CLIENT_TIMEOUT`].
const HOLD: Duration = Duration::from_secs(3);

async fn mock() -> SlackMock {
    SlackMock::start(([127, 0, 0, 1], 0).into(), Duration::ZERO)
        .await
        .expect("mock")
}

/// The conversation a header post names in its metadata.
fn conversation_of(post: &Post) -> i64 {
    post.body["metadata"]["event_payload"]["conversation_id"]
        .as_i64()
        .expect("a header names its conversation")
}

/// Headers by conversation, and the reply texts in each header's thread in posting order.
fn threads(posts: &[Post]) -> (BTreeMap<i64, Vec<String>>, BTreeMap<String, Vec<String>>) {
    let mut headers: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    let mut replies: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for post in posts {
        match &post.thread_ts {
            None => headers
                .entry(conversation_of(post))
                .or_default()
                .push(post.ts.clone()),
            Some(thread) => replies
                .entry(thread.clone())
                .or_default()
                .push(post.text.clone()),
        }
    }
    (headers, replies)
}

#[tokio::test]
async fn a_header_answered_after_the_client_timeout_is_adopted_not_posted_again() {
    let mock = mock().await;
    mock.hold_headers(2, HOLD);
    let dir = tempfile::tempdir().expect("dir");
    let fx = Fixture::start_with_flags(mock, dir, &["--slack-timeout", CLIENT_TIMEOUT]).await;
    let (site, _) = fx.site_with_slack("Shop", "C1", json!({})).await;
    let (mut ann, _) = fx.app.visitor(&site, None, 0).await;
    let (mut bob, _) = fx.app.visitor(&site, None, 0).await;
    for (i, text) in ["ann 1", "ann 2", "ann 3"].iter().enumerate() {
        assert_eq!(ann.say(&format!("a{i}"), text).await["type"], "ack");
    }
    for (i, text) in ["bob 1", "bob 2"].iter().enumerate() {
        assert_eq!(bob.say(&format!("b{i}"), text).await["type"], "ack");
    }
    fx.mock.wait_for_posts(7, WAIT + HOLD).await;
    fx.wait_until_settled().await;

    let posts = fx.mock.posts();
    let (headers, replies) = threads(&posts);
    assert_eq!(headers.len(), 2, "{posts:#?}");
    for (conversation, ts) in &headers {
        assert_eq!(ts.len(), 1, "conversation {conversation} got {ts:?}");
    }
    let in_threads: Vec<&Vec<String>> = headers.values().map(|ts| &replies[&ts[0]]).collect();
    assert!(
        in_threads.contains(&&vec!["ann 1".into(), "ann 2".into(), "ann 3".into()]),
        "{replies:?}"
    );
    assert!(
        in_threads.contains(&&vec!["bob 1".into(), "bob 2".into()]),
        "{replies:?}"
    );
    assert!(
        fx.mock.history_calls() >= 2,
        "each retry looked for its header"
    );
    assert_eq!(
        fx.app
            .count("SELECT count(*) FROM jobs WHERE state <> 'done'"),
        0,
        "{:?}",
        fx.job_states()
    );
}

/// A header Slack refused (a 429, an error code) was never posted: its retry posts at once,
/// without first reading the channel's history for it; a header whose outcome is unknown (a 500)
/// is still looked for.
#[tokio::test]
async fn a_refused_header_is_posted_again_without_reading_the_history() {
    let fx = Fixture::start().await;
    let (site, _) = fx.site_with_slack("Shop", "C1", json!({})).await;
    let limited = Failure::RateLimited {
        times: 1,
        retry_after_secs: 1,
    };
    fx.mock.set_failure("C1", Some(limited));
    let (mut ann, _) = fx.app.visitor(&site, None, 0).await;
    assert_eq!(ann.say("a1", "ann 1").await["type"], "ack");
    fx.mock.wait_for_posts(2, WAIT).await;
    fx.wait_until_settled().await;
    assert_eq!(
        fx.mock.rate_limited_count(),
        1,
        "the header was refused once"
    );
    assert_eq!(fx.mock.history_calls(), 0);

    fx.mock
        .set_failure("C1", Some(Failure::ServerError { times: 1 }));
    let (mut bob, _) = fx.app.visitor(&site, None, 0).await;
    assert_eq!(bob.say("b1", "bob 1").await["type"], "ack");
    fx.mock.wait_for_posts(4, WAIT).await;
    fx.wait_until_settled().await;
    assert_eq!(
        fx.mock.history_calls(),
        1,
        "the unsure header was looked for"
    );
    let (headers, _) = threads(&fx.mock.posts());
    assert!(headers.values().all(|ts| ts.len() == 1), "{headers:?}");
}

/// Starts the `porch` binary on `dir` against the mock; returns the process and its address.
async fn spawn_porch(dir: &std::path::Path, slack_api_url: &str) -> (Served, SocketAddr) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let listen = addr.to_string();
    let child = Served(
        porch(dir, &["serve", "--listen", &listen, "--log", "warn"])
            .args(["--slack-api-url", slack_api_url])
            // Longer than the test takes to kill it: the header post is still in flight.
            .args(["--slack-timeout", "60s"])
            .spawn()
            .expect("porch starts"),
    );
    let probe = Http::new(addr);
    // Ready, not just listening: the port answers while migrations still run.
    wait_until("porch to be ready", WAIT, async || {
        match probe.get("/readyz").try_answer().await {
            Ok(answer) if answer.status == 200 => Ok(()),
            other => Err(other.map(|answer| answer.status)),
        }
    })
    .await;
    (child, addr)
}

/// A site connected to channel C1, set up through the database file and the running process's
/// API, as an admin would; returns the site key.
async fn site_with_slack_over_api(dir: &std::path::Path, addr: SocketAddr) -> String {
    let db = TestDb::open(dir);
    let site = db.add_site("Shop");
    let admin = db.add_user_token("Operator", "admin");
    let body =
        json!({"bot_token": "xoxb-test", "channel_id": "C1", "signing_secret": SECRET}).to_string();
    let created = Http::new(addr)
        .request("POST", &format!("/api/v1/sites/{site}/integrations/slack"))
        .bearer_auth(admin)
        .header("Content-Type", "application/json")
        .body(body)
        .answer()
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    site
}

#[tokio::test]
async fn jobs_left_running_by_a_killed_process_are_delivered_after_restart() {
    // Killed with SIGKILL while a delivery hangs on the slow mock.
    let mock = SlackMock::start(([127, 0, 0, 1], 0).into(), Duration::from_mins(1))
        .await
        .expect("mock");
    let dir = tempfile::tempdir().expect("dir");
    let (mut child, addr) = spawn_porch(dir.path(), &mock.api_url()).await;
    let site = site_with_slack_over_api(dir.path(), addr).await;
    let mut widget = Widget::connect(addr, &site, ORIGIN).await;
    widget.hello(None, 0).await;
    assert_eq!(widget.say("m", "before the crash").await["type"], "ack");
    let db = TestDb::open(dir.path());
    wait_until("the delivery to start", WAIT, async || {
        ok_if(
            db.count("SELECT count(*) FROM jobs WHERE state = 'running'"),
            |running| *running > 0,
        )
    })
    .await;
    child.0.kill().expect("SIGKILL");
    let _ = child.0.wait();
    drop(widget);

    mock.set_delay(Duration::ZERO);
    let fx = Fixture::start_with(mock, dir).await;
    wait_until("the post from before the crash", WAIT, async || {
        ok_if(fx.mock.posts(), |posts| {
            posts.iter().any(|p| p.text == "before the crash")
        })
    })
    .await;
    fx.wait_until_settled().await;
    assert_eq!(
        fx.app
            .count("SELECT count(*) FROM jobs WHERE state = 'done' AND is_uncertain = 1"),
        1
    );
}

#[tokio::test]
async fn a_header_in_flight_when_porch_is_killed_is_adopted_after_the_restart() {
    let mock = mock().await;
    // Recorded by the mock at once, answered never (before the kill).
    mock.hold_headers(2, Duration::from_mins(2));
    let dir = tempfile::tempdir().expect("dir");
    let (mut child, addr) = spawn_porch(dir.path(), &mock.api_url()).await;
    let site = site_with_slack_over_api(dir.path(), addr).await;
    let mut said = Vec::new();
    for visitor in ["ann", "bob"] {
        let mut widget = Widget::connect(addr, &site, ORIGIN).await;
        widget.hello(None, 0).await;
        for n in 1..=2 {
            let text = format!("{visitor} {n}");
            let client_id = format!("{visitor}{n}");
            assert_eq!(widget.say(&client_id, &text).await["type"], "ack");
            said.push(text);
        }
    }
    let held = mock.wait_for_posts(2, WAIT).await;
    assert_eq!(held.len(), 2, "both header posts are in flight");
    child.0.kill().expect("SIGKILL");
    let _ = child.0.wait();

    let fx = Fixture::start_with(mock, dir).await;
    fx.mock.wait_for_posts(2 + said.len(), WAIT).await;
    fx.wait_until_settled().await;

    let posts = fx.mock.posts();
    let (headers, replies) = threads(&posts);
    assert_eq!(headers.len(), 2, "{posts:#?}");
    for (conversation, ts) in &headers {
        assert_eq!(ts.len(), 1, "conversation {conversation} got {ts:?}");
    }
    let mut delivered: Vec<String> = headers
        .values()
        .flat_map(|ts| replies.get(&ts[0]).cloned().unwrap_or_default())
        .collect();
    delivered.sort();
    assert_eq!(delivered, said, "every message once, in its one thread");
    assert_eq!(posts.len(), 2 + said.len(), "nothing outside those threads");
}

/// A conversation whose first header post timed out while the channel's history could not be
/// read, so a second header was posted: returns (fixture, widget, integration, conversation id,
/// the first header's ts, the thread Porch posts into).
async fn conversation_with_two_headers() -> (Fixture, Widget, i64, i64, String, String) {
    let mock = mock().await;
    mock.hold_headers(1, HOLD);
    mock.fail_history(1, "missing_scope");
    let dir = tempfile::tempdir().expect("dir");
    let fx = Fixture::start_with_flags(mock, dir, &["--slack-timeout", CLIENT_TIMEOUT]).await;
    let (site, integration) = fx.site_with_slack("Shop", "C1", json!({})).await;
    let (mut widget, _) = fx.app.visitor(&site, None, 0).await;
    assert_eq!(widget.say("q", "is anyone there?").await["type"], "ack");
    fx.mock.wait_for_posts(3, WAIT + HOLD).await;
    fx.wait_until_settled().await;
    let posts = fx.mock.posts();
    let (headers, _) = threads(&posts);
    let (&conversation, ts) = headers.iter().next().expect("a header");
    assert_eq!(
        ts.len(),
        2,
        "without the history a second header is posted: {posts:#?}"
    );
    let thread = posts
        .iter()
        .find_map(|p| p.thread_ts.clone())
        .expect("the message went into a thread");
    let orphan = ts
        .iter()
        .find(|t| **t != thread)
        .expect("the other header")
        .clone();
    (fx, widget, integration, conversation, orphan, thread)
}

#[tokio::test]
async fn a_reply_in_a_second_header_thread_reaches_the_visitor_and_the_inbox() {
    let (fx, mut widget, integration, conversation, orphan, _) =
        conversation_with_two_headers().await;
    let mut event = reply_event(
        "Ev-orphan",
        "C1",
        &orphan,
        "U1",
        "answered in the other thread",
    );
    event["event"]["parent_user_id"] = json!("UBOT");
    assert_eq!(fx.send_event(integration, &event, now_secs()).await, 200);

    let pushed = widget.recv().await;
    assert_eq!(pushed["type"], "message", "{pushed}");
    assert_eq!(pushed["body"], "answered in the other thread");
    let agent = fx.app.add_agent_token("Ana");
    let (status, listed) = fx
        .app
        .api(
            "GET",
            &format!("/api/v1/conversations/{conversation}/messages"),
            &agent,
            None,
        )
        .await;
    assert_eq!(status, 200, "{listed}");
    assert!(
        listed.to_string().contains("answered in the other thread"),
        "{listed}"
    );

    // Recorded: the next reply there needs no lookup, and is delivered too.
    let calls = fx.mock.history_calls();
    let mut again = reply_event("Ev-orphan-2", "C1", &orphan, "U1", "and again");
    again["event"]["parent_user_id"] = json!("UBOT");
    assert_eq!(fx.send_event(integration, &again, now_secs()).await, 200);
    assert_eq!(widget.recv().await["body"], "and again");
    assert_eq!(fx.mock.history_calls(), calls);
}

#[tokio::test]
async fn a_reply_whose_thread_slack_cannot_show_now_is_refused_until_it_can() {
    let (fx, mut widget, integration, _, orphan, _) = conversation_with_two_headers().await;
    let messages = || fx.app.count("SELECT count(*) FROM messages");
    let before = messages();
    let mut event = reply_event("Ev-later", "C1", &orphan, "U1", "sent while Slack hiccups");
    event["event"]["parent_user_id"] = json!("UBOT");
    // Slack cannot show the thread's root for a moment: the event is not acknowledged (so
    // Slack sends it again), nothing is stored, and nothing counts as unmapped.
    fx.mock.fail_history(1, "internal_error");
    assert_eq!(fx.send_event(integration, &event, now_secs()).await, 503);
    assert_eq!(messages(), before);
    // Slack's retry of the same event is traced and delivered, once.
    assert_eq!(fx.send_event(integration, &event, now_secs()).await, 200);
    assert_eq!(widget.recv().await["body"], "sent while Slack hiccups");
    assert_eq!(messages(), before + 1);
    let metrics = fx.app.http.get("/metrics").answer().await;
    assert!(
        metrics
            .body
            .lines()
            .any(|l| l == "porch_slack_unmapped_replies_total 0"),
        "{}",
        metrics.body
    );
}

#[tokio::test]
async fn a_reply_in_a_thread_of_ours_that_matches_no_conversation_is_logged_and_counted() {
    let (fx, _widget, integration, _, _, _) = conversation_with_two_headers().await;
    let messages = || fx.app.count("SELECT count(*) FROM messages");
    let before = messages();
    // A thread Slack says our bot started, whose root Slack does not have (deleted).
    let mut event = reply_event("Ev-lost", "C1", "1000000000.000001", "U1", "hello?");
    event["event"]["parent_user_id"] = json!("UBOT");
    assert_eq!(fx.send_event(integration, &event, now_secs()).await, 200);
    // Someone else's thread in the channel is not Porch's business.
    let mut other = reply_event("Ev-other", "C1", "1000000000.000002", "U1", "lunch?");
    other["event"]["parent_user_id"] = json!("U-SOMEONE");
    assert_eq!(fx.send_event(integration, &other, now_secs()).await, 200);

    assert_eq!(messages(), before);
    let metrics = fx.app.http.get("/metrics").answer().await;
    assert_eq!(metrics.status, 200);
    let counted: Vec<&str> = metrics
        .body
        .lines()
        .filter(|l| l.starts_with("porch_slack_unmapped_replies_total"))
        .collect();
    assert_eq!(counted, ["porch_slack_unmapped_replies_total 1"]);
}

/// A second integration of a site in a channel the site already posts to would post every
/// message into its thread twice: refused with 409 naming the first, whether added or moved
/// there; the same channel for another site, and another channel for this one, are fine.
#[tokio::test]
async fn a_site_posts_to_a_slack_channel_through_one_integration_only() {
    let fx = Fixture::start().await;
    let (site, first) = fx.site_with_slack("Shop", "C1", json!({})).await;
    let path = format!("/api/v1/sites/{site}/integrations/slack");
    let body = |channel: &str| json!({"bot_token": "xoxb-test", "channel_id": channel, "signing_secret": SECRET});
    let (status, answer) = fx.app.api("POST", &path, &fx.admin, Some(body("C1"))).await;
    assert_eq!(
        (status, &answer["error"]["code"]),
        (409, &json!("conflict")),
        "{answer}"
    );
    let said = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains(&format!(
            "already posts to this Slack channel (integration {first})"
        )),
        "{said}"
    );
    let (status, second) = fx.app.api("POST", &path, &fx.admin, Some(body("C2"))).await;
    assert_eq!(status, 201, "{second}");
    let moved = format!("/api/v1/integrations/{}/slack", second["id"]);
    let (status, answer) = fx.app.api("PUT", &moved, &fx.admin, Some(body("C1"))).await;
    assert_eq!(status, 409, "{answer}");
    // A pair made before the rule (both in C1): either keeps its settings changeable.
    let put_second_in = |channel: &str| {
        fx.app
            .db()
            .execute(
                "UPDATE integrations SET config = json_set(config, '$.channel_id', ?2) \
                 WHERE id = ?1",
                rusqlite::params![second["id"].as_i64().expect("id"), channel],
            )
            .expect("a channel set behind the API's back");
    };
    put_second_in("C1");
    let (status, answer) = fx.app.api("PUT", &moved, &fx.admin, Some(body("C1"))).await;
    assert_eq!(status, 200, "a new token for one of the pair: {answer}");
    put_second_in("C2");
    let (_other_site, _) = fx.site_with_slack("Other shop", "C1", json!({})).await;
    let channels = fx.app.count(&format!(
        "SELECT count(DISTINCT json_extract(config, '$.channel_id')) FROM integrations \
         WHERE kind = 'slack' AND site_id = (SELECT id FROM sites WHERE key = '{site}')"
    ));
    assert_eq!(channels, 2, "nothing added or moved by the refusals");

    // One visitor message: one post of it in C1.
    let (mut widget, _) = fx.app.visitor(&site, None, 0).await;
    widget.say("q", "how many posts?").await;
    fx.mock.wait_for_posts(4, WAIT).await;
    fx.wait_until_settled().await;
    let mut copies: Vec<_> = fx
        .mock
        .posts()
        .into_iter()
        .filter(|p| p.text.contains("how many posts?"))
        .map(|p| p.channel)
        .collect();
    copies.sort();
    assert_eq!(copies, ["C1", "C2"], "one copy in each channel");
}
