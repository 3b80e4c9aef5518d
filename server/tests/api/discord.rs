//! Discord deliveries against the Discord webhook mock over loopback: one thread per
//! conversation in a forum channel, mentions and embeds neutralised, long text split, 429
//! pausing only its own webhook, and a deleted webhook (404) blocking the integration until an
//! admin replaces it.

use std::time::Duration;

use porch::loadtest::{DiscordFailure, DiscordMock};
use serde_json::json;

use crate::helpers::{TestApp, WAIT, Widget, ok_if, wait_until};

struct Fixture {
    app: TestApp,
    mock: DiscordMock,
    admin: String,
}

impl Fixture {
    async fn start() -> Self {
        let mock = DiscordMock::start(([127, 0, 0, 1], 0).into())
            .await
            .expect("mock");
        let url = mock.api_url();
        let app = TestApp::spawn(&["--discord-api-url", &url]).await;
        let admin = app.add_user_token("Admin", "admin");
        Self { app, mock, admin }
    }

    /// A site whose conversations go to a new webhook; returns (site key, integration id).
    async fn site_with_discord(&self, name: &str, hook: &str, forum: bool) -> (String, i64) {
        let site = self.app.add_site(name);
        self.app
            .set_site_limits(&site, 10_000, 1_000, 100_000, 10_000);
        let webhook_url = self.mock.add_webhook(hook, forum);
        let (status, answer) = self
            .app
            .api(
                "POST",
                &format!("/api/v1/sites/{site}/integrations/discord"),
                &self.admin,
                Some(json!({"webhook_url": webhook_url, "forum": forum})),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
        (site, answer["id"].as_i64().expect("id"))
    }

    fn count(&self, sql: &str) -> i64 {
        self.app.count(sql)
    }
}

#[tokio::test]
async fn a_forum_channel_gets_one_thread_per_conversation_and_nobody_is_pinged() {
    let f = Fixture::start().await;
    let (site, _) = f.site_with_discord("Shop", "H1", true).await;
    let (mut alice, _) = f.app.visitor(&site, None, 0).await;
    alice
        .say(
            "a1",
            "@everyone **free** <@123> https://evil.example \u{202E}x",
        )
        .await;
    f.mock.wait_for_posts(1, WAIT).await;
    alice.say("a2", "second").await;
    let (mut bob, _) = f.app.visitor(&site, None, 0).await;
    bob.say("b1", "hello from bob").await;
    let posts = f.mock.wait_for_posts(3, WAIT).await;
    assert_eq!(posts.len(), 3, "{posts:?}");

    let first = &posts[0];
    assert_eq!(first.query.get("wait").map(String::as_str), Some("true"));
    assert_eq!(
        first.user_agent.as_deref(),
        Some(concat!("Porch/", env!("CARGO_PKG_VERSION"))),
        "Discord asks clients to name themselves"
    );
    assert!(first.body["thread_name"].is_string(), "{}", first.body);
    assert_eq!(first.body["allowed_mentions"], json!({"parse": []}));
    assert_eq!(first.body["flags"], json!(4), "embeds suppressed");
    assert_eq!(
        first.body["content"],
        "@everyone \\*\\*free\\*\\* \\<@123\\> https://evil.example \\<U+202E\\>x"
    );
    let thread = first.thread_id.clone().expect("a thread");

    let second = posts
        .iter()
        .find(|p| p.body["content"] == "second")
        .expect("second");
    assert_eq!(second.query.get("thread_id"), Some(&thread));
    assert!(second.body.get("thread_name").is_none());
    let bobs = posts
        .iter()
        .find(|p| p.body["content"] == "hello from bob")
        .expect("bob");
    assert!(bobs.body["thread_name"].is_string());
    assert_ne!(
        bobs.thread_id.as_ref(),
        Some(&thread),
        "a thread per conversation"
    );
    // An agent's reply goes to the visitor's thread, under the agent's name.
    let conversation = f.count("SELECT conversation_id FROM messages WHERE body = 'second'");
    let (status, _) = f
        .app
        .api(
            "POST",
            &format!("/api/v1/conversations/{conversation}/messages"),
            &f.admin,
            Some(json!({"body": "Hi Alice"})),
        )
        .await;
    assert_eq!(status, 201);
    let posts = f.mock.wait_for_posts(4, WAIT).await;
    let reply = posts
        .iter()
        .find(|p| p.body["content"] == "Hi Alice")
        .expect("the agent reply");
    assert_eq!(reply.query.get("thread_id"), Some(&thread));
    assert_eq!(reply.body["username"], "Admin (Porch)");
    assert_eq!(reply.body["allowed_mentions"], json!({"parse": []}));

    // The mapping is saved right after Discord answered.
    wait_until("both threads to be saved", WAIT, async || {
        ok_if(f.count("SELECT count(*) FROM discord_threads"), |n| *n >= 2)
    })
    .await;
}

#[tokio::test]
async fn long_messages_are_split_within_discords_limit() {
    let f = Fixture::start().await;
    let (site, _) = f.site_with_discord("Shop", "H1", false).await;
    let (mut alice, _) = f.app.visitor(&site, None, 0).await;
    // 3,600 characters, 4,500 once the markdown is escaped.
    let long = "a*b ".repeat(900);
    alice.say("a1", long.trim_end()).await;
    let posts = f.mock.wait_for_posts(3, WAIT).await;
    assert_eq!(posts.len(), 3);
    assert!(
        posts
            .iter()
            .all(|p| p.body["content"].as_str().expect("text").chars().count() <= 2000)
    );
    assert!(
        posts.iter().all(|p| p.thread_id.is_none()),
        "a text channel"
    );
    let joined: String = posts
        .iter()
        .map(|p| p.body["content"].as_str().expect("text"))
        .collect();
    assert_eq!(joined, long.trim_end().replace('*', "\\*"));
}

#[tokio::test]
async fn a_cut_keeps_an_escaped_backslash_with_its_backslash() {
    let f = Fixture::start().await;
    let (site, _) = f.site_with_discord("Shop", "H1", false).await;
    let (mut alice, _) = f.app.visitor(&site, None, 0).await;
    // Escaped, the visitor's backslash becomes two, at characters 1,999 and 2,000: a cut
    // between them would end the first post with a lone backslash.
    let text = format!("{}\\b", "a".repeat(1998));
    alice.say("a1", &text).await;
    let posts = f.mock.wait_for_posts(2, WAIT).await;
    let contents: Vec<&str> = posts
        .iter()
        .map(|p| p.body["content"].as_str().expect("text"))
        .collect();
    assert_eq!(
        contents,
        [format!("{}\\\\", "a".repeat(1998)), "b".to_owned()]
    );
}

#[tokio::test]
async fn a_visitor_named_like_discord_is_delivered_under_a_name_discord_accepts() {
    let f = Fixture::start().await;
    let (site, _) = f.site_with_discord("Shop", "H1", false).await;
    let (mut alice, _) = f.app.visitor(&site, None, 0).await;
    alice.say("a1", "first").await;
    alice
        .send(json!({"type": "email", "email": "DisCord.Fan@example.org"}))
        .await;
    assert_eq!(alice.recv().await["type"], "email_saved");
    alice.say("a2", "second").await;
    let posts = f.mock.wait_for_posts(2, WAIT).await;
    assert_eq!(
        posts.len(),
        2,
        "jobs: {:?}",
        f.app
            .count("SELECT count(*) FROM jobs WHERE state = 'failed'")
    );
    assert_eq!(posts[1].body["content"], "second");
    assert_eq!(posts[1].body["username"], ".Fan@example.org");
}

/// Names that became an agent's "… (Porch)" only after Discord's clean-up, or that read as one:
/// each is posted marked as the visitor's, within Discord's 80 characters.
#[tokio::test]
async fn a_visitor_never_posts_under_an_agents_name() {
    let f = Fixture::start().await;
    let (site, _) = f.site_with_discord("Shop", "H1", false).await;
    let names = [
        "Ana (Porch)discord".to_owned(),
        "Ana (Porch)\u{200b}".to_owned(),
        format!("{} Agent (Porch)xyzxyzxyz", "A".repeat(66)),
    ];
    for (n, name) in names.iter().enumerate() {
        let (mut visitor, _) = f.app.visitor(&site, None, 0).await;
        visitor.say(&format!("first-{n}"), "hello").await;
        f.app
            .db()
            .execute(
                "UPDATE visitors SET name = ?1 WHERE id = (SELECT max(id) FROM visitors)",
                [name],
            )
            .expect("name the visitor");
        visitor.say(&format!("second-{n}"), "it's me").await;
        let posts = f.mock.wait_for_posts(2 * (n + 1), WAIT).await;
        let username = posts.last().expect("a post").body["username"]
            .as_str()
            .expect("a username")
            .to_owned();
        assert!(
            username.ends_with(" (visitor)"),
            "{name:?} posted as {username:?}"
        );
        assert!(username.chars().count() <= 80, "{username}");
    }
}

#[tokio::test]
async fn a_429_pauses_only_that_webhook() {
    let f = Fixture::start().await;
    let (slow, _) = f.site_with_discord("Slow", "H1", false).await;
    let (fast, _) = f.site_with_discord("Fast", "H2", false).await;
    f.mock.set_failure(
        "H1",
        Some(DiscordFailure::RateLimited {
            times: 1,
            retry_after: 1.5,
        }),
    );
    let (mut a, _) = f.app.visitor(&slow, None, 0).await;
    let (mut b, _) = f.app.visitor(&fast, None, 0).await;
    a.say("a1", "to the slow hook").await;
    let refused = wait_until("a 429", WAIT, async || {
        f.mock.refusals().first().cloned().ok_or("no refusal yet")
    })
    .await;
    a.say("a2", "also slow").await;
    b.say("b1", "to the fast hook").await;
    let posts = f.mock.wait_for_posts(3, WAIT).await;
    assert_eq!(posts.len(), 3, "{posts:?}");
    let fast_post = posts.iter().find(|p| p.webhook_id == "H2").expect("fast");
    assert!(
        fast_post.at.duration_since(refused.at) < Duration::from_secs(1),
        "the other webhook is not held back"
    );
    for post in posts.iter().filter(|p| p.webhook_id == "H1") {
        assert!(
            post.at.duration_since(refused.at) >= Duration::from_millis(1400),
            "the limited webhook waited retry_after"
        );
    }
    let slow_order: Vec<_> = posts
        .iter()
        .filter(|p| p.webhook_id == "H1")
        .map(|p| p.body["content"].clone())
        .collect();
    assert_eq!(slow_order, [json!("to the slow hook"), json!("also slow")]);
}

#[tokio::test]
async fn x_ratelimit_headers_pace_the_webhook() {
    let f = Fixture::start().await;
    let (site, _) = f.site_with_discord("Shop", "H1", false).await;
    f.mock.set_exhausted("H1", Some(1.0));
    let (mut a, _) = f.app.visitor(&site, None, 0).await;
    a.say("a1", "one").await;
    f.mock.wait_for_posts(1, WAIT).await;
    a.say("a2", "two").await;
    let posts = f.mock.wait_for_posts(2, WAIT).await;
    assert_eq!(posts.len(), 2);
    assert!(
        posts[1].at.duration_since(posts[0].at) >= Duration::from_millis(900),
        "the second post waited for the bucket to reset"
    );
}

#[tokio::test]
async fn a_deleted_webhook_blocks_the_integration_until_replaced() {
    let f = Fixture::start().await;
    let (site, id) = f.site_with_discord("Shop", "H1", true).await;
    f.mock.delete_webhook("H1");
    let (mut a, _) = f.app.visitor(&site, None, 0).await;
    a.say("a1", "lost?").await;
    a.say("a2", "still there?").await;
    wait_until("both jobs to be blocked", WAIT, async || {
        ok_if(
            f.count("SELECT count(*) FROM jobs WHERE state = 'blocked'"),
            |n| *n >= 2,
        )
    })
    .await;
    assert_eq!(
        f.count(&format!(
            "SELECT count(*) FROM integrations WHERE id = {id} AND status = 'broken'"
        )),
        1
    );
    assert!(f.mock.posts().is_empty());
    // A message while the integration is broken starts blocked, with the integration's reason.
    a.say("a3", "anyone?").await;
    wait_until("the third job, blocked", WAIT, async || {
        ok_if(
            f.count("SELECT count(*) FROM jobs WHERE state = 'blocked'"),
            |n| *n >= 3,
        )
    })
    .await;
    assert_eq!(
        f.count("SELECT count(*) FROM jobs WHERE state = 'blocked' AND last_error IS NULL"),
        0
    );

    let new_url = f.mock.add_webhook("H9", true);
    let (status, answer) = f
        .app
        .api(
            "PUT",
            &format!("/api/v1/integrations/{id}/discord"),
            &f.admin,
            // `forum` left out keeps the stored choice.
            Some(json!({"webhook_url": new_url})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["resumed_jobs"], 3);
    assert_eq!(
        f.count(&format!(
            "SELECT json_extract(config, '$.is_forum') FROM integrations WHERE id = {id}"
        )),
        1,
        "still a forum"
    );
    let posts = f.mock.wait_for_posts(3, WAIT).await;
    assert_eq!(posts.len(), 3);
    assert!(posts.iter().all(|p| p.webhook_id == "H9"));
    forum_alone_keeps_the_webhook(&f, id, &mut a).await;
}

/// `{"forum": …}` alone keeps the stored webhook URL (H9 is a forum channel's webhook, so the
/// choice stays a forum: without threads Discord would refuse the posts).
async fn forum_alone_keeps_the_webhook(f: &Fixture, id: i64, visitor: &mut Widget) {
    let path = format!("/api/v1/integrations/{id}/discord");
    let (status, answer) = f
        .app
        .api("PUT", &path, &f.admin, Some(json!({"forum": true})))
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        f.count(&format!(
            "SELECT json_extract(config, '$.is_forum') FROM integrations WHERE id = {id}"
        )),
        1
    );
    visitor.say("a4", "after the switch").await;
    let posts = f.mock.wait_for_posts(4, WAIT).await;
    assert_eq!(posts[3].webhook_id, "H9", "the stored webhook");
}

/// A thread belongs to the channel of the webhook that created it: moved to another webhook, an
/// open conversation starts a new thread there (Discord refuses a `thread_id` of another
/// channel), while saving the same webhook again keeps the conversation's thread.
#[tokio::test]
async fn another_webhook_starts_new_threads_and_the_same_one_keeps_them() {
    let f = Fixture::start().await;
    let (site, id) = f.site_with_discord("Shop", "H1", true).await;
    let (mut a, _) = f.app.visitor(&site, None, 0).await;
    a.say("a1", "first").await;
    let thread = f.mock.wait_for_posts(1, WAIT).await[0]
        .thread_id
        .clone()
        .expect("a thread");
    wait_until("the thread to be saved", WAIT, async || {
        ok_if(f.count("SELECT count(*) FROM discord_threads"), |n| *n == 1)
    })
    .await;
    let path = format!("/api/v1/integrations/{id}/discord");
    let put = async |body| {
        let (status, answer) = f.app.api("PUT", &path, &f.admin, Some(body)).await;
        assert_eq!(status, 200, "{answer}");
    };

    put(json!({"forum": true})).await;
    a.say("a2", "same webhook").await;
    let posts = f.mock.wait_for_posts(2, WAIT).await;
    assert_eq!(posts[1].query.get("thread_id"), Some(&thread));

    put(json!({"webhook_url": f.mock.add_webhook("H2", true)})).await;
    a.say("a3", "another webhook").await;
    let posts = f.mock.wait_for_posts(3, WAIT).await;
    assert_eq!(posts[2].webhook_id, "H2");
    assert_eq!(posts[2].query.get("thread_id"), None, "{:?}", posts[2]);
    assert!(posts[2].body["thread_name"].is_string(), "a new thread");
}

#[tokio::test]
async fn only_discord_webhook_urls_are_accepted() {
    let f = Fixture::start().await;
    let site = f.app.add_site("Shop");
    // A known webhook, but pinned to one thread: refused rather than stored without its query.
    let pinned = format!("{}?thread_id=42", f.mock.add_webhook("Hq", false));
    for url in [
        "http://169.254.169.254/latest/meta-data".to_owned(),
        format!("{}/webhooks/only-id", f.mock.api_url()),
        format!("{}/webhooks/H404/token", f.mock.api_url()),
        pinned,
    ] {
        let (status, answer) = f
            .app
            .api(
                "POST",
                &format!("/api/v1/sites/{site}/integrations/discord"),
                &f.admin,
                Some(json!({"webhook_url": url})),
            )
            .await;
        assert_eq!(status, 422, "{url}: {answer}");
    }
    // Scheme and host compare in any case, as they do in a browser.
    let shouting = f
        .mock
        .add_webhook("Hup", false)
        .replacen("http://", "HTTP://", 1);
    let (status, answer) = f
        .app
        .api(
            "POST",
            &format!("/api/v1/sites/{site}/integrations/discord"),
            &f.admin,
            Some(json!({"webhook_url": shouting})),
        )
        .await;
    assert_eq!(status, 201, "{shouting}: {answer}");
}

#[tokio::test]
async fn an_unreachable_discord_leaves_no_webhook_token_in_the_stored_error() {
    let f = Fixture::start().await;
    let (site, _) = f.site_with_discord("Shop", "H-SECRET", false).await;
    let Fixture { app, mock, .. } = f;
    let token = mock
        .add_webhook("H-SECRET", false)
        .rsplit('/')
        .next()
        .expect("a token in the URL")
        .to_owned();
    // Discord goes away: every delivery now fails with a connection error.
    drop(mock);
    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("v1", "hello").await;
    let error: String = wait_until("the delivery to fail", WAIT, async || {
        app.db().query_row(
            "SELECT last_error FROM jobs WHERE kind = 'discord.post' AND last_error IS NOT NULL",
            [],
            |r| r.get(0),
        )
    })
    .await;
    assert!(
        error.starts_with("no answer from Discord: could not connect: connection refused"),
        "{error}"
    );
    assert!(!error.contains(&token), "the token leaked: {error}");
    let attempts: Vec<String> = app
        .db()
        .prepare("SELECT coalesce(error, '') FROM job_attempts")
        .expect("query")
        .query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("attempts");
    assert!(attempts.iter().all(|e| !e.contains(&token)), "{attempts:?}");
}

#[tokio::test]
async fn discord_failing_while_a_webhook_is_checked_is_not_called_a_wrong_webhook() {
    // A Discord that answers every request 500 (an outage), not the mock.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}/api", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = [0u8; 4096];
            let _ = socket.read(&mut request).await;
            let _ = socket
                .write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    });
    let app = TestApp::spawn(&["--discord-api-url", &base]).await;
    let admin = app.add_user_token("Admin", "admin");
    let site = app.add_site("Shop");
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/sites/{site}/integrations/discord"),
            &admin,
            Some(json!({"webhook_url": format!("{base}/webhooks/1/token")})),
        )
        .await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(answer["error"]["code"], "discord_unreachable", "{answer}");
}
