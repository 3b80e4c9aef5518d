//! The IMAP mailbox set on the email page, against a real IMAP server (pymap) and a real SMTP
//! server (aiosmtpd): saved with its password sealed (never shown, never in the audit log), tested
//! ("Test connection", audited with its outcome), read from at once (an agent's mail answered
//! by the visitor comes back into the conversation) and after a restart; the saved password never
//! goes to another server or user unseen; removed; refused while `PORCH_IMAP_URL` is set (the
//! environment wins), for a private address without `PORCH_ALLOW_PRIVATE_NETWORKS` (when saved
//! and when connecting), to agents and without the form's CSRF token; re-sealed by
//! `porch secrets rotate`.

use serde_json::json;

use crate::email::Sink;
use crate::email_inbound::Imap;
use crate::helpers::{Answer, TestApp, WAIT, ok_if, wait_until};
use crate::inbox::{Browser, PASSWORD, add_user, form, send, setup_admin, sign_in, signed_in_from};
use crate::sealed_secrets::{contains, porch_cli, raw_database, stop};

struct Setup {
    app: TestApp,
    browser: Browser,
    site: String,
}

/// Porch's flags for SMTP through `sink`, with `extra`.
fn flags<'a>(smtp: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--smtp-url", smtp, "--mail-from", "Porch <chat@porch.test>"];
    args.extend_from_slice(extra);
    args
}

async fn start(sink: &Sink, extra: &[&str]) -> Setup {
    let smtp = format!("smtp://127.0.0.1:{}", sink.port);
    let app = TestApp::spawn(&flags(&smtp, extra)).await;
    let browser = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Shop");
    Setup { app, browser, site }
}

impl Setup {
    async fn page(&self) -> String {
        let path = format!("/sites/{}/email", self.site);
        let page = send(&self.app, "GET", &path, &self.browser.cookie, None).await;
        assert_eq!(page.status, 200, "{}", page.body);
        page.body
    }

    async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Answer {
        let mut all = vec![("csrf", self.browser.csrf.as_str())];
        all.extend_from_slice(fields);
        let path = format!("/sites/{}/email{path}", self.site);
        send(
            &self.app,
            "POST",
            &path,
            &self.browser.cookie,
            Some(&form(&all)),
        )
        .await
    }

    async fn save(&self, host: &str, port: u16, user: &str, password: &str) -> Answer {
        let port = port.to_string();
        self.post(
            "/imap",
            &[
                ("imap_host", host),
                ("imap_port", &port),
                ("imap_tls", "none"),
                ("imap_user", user),
                ("imap_password", password),
                ("imap_folder", "INBOX"),
                ("imap_poll_secs", "1"),
            ],
        )
        .await
    }

    fn audit(&self, action: &str) -> Vec<String> {
        let db = self.app.db();
        let mut stmt = db
            .prepare("SELECT detail FROM audit_events WHERE action = ?1 ORDER BY id")
            .expect("prepare");
        stmt.query_map([action], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    }

    /// The saved mailbox's password as stored.
    fn sealed_password(&self) -> String {
        self.app
            .db()
            .query_row("SELECT password FROM imap_mailbox", [], |r| r.get(0))
            .expect("a saved mailbox")
    }

    /// Stops Porch and starts it again on the same data directory (the same sessions).
    async fn restart(self, sink: &Sink, extra: &[&str]) -> Self {
        let Self { app, browser, site } = self;
        let dir = stop(app).await;
        let smtp = format!("smtp://127.0.0.1:{}", sink.port);
        let app = TestApp::spawn_in(dir, &flags(&smtp, extra)).await;
        Self { app, browser, site }
    }

    /// A visitor leaves her address and an agent mails her from the conversation page; returns
    /// the conversation and the mail's `Message-ID`.
    async fn mail_a_visitor(&self, sink: &Sink) -> (i64, String) {
        let admin = self.app.add_user_token("Admin", "admin");
        let path = format!("/api/v1/sites/{}/integrations/email", self.site);
        let (status, answer) = self.app.api("POST", &path, &admin, Some(json!({}))).await;
        assert_eq!(status, 201, "{answer}");
        let (mut ana, _) = self.app.visitor(&self.site, None, 0).await;
        ana.say("a1", "Is the jumper in stock?").await;
        ana.send(json!({"type": "email", "email": "ana@example.org"}))
            .await;
        ana.recv().await;
        let conversation = self.app.count("SELECT max(id) FROM conversations");
        let fields = form(&[
            ("csrf", &self.browser.csrf),
            ("subject", "Your jumper"),
            ("body", "Back tomorrow."),
        ]);
        let path = format!("/conversations/{conversation}/email");
        let sent = send(
            &self.app,
            "POST",
            &path,
            &self.browser.cookie,
            Some(&fields),
        )
        .await;
        assert_eq!(sent.status, 303, "{}", sent.body);
        let mails = sink.wait_for(1).await;
        let message_id = mails[0]["headers"]["message-id"].as_str().expect("id");
        (conversation, message_id.to_owned())
    }

    /// Waits until the conversation holds `n` messages from the visitor.
    async fn wait_for_visitor_messages(&self, conversation: i64, n: i64) {
        let sql = format!(
            "SELECT count(*) FROM messages WHERE conversation_id = {conversation} \
             AND author = 'visitor'"
        );
        wait_until(
            "the visitor's answer in the conversation",
            WAIT,
            async || ok_if(self.app.count(&sql), |count| *count == n),
        )
        .await;
    }
}

/// The visitor's answer to the mail `message_id`.
fn answer(n: u32, message_id: &str, text: &str) -> String {
    format!(
        "From: ana@example.org\r\nTo: chat@porch.test\r\nSubject: Re: Your jumper\r\n\
         Message-ID: <page-{n}@example.org>\r\nIn-Reply-To: {message_id}\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\r\n{text}\r\n"
    )
}

#[tokio::test]
async fn a_saved_mailbox_is_tested_with_its_outcome_and_its_password_is_sealed_and_never_shown() {
    let sink = Sink::start();
    let imap = Imap::start();
    let setup = start(&sink, &["--allow-private-networks"]).await;
    let page = setup.page().await;
    assert!(page.contains("data-imap-source=\"page\""), "{page}");
    assert!(page.contains("no mailbox is set"), "{page}");

    // A wrong password saves, and the test says why it fails.
    let saved = setup
        .save("127.0.0.1", imap.port, "demouser", "wrong-pw")
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    assert_eq!(
        saved.header("location"),
        Some(format!("/sites/{}/email?notice=imap-saved", setup.site).as_str())
    );
    let tested = setup.post("/imap/test", &[]).await;
    assert_eq!(tested.status, 303, "{}", tested.body);
    let page = setup.page().await;
    assert!(page.contains("data-imap-test=\"failed\""), "{page}");
    assert!(page.contains("the IMAP server refused the login"), "{page}");

    // The right one: saved sealed, never shown, never audited.
    let saved = setup
        .save("127.0.0.1", imap.port, "demouser", "demopass")
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let stored = setup.sealed_password();
    assert!(!stored.contains("demopass"), "sealed: {stored}");
    let tested = setup.post("/imap/test", &[]).await;
    assert_eq!(tested.status, 303);
    let page = setup.page().await;
    assert!(page.contains("data-imap-test=\"ok\""), "{page}");
    assert!(page.contains("<dd class=\"mono\">demouser"), "{page}");
    assert!(
        !page.contains("demopass") && !page.contains("wrong-pw"),
        "{page}"
    );
    let save_events = setup.audit("email.imap_saved");
    assert_eq!(save_events.len(), 2);
    assert!(
        save_events
            .iter()
            .all(|d| !d.contains("pass") && !d.contains("pw")),
        "{save_events:?}"
    );
    assert!(
        save_events[1].contains("\"user\":\"demouser\""),
        "{save_events:?}"
    );
    let test_events = setup.audit("email.imap_tested");
    assert_eq!(test_events.len(), 2);
    assert!(
        test_events[0].contains("\"ok\":false") && test_events[1].contains("\"ok\":true"),
        "{test_events:?}"
    );
}

#[tokio::test]
async fn the_saved_password_is_kept_only_for_the_same_server_and_user() {
    let sink = Sink::start();
    let imap = Imap::start();
    let setup = start(&sink, &["--allow-private-networks"]).await;
    let saved = setup
        .save("127.0.0.1", imap.port, "demouser", "demopass")
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let before = setup.sealed_password();

    for (host, user) in [("localhost", "demouser"), ("127.0.0.1", "root")] {
        let moved = setup.save(host, imap.port, user, "").await;
        assert_eq!(moved.status, 422, "{}", moved.body);
        assert!(
            moved.body.contains("Type the password again"),
            "{}",
            moved.body
        );
        // The page answering the refusal shows the form as typed.
        for typed in [host, user] {
            assert!(
                moved.body.contains(&format!("value=\"{typed}\"")),
                "{typed}"
            );
        }
    }
    assert_eq!(setup.sealed_password(), before, "nothing saved");
    let kept = setup.save("127.0.0.1", imap.port, "demouser", "").await;
    assert_eq!(kept.status, 303, "{}", kept.body);
    let tested = setup.post("/imap/test", &[]).await;
    assert_eq!(tested.status, 303);
    let page = setup.page().await;
    assert!(
        page.contains("data-imap-test=\"ok\""),
        "the kept password logs in: {page}"
    );
}

#[tokio::test]
async fn answers_are_read_from_the_page_mailbox_at_once_and_after_a_restart() {
    let sink = Sink::start();
    let imap = Imap::start();
    let setup = start(&sink, &["--allow-private-networks"]).await;
    let saved = setup
        .save("127.0.0.1", imap.port, "demouser", "demopass")
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let (conversation, message_id) = setup.mail_a_visitor(&sink).await;
    // A mailbox saved on the page is read as one from PORCH_IMAP_URL is: the mail and the
    // conversation page say an answer comes back.
    let mail = &sink.wait_for(1).await[0];
    let text = mail["text"].as_str().expect("a text part");
    assert!(text.contains("Answer this mail to reply"), "{text}");
    let path = format!("/conversations/{conversation}");
    let page = send(&setup.app, "GET", &path, &setup.browser.cookie, None).await;
    assert!(
        page.body
            .contains("their answer by email comes back into this conversation"),
        "{}",
        page.body
    );
    imap.deliver(&answer(1, &message_id, "Thanks!")).await;
    setup.wait_for_visitor_messages(conversation, 2).await;

    // After a restart the saved mailbox is read again (its password opens with the key).
    let setup = setup.restart(&sink, &["--allow-private-networks"]).await;
    imap.deliver(&answer(2, &message_id, "Still there?")).await;
    setup.wait_for_visitor_messages(conversation, 3).await;
}

#[tokio::test]
async fn a_removed_mailbox_is_forgotten_and_audited() {
    let sink = Sink::start();
    let imap = Imap::start();
    let setup = start(&sink, &["--allow-private-networks"]).await;
    let saved = setup
        .save("127.0.0.1", imap.port, "demouser", "demopass")
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let removed = setup.post("/imap/delete", &[]).await;
    assert_eq!(removed.status, 303, "{}", removed.body);
    assert_eq!(
        removed.header("location"),
        Some(format!("/sites/{}/email?notice=imap-removed", setup.site).as_str())
    );
    assert_eq!(setup.app.count("SELECT count(*) FROM imap_mailbox"), 0);
    let page = setup.page().await;
    assert!(page.contains("no mailbox is set"), "{page}");
    assert!(!page.contains("data-imap=\"set\""), "{page}");
    assert_eq!(setup.audit("email.imap_removed"), ["{}"]);
    // Nothing is read after a restart either.
    let setup = setup.restart(&sink, &["--allow-private-networks"]).await;
    assert!(setup.page().await.contains("no mailbox is set"));
}

#[tokio::test]
async fn while_porch_imap_url_is_set_the_page_cannot_save_test_or_remove_a_mailbox() {
    let sink = Sink::start();
    let imap = Imap::start();
    let url = imap.url();
    let setup = start(&sink, &["--imap-url", &url, "--allow-private-networks"]).await;
    let page = setup.page().await;
    assert!(page.contains("data-imap-source=\"env\""), "{page}");
    assert!(
        page.contains("data-imap=\"set\""),
        "the environment's mailbox: {page}"
    );
    assert!(page.contains("disabled"), "the form is locked: {page}");
    let refused = setup
        .save("127.0.0.1", imap.port, "demouser", "demopass")
        .await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(
        refused.body.contains("the environment wins"),
        "{}",
        refused.body
    );
    for path in ["/imap/test", "/imap/delete"] {
        assert_eq!(setup.post(path, &[]).await.status, 409, "{path}");
    }
    assert_eq!(setup.app.count("SELECT count(*) FROM imap_mailbox"), 0);
    assert_eq!(
        setup
            .app
            .count("SELECT count(*) FROM audit_events WHERE action LIKE 'email.imap_%'"),
        0
    );
}

#[tokio::test]
async fn a_private_address_is_refused_when_saved_and_when_connecting_unless_allowed() {
    let sink = Sink::start();
    let imap = Imap::start();
    let setup = start(&sink, &[]).await;
    let refused = setup
        .save("127.0.0.1", imap.port, "demouser", "demopass")
        .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body.contains("is a private address"),
        "{}",
        refused.body
    );
    assert!(refused.body.contains("value=\"demouser\""), "kept as typed");
    assert!(
        !refused.body.contains("demopass"),
        "a page never holds a password"
    );
    assert_eq!(setup.app.count("SELECT count(*) FROM imap_mailbox"), 0);
    assert!(setup.audit("email.imap_saved").is_empty());

    // Saved while allowed, then started without: the reader does not connect.
    let setup = setup.restart(&sink, &["--allow-private-networks"]).await;
    let saved = setup
        .save("127.0.0.1", imap.port, "demouser", "demopass")
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let setup = setup.restart(&sink, &[]).await;
    let page = wait_until("the reader to fail", WAIT, async || {
        let page = setup.page().await;
        ok_if(page, |page| page.contains("data-reader=\"failing\""))
    })
    .await;
    assert!(page.contains("is a private address"), "{page}");
}

#[tokio::test]
async fn a_server_without_tls_is_taken_on_this_host_only() {
    let sink = Sink::start();
    // Allowed private networks let a loopback server through (above); they do not let the
    // password travel in clear to any other address, public or private.
    let setup = start(&sink, &["--allow-private-networks"]).await;
    for far in ["192.0.2.7", "10.1.2.3", "1.1.1.1"] {
        let refused = setup.save(far, 143, "demouser", "demopass").await;
        assert_eq!(refused.status, 422, "{far}: {}", refused.body);
        assert!(
            refused.body.contains(&format!(
                "{far} is not on this host: without TLS the password and the mail would cross"
            )),
            "{far}: {}",
            refused.body
        );
    }
    assert_eq!(setup.app.count("SELECT count(*) FROM imap_mailbox"), 0);
    assert!(setup.audit("email.imap_saved").is_empty());
    // Loopback written as IPv6 is this host too.
    let imap = Imap::start();
    let saved = setup
        .save("::ffff:127.0.0.1", imap.port, "demouser", "demopass")
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
}

#[tokio::test]
async fn agents_and_forms_without_the_csrf_token_cannot_save_test_or_remove_the_mailbox() {
    let sink = Sink::start();
    let imap = Imap::start();
    let setup = start(&sink, &["--allow-private-networks"]).await;
    let saved = setup
        .save("127.0.0.1", imap.port, "demouser", "demopass")
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);

    add_user(&setup.app, "bo@example.com", "agent");
    let bo = signed_in_from(
        &setup.app,
        &sign_in(&setup.app, "bo@example.com", PASSWORD).await,
    )
    .await;
    let fields = [
        ("imap_host", "imap.example.com"),
        ("imap_tls", "implicit"),
        ("imap_user", "mallory"),
        ("imap_password", "stolen"),
        ("imap_poll_secs", "60"),
    ];
    for path in ["/imap", "/imap/test", "/imap/delete"] {
        let path = format!("/sites/{}/email{path}", setup.site);
        let mut agent = vec![("csrf", bo.csrf.as_str())];
        agent.extend_from_slice(&fields);
        let refused = send(&setup.app, "POST", &path, &bo.cookie, Some(&form(&agent))).await;
        assert_eq!(refused.status, 403, "an agent on {path}");
        let mut forged = vec![("csrf", "forged")];
        forged.extend_from_slice(&fields);
        let cookie = &setup.browser.cookie;
        let refused = send(&setup.app, "POST", &path, cookie, Some(&form(&forged))).await;
        assert_eq!(refused.status, 403, "no CSRF token on {path}");
    }
    let user: String = setup
        .app
        .db()
        .query_row("SELECT user FROM imap_mailbox", [], |r| r.get(0))
        .expect("still saved");
    assert_eq!(user, "demouser");
    assert_eq!(setup.audit("email.imap_saved").len(), 1);
    assert!(setup.audit("email.imap_tested").is_empty());
    assert!(setup.audit("email.imap_removed").is_empty());
}

#[tokio::test]
async fn rotating_the_key_reseals_the_saved_password_and_the_reader_still_logs_in() {
    let sink = Sink::start();
    let imap = Imap::start();
    let setup = start(&sink, &["--allow-private-networks"]).await;
    let saved = setup
        .save("127.0.0.1", imap.port, "demouser", "demopass")
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let sealed_before = setup.sealed_password();
    let Setup { app, browser, site } = setup;
    let dir = stop(app).await;
    assert!(!contains(&raw_database(dir.path()), "demopass"));

    let out = porch_cli(dir.path(), &["secrets", "rotate"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let smtp = format!("smtp://127.0.0.1:{}", sink.port);
    let app = TestApp::spawn_in(dir, &flags(&smtp, &["--allow-private-networks"])).await;
    let setup = Setup { app, browser, site };
    assert_ne!(
        setup.sealed_password(),
        sealed_before,
        "re-sealed under the new key"
    );
    let rotated = setup.audit("secrets.rotated");
    assert!(rotated[0].contains("\"imap_mailbox\":true"), "{rotated:?}");
    wait_until(
        "the reader to log in with the re-sealed password",
        WAIT,
        async || {
            let page = setup.page().await;
            ok_if(page.contains("data-reader=\"healthy\""), |healthy| *healthy)
        },
    )
    .await;
}

#[tokio::test]
async fn a_test_cut_short_by_the_request_timeout_still_shows_its_outcome_and_is_audited() {
    // A server that accepts and never says a word.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = silent.local_addr().expect("addr").port();
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            open.push(socket);
        }
    });
    let sink = Sink::start();
    let setup = start(
        &sink,
        &["--allow-private-networks", "--request-timeout", "1s"],
    )
    .await;
    let saved = setup.save("127.0.0.1", port, "demouser", "pw").await;
    assert_eq!(saved.status, 303, "{}", saved.body);

    let tested = setup.post("/imap/test", &[]).await;
    assert_eq!(tested.status, 408, "the request gives up first");
    // A second click while the first test runs starts no second login.
    let again = setup.post("/imap/test", &[]).await;
    assert_eq!(again.status, 303, "{}", again.body);
    let waited = std::time::Duration::from_secs(20);
    let events = wait_until("the test's outcome", waited, async || {
        ok_if(setup.audit("email.imap_tested"), |events| events.len() == 2)
    })
    .await;
    assert!(events[0].contains("already running"), "{events:?}");
    assert!(events[1].contains("did not answer in time"), "{events:?}");
    let page = setup.page().await;
    assert!(page.contains("data-imap-test=\"failed\""), "{page}");
    assert!(page.contains("did not answer in time"), "{page}");
    held.abort();
}
