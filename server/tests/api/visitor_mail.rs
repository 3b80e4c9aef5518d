//! "Email the visitor" from the conversation page, against a real SMTP server (aiosmtpd) and a
//! real IMAP server (pymap), both from tests/deliveries/.venv: the mail is the agent's message in
//! the conversation (live to the visitor, marked as sent by email with its subject), goes out as
//! a durable `email.agent` job that retries a 451, threaded under the conversation's mail token,
//! and the visitor's answer comes back into the conversation; refusals say why and store
//! nothing; a refused mail fails and shows on the Deliveries page.

use porch::store::ConversationId;
use serde_json::{Value, json};

use crate::email::Sink;
use crate::email_inbound::Imap;
use crate::helpers::{Answer, TestApp, WAIT, ok_if, wait_until};
use crate::inbox::{Browser, form, send, setup_admin, signed_in_from};

/// Porch with SMTP (and IMAP when given), a signed-in admin, a site with email on, and a
/// visitor who wrote once and left `address` (if any), still connected.
struct Story {
    app: TestApp,
    browser: Browser,
    visitor: crate::helpers::Widget,
    conversation: ConversationId,
}

impl Story {
    async fn start(
        sink: &Sink,
        imap: Option<&Imap>,
        address: Option<&str>,
        email_on: bool,
    ) -> Self {
        let mut args = vec![
            "--smtp-url".to_owned(),
            format!("smtp://127.0.0.1:{}", sink.port),
            "--mail-from".to_owned(),
            "Porch <chat@porch.test>".to_owned(),
        ];
        if let Some(imap) = imap {
            args.extend([
                "--imap-url".to_owned(),
                imap.url(),
                "--imap-poll".to_owned(),
                "1s".to_owned(),
            ]);
        }
        let app = TestApp::spawn(&args.iter().map(String::as_str).collect::<Vec<_>>()).await;
        let browser = signed_in_from(&app, &setup_admin(&app).await).await;
        let admin = app.add_user_token("Admin", "admin");
        let site = app.add_site("Shop");
        if email_on {
            // Replies while away at once: an agent's mail must not also queue one.
            let (status, answer) = app
                .api(
                    "POST",
                    &format!("/api/v1/sites/{site}/integrations/email"),
                    &admin,
                    Some(json!({"reply_delay_secs": 0})),
                )
                .await;
            assert_eq!(status, 201, "{answer}");
        }
        let (mut visitor, _) = app.visitor(&site, None, 0).await;
        let ack = visitor.say("a1", "Is the jumper in stock?").await;
        assert_eq!(ack["type"], "ack", "{ack}");
        if let Some(address) = address {
            visitor
                .send(json!({"type": "email", "email": address}))
                .await;
            visitor.recv().await;
        }
        let conversation = ConversationId(app.count("SELECT max(id) FROM conversations"));
        Self {
            app,
            browser,
            visitor,
            conversation,
        }
    }

    async fn page(&self) -> String {
        let page = send(
            &self.app,
            "GET",
            &format!("/conversations/{}", self.conversation),
            &self.browser.cookie,
            None,
        )
        .await;
        assert_eq!(page.status, 200, "{}", page.body);
        page.body
    }

    async fn email(&self, subject: &str, body: &str) -> Answer {
        self.email_with_id("", subject, body).await
    }

    /// The mail form sent with `client_id`, the page's id for the mail ("" as without one).
    async fn email_with_id(&self, client_id: &str, subject: &str, body: &str) -> Answer {
        let fields = form(&[
            ("csrf", &self.browser.csrf),
            ("subject", subject),
            ("body", body),
            ("client_id", client_id),
        ]);
        send(
            &self.app,
            "POST",
            &format!("/conversations/{}/email", self.conversation),
            &self.browser.cookie,
            Some(&fields),
        )
        .await
    }

    fn agent_messages(&self) -> i64 {
        self.app.count(&format!(
            "SELECT count(*) FROM messages WHERE conversation_id = {} AND author = 'agent'",
            self.conversation
        ))
    }

    async fn job_state(&self) -> (String, i64) {
        wait_until("the email.agent job to finish", WAIT, async || {
            let state: (String, i64) = self
                .app
                .db()
                .query_row(
                    "SELECT state, attempt FROM jobs WHERE kind = 'email.agent'",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .expect("the job");
            ok_if(state, |(state, _)| state == "done" || state == "failed")
        })
        .await
    }
}

fn header(mail: &Value, name: &str) -> String {
    mail["headers"][name]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
#[allow(clippy::too_many_lines)] // one story: the mail out, its retry, and the answer back in
async fn an_agent_mails_the_visitor_and_her_answer_comes_back_into_the_conversation() {
    // The first attempt is answered 451, as a greylisting server does: the job retries.
    let sink = Sink::start_failing(1);
    let imap = Imap::start();
    let mut story = Story::start(&sink, Some(&imap), Some("ana@example.org"), true).await;

    let page = story.page().await;
    assert!(page.contains("Email the visitor"), "{page}");
    assert!(
        page.contains("To <strong><bdi>ana@example.org</bdi></strong>"),
        "{page}"
    );

    let answer = story
        .email(
            "About your order <b>",
            "The jumper is back <i>tomorrow</i>.\nAna from Shop",
        )
        .await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let location = answer.header("location").expect("a redirect").to_owned();
    let message: i64 = story.app.count(&format!(
        "SELECT max(id) FROM messages WHERE conversation_id = {} AND author = 'agent'",
        story.conversation
    ));
    assert_eq!(
        location,
        format!(
            "/conversations/{}?notice=mail-queued#message-{message}",
            story.conversation
        )
    );

    // The visitor, online, sees it live as the agent's message (after the read receipt of the
    // agent's look at the page).
    let frame = loop {
        let frame = story.visitor.recv().await;
        if frame["type"] != "read" {
            break frame;
        }
    };
    assert_eq!(frame["type"], "message", "{frame}");
    assert_eq!(
        frame["body"],
        "The jumper is back <i>tomorrow</i>.\nAna from Shop"
    );

    let mails = sink.wait_for(1).await;
    let mail = &mails[0];
    assert_eq!(mail["rcpt_tos"], json!(["ana@example.org"]));
    assert_eq!(header(mail, "subject"), "About your order <b>");
    assert_eq!(header(mail, "reply-to"), "Porch <chat@porch.test>");
    let token: String = story
        .app
        .db()
        .query_row(
            "SELECT token FROM mail_threads WHERE conversation_id = ?1",
            [story.conversation.0],
            |r| r.get(0),
        )
        .expect("the conversation's mail token");
    let message_id = header(mail, "message-id");
    assert_eq!(
        message_id,
        format!("<porch.message-{message}.{token}@porch.test>")
    );
    assert_eq!(
        header(mail, "references"),
        format!(
            "<porch.conversation-{}.{token}@porch.test>",
            story.conversation
        )
    );
    let text = mail["text"]
        .as_str()
        .expect("a text part")
        .replace("\r\n", "\n");
    assert_eq!(
        text,
        "The jumper is back <i>tomorrow</i>.\nAna from Shop\n\n-- \nAna, Shop\n\
         Answer this mail to reply in the conversation.\n"
    );
    let html = mail["html"].as_str().expect("an HTML part");
    assert!(
        html.contains("&lt;i&gt;tomorrow&lt;/i&gt;"),
        "escaped: {html}"
    );
    assert_eq!(story.job_state().await, ("done".to_owned(), 2));
    // Only the agent's mail: no "reply while away" job besides it.
    assert_eq!(
        story
            .app
            .count("SELECT count(*) FROM jobs WHERE kind = 'email.reply'"),
        0
    );

    // The page marks it as sent by email, with its subject (escaped) and its delivery.
    let page = story.page().await;
    assert!(
        page.contains("sent by email: <q>About your order &lt;b&gt;</q>"),
        "{page}"
    );
    assert!(page.contains("delivery delivery-posted"), "{page}");

    // Ana answers the mail; the IMAP reader posts it as her message.
    let reply = format!(
        "From: Ana <ana@example.org>\r\nTo: Porch <chat@porch.test>\r\n\
         Subject: Re: About your order\r\nDate: Tue, 1 Dec 2026 10:05:00 +0000\r\n\
         Message-ID: <answer-1@mail.example.org>\r\nIn-Reply-To: {message_id}\r\n\
         References: {} {message_id}\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\r\n\
         Great, I'll wait.\r\n\r\nOn Tue, 1 Dec 2026, Porch wrote:\r\n> The jumper is back\r\n",
        header(mail, "references")
    );
    imap.deliver(&reply).await;
    let conversation = story.conversation.0;
    let bodies = wait_until("the answer in the conversation", WAIT, async || {
        let db = story.app.db();
        let mut stmt = db
            .prepare(
                "SELECT body FROM messages WHERE conversation_id = ?1 AND author = 'visitor' \
                 ORDER BY id",
            )
            .expect("prepare");
        let bodies: Vec<String> = stmt
            .query_map([conversation], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        ok_if(bodies, |b| b.len() == 2)
    })
    .await;
    assert_eq!(bodies, ["Is the jumper in stock?", "Great, I'll wait."]);
}

#[tokio::test]
async fn a_mail_is_refused_with_the_reason_and_nothing_stored_without_an_address_or_email() {
    let sink = Sink::start();
    // No address left: no form, and a post is refused.
    let story = Story::start(&sink, None, None, true).await;
    assert!(!story.page().await.contains("Email the visitor"));
    let answer = story.email("Hello", "Are you there?").await;
    assert_eq!(answer.status, 422, "{}", answer.body);
    assert!(
        answer.body.contains("The visitor left no email address."),
        "{}",
        answer.body
    );
    assert_eq!(story.agent_messages(), 0);
    drop(story);

    // An address, but email is not on for the site: the page says so instead of the form, and
    // a post (from a page loaded before email was turned off) is refused.
    let story = Story::start(&sink, None, Some("ana@example.org"), false).await;
    let page = story.page().await;
    assert!(!page.contains("Email the visitor"), "{page}");
    assert!(page.contains("Email is off for this site"), "{page}");
    let answer = story.email("Hello", "Are you there?").await;
    assert_eq!(answer.status, 422, "{}", answer.body);
    assert!(
        answer
            .body
            .contains("Email is not turned on for this site."),
        "{}",
        answer.body
    );
    assert_eq!(story.agent_messages(), 0);
    drop(story);

    // Email on, but the form is wrong: an empty or two-line subject, an empty body, no CSRF.
    let story = Story::start(&sink, None, Some("ana@example.org"), true).await;
    for (subject, body, reason) in [
        ("  ", "Hi", "The subject is empty."),
        (
            "Hello\r\nBcc: x@evil.test",
            "Hi",
            "The subject must be one line.",
        ),
        ("Hello\u{2028}again", "Hi", "The subject must be one line."),
        ("Hello", " ", "The message is empty."),
    ] {
        let answer = story.email(subject, body).await;
        assert_eq!(answer.status, 422, "{}", answer.body);
        assert!(answer.body.contains(reason), "{reason}: {}", answer.body);
    }
    let forged = send(
        &story.app,
        "POST",
        &format!("/conversations/{}/email", story.conversation),
        &story.browser.cookie,
        Some(&form(&[("subject", "Hello"), ("body", "Hi")])),
    )
    .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert_eq!(story.agent_messages(), 0);
    assert_eq!(
        story
            .app
            .count("SELECT count(*) FROM jobs WHERE kind = 'email.agent'"),
        0
    );
}

#[tokio::test]
async fn a_refused_mail_fails_and_shows_on_the_deliveries_page() {
    let sink = Sink::start();
    // The sink refuses the mailbox "refused" with 550.
    let story = Story::start(&sink, None, Some("refused@example.org"), true).await;
    let answer = story.email("Your order", "It shipped.").await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let (state, attempts) = story.job_state().await;
    assert_eq!((state.as_str(), attempts), ("failed", 1));

    let page = story.page().await;
    assert!(page.contains("delivery delivery-failed"), "{page}");
    let deliveries = send(
        &story.app,
        "GET",
        "/deliveries",
        &story.browser.cookie,
        None,
    )
    .await;
    assert_eq!(deliveries.status, 200);
    assert!(
        deliveries.body.contains("an agent's mail to the visitor"),
        "{}",
        deliveries.body
    );
    assert!(
        deliveries.body.contains("the SMTP server refused the mail"),
        "{}",
        deliveries.body
    );
}

#[tokio::test]
async fn without_a_mailbox_to_read_the_mail_does_not_invite_an_answer() {
    let sink = Sink::start();
    let story = Story::start(&sink, None, Some("ana@example.org"), true).await;
    // A subject holding what reads as an encoded word arrives as typed, never decoded into a
    // line break and a header.
    let subject = "Your order =?utf-8?q?A=0D=0ABcc:_evil@example.com?= shipped";
    let answer = story.email(subject, "It shipped.").await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let mails = sink.wait_for(1).await;
    assert_eq!(
        header(&mails[0], "subject").replace('\u{2060}', ""),
        subject
    );
    let text = mails[0]["text"]
        .as_str()
        .expect("a text part")
        .replace("\r\n", "\n");
    assert!(text.starts_with("It shipped.\n\n-- \n"), "{text}");
    assert!(!text.contains("Answer this mail"), "{text}");
    let html = mails[0]["html"].as_str().expect("an HTML part");
    assert!(!html.contains("Answer this mail"), "{html}");
    // The form says so before the agent writes.
    let path = format!("/conversations/{}", story.conversation);
    let page = send(&story.app, "GET", &path, &story.browser.cookie, None).await;
    assert!(
        page.body.contains("no mailbox is read for answers"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("comes back into this conversation"));
}

#[tokio::test]
async fn the_mail_form_sent_twice_mails_once() {
    let sink = Sink::start();
    let story = Story::start(&sink, None, Some("ana@example.org"), true).await;
    let page = story.page().await;
    let mail_form = &page[page.find("/email\"").expect("the mail form")..];
    let at = mail_form
        .find("name=\"client_id\" value=\"")
        .expect("its id")
        + 24;
    let id = mail_form[at..]
        .split('"')
        .next()
        .expect("a value")
        .to_owned();
    assert!(id.len() >= 22, "{id}");

    // A double click: both posts arrive, both are answered with the one stored mail.
    let first = story.email_with_id(&id, "Your order", "It shipped.").await;
    let again = story.email_with_id(&id, "Your order", "It shipped.").await;
    assert_eq!(first.status, 303, "{}", first.body);
    assert_eq!(again.header("location"), first.header("location"));
    assert_eq!(story.agent_messages(), 1);
    assert_eq!(story.job_state().await.0, "done");
    assert_eq!(
        story
            .app
            .count("SELECT count(*) FROM jobs WHERE kind = 'email.agent'"),
        1
    );
    assert_eq!(sink.wait_for(1).await.len(), 1);
    // The same id with other text is another mail: refused, nothing stored.
    let other = story.email_with_id(&id, "Your order", "It is late.").await;
    assert_eq!(other.status, 422, "{}", other.body);
    assert_eq!(story.agent_messages(), 1);
}

/// `welcome.site.mails_replies`: the widget asks for an address, and promises replies by email,
/// only when SMTP is configured and the site's email is on; read at each welcome, so turning email
/// off reaches the next visitor at once.
#[tokio::test]
async fn the_widget_is_told_whether_an_address_gets_replies() {
    let bare = TestApp::spawn(&[]).await;
    let (_visitor, welcome) = bare.visitor(&bare.add_site("Shop"), None, 0).await;
    assert_eq!(welcome["site"]["mails_replies"], false, "no SMTP");

    let sink = Sink::start();
    let story = Story::start(&sink, None, None, true).await;
    let key: String = story
        .app
        .db()
        .query_row("SELECT key FROM sites", [], |r| r.get(0))
        .expect("the site");
    let (_visitor, welcome) = story.app.visitor(&key, None, 0).await;
    assert_eq!(welcome["site"]["mails_replies"], true, "SMTP and email on");

    let id = story
        .app
        .count("SELECT id FROM integrations WHERE kind = 'email'");
    let admin = story.app.add_user_token("Admin2", "admin");
    let path = format!("/api/v1/integrations/{id}/turn-off");
    assert_eq!(story.app.api("POST", &path, &admin, None).await.0, 200);
    let (_visitor, welcome) = story.app.visitor(&key, None, 0).await;
    assert_eq!(welcome["site"]["mails_replies"], false, "email turned off");
}

/// The subject an agent typed is the visitor's data too: their export carries it on the message.
#[tokio::test]
async fn the_visitors_export_carries_the_subject_of_a_mail_to_them() {
    let sink = Sink::start();
    let story = Story::start(&sink, None, Some("dee@example.org"), true).await;
    let answer = story.email("Your order 4417", "It shipped.").await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let out = crate::privacy::cli(&story.app, &["export", "--email", "dee@example.org"]);
    let exports: Value = serde_json::from_str(&out).expect("JSON");
    let messages = exports[0]["conversations"][0]["messages"]
        .as_array()
        .expect("messages");
    let mailed: Vec<&Value> = messages
        .iter()
        .filter(|m| m.get("email_subject").is_some())
        .collect();
    assert_eq!(mailed.len(), 1, "{out}");
    assert_eq!(
        (&mailed[0]["email_subject"], &mailed[0]["body"]),
        (&json!("Your order 4417"), &json!("It shipped."))
    );
}
