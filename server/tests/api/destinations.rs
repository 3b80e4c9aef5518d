//! The destination pages (Discord, webhooks, email) over real HTTP with a signed-in admin,
//! against the Discord and webhook mocks over loopback and a real SMTP server: adding a
//! destination, its test going through the job runner, the secret shown once, replay from the
//! log, turning an integration off (blocked with the reason) and on, deleting it, the audit
//! events, and agents refused.

use porch::loadtest::{DiscordFailure, DiscordMock, WebhookMock};

use crate::email::Sink;
use crate::helpers::{TestApp, WAIT, ok_if, wait_until};
use crate::inbox::{Browser, PASSWORD, add_user, form, send, setup_admin, sign_in, signed_in_from};

async fn admin_of(app: &TestApp) -> Browser {
    signed_in_from(app, &setup_admin(app).await).await
}

async fn post(
    app: &TestApp,
    admin: &Browser,
    path: &str,
    fields: &[(&str, &str)],
) -> (u16, String, String) {
    let mut all = vec![("csrf", admin.csrf.as_str())];
    all.extend_from_slice(fields);
    let answer = send(app, "POST", path, &admin.cookie, Some(&form(&all))).await;
    let location = answer.header("location").unwrap_or_default().to_owned();
    (answer.status, location, answer.body)
}

async fn get(app: &TestApp, admin: &Browser, path: &str) -> String {
    let page = send(app, "GET", path, &admin.cookie, None).await;
    assert_eq!(page.status, 200, "{path}: {}", page.body);
    page.body
}

/// A running server pointed at a Discord mock, its admin, and site "Shop" with no Discord yet.
async fn discord_app() -> (DiscordMock, TestApp, Browser, String) {
    let mock = DiscordMock::start(([127, 0, 0, 1], 0).into())
        .await
        .expect("mock");
    let app = TestApp::spawn(&["--discord-api-url", &mock.api_url()]).await;
    let admin = admin_of(&app).await;
    let site = app.add_site("Shop");
    (mock, app, admin, site)
}

/// A running server that may post to a webhook receiver on loopback, its admin, and site "Shop"
/// with no endpoint yet.
async fn webhook_app() -> (WebhookMock, TestApp, Browser, String) {
    let mock = WebhookMock::start(([127, 0, 0, 1], 0).into())
        .await
        .expect("receiver");
    let app = TestApp::spawn(&["--allow-private-networks"]).await;
    let admin = admin_of(&app).await;
    let site = app.add_site("Shop");
    (mock, app, admin, site)
}

/// A running server with site "Shop" posting to Discord webhook `H1` of a mock, and its admin.
async fn discord_site() -> (DiscordMock, TestApp, Browser, String) {
    let (mock, app, admin, site) = discord_app().await;
    let url = mock.add_webhook("H1", false);
    post(
        &app,
        &admin,
        &format!("/sites/{site}/discord"),
        &[("webhook_url", &url)],
    )
    .await;
    (mock, app, admin, site)
}

#[tokio::test]
async fn destinations_discord_is_added_from_its_page_and_the_test_post_goes_through_the_runner() {
    let (mock, app, admin, site) = discord_app().await;
    let page = get(&app, &admin, &format!("/sites/{site}/discord")).await;
    assert!(page.contains("Add Discord"), "{page}");

    let refused = post(
        &app,
        &admin,
        &format!("/sites/{site}/discord"),
        &[("webhook_url", "https://evil.example/webhooks/1/x")],
    )
    .await;
    assert_eq!(refused.0, 422, "only Discord webhook URLs: {}", refused.2);
    assert!(
        refused.2.contains("must be a Discord webhook URL"),
        "{}",
        refused.2
    );

    let url = mock.add_webhook("H1", false);
    let (status, location, _) = post(
        &app,
        &admin,
        &format!("/sites/{site}/discord"),
        &[("webhook_url", &url)],
    )
    .await;
    assert_eq!(
        (status, location.as_str()),
        (
            303,
            format!("/sites/{site}/discord?notice=discord-connected").as_str()
        )
    );
    let page = get(&app, &admin, &format!("/sites/{site}/discord")).await;
    assert!(
        !page.contains("token-H1"),
        "the webhook token is never shown back"
    );
    assert!(page.contains("webhook H1 · token …n-H1"), "{page}");
    assert!(page.contains("data-health=\"healthy\""), "{page}");

    let (status, location, _) =
        post(&app, &admin, &format!("/sites/{site}/discord/test"), &[]).await;
    assert_eq!(status, 303);
    assert!(location.ends_with("/discord#test-outcome"), "{location}");
    let posts = mock.wait_for_posts(1, WAIT).await;
    assert!(
        posts[0].body["content"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Test message from Porch")
    );
    assert_eq!(
        posts[0].body["allowed_mentions"],
        serde_json::json!({"parse": []})
    );
    let shown = wait_until("the test to show as sent", WAIT, async || {
        ok_if(get(&app, &admin, &location).await, |p| {
            p.contains("data-test=\"sent\"")
        })
    })
    .await;
    assert!(
        shown.contains("Latest test (") && shown.contains("): sent."),
        "{shown}"
    );

    // An empty URL keeps the stored webhook; the forum box changes the setting.
    let (status, _, _) = post(
        &app,
        &admin,
        &format!("/sites/{site}/discord"),
        &[("webhook_url", ""), ("forum", "on")],
    )
    .await;
    assert_eq!(status, 303);
    let page = get(&app, &admin, &format!("/sites/{site}/discord")).await;
    assert!(page.contains("a forum channel"), "{page}");
    assert_eq!(
        app.count("SELECT count(*) FROM integrations WHERE kind = 'discord'"),
        1
    );
}

#[tokio::test]
async fn destinations_a_deleted_discord_webhook_shows_blocked_with_the_reason_and_the_test_fails() {
    let (mock, app, admin, site) = discord_site().await;
    mock.delete_webhook("H1");
    let (_, location, _) = post(&app, &admin, &format!("/sites/{site}/discord/test"), &[]).await;
    let page = wait_until("the test to fail", WAIT, async || {
        ok_if(get(&app, &admin, &location).await, |p| {
            p.contains("data-test=\"failed\"")
        })
    })
    .await;
    assert!(page.contains("data-health=\"blocked\""), "{page}");
    assert!(
        page.contains("the webhook was deleted or its token is wrong"),
        "{page}"
    );

    // The refused test is over: not blocked, so turning the integration off and on (which
    // queues blocked deliveries again) does not send it; the page still shows its outcome.
    let failed_tests = "SELECT count(*) FROM jobs WHERE kind = 'discord.test' AND state = 'failed'";
    assert_eq!(app.count(failed_tests), 1);
    let id: i64 = app
        .db()
        .query_row("SELECT id FROM integrations", [], |r| r.get(0))
        .expect("id");
    for action in ["disable", "enable"] {
        let path = format!("/sites/{site}/integrations/{id}/{action}");
        assert_eq!(post(&app, &admin, &path, &[]).await.0, 303, "{action}");
    }
    assert_eq!(app.count(failed_tests), 1);
    let later = get(&app, &admin, &format!("/sites/{site}/discord")).await;
    assert!(later.contains("data-test=\"failed\""), "{later}");
}

#[tokio::test]
async fn destinations_turning_an_integration_off_blocks_its_deliveries_with_the_reason_until_it_is_on()
 {
    let (mock, app, admin, site) = discord_site().await;
    let id: i64 = app
        .db()
        .query_row("SELECT id FROM integrations", [], |r| r.get(0))
        .expect("id");

    let (status, location, _) = post(
        &app,
        &admin,
        &format!("/sites/{site}/integrations/{id}/disable"),
        &[],
    )
    .await;
    assert_eq!(
        (status, location),
        (303, format!("/sites/{site}/discord?notice=integration-off"))
    );
    let page = get(&app, &admin, &format!("/sites/{site}/discord")).await;
    assert!(
        page.contains("data-health=\"blocked\"") && page.contains("turned off by an admin"),
        "{page}"
    );
    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("m1", "hello while off").await;
    assert_eq!(
        app.count("SELECT count(*) FROM jobs WHERE kind = 'discord.post'"),
        0,
        "no job is planned for an integration that is off"
    );

    post(
        &app,
        &admin,
        &format!("/sites/{site}/integrations/{id}/enable"),
        &[],
    )
    .await;
    visitor.say("m2", "hello again").await;
    let posts = mock.wait_for_posts(1, WAIT).await;
    assert!(
        posts[0].body["content"]
            .as_str()
            .unwrap_or_default()
            .contains("hello again")
    );
    let page = get(&app, &admin, &format!("/sites/{site}/discord")).await;
    assert!(page.contains("data-health=\"healthy\""), "{page}");

    let (status, location, _) = post(
        &app,
        &admin,
        &format!("/sites/{site}/integrations/{id}/delete"),
        &[],
    )
    .await;
    assert_eq!(
        (status, location),
        (303, format!("/sites/{site}?notice=integration-deleted"))
    );
    assert_eq!(app.count("SELECT count(*) FROM integrations"), 0);
    let actions: Vec<String> = app
        .db()
        .prepare("SELECT action FROM audit_events WHERE action LIKE 'integration.%' ORDER BY id")
        .expect("audit")
        .query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("actions");
    assert_eq!(
        actions,
        [
            "integration.created",
            "integration.disabled",
            "integration.enabled",
            "integration.deleted"
        ]
    );
    // Each names the site it belonged to, which the log must still say once it is deleted.
    let sites = app.count(&format!(
        "SELECT count(*) FROM audit_events WHERE action LIKE 'integration.%' \
           AND json_extract(detail, '$.site') = '{site}' \
           AND json_extract(detail, '$.site_name') = 'Shop'"
    ));
    assert_eq!(sites, 4);
}

#[tokio::test]
async fn destinations_the_webhook_form_keeps_what_was_ticked_and_never_adds_a_url_twice() {
    let app = TestApp::spawn(&["--allow-private-networks"]).await;
    let admin = admin_of(&app).await;
    let site = app.add_site("Shop");
    // A refused URL shows the form again with what was ticked.
    let refused = post(
        &app,
        &admin,
        &format!("/sites/{site}/webhooks"),
        &[
            ("url", "ftp://example.com/hook"),
            ("conversation.closed", "on"),
        ],
    )
    .await;
    assert_eq!(refused.0, 422, "{}", refused.2);
    assert!(
        refused
            .2
            .contains("name=\"conversation.closed\" value=\"on\" checked"),
        "the ticked event is kept: {}",
        refused.2
    );

    let add = async |url: &str| {
        post(
            &app,
            &admin,
            &format!("/sites/{site}/webhooks"),
            &[("url", url), ("message.created", "on")],
        )
        .await
    };
    // A script's `message.created=false` is not a ticked box.
    let unticked = post(
        &app,
        &admin,
        &format!("/sites/{site}/webhooks"),
        &[
            ("url", "http://127.0.0.1:9/hook"),
            ("message.created", "false"),
        ],
    )
    .await;
    assert_eq!(unticked.0, 400, "{}", unticked.2);
    assert_eq!(app.count("SELECT count(*) FROM integrations"), 0);
    assert_eq!(add("http://127.0.0.1:9/hook").await.0, 200);
    // The same form posted again (a reload of its answer) makes no second endpoint, nor do other
    // ways of writing the same URL.
    for same in [
        "http://127.0.0.1:9/hook",
        "HTTP://127.0.0.1:9/hook?",
        "http://127.0.0.1:9/hook?",
    ] {
        let (again, _, page) = add(same).await;
        assert_eq!(again, 409, "{same}: {page}");
        assert!(
            page.contains("already has an endpoint for this URL"),
            "{page}"
        );
    }
    assert_eq!(app.count("SELECT count(*) FROM integrations"), 1);
}

#[tokio::test]
async fn destinations_a_webhook_secret_is_shown_once_and_a_replay_keeps_its_webhook_id() {
    let (mock, app, admin, site) = webhook_app().await;
    let none = post(
        &app,
        &admin,
        &format!("/sites/{site}/webhooks"),
        &[("url", &mock.url("/hook"))],
    )
    .await;
    assert_eq!(none.0, 422, "at least one event: {}", none.2);
    let (status, _, added) = post(
        &app,
        &admin,
        &format!("/sites/{site}/webhooks"),
        &[("url", &mock.url("/hook")), ("message.created", "on")],
    )
    .await;
    assert_eq!(status, 200, "{added}");
    let at = added
        .find("id=\"new-secret\"")
        .expect("the secret is shown");
    let secret = added[at..]
        .split("value=\"")
        .nth(1)
        .and_then(|v| v.split('"').next())
        .expect("value");
    assert!(secret.starts_with("whsec_"), "{secret}");
    let id: i64 = app
        .db()
        .query_row("SELECT id FROM integrations", [], |r| r.get(0))
        .expect("id");
    let endpoint = format!("/sites/{site}/webhooks/{id}");
    assert!(
        !get(&app, &admin, &endpoint).await.contains(secret),
        "shown once only"
    );
    assert!(
        get(&app, &admin, &format!("/sites/{site}/webhooks"))
            .await
            .contains(&mock.url("/hook"))
    );

    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("m1", "hello").await;
    let first = mock.wait_for(1, WAIT).await;
    let page = wait_until("the delivery in the log", WAIT, async || {
        ok_if(get(&app, &admin, &endpoint).await, |p| {
            p.contains("data-outcome=\"delivered\"")
        })
    })
    .await;
    let job: i64 = app
        .db()
        .query_row(
            "SELECT id FROM jobs WHERE kind = 'webhook.deliver'",
            [],
            |r| r.get(0),
        )
        .expect("job");
    assert!(
        page.contains(&format!("/deliveries/{job}/replay")),
        "{page}"
    );
    let (status, location, _) = post(
        &app,
        &admin,
        &format!("{endpoint}/deliveries/{job}/replay"),
        &[],
    )
    .await;
    assert_eq!(
        (status, location),
        (303, format!("{endpoint}?notice=replayed"))
    );
    let both = mock.wait_for(2, WAIT).await;
    assert_eq!(
        both[1].headers.get("webhook-id"),
        first[0].headers.get("webhook-id")
    );

    let (status, _, rotated) = post(&app, &admin, &format!("{endpoint}/rotate"), &[]).await;
    assert_eq!(status, 200);
    assert!(
        rotated.contains("id=\"new-secret\"") && !rotated.contains(secret),
        "a new secret"
    );
    assert!(rotated.contains("The previous secret also signs every delivery until"));
}

#[tokio::test]
async fn destinations_an_endpoint_cannot_be_moved_onto_another_ones_url() {
    let app = TestApp::spawn(&["--allow-private-networks"]).await;
    let admin = admin_of(&app).await;
    let site = app.add_site("Shop");
    let url = |path: &str| format!("http://127.0.0.1:9/{path}");
    for path in ["hook", "second"] {
        let (status, _, _) = post(
            &app,
            &admin,
            &format!("/sites/{site}/webhooks"),
            &[("url", &url(path)), ("message.created", "on")],
        )
        .await;
        assert_eq!(status, 200, "{path}");
    }
    let id: i64 = app
        .db()
        .query_row("SELECT min(id) FROM integrations", [], |r| r.get(0))
        .expect("id");
    let second = format!("/sites/{site}/webhooks/{}", id + 1);
    let (status, _, refused) = post(
        &app,
        &admin,
        &second,
        &[("url", &url("hook")), ("message.created", "on")],
    )
    .await;
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused.contains(&format!("Endpoint {id} already posts to this URL")),
        "{refused}"
    );
}

#[tokio::test]
async fn destinations_agents_cannot_open_or_post_to_destination_pages() {
    let app = TestApp::spawn(&[]).await;
    let _admin = admin_of(&app).await;
    let site = app.add_site("Shop");
    add_user(&app, "bo@example.com", "agent");
    let answer = sign_in(&app, "bo@example.com", PASSWORD).await;
    let agent = signed_in_from(&app, &answer).await;
    for page in ["discord", "webhooks", "email"] {
        let path = format!("/sites/{site}/{page}");
        assert_eq!(
            send(&app, "GET", &path, &agent.cookie, None).await.status,
            403,
            "{path}"
        );
    }
    for path in [
        "discord/test",
        "email/test",
        "webhooks",
        "integrations/1/delete",
    ] {
        let (status, _, _) = post(&app, &agent, &format!("/sites/{site}/{path}"), &[]).await;
        assert_eq!(status, 403, "{path}");
    }
}

#[tokio::test]
async fn destinations_the_email_page_shows_the_smtp_server_without_its_password_and_sends_a_test_mail()
 {
    let sink = Sink::start();
    let smtp = format!("smtp://porch:s3cret-pw@127.0.0.1:{}", sink.port);
    let app = TestApp::spawn(&[
        "--smtp-url",
        &smtp,
        "--mail-from",
        "Porch <chat@porch.test>",
    ])
    .await;
    let admin = admin_of(&app).await;
    let site = app.add_site("Shop");
    let page = get(&app, &admin, &format!("/sites/{site}/email")).await;
    assert!(page.contains(&format!("127.0.0.1:{}", sink.port)), "{page}");
    assert!(
        page.contains("yes (password not shown)") && !page.contains("s3cret-pw"),
        "{page}"
    );
    assert!(page.contains("chat@porch.test"));
    assert!(!page.contains("no-smtp-hint"), "email can be turned on");

    // This sink offers no AUTH, so a server with a login fails the test, and the page says why.
    let (_, location, _) = post(&app, &admin, &format!("/sites/{site}/email/test"), &[]).await;
    let failed = wait_until("the test to show as failed", WAIT, async || {
        ok_if(get(&app, &admin, &location).await, |p| {
            p.contains("data-test=\"failed\"")
        })
    })
    .await;
    assert!(failed.contains(") failed: "), "{failed}");

    let plain = TestApp::spawn(&[
        "--smtp-url",
        &format!("smtp://127.0.0.1:{}", sink.port),
        "--mail-from",
        "Porch <chat@porch.test>",
    ])
    .await;
    let plain_admin = admin_of(&plain).await;
    let plain_site = plain.add_site("Shop");
    let (status, location, _) = post(
        &plain,
        &plain_admin,
        &format!("/sites/{plain_site}/email/test"),
        &[],
    )
    .await;
    assert_eq!(status, 303);
    let mails = sink.wait_for(1).await;
    assert_eq!(mails[0]["rcpt_tos"], serde_json::json!(["ana@example.com"]));
    wait_until("the test to show as sent", WAIT, async || {
        ok_if(get(&plain, &plain_admin, &location).await, |p| {
            p.contains("data-test=\"sent\"")
        })
    })
    .await;

    let bad = post(
        &app,
        &admin,
        &format!("/sites/{site}/email"),
        &[("unanswered_after_secs", "x"), ("reply_delay_secs", "5")],
    )
    .await;
    assert_eq!(bad.0, 422);
    let (status, _, _) = post(
        &app,
        &admin,
        &format!("/sites/{site}/email"),
        &[
            ("unanswered_after_secs", "600"),
            ("reply_delay_secs", "180"),
        ],
    )
    .await;
    assert_eq!(status, 303);
    let config: String = app
        .db()
        .query_row(
            "SELECT config FROM integrations WHERE kind = 'email'",
            [],
            |r| r.get(0),
        )
        .expect("config");
    let config: serde_json::Value = serde_json::from_str(&config).expect("json");
    assert_eq!(
        config,
        serde_json::json!({"unanswered_after_ms": 600_000, "reply_delay_ms": 180_000})
    );
}

/// Reloading the page that showed an invitation's link posts it again: the answer says how to
/// get a new link, as the link is shown once.
#[tokio::test]
async fn inviting_an_address_again_says_how_to_make_a_new_link() {
    let app = TestApp::spawn(&[]).await;
    let admin = admin_of(&app).await;
    let invite = [
        ("email", "ada@example.com"),
        ("name", "Ada"),
        ("role", "agent"),
    ];
    let (status, _, first) = post(&app, &admin, "/team/invite", &invite).await;
    assert_eq!(status, 200, "{first}");
    assert!(
        first.contains("Send this link to them yourself."),
        "{first}"
    );
    let (status, _, again) = post(&app, &admin, "/team/invite", &invite).await;
    assert_eq!(status, 409, "{again}");
    assert!(
        again.contains("use Reset link next to their name below"),
        "{again}"
    );
}

#[tokio::test]
async fn destinations_an_invitation_is_delivered_after_the_smtp_server_refused_it_for_a_while() {
    let sink = Sink::start_failing(2);
    let smtp = format!("smtp://127.0.0.1:{}", sink.port);
    let app = TestApp::spawn(&["--smtp-url", &smtp, "--mail-from", "chat@porch.test"]).await;
    let admin = admin_of(&app).await;
    app.add_site("Bikes & Co");
    let (status, _, page) = post(
        &app,
        &admin,
        "/team/invite",
        &[
            ("email", "ada@example.com"),
            ("name", "Ada <Lovelace>"),
            ("role", "agent"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("It is being emailed to them; you can also copy it here."),
        "{page}"
    );
    assert!(page.contains("It works once, for 7 days,"), "{page}");
    let mails = sink.wait_for(1).await;
    let invite = &mails[0];
    assert_eq!(invite["rcpt_tos"], serde_json::json!(["ada@example.com"]));
    assert!(
        invite["html"]
            .as_str()
            .unwrap_or_default()
            .contains("Ada &lt;Lovelace&gt;")
    );
    let link = page
        .split("/invitations/")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .expect("link");
    let text = invite["text"].as_str().unwrap_or_default();
    assert!(text.contains(link), "the mailed link is the one shown");
    // Who invited them, and for which business: not an unexplained mail from "Porch".
    assert!(
        text.contains("Ana invited you to answer chats for Bikes & Co in Porch"),
        "{text}"
    );
    let html = invite["html"].as_str().unwrap_or_default();
    assert!(html.contains("for Bikes &amp; Co in Porch"), "{html}");
    // The attempt is recorded just after the SMTP server took the mail.
    let attempts = wait_until("the delivered attempt", WAIT, async || {
        let attempts: Vec<String> = app
            .db()
            .prepare(
                "SELECT a.outcome FROM job_attempts a JOIN jobs j ON j.id = a.job_id \
                 WHERE j.kind = 'email.account_link' ORDER BY a.seq",
            )
            .expect("attempts")
            .query_map([], |r| r.get(0))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("outcomes");
        ok_if(attempts, |a| a.len() >= 3)
    })
    .await;
    assert_eq!(
        attempts,
        ["retry", "retry", "delivered"],
        "retried on the email lane's schedule"
    );

    reset_links_are_mailed_the_same_way(&app, &admin, &sink).await;
}

/// After the invitation: a reset link for someone with a password goes the same way, and so
/// does one for a name stored before line breaks were refused.
async fn reset_links_are_mailed_the_same_way(app: &TestApp, admin: &Browser, sink: &Sink) {
    // A reset link for someone with a password goes the same way.
    let ana: i64 = app
        .db()
        .query_row(
            "SELECT id FROM users WHERE email = 'ana@example.com'",
            [],
            |r| r.get(0),
        )
        .expect("ana");
    let (status, _, _) = post(app, admin, &format!("/team/{ana}/link"), &[]).await;
    assert_eq!(status, 200);
    let mails = sink.wait_for(2).await;
    assert_eq!(mails[1]["headers"]["subject"], "Reset your Porch password");
    let text = mails[1]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("Ana made you a link to choose a new Porch password"),
        "{text}"
    );

    // A name with a line break is refused now; one stored before that rule still gets its
    // mail, with a `To` that is one header (lettre panicked on it, and the job hung running).
    let (status, _, refused) = post(
        app,
        admin,
        "/team/invite",
        &[
            ("email", "carl@example.com"),
            ("name", "Carl\r\nBcc: evil@example.com"),
            ("role", "agent"),
        ],
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    assert!(refused.contains("cannot hold line breaks"), "{refused}");
    app.db()
        .execute(
            "UPDATE users SET name = 'Ana\r\nBcc: evil@example.com' WHERE id = ?1",
            [ana],
        )
        .expect("an old name");
    let (status, _, _) = post(app, admin, &format!("/team/{ana}/link"), &[]).await;
    assert_eq!(status, 200);
    let mails = sink.wait_for(3).await;
    assert_eq!(mails[2]["rcpt_tos"], serde_json::json!(["ana@example.com"]));
    let to = mails[2]["headers"]["to"].as_str().unwrap_or_default();
    assert!(
        !to.contains('\n') && to.contains("ana@example.com"),
        "{to:?}"
    );
    assert!(mails[2]["headers"].get("bcc").is_none(), "{}", mails[2]);
}

#[tokio::test]
async fn destinations_stored_names_and_errors_are_escaped_and_forms_need_the_csrf_token() {
    let app = TestApp::spawn(&["--allow-private-networks"]).await;
    let admin = admin_of(&app).await;
    let site = app.add_site("Shop");
    let payload = "<script>alert(2)</script><img src=x onerror=alert(1)>";
    let escaped = "&lt;script&gt;alert(2)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;";
    app.db()
        .execute("UPDATE sites SET name = ?1", [payload])
        .expect("name");
    let (status, _, added) = post(
        &app,
        &admin,
        &format!("/sites/{site}/webhooks"),
        &[
            ("url", "http://127.0.0.1:9/hook"),
            ("conversation.closed", "on"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{added}");
    let id: i64 = app
        .db()
        .query_row("SELECT id FROM integrations", [], |r| r.get(0))
        .expect("id");
    app.db()
        .execute(
            "UPDATE integrations SET status = 'broken', last_error = ?1",
            [payload],
        )
        .expect("error");
    for path in [
        format!("/sites/{site}/discord"),
        format!("/sites/{site}/email"),
        format!("/sites/{site}/webhooks"),
        format!("/sites/{site}/webhooks/{id}"),
    ] {
        let page = get(&app, &admin, &path).await;
        assert!(!page.contains(payload), "raw markup on {path}");
        assert!(page.contains(escaped), "{path}: {page}");
    }

    let forged = form(&[("csrf", "forged")]);
    for path in [
        format!("/sites/{site}/discord/test"),
        format!("/sites/{site}/email/test"),
        format!("/sites/{site}/integrations/{id}/delete"),
        format!("/sites/{site}/webhooks/{id}/rotate"),
    ] {
        let answer = send(&app, "POST", &path, &admin.cookie, Some(&forged)).await;
        assert_eq!(answer.status, 403, "{path}");
    }
    assert_eq!(app.count("SELECT count(*) FROM integrations"), 1);
}

/// A test message answers "does it work now?" once; it is not a delivery, so a failed test
/// shows as a failed test and leaves the health as the deliveries made it.
#[tokio::test]
async fn destinations_a_failed_test_message_does_not_make_the_health_failing() {
    let (mock, app, admin, site) = discord_site().await;
    mock.set_failure("H1", Some(DiscordFailure::ServerError { times: 1 }));
    let (_, location, _) = post(&app, &admin, &format!("/sites/{site}/discord/test"), &[]).await;
    let page = wait_until("the test to fail", WAIT, async || {
        ok_if(get(&app, &admin, &location).await, |p| {
            p.contains("data-test=\"failed\"")
        })
    })
    .await;
    assert!(page.contains("data-health=\"healthy\""), "{page}");
    assert!(!page.contains("Failing:"), "{page}");
}

/// One endpoint taking both `conversation.created` and `message.created` gets two deliveries
/// for a conversation's first message; the message's delivery list names the event of each.
#[tokio::test]
async fn destinations_a_webhook_taking_two_events_for_one_message_lists_each_by_its_event() {
    let (mock, app, admin, site) = webhook_app().await;
    let (status, _, added) = post(
        &app,
        &admin,
        &format!("/sites/{site}/webhooks"),
        &[
            ("url", &mock.url("/hook")),
            ("conversation.created", "on"),
            ("message.created", "on"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{added}");
    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("m1", "hello").await;
    mock.wait_for(2, WAIT).await;
    let conversation = app.count("SELECT max(id) FROM conversations");
    let page = wait_until("both deliveries posted", WAIT, async || {
        let page = get(&app, &admin, &format!("/conversations/{conversation}")).await;
        ok_if(page, |p| p.matches("delivery delivery-posted").count() == 2)
    })
    .await;
    for event in ["conversation.created", "message.created"] {
        assert!(page.contains(&format!("Webhook ({event})")), "{page}");
    }
}

/// Without SMTP the server refuses email's settings: the page's button says so before the admin
/// tries (a new user was offered "Turn on email" and then refused).
#[tokio::test]
async fn without_smtp_the_email_page_cannot_turn_email_on() {
    let app = TestApp::spawn(&[]).await;
    let admin = admin_of(&app).await;
    let site = app.add_site("Shop");
    let page = get(&app, &admin, &format!("/sites/{site}/email")).await;
    assert!(page.contains("data-smtp=\"unset\""), "{page}");
    assert!(
        page.contains(
            "<button type=\"submit\" disabled aria-describedby=\"no-smtp-hint\" class=\"button button-primary\">Turn on email</button>"
        ),
        "{page}"
    );
    assert!(page.contains("id=\"no-smtp-hint\""), "{page}");
    // The site's card says it is off first, and comes before the install-wide IMAP form.
    let off = page
        .find("data-email-state=\"off\"")
        .expect("the off state");
    let imap = page.find("id=\"imap-title\"").expect("the IMAP card");
    assert!(off < imap, "{page}");
}
