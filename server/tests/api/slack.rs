//! The job runner and two-way Slack, against the Slack mock over loopback: threads, ordering,
//! 429 pauses per channel, retries, blocking and resuming, and replies coming back through the
//! Events API and Socket Mode. Crash recovery and duplicate headers are in `slack_threads`.

use std::time::{Duration, Instant};

use porch::integrations::slack::sign;
use porch::loadtest::{Failure, SlackMock};
use serde_json::{Value, json};

use crate::helpers::{Exchange as _, TestApp, WAIT, ok_if, wait_until};
use crate::inbox::{PASSWORD, add_user, send, sign_in, signed_in_from};

pub(crate) const SECRET: &str = "test-signing-secret";

/// A server wired to a fresh Slack mock, with an admin token.
pub(crate) struct Fixture {
    pub app: TestApp,
    pub mock: SlackMock,
    pub admin: String,
}

impl Fixture {
    pub(crate) async fn start() -> Self {
        let mock = SlackMock::start(([127, 0, 0, 1], 0).into(), Duration::ZERO)
            .await
            .expect("mock");
        Self::start_with(mock, tempfile::tempdir().expect("dir")).await
    }

    pub async fn start_with(mock: SlackMock, dir: tempfile::TempDir) -> Self {
        Self::start_with_flags(mock, dir, &[]).await
    }

    /// Like [`Fixture::start_with`], with more flags of `porch serve`.
    pub async fn start_with_flags(mock: SlackMock, dir: tempfile::TempDir, flags: &[&str]) -> Self {
        let url = mock.api_url();
        let mut args = vec!["--slack-api-url", url.as_str()];
        args.extend_from_slice(flags);
        let app = TestApp::spawn_in(dir, &args).await;
        let admin = app.add_user_token("Admin", "admin");
        Self { app, mock, admin }
    }

    /// A site connected to `channel`; returns (site key, integration id).
    pub async fn site_with_slack(&self, name: &str, channel: &str, extra: Value) -> (String, i64) {
        let site = self.app.add_site(name);
        self.app
            .set_site_limits(&site, 10_000, 1_000, 100_000, 10_000);
        let mut body =
            json!({"bot_token": "xoxb-test", "channel_id": channel, "signing_secret": SECRET});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        let (status, answer) = self
            .app
            .api(
                "POST",
                &format!("/api/v1/sites/{site}/integrations/slack"),
                &self.admin,
                Some(body),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
        (site, answer["id"].as_i64().expect("integration id"))
    }

    /// Posts a signed Events API request; returns the HTTP status.
    pub async fn send_event(&self, integration: i64, body: &Value, signed_at: i64) -> u16 {
        let raw = body.to_string();
        let signature = sign(SECRET, signed_at, raw.as_bytes());
        let ts = signed_at.to_string();
        self.app
            .http
            .request("POST", &format!("/integrations/slack/{integration}/events"))
            .header("X-Slack-Request-Timestamp", ts)
            .header("X-Slack-Signature", signature)
            .header("Content-Type", "application/json")
            .body(raw)
            .answer()
            .await
            .status
    }

    pub fn job_states(&self) -> Vec<(String, i64)> {
        let conn = self.app.db();
        let mut stmt = conn
            .prepare("SELECT state, count(*) FROM jobs GROUP BY state ORDER BY state")
            .expect("sql");
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("rows")
    }

    /// Waits until no job is queued or running.
    pub async fn wait_until_settled(&self) {
        wait_until("jobs to settle", WAIT, async || {
            let busy = self
                .app
                .count("SELECT count(*) FROM jobs WHERE state IN ('queued', 'running')");
            if busy > 0 {
                Err(self.job_states())
            } else {
                Ok(())
            }
        })
        .await;
    }
}

pub(crate) fn now_secs() -> i64 {
    porch::clock::now_ms() / 1000
}

/// A reply event; each is a new message with a `ts` of its own, as in Slack.
pub(crate) fn reply_event(
    event_id: &str,
    channel: &str,
    thread_ts: &str,
    user: &str,
    text: &str,
) -> Value {
    static MESSAGES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(100);
    let n = MESSAGES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    json!({
        "type": "event_callback",
        "team_id": "T0MOCK",
        "event_id": event_id,
        "event": {"type": "message", "channel": channel, "user": user, "text": text,
                  "ts": format!("1999999999.{n:06}"), "thread_ts": thread_ts},
    })
}

#[tokio::test]
async fn a_conversation_gets_one_thread_and_its_messages_reply_in_order() {
    let fx = Fixture::start().await;
    let (site, _) = fx.site_with_slack("Shop", "C1", json!({})).await;
    let (mut widget, _) = fx.app.visitor(&site, None, 0).await;
    for (i, text) in [
        "first <!channel>",
        "second & third",
        "fourth \u{202E}moc.elpmaxe",
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(widget.say(&format!("m{i}"), text).await["type"], "ack");
    }
    let posts = fx.mock.wait_for_posts(4, WAIT).await;
    assert_eq!(
        posts.len(),
        4,
        "a header and three replies; jobs: {:?}",
        fx.job_states()
    );
    let header = &posts[0];
    assert!(header.thread_ts.is_none());
    assert!(
        header.text.contains("Shop") && header.text.contains("/conversations/"),
        "{}",
        header.text
    );
    let replies: Vec<&str> = posts[1..].iter().map(|p| p.text.as_str()).collect();
    assert_eq!(
        replies,
        [
            "first &lt;!channel&gt;",
            "second &amp; third",
            "fourth &lt;U+202E&gt;moc.elpmaxe"
        ],
        "escaped (a direction override written out) and in order"
    );
    assert!(
        posts[1..]
            .iter()
            .all(|p| p.thread_ts.as_deref() == Some(header.ts.as_str()))
    );
    assert!(
        posts
            .iter()
            .all(|p| p.body["unfurl_links"] == false && p.body["unfurl_media"] == false)
    );
    fx.wait_until_settled().await;
    assert_eq!(fx.job_states(), [("done".to_owned(), 3)]);
}

#[tokio::test]
async fn a_429_pauses_only_its_channel_and_the_paused_posts_arrive_after_retry_after() {
    let fx = Fixture::start().await;
    let (limited, _) = fx.site_with_slack("Limited", "CLIMITED", json!({})).await;
    let (free, _) = fx.site_with_slack("Free", "CFREE", json!({})).await;
    fx.mock.set_failure(
        "CLIMITED",
        Some(Failure::RateLimited {
            times: 1,
            retry_after_secs: 2,
        }),
    );

    let started = Instant::now();
    let (mut a, _) = fx.app.visitor(&limited, None, 0).await;
    let (mut b, _) = fx.app.visitor(&free, None, 0).await;
    a.say("a1", "to the limited channel").await;
    b.say("b1", "to the free channel").await;

    wait_until("both posts in the free channel", WAIT, async || {
        let posts = fx.mock.posts();
        let free: Vec<_> = posts.iter().filter(|p| p.channel == "CFREE").collect();
        ok_if(free.len(), |n| *n == 2)
    })
    .await;
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "the free channel was not held back: {:?}",
        started.elapsed()
    );
    assert!(
        fx.mock.posts().iter().all(|p| p.channel != "CLIMITED"),
        "the limited channel waits"
    );

    let posts = fx.mock.wait_for_posts(4, WAIT).await;
    assert_eq!(posts.iter().filter(|p| p.channel == "CLIMITED").count(), 2);
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "Retry-After was honoured"
    );
    assert_eq!(fx.mock.rate_limited_count(), 1);
    fx.wait_until_settled().await;
    let attempts: i64 = fx.app.count("SELECT max(attempt) FROM jobs");
    assert_eq!(attempts, 1, "a 429 does not use up an attempt");
}

/// `POST /api/v1/integrations/{id}/{action}` (`turn-off`, `turn-on`).
async fn turn(fx: &Fixture, id: i64, action: &str) {
    let path = format!("/api/v1/integrations/{id}/{action}");
    let (status, answer) = fx.app.api("POST", &path, &fx.admin, None).await;
    assert_eq!(status, 200, "{answer}");
}

/// A channel waiting out a long 429 (an hour here) is released by turning its integration off
/// and on, as docs/jobs.md ("Pacing") says: the waiting post goes at once, whether the 429 was
/// recorded before the turn-off (the post waits, queued) or after it (the post was under way).
/// The runner used to keep the channel's pause, and the post waited the hour; one under way
/// was queued again while the integration was off, and would have gone out past it.
#[tokio::test]
async fn turning_slack_off_and_on_ends_a_429_pause_at_once() {
    let fx = Fixture::start().await;
    let (site, id) = fx.site_with_slack("Shop", "C1", json!({})).await;
    fx.mock.set_failure(
        "C1",
        Some(Failure::RateLimited {
            times: 1,
            retry_after_secs: 3600,
        }),
    );
    let (mut visitor, _) = fx.app.visitor(&site, None, 0).await;
    visitor.say("m1", "waits out the pause").await;
    wait_until("the 429", WAIT, async || {
        ok_if(fx.mock.rate_limited_count(), |n| *n == 1)
    })
    .await;
    // Turned off probably while still under way (the runner records the 429 a moment after
    // Slack answered it); on again once the post waits blocked.
    turn(&fx, id, "turn-off").await;
    wait_until("the post blocked", WAIT, async || {
        ok_if(
            fx.app
                .count("SELECT count(*) FROM jobs WHERE state = 'blocked'"),
            |n| *n == 1,
        )
    })
    .await;
    turn(&fx, id, "turn-on").await;
    let posts = fx.mock.wait_for_posts(2, WAIT).await;
    assert_eq!(
        posts[1].text, "waits out the pause",
        "the header, then the reply"
    );

    fx.mock.set_failure(
        "C1",
        Some(Failure::RateLimited {
            times: 1,
            retry_after_secs: 3600,
        }),
    );
    visitor.say("m2", "waits queued").await;
    wait_until("the 429 recorded", WAIT, async || {
        let waiting = fx.app.count(
            "SELECT count(*) FROM jobs WHERE state = 'queued' \
             AND run_at > unixepoch('subsec') * 1000 + 60000",
        );
        ok_if(waiting, |n| *n == 1)
    })
    .await;
    turn(&fx, id, "turn-off").await;
    turn(&fx, id, "turn-on").await;
    let posts = fx.mock.wait_for_posts(3, WAIT).await;
    assert_eq!(posts[2].text, "waits queued");
}

#[tokio::test]
async fn a_5xx_is_retried_with_backoff() {
    let fx = Fixture::start().await;
    let (site, _) = fx.site_with_slack("Shop", "C1", json!({})).await;
    fx.mock
        .set_failure("C1", Some(Failure::ServerError { times: 1 }));
    let started = Instant::now();
    let (mut widget, _) = fx.app.visitor(&site, None, 0).await;
    widget.say("m", "hello").await;
    let posts = fx.mock.wait_for_posts(2, WAIT).await;
    assert_eq!(posts.len(), 2);
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "the retry waited for the backoff"
    );
    fx.wait_until_settled().await;
    let outcomes: Vec<String> = {
        let conn = fx.app.db();
        let mut stmt = conn
            .prepare("SELECT outcome FROM job_attempts ORDER BY attempt")
            .expect("sql");
        stmt.query_map([], |r| r.get(0))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("rows")
    };
    assert_eq!(outcomes, ["retry", "delivered"]);
}

#[tokio::test]
async fn invalid_auth_blocks_the_integration_and_its_jobs_resume_after_the_token_is_fixed() {
    let fx = Fixture::start().await;
    let (site, integration) = fx.site_with_slack("Shop", "C1", json!({})).await;
    fx.mock.revoke_token("xoxb-test");
    let (mut widget, _) = fx.app.visitor(&site, None, 0).await;
    widget.say("m1", "first").await;
    wait_until("a blocked job", WAIT, async || {
        match fx
            .app
            .count("SELECT count(*) FROM jobs WHERE state = 'blocked'")
        {
            0 => Err(fx.job_states()),
            _ => Ok(()),
        }
    })
    .await;
    let status: String = fx
        .app
        .db()
        .query_row(
            "SELECT status || ': ' || last_error FROM integrations",
            [],
            |r| r.get(0),
        )
        .expect("row");
    assert!(
        status.starts_with("broken: ") && status.contains("invalid_auth"),
        "{status}"
    );
    // New messages of a broken integration wait blocked too.
    widget.say("m2", "second").await;
    let (_, listed) = fx
        .app
        .api("GET", "/api/v1/jobs?state=blocked", &fx.admin, None)
        .await;
    assert_eq!(listed["jobs"].as_array().map(Vec::len), Some(2), "{listed}");
    assert!(fx.mock.posts().is_empty());

    let fixed = json!({"bot_token": "xoxb-fixed", "channel_id": "C1", "signing_secret": SECRET});
    let (status, answer) = fx
        .app
        .api(
            "PUT",
            &format!("/api/v1/integrations/{integration}/slack"),
            &fx.admin,
            Some(fixed),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let posts = fx.mock.wait_for_posts(3, WAIT).await;
    let texts: Vec<&str> = posts.iter().skip(1).map(|p| p.text.as_str()).collect();
    assert_eq!(texts, ["first", "second"]);
    fx.wait_until_settled().await;
}

#[tokio::test]
async fn failed_jobs_can_be_listed_and_retried() {
    let fx = Fixture::start().await;
    let (site, _) = fx.site_with_slack("Shop", "C1", json!({})).await;
    fx.mock
        .set_failure("C1", Some(Failure::SlackError("msg_too_long".into())));
    let (mut widget, _) = fx.app.visitor(&site, None, 0).await;
    widget.say("m", "hello").await;
    fx.wait_until_settled().await;
    let (_, failed) = fx
        .app
        .api("GET", "/api/v1/jobs?state=failed", &fx.admin, None)
        .await;
    let job = failed["jobs"][0]["id"].as_i64().expect("a failed job");
    assert!(
        failed["jobs"][0]["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("msg_too_long"))
    );
    // Given up, not retrying: the health says so, in the API and on the Slack page.
    let path = format!("/api/v1/sites/{site}/integrations");
    let (_, listed) = fx.app.api("GET", &path, &fx.admin, None).await;
    let health = &listed["integrations"][0]["health"];
    assert_eq!(
        (&health["state"], &health["given_up"]),
        (&json!("failing"), &json!(true)),
        "{health}"
    );
    add_user(&fx.app, "ops@example.com", "admin");
    let admin = signed_in_from(
        &fx.app,
        &sign_in(&fx.app, "ops@example.com", PASSWORD).await,
    )
    .await;
    let page = send(
        &fx.app,
        "GET",
        &format!("/sites/{site}/slack"),
        &admin.cookie,
        None,
    )
    .await;
    assert!(
        page.body.contains("That delivery ran out of tries"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("tries it again"), "{}", page.body);

    let agent = fx.app.add_agent_token("Ana");
    let (status, _) = fx
        .app
        .api("POST", &format!("/api/v1/jobs/{job}/retry"), &agent, None)
        .await;
    assert_eq!(status, 403, "agents cannot retry jobs");
    fx.mock.set_failure("C1", None);
    let (status, _) = fx
        .app
        .api(
            "POST",
            &format!("/api/v1/jobs/{job}/retry"),
            &fx.admin,
            None,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(fx.mock.wait_for_posts(2, WAIT).await.len(), 2);
}

/// Sets up a conversation with a Slack thread; returns (fixture, widget, integration, thread ts).
async fn conversation_with_thread(extra: Value) -> (Fixture, crate::helpers::Widget, i64, String) {
    let fx = Fixture::start().await;
    let (site, integration) = fx.site_with_slack("Shop", "C1", extra).await;
    let (mut widget, _) = fx.app.visitor(&site, None, 0).await;
    widget.say("q", "is anyone there?").await;
    let posts = fx.mock.wait_for_posts(2, WAIT).await;
    let thread = posts[0].ts.clone();
    (fx, widget, integration, thread)
}

#[tokio::test]
async fn a_signed_thread_reply_reaches_the_visitor_as_the_matching_agent() {
    let (fx, mut widget, integration, thread) = conversation_with_thread(json!({})).await;
    fx.app.add_agent_token("Ana");
    fx.mock
        .add_user("U-ANA", "ana.slack", Some("ana@example.com"));
    let event = reply_event(
        "Ev1",
        "C1",
        &thread,
        "U-ANA",
        "Hello &lt;3 from <https://acme.example|our docs>",
    );
    assert_eq!(fx.send_event(integration, &event, now_secs()).await, 200);
    let pushed = widget.recv().await;
    assert_eq!(pushed["type"], "message", "{pushed}");
    assert_eq!(
        pushed["agent_name"], "Ana",
        "mapped to the Porch account by email"
    );
    assert_eq!(
        pushed["body"],
        "Hello <3 from our docs (https://acme.example)"
    );
    // The reply is not posted back to Slack.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(fx.mock.posts().len(), 2);
}

/// One Slack app serving two of a site's channels sends every event to one Events URL: a reply
/// typed in the second channel's thread but received at the first integration's URL is not
/// posted back into its own thread, and is posted into the first channel's thread
/// (docs/integrations/slack.md). The channel it was typed in decides, not the URL.
#[tokio::test]
async fn a_reply_is_posted_to_the_sites_other_channel_whichever_url_it_came_to() {
    let fx = Fixture::start().await;
    let (site, first) = fx.site_with_slack("Shop", "C1", json!({})).await;
    let body = json!({"bot_token": "xoxb-test", "channel_id": "C2", "signing_secret": SECRET});
    let path = format!("/api/v1/sites/{site}/integrations/slack");
    let (status, answer) = fx.app.api("POST", &path, &fx.admin, Some(body)).await;
    assert_eq!(status, 201, "{answer}");
    let (mut widget, _) = fx.app.visitor(&site, None, 0).await;
    widget.say("q", "is anyone there?").await;
    // A header and the message in each channel.
    let posts = fx.mock.wait_for_posts(4, WAIT).await;
    let root_in = |channel: &str| {
        posts
            .iter()
            .find(|p| p.channel == channel && p.thread_ts.is_none())
            .map(|p| p.ts.clone())
            .expect("a header")
    };
    let (first_thread, second_thread) = (root_in("C1"), root_in("C2"));

    let event = reply_event("Ev-C2", "C2", &second_thread, "U-ANA", "typed in C2");
    assert_eq!(fx.send_event(first, &event, now_secs()).await, 200);
    assert_eq!(widget.recv().await["body"], "typed in C2");
    let posts = fx.mock.wait_for_posts(5, WAIT).await;
    fx.wait_until_settled().await;
    let replies: Vec<_> = fx
        .mock
        .posts()
        .into_iter()
        .filter(|p| p.text.contains("typed in C2"))
        .map(|p| (p.channel, p.thread_ts))
        .collect();
    assert_eq!(
        replies,
        [("C1".to_owned(), Some(first_thread))],
        "into the other channel's thread only: {posts:?}"
    );
}

#[tokio::test]
async fn people_mentioned_in_a_reply_are_named_for_the_visitor() {
    let (fx, mut widget, integration, thread) = conversation_with_thread(json!({})).await;
    fx.app.add_agent_token("Ana");
    fx.mock
        .add_user("U-ANA", "ana.slack", Some("ana@example.com"));
    fx.mock.add_user("U-BEN", "Ben", None);
    let event = reply_event(
        "Ev-mention",
        "C1",
        &thread,
        "U-BEN",
        "<@U-ANA> knows, ask <@U-BEN|benjamin> or <@U-GONE>",
    );
    assert_eq!(fx.send_event(integration, &event, now_secs()).await, 200);
    let pushed = widget.recv().await;
    // A Porch agent by their Porch name, as replies are signed; a label Slack sent stays; one
    // Slack cannot name stays its id.
    assert_eq!(pushed["body"], "@Ana knows, ask @benjamin or @U-GONE");
}

#[tokio::test]
async fn a_thread_reply_longer_than_a_message_is_cut_not_lost() {
    let (fx, mut widget, integration, thread) = conversation_with_thread(json!({})).await;
    let long = format!("{} the end", "a".repeat(4_500));
    let event = reply_event("Ev-long", "C1", &thread, "U-ANY", &long);
    assert_eq!(fx.send_event(integration, &event, now_secs()).await, 200);
    let pushed = widget.recv().await;
    assert_eq!(pushed["type"], "message", "{pushed}");
    let body = pushed["body"].as_str().expect("body");
    assert_eq!(body.chars().count(), 4_000);
    assert!(body.starts_with("aaa") && body.ends_with("a…"), "{body}");
}

#[tokio::test]
async fn bad_stale_or_replayed_events_create_nothing() {
    let (fx, _widget, integration, thread) = conversation_with_thread(json!({})).await;
    let messages = || fx.app.count("SELECT count(*) FROM messages");
    let before = messages();
    let event = reply_event("Ev1", "C1", &thread, "U1", "hi");

    let raw = event.to_string();
    let ts = now_secs().to_string();
    let events = format!("/integrations/slack/{integration}/events");
    let forged = fx
        .app
        .http
        .request("POST", &events)
        .header("X-Slack-Request-Timestamp", &ts)
        .header("X-Slack-Signature", "v0=deadbeef")
        .body(raw.clone())
        .answer()
        .await;
    assert_eq!(forged.status, 401);
    assert_eq!(
        fx.send_event(integration, &event, now_secs() - 400).await,
        401,
        "stale"
    );
    let unsigned = fx
        .app
        .http
        .request("POST", &events)
        .body(raw)
        .answer()
        .await;
    assert_eq!(unsigned.status, 401);
    assert_eq!(messages(), before);

    assert_eq!(fx.send_event(integration, &event, now_secs()).await, 200);
    assert_eq!(
        fx.send_event(integration, &event, now_secs()).await,
        200,
        "a retry is acknowledged"
    );
    assert_eq!(messages(), before + 1, "but stored once");

    // The same message as another event (an app subscribed to both message.channels and
    // app_mention gets two): stored once too.
    let mut mention = event.clone();
    mention["event_id"] = json!("Ev1-as-mention");
    assert_eq!(fx.send_event(integration, &mention, now_secs()).await, 200);
    assert_eq!(messages(), before + 1, "one message, whatever the event");
    let next = reply_event("Ev2", "C1", &thread, "U1", "hi again");
    assert_eq!(fx.send_event(integration, &next, now_secs()).await, 200);
    assert_eq!(messages(), before + 2, "another message is stored");
}

#[tokio::test]
async fn notes_bots_and_edits_never_reach_the_visitor() {
    let (fx, mut widget, integration, thread) = conversation_with_thread(json!({})).await;
    let note = reply_event(
        "Ev-note",
        "C1",
        &thread,
        "U1",
        "note: VIP customer, be nice",
    );
    assert_eq!(fx.send_event(integration, &note, now_secs()).await, 200);
    let mut own = reply_event("Ev-own", "C1", &thread, "UBOT", "our own post");
    own["event"]["bot_id"] = json!("BBOT");
    assert_eq!(fx.send_event(integration, &own, now_secs()).await, 200);
    let mut edit = reply_event("Ev-edit", "C1", &thread, "U1", "edited");
    edit["event"]["subtype"] = json!("message_changed");
    assert_eq!(fx.send_event(integration, &edit, now_secs()).await, 200);
    let visible = reply_event("Ev-visible", "C1", &thread, "U1", "a real answer");
    assert_eq!(fx.send_event(integration, &visible, now_secs()).await, 200);

    let pushed = widget.recv().await;
    assert_eq!(
        pushed["body"], "a real answer",
        "the note, our own post and the edit were not pushed"
    );
    // A person writing all the same: Slack's `/me` and "Also send to channel".
    for subtype in ["me_message", "thread_broadcast"] {
        let mut event = reply_event(&format!("Ev-{subtype}"), "C1", &thread, "U1", subtype);
        event["event"]["subtype"] = json!(subtype);
        assert_eq!(fx.send_event(integration, &event, now_secs()).await, 200);
        assert_eq!(widget.recv().await["body"], subtype);
    }
    let note_body: String = fx
        .app
        .db()
        .query_row("SELECT body FROM messages WHERE author = 'note'", [], |r| {
            r.get(0)
        })
        .expect("note stored");
    assert_eq!(note_body, "VIP customer, be nice");
    assert_eq!(
        fx.app
            .count("SELECT count(*) FROM messages WHERE author = 'agent'"),
        3
    );
}

#[tokio::test]
async fn url_verification_is_answered_and_an_unconfigured_secret_refuses() {
    let (fx, _widget, integration, _) = conversation_with_thread(json!({})).await;
    let challenge = json!({"type": "url_verification", "challenge": "abc123", "token": "x"});
    let raw = challenge.to_string();
    let signature = sign(SECRET, now_secs(), raw.as_bytes());
    let ts = now_secs().to_string();
    let answer = fx
        .app
        .http
        .request("POST", &format!("/integrations/slack/{integration}/events"))
        .header("X-Slack-Request-Timestamp", &ts)
        .header("X-Slack-Signature", &signature)
        .body(raw.clone())
        .answer()
        .await;
    assert_eq!(answer.status, 200);
    assert!(answer.body.contains("abc123"));

    // An integration in Socket Mode has no signing secret: its events URL refuses everything.
    let site = fx.app.add_site("Socket");
    // A wrong app-level token is refused when saved, not found out later by the connection.
    fx.mock.revoke_token("xapp-revoked");
    for (token, code) in [("xoxp-wrong", "invalid"), ("xapp-revoked", "slack_refused")] {
        let (status, refused) = fx
            .app
            .api(
                "POST",
                &format!("/api/v1/sites/{site}/integrations/slack"),
                &fx.admin,
                Some(json!({"bot_token": "xoxb-test", "channel_id": "C9", "app_token": token})),
            )
            .await;
        assert_eq!(
            (status, &refused["error"]["code"]),
            (422, &json!(code)),
            "{refused}"
        );
    }
    let body = json!({"bot_token": "xoxb-test", "channel_id": "C9", "app_token": "xapp-test"});
    let (_, created) = fx
        .app
        .api(
            "POST",
            &format!("/api/v1/sites/{site}/integrations/slack"),
            &fx.admin,
            Some(body),
        )
        .await;
    let id = created["id"].as_i64().expect("id");
    for endpoint in ["events", "commands", "interactive"] {
        let url = created[format!("{endpoint}_url")]
            .as_str()
            .unwrap_or_default();
        assert!(
            url.ends_with(&format!("/integrations/slack/{id}/{endpoint}")),
            "{created}"
        );
    }
    let refused = fx
        .app
        .http
        .request("POST", &format!("/integrations/slack/{id}/events"))
        .header("X-Slack-Request-Timestamp", &ts)
        .header("X-Slack-Signature", &signature)
        .body(raw)
        .answer()
        .await;
    assert_eq!(refused.status, 403);
}

#[tokio::test]
async fn an_agent_reply_from_the_api_goes_into_the_thread() {
    let (fx, _widget, _, thread) = conversation_with_thread(json!({})).await;
    let agent = fx.app.add_agent_token("Ana");
    let (_, list) = fx
        .app
        .api("GET", "/api/v1/conversations", &agent, None)
        .await;
    let conversation = list["conversations"][0]["id"]
        .as_i64()
        .expect("conversation");
    let (status, _) = fx
        .app
        .api(
            "POST",
            &format!("/api/v1/conversations/{conversation}/messages"),
            &agent,
            Some(json!({"body": "On it!"})),
        )
        .await;
    assert_eq!(status, 201);
    let posts = fx.mock.wait_for_posts(3, WAIT).await;
    let reply = &posts[2];
    assert_eq!(reply.thread_ts.as_deref(), Some(thread.as_str()));
    assert_eq!(reply.text, "On it!");
    assert_eq!(reply.username.as_deref(), Some("Ana (Porch)"));
    assert_eq!(reply.body["metadata"]["event_payload"]["author"], "agent");
}

#[tokio::test]
async fn socket_mode_delivers_a_reply_and_acknowledges_it_after_commit() {
    let (fx, mut widget, _, thread) =
        conversation_with_thread(json!({"app_token": "xapp-test"})).await;
    assert!(
        fx.mock.wait_for_socket(WAIT).await,
        "Porch connected over Socket Mode"
    );
    let event = reply_event("Ev-socket", "C1", &thread, "U1", "answered over a socket");
    let envelope = fx
        .mock
        .send_socket_event(&event)
        .expect("a connected client");
    let pushed = widget.recv().await;
    assert_eq!(pushed["body"], "answered over a socket");
    assert!(
        fx.mock.wait_for_ack(&envelope, WAIT).await,
        "the envelope was acknowledged"
    );
    // Named as every other call to Slack is.
    assert_eq!(
        fx.mock.socket_user_agents().first().map(String::as_str),
        Some(concat!("Porch/", env!("CARGO_PKG_VERSION")))
    );
}

/// Slack not answering says nothing about the token: the check is refused as
/// `slack_unreachable` (try again), not `slack_refused` (fix the token).
#[tokio::test]
async fn a_token_check_slack_does_not_answer_is_unreachable_not_refused() {
    // Nothing listens on port 9 of loopback (discard): every call fails to connect.
    let app = TestApp::spawn(&["--slack-api-url", "http://127.0.0.1:9/api/"]).await;
    let site = app.add_site("Shop");
    let admin = app.add_user_token("olive@example.com", "admin");
    let (status, refused) = app
        .api(
            "POST",
            &format!("/api/v1/sites/{site}/integrations/slack"),
            &admin,
            Some(json!({"bot_token": "xoxb-test", "channel_id": "C9", "signing_secret": "s"})),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["error"]["code"], "slack_unreachable", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("try again")),
        "{refused}"
    );
    assert_eq!(app.count("SELECT count(*) FROM integrations"), 0);
}
