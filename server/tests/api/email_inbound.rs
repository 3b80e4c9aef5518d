//! Visitors' replies by email, read back over IMAP from a real server (pymap, in memory, started
//! by the test from tests/deliveries/.venv) after Porch mailed the visitor through a real SMTP
//! server: a reply threads into its conversation and shows in the inbox live, without its
//! quoted history; a forged sender is refused with the reason; a re-read or a restart posts
//! nothing twice; a malformed or oversize mail is skipped with the reason and the reader goes on.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use futures_util::StreamExt as _;
use porch::store::{ConversationId, VisitorId};
use serde_json::json;
use tokio::net::TcpStream;

use crate::email::Sink;
use crate::helpers::{TestApp, WAIT, ok_if, wait_until};
use crate::inbox::{Browser, send, setup_admin, signed_in_from};
use crate::live_inbox::LiveInbox;

/// The IMAP server, killed when dropped.
pub(crate) struct Imap {
    child: Child,
    pub(crate) port: u16,
}

impl Drop for Imap {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

type Session = async_imap::Session<TcpStream>;

impl Imap {
    pub(crate) fn start() -> Self {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/deliveries");
        let python = std::env::var("PORCH_TEST_PYTHON")
            .map_or_else(|_| root.join(".venv/bin/python"), PathBuf::from);
        let mut child = Command::new(python)
            .arg(root.join("imap_server.py"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the IMAP server starts (run scripts/test once: it installs pymap)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the port");
        let port = line.trim().parse().expect("a port number");
        Self { child, port }
    }

    pub(crate) fn url(&self) -> String {
        format!("imap://demouser:demopass@127.0.0.1:{}", self.port)
    }

    /// A mail client's session on the test mailbox.
    async fn session(&self) -> Session {
        let tcp = TcpStream::connect(("127.0.0.1", self.port))
            .await
            .expect("connect");
        let mut client = async_imap::Client::new(tcp);
        client.read_response().await.expect("greeting");
        let mut session = client
            .login("demouser", "demopass")
            .await
            .map_err(|(err, _)| err)
            .expect("login");
        session.select("INBOX").await.expect("select");
        session
    }

    /// Delivers a mail into the inbox, unseen.
    pub(crate) async fn deliver(&self, raw: &str) {
        let mut session = self.session().await;
        session
            .append("INBOX", None, None, raw.as_bytes())
            .await
            .expect("append");
        session.logout().await.expect("logout");
    }

    pub(crate) async fn unseen(&self) -> usize {
        let mut session = self.session().await;
        let unseen = session.uid_search("UNSEEN").await.expect("search").len();
        session.logout().await.expect("logout");
        unseen
    }

    async fn wait_all_seen(&self) {
        wait_until("every mail to be marked seen", WAIT, async || {
            ok_if(self.unseen().await, |n| *n == 0)
        })
        .await;
    }

    /// Marks every mail unseen again, as another mail client might.
    async fn mark_all_unseen(&self) {
        let mut session = self.session().await;
        let mut answers = session
            .uid_store("1:*", "-FLAGS (\\Seen)")
            .await
            .expect("store");
        while let Some(answer) = answers.next().await {
            answer.expect("stored");
        }
        drop(answers);
        session.logout().await.expect("logout");
    }
}

/// Porch with SMTP and IMAP, a visitor who left her address and went away, and the agent's
/// reply mailed to her; what a mail reply needs.
struct Story {
    app: TestApp,
    imap: Imap,
    _sink: Sink,
    conversation: ConversationId,
    /// The `Message-ID` and `References` of Porch's mail to the visitor.
    message_id: String,
    references: String,
    /// The admin, signed in.
    browser: Browser,
    site: String,
}

fn args(sink: &Sink, imap: &Imap, poll: &str) -> Vec<String> {
    [
        "--smtp-url",
        &format!("smtp://127.0.0.1:{}", sink.port),
        "--mail-from",
        "Porch <chat@porch.test>",
        "--imap-url",
        &imap.url(),
        "--imap-poll",
        poll,
    ]
    .map(str::to_owned)
    .to_vec()
}

impl Story {
    async fn start() -> Self {
        Self::start_polling("1s").await
    }

    /// The story with the reader looking every `poll`.
    async fn start_polling(poll: &str) -> Self {
        let sink = Sink::start();
        let imap = Imap::start();
        let args = args(&sink, &imap, poll);
        let app = TestApp::spawn(&args.iter().map(String::as_str).collect::<Vec<_>>()).await;
        // A signed-in admin for the pages (before any other user: setup is for a fresh install).
        let browser = signed_in_from(&app, &setup_admin(&app).await).await;
        let admin = app.add_user_token("Admin", "admin");
        let site = app.add_site("Shop");
        let (status, answer) = app
            .api(
                "POST",
                &format!("/api/v1/sites/{site}/integrations/email"),
                &admin,
                Some(json!({"reply_delay_secs": 0})),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
        let (mut ana, _) = app.visitor(&site, None, 0).await;
        ana.say("a1", "Is the jumper in stock?").await;
        ana.send(json!({"type": "email", "email": "ana@example.org"}))
            .await;
        ana.recv().await;
        let conversation = ConversationId(app.count("SELECT max(id) FROM conversations"));
        let visitor = VisitorId(app.count("SELECT max(id) FROM visitors"));
        crate::email::leave(&app, ana, visitor).await;
        let (status, _) = app
            .api(
                "POST",
                &format!("/api/v1/conversations/{conversation}/messages"),
                &admin,
                Some(json!({"body": "Which colour?"})),
            )
            .await;
        assert_eq!(status, 201);
        let mails = sink.wait_for(1).await;
        let header = |name: &str| mails[0]["headers"][name].as_str().expect(name).to_owned();
        Self {
            message_id: header("message-id"),
            references: header("references"),
            app,
            imap,
            _sink: sink,
            conversation,
            browser,
            site,
        }
    }

    /// A reply to Porch's mail from `from`, with these extra headers and this body.
    fn reply(&self, id: &str, from: &str, headers: &str, body: &str) -> String {
        format!(
            "From: Ana <{from}>\r\nTo: Porch <chat@porch.test>\r\nSubject: Re: New reply from Shop\r\n\
             Date: Tue, 1 Dec 2026 10:05:00 +0000\r\nMessage-ID: <{id}@mail.example.org>\r\n\
             In-Reply-To: {}\r\nReferences: {} {}\r\nMIME-Version: 1.0\r\n{headers}\r\n{body}",
            self.message_id, self.references, self.message_id
        )
    }

    fn visitor_messages(&self) -> Vec<String> {
        let db = self.app.db();
        let mut stmt = db
            .prepare(
                "SELECT body FROM messages WHERE conversation_id = ?1 AND author = 'visitor' \
                 ORDER BY id",
            )
            .expect("prepare");
        stmt.query_map([self.conversation.0], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    }

    async fn wait_records(&self, n: i64) {
        wait_until(&format!("{n} inbound mail records"), WAIT, async || {
            ok_if(self.app.count("SELECT count(*) FROM mail_inbound"), |c| {
                *c >= n
            })
        })
        .await;
    }

    fn record(&self, mail_id: &str) -> (String, String) {
        self.app
            .db()
            .query_row(
                "SELECT outcome, reason FROM mail_inbound WHERE mail_id = ?1",
                [mail_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("a record of the mail")
    }
}

const PLAIN: &str = "Content-Type: text/plain; charset=utf-8\r\n";

#[tokio::test]
async fn a_mail_reply_threads_into_its_conversation_live_and_without_its_quote() {
    let story = Story::start().await;
    let mut live = LiveInbox::open(&story.app, &story.browser).await;
    assert!(
        story.message_id.len() > "<porch.message-1.@porch.test>".len() + 30,
        "the Message-ID carries the conversation's token: {}",
        story.message_id
    );

    // Gmail's way: the attribution wrapped over two lines, then the quote.
    let gmail = story.reply(
        "gmail-1",
        "ana@example.org",
        PLAIN,
        "Yes, the blue one & <b>size M</b>.\r\n\r\nOn Tue, 1 Dec 2026 at 10:02, Porch <\r\n\
         chat@porch.test> wrote:\r\n\r\n> Which colour?\r\n",
    );
    story.imap.deliver(&gmail).await;
    let item = live.item_with("Yes, the blue one").await;
    assert!(
        item.contains("&lt;b&gt;size M&lt;/b&gt;"),
        "escaped: {item}"
    );
    assert_eq!(
        story.visitor_messages(),
        [
            "Is the jumper in stock?",
            "Yes, the blue one & <b>size M</b>."
        ]
    );
    story.imap.wait_all_seen().await;
    let (outcome, _) = story.record("<gmail-1@mail.example.org>");
    assert_eq!(outcome, "posted");
    // Stored as the visitor's message, under a client id of its own.
    assert_eq!(
        story.app.count(
            "SELECT count(*) FROM mail_inbound i JOIN messages m ON m.id = i.message_id \
             WHERE m.author = 'visitor' AND m.client_id LIKE 'mail-%'"
        ),
        1
    );

    // Outlook's way, HTML only, quoted below a header block; Apple Mail's, with a footer.
    let outlook = story.reply(
        "outlook-1",
        "ANA@example.org",
        "Content-Type: text/html; charset=utf-8\r\n",
        "<html><body><div>Tomorrow works&nbsp;for me.</div><div><br></div>\
         <hr><div id=\"divRplyFwdMsg\"><b>From:</b> Porch &lt;chat@porch.test&gt;<br>\
         <b>Sent:</b> Tuesday, December 1, 2026 10:02<br><b>To:</b> ana@example.org</div>\
         <div>Which colour?</div></body></html>",
    );
    let apple = story.reply(
        "apple-1",
        "ana@example.org",
        PLAIN,
        "Thanks!\r\n\r\nSent from my iPhone\r\n\r\n> On 1 Dec 2026, at 10:02, Porch \
         <chat@porch.test> wrote:\r\n>\r\n> Which colour?\r\n",
    );
    story.imap.deliver(&outlook).await;
    story.imap.deliver(&apple).await;
    live.item_with("Thanks!").await;
    assert_eq!(
        story.visitor_messages()[2..],
        ["Tomorrow works for me.", "Thanks!"]
    );
}

#[tokio::test]
async fn a_forged_sender_or_an_unthreaded_mail_is_refused_with_the_reason() {
    let story = Story::start().await;
    let forged = story.reply(
        "forged-1",
        "mallory@evil.test",
        PLAIN,
        "Send it to me instead.",
    );
    let unthreaded = "From: ana@example.org\r\nTo: chat@porch.test\r\nSubject: hello\r\n\
                      Message-ID: <fresh-1@mail.example.org>\r\n\r\nA new question.";
    story.imap.deliver(&forged).await;
    story.imap.deliver(unthreaded).await;
    story.wait_records(2).await;
    let (outcome, reason) = story.record("<forged-1@mail.example.org>");
    assert_eq!(outcome, "refused");
    assert_eq!(
        reason,
        "sent from mallory@evil.test, not from the visitor's address ana@example.org"
    );
    let (outcome, reason) = story.record("<fresh-1@mail.example.org>");
    assert_eq!(outcome, "refused");
    assert!(
        reason.starts_with("not a reply to a Porch mail"),
        "{reason}"
    );
    assert_eq!(story.visitor_messages(), ["Is the jumper in stock?"]);
    story.imap.wait_all_seen().await;
}

#[tokio::test]
async fn a_reply_read_again_or_after_a_restart_is_posted_once() {
    let story = Story::start().await;
    let reply = story.reply("again-1", "ana@example.org", PLAIN, "Blue, please.");
    story.imap.deliver(&reply).await;
    story.imap.wait_all_seen().await;
    assert_eq!(story.visitor_messages().len(), 2);

    // Another client marks it unread: the next round reads it again and posts nothing.
    story.imap.mark_all_unseen().await;
    story.imap.wait_all_seen().await;
    assert_eq!(
        story.visitor_messages(),
        ["Is the jumper in stock?", "Blue, please."]
    );

    // A restart with the mail unseen (as after a crash between the commit and marking it seen).
    let Story {
        mut app,
        imap,
        _sink: sink,
        conversation,
        message_id,
        references,
        browser,
        site,
    } = story;
    app.server.take().expect("server").stop().await;
    imap.mark_all_unseen().await;
    let args = args(&sink, &imap, "1s");
    let app = TestApp::spawn_in(
        app.data_dir,
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await;
    let story = Story {
        app,
        imap,
        _sink: sink,
        conversation,
        message_id,
        references,
        browser,
        site,
    };
    story.imap.wait_all_seen().await;
    assert_eq!(story.visitor_messages().len(), 2);
    assert_eq!(story.app.count("SELECT count(*) FROM mail_inbound"), 1);
}

#[tokio::test]
async fn a_reply_to_a_closed_conversation_reopens_it() {
    let story = Story::start().await;
    story
        .app
        .db()
        .execute(
            "UPDATE conversations SET status = 'closed', closed_at = 1 WHERE id = ?1",
            [story.conversation.0],
        )
        .expect("closed");
    // A Slack destination: its thread header says "Closed" and must be rewritten. (No Slack
    // answers here; the job is what is checked.)
    story
        .app
        .db()
        .execute(
            "INSERT INTO integrations (site_id, kind, name, created_at, updated_at) \
             SELECT id, 'slack', 'Slack', 0, 0 FROM sites WHERE key = ?1",
            [&story.site],
        )
        .expect("slack");
    let reply = story.reply("late-1", "ana@example.org", PLAIN, "One more thing.");
    story.imap.deliver(&reply).await;
    story.imap.wait_all_seen().await;
    assert_eq!(story.visitor_messages()[1], "One more thing.");
    let status: String = story
        .app
        .db()
        .query_row(
            "SELECT status FROM conversations WHERE id = ?1",
            [story.conversation.0],
            |r| r.get(0),
        )
        .expect("status");
    assert_eq!(status, "open");
    assert_eq!(
        story.app.count(&format!(
            "SELECT count(*) FROM jobs WHERE kind = 'slack.header' \
               AND json_extract(args, '$.conversation_id') = {}",
            story.conversation.0
        )),
        1,
        "the thread header is rewritten to Open"
    );
}

/// Only a visitor's newest conversation is reopened: a reply by mail to an older one, after the
/// visitor started (and an agent closed) a newer one, goes where a widget message would, into a
/// new conversation, and both closed ones stay closed.
#[tokio::test]
async fn a_reply_to_an_older_conversation_starts_a_new_one() {
    let story = Story::start().await;
    let old = story.conversation.0;
    let newer: i64 = {
        let db = story.app.db();
        db.execute(
            "UPDATE conversations SET status = 'closed', closed_at = 1 WHERE id = ?1",
            [old],
        )
        .expect("closed");
        db.execute(
            "INSERT INTO conversations (site_id, visitor_id, status, created_at, last_message_at, \
                 closed_at) \
             SELECT site_id, visitor_id, 'closed', 2, 2, 2 FROM conversations WHERE id = ?1",
            [old],
        )
        .expect("a newer, closed conversation");
        db.last_insert_rowid()
    };
    let reply = story.reply("older-1", "ana@example.org", PLAIN, "About my old order.");
    story.imap.deliver(&reply).await;
    story.imap.wait_all_seen().await;
    let statuses: Vec<(i64, String)> = {
        let db = story.app.db();
        let mut stmt = db
            .prepare("SELECT id, status FROM conversations ORDER BY id")
            .expect("prepare");
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    };
    assert_eq!(statuses.len(), 3, "{statuses:?}");
    assert_eq!(statuses[0], (old, "closed".to_owned()));
    assert_eq!(statuses[1], (newer, "closed".to_owned()));
    let new = statuses[2].0;
    assert_eq!(statuses[2].1, "open");
    assert_eq!(
        story.app.count(&format!(
            "SELECT count(*) FROM messages WHERE conversation_id = {new} \
               AND body = 'About my old order.'"
        )),
        1
    );
}

#[tokio::test]
async fn malformed_and_oversize_mails_are_skipped_with_the_reason_and_the_reader_goes_on() {
    let story = Story::start().await;
    story.imap.deliver("this is not a mail at all").await;
    let huge = story.reply(
        "huge-1",
        "ana@example.org",
        PLAIN,
        &"x".repeat(porch::integrations::email::inbound::MAX_MAIL_BYTES as usize + 1),
    );
    story.imap.deliver(&huge).await;
    let quoted_only = story.reply("empty-1", "ana@example.org", PLAIN, "> Which colour?\r\n");
    story.imap.deliver(&quoted_only).await;
    let fine = story.reply("fine-1", "ana@example.org", PLAIN, "Green.");
    story.imap.deliver(&fine).await;
    story.wait_records(4).await;
    story.imap.wait_all_seen().await;

    let (outcome, reason) = story.record("<huge-1@mail.example.org>");
    assert_eq!(outcome, "skipped");
    assert!(reason.starts_with("too large ("), "{reason}");
    let (outcome, reason) = story.record("<empty-1@mail.example.org>");
    assert_eq!(
        (outcome.as_str(), reason.as_str()),
        (
            "skipped",
            "no new text (only quoted history, or no text part)"
        )
    );
    let unreadable: String = story
        .app
        .db()
        .query_row(
            "SELECT reason FROM mail_inbound WHERE mail_id LIKE 'sha256:%'",
            [],
            |r| r.get(0),
        )
        .expect("the malformed mail's record");
    assert!(unreadable.starts_with("unreadable: "), "{unreadable}");
    assert_eq!(
        story.visitor_messages(),
        ["Is the jumper in stock?", "Green."]
    );
}

#[tokio::test]
async fn check_now_reads_at_once_and_the_page_shows_health_and_each_mail_escaped() {
    let story = Story::start_polling("1h").await;
    let page_path = format!("/sites/{}/email", story.site);
    let admin = &story.browser;
    let nosy = "From: nosy@example.net\r\nTo: chat@porch.test\r\n\
                Subject: <script>alert(1)</script>\r\nMessage-ID: <nosy-1@example.net>\r\n\r\nHi";
    story.imap.deliver(nosy).await;
    let reply = story.reply("check-1", "ana@example.org", PLAIN, "Red.");
    story.imap.deliver(&reply).await;
    // The first round ran at start-up, before these arrived; the next is an hour away.
    assert_eq!(story.imap.unseen().await, 2);

    let body = crate::inbox::form(&[("csrf", &admin.csrf)]);
    let checked = send(
        &story.app,
        "POST",
        &format!("{page_path}/check"),
        &admin.cookie,
        Some(&body),
    )
    .await;
    assert_eq!(checked.status, 303, "{}", checked.body);
    assert_eq!(
        checked.header("location"),
        Some(format!("{page_path}?notice=imap-checking").as_str())
    );
    story.imap.wait_all_seen().await;
    assert_eq!(story.visitor_messages()[1], "Red.");

    let page = send(&story.app, "GET", &page_path, &admin.cookie, None).await;
    assert_eq!(page.status, 200);
    let html = page.body;
    assert!(html.contains("data-imap=\"set\""), "{html}");
    assert!(html.contains(">demouser<"), "{html}");
    assert!(!html.contains("demopass"), "the password is never shown");
    assert!(html.contains("data-reader=\"healthy\""), "{html}");
    assert!(html.contains("data-outcome=\"refused\""), "{html}");
    assert!(html.contains("data-outcome=\"posted\""), "{html}");
    assert!(html.contains("nosy@example.net"), "{html}");
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
    assert!(!html.contains("<script>alert(1)</script>"), "{html}");
    assert!(html.contains(&format!("/conversations/{}", story.conversation)));

    // Agents may not look at the mailbox.
    crate::inbox::add_user(&story.app, "bo@example.com", "agent");
    let bo = signed_in_from(
        &story.app,
        &crate::inbox::sign_in(&story.app, "bo@example.com", crate::inbox::PASSWORD).await,
    )
    .await;
    let refused = send(&story.app, "GET", &page_path, &bo.cookie, None).await;
    assert_eq!(refused.status, 403);
}

#[tokio::test]
async fn a_refused_login_shows_as_failing_with_the_reason_and_never_the_password() {
    let sink = Sink::start();
    let imap = Imap::start();
    let wrong = format!("imap://demouser:wrongpass@127.0.0.1:{}", imap.port);
    let smtp = format!("smtp://127.0.0.1:{}", sink.port);
    let app = TestApp::spawn(&[
        "--smtp-url",
        &smtp,
        "--mail-from",
        "chat@porch.test",
        "--imap-url",
        &wrong,
        "--imap-poll",
        "1s",
    ])
    .await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Shop");
    let page = wait_until("the reader to fail", WAIT, async || {
        let page = send(
            &app,
            "GET",
            &format!("/sites/{site}/email"),
            &admin.cookie,
            None,
        )
        .await;
        ok_if(page.body, |html| html.contains("data-reader=\"failing\""))
    })
    .await;
    assert!(page.contains("the IMAP server refused the login"), "{page}");
    // Isolated: a server's answer with a direction override cannot turn Porch's words around.
    assert!(page.contains("Failing: <bdi>"), "{page}");
    assert!(!page.contains("wrongpass"), "{page}");
}
