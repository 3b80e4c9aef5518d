//! Email against a real SMTP server (aiosmtpd, started by the test from
//! tests/deliveries/.venv): the test-send action, one digest for a conversation nobody answered
//! in time (none for one that was answered), an agent reply mailed only while the visitor is
//! away, and the transcript on closing; with the install's sender, `Reply-To`,
//! `Auto-Submitted`, threaded `Message-ID`s and escaped visitor text.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use porch::store::{ConversationId, UserId, VisitorId};
use serde_json::{Value, json};

use crate::helpers::{TestApp, WAIT, Widget, ok_if, wait_until};

/// The SMTP server, killed when dropped.
pub(crate) struct Sink {
    child: Child,
    dir: tempfile::TempDir,
    pub(crate) port: u16,
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sink {
    pub(crate) fn start() -> Self {
        Self::start_failing(0)
    }

    /// A server that answers the first `tempfail` messages with 451 (try again later).
    pub(crate) fn start_failing(tempfail: u32) -> Self {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/deliveries");
        let python = std::env::var("PORCH_TEST_PYTHON")
            .map_or_else(|_| root.join(".venv/bin/python"), PathBuf::from);
        assert!(
            python.exists(),
            "{} is missing: run scripts/test once (it installs aiosmtpd there)",
            python.display()
        );
        let dir = tempfile::tempdir().expect("dir");
        let mut child = Command::new(python)
            .arg(root.join("smtp_sink.py"))
            .arg(dir.path())
            .env("SMTP_SINK_TEMPFAIL", tempfail.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the SMTP server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the port");
        let port = line.trim().parse().expect("a port number");
        Self { child, dir, port }
    }

    fn mails(&self) -> Vec<Value> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(self.dir.path())
            .expect("dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        paths
            .iter()
            .map(|p| {
                serde_json::from_str(&std::fs::read_to_string(p).expect("read")).expect("json")
            })
            .collect()
    }

    pub(crate) async fn wait_for(&self, n: usize) -> Vec<Value> {
        wait_until(&format!("{n} mails"), WAIT, async || {
            ok_if(self.mails(), |mails| mails.len() >= n)
        })
        .await
    }
}

/// Closes the visitor's widget and waits until the server has seen it go, so that a reply sent
/// next finds them away.
pub(crate) async fn leave(app: &TestApp, mut widget: Widget, visitor: VisitorId) {
    widget.ws.close(None).await.expect("close");
    drop(widget);
    let hub = app.server.as_ref().expect("server").app.chat.hub().clone();
    wait_until("the widget to disconnect", WAIT, async || {
        ok_if(hub.is_visitor_connected(visitor), |connected| !connected)
    })
    .await;
}

/// A server mailing through `sink`, an admin's API token, and a site with email on and these
/// delays: (app, admin token, site key).
pub(crate) async fn site_with_email(sink: &Sink, delays: Value) -> (TestApp, String, String) {
    let smtp = format!("smtp://127.0.0.1:{}", sink.port);
    let app = TestApp::spawn(&["--smtp-url", &smtp, "--mail-from", "chat@porch.test"]).await;
    let admin = app.add_user_token("Admin", "admin");
    let site = app.add_site("Shop");
    let path = format!("/api/v1/sites/{site}/integrations/email");
    let (status, answer) = app.api("POST", &path, &admin, Some(delays)).await;
    assert_eq!(status, 201, "{answer}");
    (app, admin, site)
}

pub(crate) fn header<'a>(mail: &'a Value, name: &str) -> &'a str {
    mail["headers"][name].as_str().unwrap_or_default()
}

#[tokio::test]
#[allow(clippy::too_many_lines)] // one story: the mails of two conversations, in order
async fn digest_offline_reply_and_transcript_reach_a_real_smtp_server() {
    let sink = Sink::start();
    let smtp = format!("smtp://127.0.0.1:{}", sink.port);
    let app = TestApp::spawn(&[
        "--smtp-url",
        &smtp,
        "--mail-from",
        "Porch <chat@porch.test>",
    ])
    .await;
    let admin = app.add_user_token("Admin", "admin");
    let site = app.add_site("Shop");
    app.set_site_limits(&site, 10_000, 1_000, 100_000, 10_000);
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/sites/{site}/integrations/email"),
            &admin,
            Some(json!({"unanswered_after_secs": 1, "reply_delay_secs": 0})),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    // Again: the same integration takes the delays (200), a second one would mail twice; a
    // delay over a week is refused as on the page.
    let again = app
        .api(
            "POST",
            &format!("/api/v1/sites/{site}/integrations/email"),
            &admin,
            Some(json!({"unanswered_after_secs": 1, "reply_delay_secs": 0})),
        )
        .await;
    assert_eq!(
        (again.0, &again.1["id"]),
        (200, &answer["id"]),
        "{}",
        again.1
    );
    let too_late = app
        .api(
            "POST",
            &format!("/api/v1/sites/{site}/integrations/email"),
            &admin,
            Some(json!({"unanswered_after_secs": 604_801})),
        )
        .await;
    assert_eq!(too_late.0, 422, "{}", too_late.1);
    assert_eq!(
        app.count("SELECT count(*) FROM integrations WHERE kind = 'email'"),
        1
    );

    // The test-send action.
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/email/test",
            &admin,
            Some(json!({"to": "admin@example.com"})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let mails = sink.wait_for(1).await;
    assert_eq!(header(&mails[0], "subject"), "Porch test email");
    // A mistyped address is refused as the request's fault; nothing reaches the SMTP server.
    let (status, answer) = app
        .api(
            "POST",
            "/api/v1/email/test",
            &admin,
            Some(json!({"to": "not-an-address"})),
        )
        .await;
    assert_eq!(
        (status, &answer["error"]["code"]),
        (422, &json!("invalid")),
        "{answer}"
    );

    // Alice waits with her address left; Bob is answered at once.
    let (mut alice, _) = app.visitor(&site, None, 0).await;
    alice.say("a1", "<b>Help</b> & \"more\"").await;
    // An address that would show agents another one (a direction override) is refused.
    alice
        .send(json!({"type": "email", "email": "ceo\u{202E}moc.knab@x.test"}))
        .await;
    assert_eq!(alice.recv().await["code"], "invalid_message");
    alice
        .send(json!({"type": "email", "email": "alice@example.org"}))
        .await;
    let saved = alice.recv().await;
    assert_eq!(
        saved,
        json!({"type": "email_saved", "email": "alice@example.org"})
    );
    let alice_conversation = ConversationId(app.count("SELECT max(id) FROM conversations"));
    let (mut bob, _) = app.visitor(&site, None, 0).await;
    bob.say("b1", "quick question").await;
    let bob_conversation = ConversationId(app.count("SELECT max(id) FROM conversations"));
    let (status, _) = app
        .api(
            "POST",
            &format!("/api/v1/conversations/{bob_conversation}/messages"),
            &admin,
            Some(json!({"body": "Answered!"})),
        )
        .await;
    assert_eq!(status, 201);

    let mails = sink.wait_for(2).await;
    let digest = &mails[1];
    assert_eq!(digest["rcpt_tos"], json!(["admin@example.com"]));
    assert_eq!(header(digest, "from"), "Porch <chat@porch.test>");
    assert_eq!(header(digest, "reply-to"), "alice@example.org");
    assert_eq!(header(digest, "auto-submitted"), "auto-generated");
    assert!(header(digest, "message-id").ends_with("@porch.test>"));
    let html = digest["html"].as_str().expect("an HTML part");
    let text = digest["text"].as_str().expect("a text part");
    assert!(
        html.contains("&lt;b&gt;Help&lt;/b&gt; &amp; &quot;more&quot;"),
        "{html}"
    );
    assert!(!html.contains("<b>Help</b>"));
    assert!(text.contains("<b>Help</b> & \"more\""), "{text}");
    assert_eq!(
        header(digest, "subject"),
        "[Shop] 1 conversation waiting for an answer"
    );
    assert!(
        text.starts_with("1 conversation on Shop is waiting"),
        "{text}"
    );
    assert!(text.contains(&format!("/conversations/{alice_conversation}")));
    assert!(
        !text.contains(&format!("/conversations/{bob_conversation}")),
        "an answered conversation is not in the digest"
    );

    // A reply while Alice has the widget open is not mailed; one after she left is.
    let reply_path = format!("/api/v1/conversations/{alice_conversation}/messages");
    let reply =
        |body: &'static str| app.api("POST", &reply_path, &admin, Some(json!({"body": body})));
    assert_eq!(reply("Seen live").await.0, 201);
    let reply_frame = alice.recv().await;
    assert_eq!(reply_frame["body"], "Seen live");
    wait_until("the reply job to run", WAIT, async || {
        let done = app.count(
            "SELECT count(*) FROM jobs WHERE kind = 'email.reply' AND state = 'done' \
             AND external_ref = 'the visitor is online'",
        );
        ok_if(done, |n| *n >= 1)
    })
    .await;
    let visitor = VisitorId(app.count(&format!(
        "SELECT visitor_id FROM conversations WHERE id = {alice_conversation}"
    )));
    leave(&app, alice, visitor).await;
    assert_eq!(reply("We <3 you & will mail").await.0, 201);
    let mails = sink.wait_for(3).await;
    let offline = &mails[2];
    assert_eq!(offline["rcpt_tos"], json!(["alice@example.org"]));
    assert_eq!(header(offline, "from"), "Porch <chat@porch.test>");
    assert_eq!(header(offline, "reply-to"), "Porch <chat@porch.test>");
    assert_eq!(header(offline, "auto-submitted"), "auto-generated");
    let token: String = app
        .db()
        .query_row(
            "SELECT token FROM mail_threads WHERE conversation_id = ?1",
            [alice_conversation.0],
            |r| r.get(0),
        )
        .expect("the conversation's mail token");
    assert_eq!(token.len(), 32, "128 random bits in hex");
    let thread = format!("<porch.conversation-{alice_conversation}.{token}@porch.test>");
    assert_eq!(header(offline, "in-reply-to"), thread);
    assert_eq!(header(offline, "references"), thread);
    let html = offline["html"].as_str().expect("html");
    assert!(html.contains("We &lt;3 you &amp; will mail"), "{html}");
    assert!(
        offline["text"]
            .as_str()
            .expect("text")
            .contains("We <3 you & will mail")
    );

    // Closing mails the transcript of the conversation as it is then: a message written after
    // the closing (here dated an hour ahead) belongs to no retry of this transcript.
    app.db()
        .execute(
            "INSERT INTO messages (conversation_id, author, visitor_id, client_id, body, created_at) \
             SELECT id, 'visitor', visitor_id, 'late1', 'written after closing', ?2 \
               FROM conversations WHERE id = ?1",
            [alice_conversation.0, porch::clock::now_ms() + 3_600_000],
        )
        .expect("a later message");
    // A visitor's text laid out as an agent's line stays inside the visitor's message.
    app.db()
        .execute(
            "INSERT INTO messages (conversation_id, author, visitor_id, client_id, body, created_at) \
             SELECT id, 'visitor', visitor_id, 'forged1', ?2, ?3 FROM conversations WHERE id = ?1",
            rusqlite::params![
                alice_conversation.0,
                "Thanks.\n\nAdmin: Please confirm your card at https://x.example",
                porch::clock::now_ms()
            ],
        )
        .expect("a forged line");
    let server_app = &app.server.as_ref().expect("server").app;
    let admin_id = UserId(app.count("SELECT id FROM users WHERE name = 'Admin'"));
    let admin_user = server_app
        .readers
        .read(move |c| porch::store::find_user(c, admin_id))
        .await
        .expect("read")
        .expect("admin");
    server_app
        .chat
        .close_conversation(alice_conversation, &admin_user, None)
        .await
        .expect("close");
    let mails = sink.wait_for(4).await;
    let transcript = &mails[3];
    assert_eq!(transcript["rcpt_tos"], json!(["alice@example.org"]));
    assert_eq!(header(transcript, "in-reply-to"), thread);
    let job = app.count("SELECT id FROM jobs WHERE kind = 'email.transcript'");
    assert_eq!(
        header(transcript, "message-id"),
        format!("<porch.transcript-{job}.{token}@porch.test>"),
        "one Message-ID per closing"
    );
    let html = transcript["html"].as_str().expect("html");
    assert!(!html.contains("written after closing"), "{html}");
    let text = transcript["text"]
        .as_str()
        .expect("text")
        .replace("\r\n", "\n");
    assert!(
        text.contains("You:\n  Thanks.\n  \n  Admin: Please confirm"),
        "{text}"
    );
    assert!(!text.contains("\nAdmin: Please"), "{text}");
    for part in [
        "&lt;b&gt;Help&lt;/b&gt;",
        "Seen live",
        "We &lt;3 you &amp; will mail",
    ] {
        assert!(html.contains(part), "{part} in {html}");
    }

    // Nothing else: one digest, no mail for Bob, none for the reply seen live.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(sink.mails().len(), 4, "{:?}", sink.mails());
}

#[tokio::test]
async fn the_digest_goes_to_each_agent_alone_and_a_refused_address_costs_only_its_own_mail() {
    let sink = Sink::start();
    let smtp = format!("smtp://127.0.0.1:{}", sink.port);
    let app = TestApp::spawn(&["--smtp-url", &smtp, "--mail-from", "chat@porch.test"]).await;
    let admin = app.add_user_token("Admin", "admin");
    // The sink refuses refused@example.com, listed between the two others.
    app.add_user_token("Refused", "agent");
    app.add_user_token("Bea", "agent");
    // Invited, not joined (no password, no single sign-on): a mistyped invitation must not
    // mail a stranger the visitors' words.
    app.db()
        .execute(
            "INSERT INTO users (email, name, role, created_at) \
             VALUES ('invited@example.com', 'Cy', 'agent', 0)",
            [],
        )
        .expect("an invited user");
    let site = app.add_site("Shop");
    app.set_site_limits(&site, 10_000, 1_000, 100_000, 10_000);
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/sites/{site}/integrations/email"),
            &admin,
            Some(json!({"unanswered_after_secs": 1})),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("v1", "anyone there?").await;

    wait_until("the digest job to finish", WAIT, async || {
        let done = app
            .count("SELECT count(*) FROM jobs WHERE kind = 'email.unanswered' AND state = 'done'");
        ok_if(done, |n| *n >= 1)
    })
    .await;
    let mails = sink.wait_for(2).await;
    assert_eq!(mails.len(), 2, "{mails:?}");
    let mut to: Vec<(Value, String)> = mails
        .iter()
        .map(|m| (m["rcpt_tos"].clone(), header(m, "to").to_owned()))
        .collect();
    to.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(
        to,
        [
            (json!(["admin@example.com"]), "admin@example.com".to_owned()),
            (json!(["bea@example.com"]), "bea@example.com".to_owned()),
        ],
        "one mail per agent, nobody else's address in it"
    );
    assert_ne!(
        header(&mails[0], "message-id"),
        header(&mails[1], "message-id")
    );
    // An anonymous visitor is named as the inbox names them, so the entry can be found there.
    let label = format!(
        "- Visitor #{}:",
        app.count("SELECT visitor_id FROM conversations")
    );
    assert!(mails.iter().all(|m| {
        m["text"]
            .as_str()
            .is_some_and(|t| t.contains("anyone there?") && t.contains(&label))
    }));
    // Done, and the one missed is told where an admin reads deliveries.
    let (status, done) = app
        .api("GET", "/api/v1/jobs?state=done", &admin, None)
        .await;
    assert_eq!(status, 200, "{done}");
    let digest = done["jobs"]
        .as_array()
        .and_then(|jobs| jobs.iter().find(|j| j["kind"] == "email.unanswered"))
        .expect("the digest job");
    let note = digest["external_ref"].as_str().unwrap_or_default();
    assert!(
        note.starts_with("sent to 2 of 3 agent(s); not sent: "),
        "{digest}"
    );
}

#[tokio::test]
async fn saves_at_the_same_time_turn_email_on_once() {
    let app = TestApp::spawn(&[
        "--smtp-url",
        "smtp://127.0.0.1:9",
        "--mail-from",
        "chat@porch.test",
    ])
    .await;
    let admin = app.add_user_token("Admin", "admin");
    let site = app.add_site("Shop");
    let path = format!("/api/v1/sites/{site}/integrations/email");
    let body = json!({"unanswered_after_secs": 60, "reply_delay_secs": 0});
    let saves = (0..8).map(|_| app.api("POST", &path, &admin, Some(body.clone())));
    let mut statuses: Vec<u16> = futures_util::future::join_all(saves)
        .await
        .into_iter()
        .map(|(status, _)| status)
        .collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 200, 200, 201]);
    assert_eq!(
        app.count("SELECT count(*) FROM integrations WHERE kind = 'email'"),
        1
    );
}

/// An address the widget takes is one a mail can go to: a quoted local part is mailed, and one
/// a message's envelope refuses is refused when left (once, such a reply went nowhere while its
/// job said done).
#[tokio::test]
async fn a_quoted_address_the_widget_took_gets_its_replies() {
    let sink = Sink::start();
    let (app, admin, site) = site_with_email(
        &sink,
        json!({"unanswered_after_secs": 1, "reply_delay_secs": 0}),
    )
    .await;
    let quoted = "\"john.doe\"@example.org";
    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("v1", "mail me").await;
    visitor
        .send(json!({"type": "email", "email": "\"<!channel> *x*\"@example.org"}))
        .await;
    let refused = visitor.recv().await;
    assert_eq!(
        (&refused["code"], &refused["message"]),
        (
            &json!("invalid_message"),
            &json!("Please check the email address.")
        )
    );
    visitor
        .send(json!({"type": "email", "email": quoted}))
        .await;
    assert_eq!(
        visitor.recv().await,
        json!({"type": "email_saved", "email": quoted})
    );
    // The quotes say nothing here, and the mail goes out without them.
    let mailed = "john.doe@example.org";
    let digest = sink.wait_for(1).await;
    assert_eq!(header(&digest[0], "reply-to"), mailed, "{:?}", digest[0]);

    leave(
        &app,
        visitor,
        VisitorId(app.count("SELECT max(id) FROM visitors")),
    )
    .await;
    let conversation = app.count("SELECT max(id) FROM conversations");
    let (status, _) = app
        .api(
            "POST",
            &format!("/api/v1/conversations/{conversation}/messages"),
            &admin,
            Some(json!({"body": "Here it is"})),
        )
        .await;
    assert_eq!(status, 201);
    let mails = sink.wait_for(2).await;
    assert_eq!(mails[1]["rcpt_tos"], json!([mailed]), "{:?}", mails[1]);
    assert!(
        mails[1]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Here it is"))
    );
}

/// Conversations that come due close together share one digest: a site's digests go out at
/// most once per its delay (docs/integrations/email.md).
#[tokio::test]
async fn conversations_started_close_together_share_one_digest() {
    let sink = Sink::start();
    let (app, _, site) = site_with_email(&sink, json!({"unanswered_after_secs": 4})).await;
    // Start just after a whole multiple of 4 s; four conversations 0.7 s apart all come due
    // before the next multiple. Each came due on its own before: four digests.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis();
    let into = u64::try_from(now % 4000).expect("small");
    tokio::time::sleep(Duration::from_millis(4050 - into)).await;
    let mut visitors = Vec::new();
    for n in 0..4 {
        let (mut visitor, _) = app.visitor(&site, None, 0).await;
        visitor
            .say(&format!("v{n}"), &format!("question {n}"))
            .await;
        visitors.push(visitor);
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    sink.wait_for(1).await;
    // Later jobs of the four find them listed.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mails = sink.mails();
    assert_eq!(mails.len(), 1, "one digest for the admin: {mails:?}");
    let text = mails[0]["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("4 conversations on Shop are waiting"),
        "{text}"
    );
    // Due later than planned, each has its full day from when it is due.
    assert_eq!(
        app.count(
            "SELECT count(*) FROM jobs WHERE kind = 'email.unanswered' \
               AND deadline_at - run_at = 86400000"
        ),
        4
    );
}

/// A mail server that gives no SMTP answer is described in words, not as lettre's chain of
/// errors ("Connection error: Connection error: …").
#[tokio::test]
async fn a_failed_connection_to_the_smtp_server_is_said_in_words() {
    let sink = Sink::start();
    // Port 1 (tcpmux), where nothing listens: a port freed by this test could be taken by another
    // test's server running alongside before the connection (it once answered and hung up).
    let closed_port = 1;
    // Takes connections and never greets: a tarpit, or a firewall that half-opens. The kernel
    // accepts them into the backlog; nothing here reads or writes.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let silent_port = silent.local_addr().expect("addr").port();
    for (url, expected) in [
        (
            format!("smtp://127.0.0.1:{closed_port}"),
            "The test mail was not sent: could not connect: connection refused",
        ),
        (
            format!("smtp://127.0.0.1:{silent_port}"),
            "The test mail was not sent: no answer in time (timed out)",
        ),
        (
            format!("smtp://127.0.0.1:{}?tls=required", sink.port),
            "The test mail was not sent: the SMTP server does not offer STARTTLS, and the SMTP URL \
             requires TLS",
        ),
    ] {
        let app = TestApp::spawn(&["--smtp-url", &url, "--mail-from", "chat@porch.test"]).await;
        let admin = app.add_user_token("Ana", "admin");
        let (status, answer) = app
            .api(
                "POST",
                "/api/v1/email/test",
                &admin,
                Some(json!({"to": "admin@example.com"})),
            )
            .await;
        assert_eq!(status, 422, "{answer}");
        assert_eq!(answer["error"]["message"], expected, "{url}");
    }
    drop(silent);
}
