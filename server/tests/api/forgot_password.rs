//! "Forgot your password?" over real HTTP against a real SMTP server: the mailed link sets a new
//! password, the answer is the same for an address with no account, an address that asks too
//! often waits, an account is sent few links whoever asks, and without SMTP the page says whom
//! to ask.
// Helpers outside #[test] functions: a failed expectation is a failed test.
#![allow(clippy::expect_used)]

use std::time::Duration;

use crate::email::Sink;
use crate::helpers::{Answer, TestApp, WAIT};
use crate::inbox::{PASSWORD, form, form_cookie, send, setup_admin, sign_in};

const NEW_PASSWORD: &str = "a brand new passphrase";

async fn ask_for_link(app: &TestApp, email: &str) -> Answer {
    let (cookie, csrf) = form_cookie(app, "/password-resets").await;
    let body = form(&[("csrf", &csrf), ("email", email)]);
    send(app, "POST", "/password-resets", &cookie, Some(&body)).await
}

async fn with_smtp(sink: &Sink) -> TestApp {
    let smtp = format!("smtp://127.0.0.1:{}", sink.port);
    let app = TestApp::spawn(&[
        "--smtp-url",
        &smtp,
        "--mail-from",
        "chat@porch.test",
        "--trusted-proxies",
        "127.0.0.1",
    ])
    .await;
    assert_eq!(setup_admin(&app).await.status, 303);
    app
}

fn link_in(mail: &serde_json::Value) -> String {
    let text = mail["text"].as_str().expect("a text part");
    let at = text.find("/password-resets/").expect("a reset link");
    text[at..]
        .split_whitespace()
        .next()
        .expect("link")
        .to_owned()
}

#[tokio::test]
async fn a_mailed_link_sets_a_new_password_and_an_unknown_address_gets_the_same_answer() {
    let sink = Sink::start();
    let app = with_smtp(&sink).await;
    // Locked out by wrong guesses, as someone who then asks for a link often is.
    for _ in 0..5 {
        assert_eq!(
            sign_in(&app, "ana@example.com", "a wrong guess")
                .await
                .status,
            401
        );
    }
    assert_eq!(sign_in(&app, "ana@example.com", PASSWORD).await.status, 429);

    let unknown = ask_for_link(&app, "nobody@example.com").await;
    let known = ask_for_link(&app, "ana@example.com").await;
    assert_eq!((unknown.status, known.status), (200, 200));
    assert_eq!(
        unknown
            .body
            .replace("nobody@example.com", "ana@example.com"),
        known.body,
        "the answer does not tell whether an account exists"
    );
    assert!(known.body.contains("is on its way"), "{}", known.body);

    let mails = sink.wait_for(1).await;
    assert_eq!(mails[0]["rcpt_tos"], serde_json::json!(["ana@example.com"]));
    let text = mails[0]["text"].as_str().expect("text");
    assert!(
        text.contains("If it was not you, ignore this mail"),
        "{text}"
    );
    assert!(
        text.contains("(the link works once, for 24 hours)"),
        "{text}"
    );
    let path = link_in(&mails[0]);

    let page = send(&app, "GET", &path, "", None).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let (cookie, csrf) = form_cookie(&app, &path).await;
    let body = form(&[("csrf", &csrf), ("password", NEW_PASSWORD)]);
    let chosen = send(&app, "POST", &path, &cookie, Some(&body)).await;
    assert_eq!(chosen.status, 303, "{}", chosen.body);
    // The new password frees the account: the guesses were against the old one.
    assert_eq!(sign_in(&app, "ana@example.com", PASSWORD).await.status, 401);
    assert_eq!(
        sign_in(&app, "ana@example.com", NEW_PASSWORD).await.status,
        303
    );
    // The link worked once.
    assert_eq!(send(&app, "GET", &path, "", None).await.status, 410);

    // Only one mail went out: none for the unknown address. The request is in the audit log,
    // with the address it came from and no user (nobody proved being Ana).
    assert_eq!(sink.wait_for(1).await.len(), 1);
    let (user, ip): (Option<i64>, String) = app
        .db()
        .query_row(
            "SELECT actor_id, ip FROM audit_events WHERE action = 'user.password_reset_requested'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("one audit row");
    assert_eq!((user, ip.as_str()), (None, "127.0.0.1"));
}

/// The audit log's actor is the address as typed, in lower case, not the account's address as
/// stored (an invitation keeps the capitals it was typed with): nobody proved being its owner.
#[tokio::test]
async fn a_request_is_recorded_with_the_typed_address_in_lower_case() {
    let sink = Sink::start();
    let app = with_smtp(&sink).await;
    app.add_user_token("Cy", "agent");
    app.db()
        .execute(
            "UPDATE users SET email = 'Cy@Agency.Example' WHERE email = 'cy@example.com'",
            [],
        )
        .expect("an address with capitals");
    assert_eq!(ask_for_link(&app, " cy@AGENCY.example ").await.status, 200);
    assert_eq!(sink.wait_for(1).await.len(), 1, "the link went out");
    let actor: String = app
        .db()
        .query_row(
            "SELECT actor FROM audit_events WHERE action = 'user.password_reset_requested'",
            [],
            |r| r.get(0),
        )
        .expect("one audit row");
    assert_eq!(actor, "cy@agency.example");
}

#[tokio::test]
async fn an_address_that_asks_too_often_waits_and_an_account_gets_three_links_at_most() {
    let sink = Sink::start();
    let app = with_smtp(&sink).await;
    let from = |address: &'static str| {
        let app = &app;
        async move {
            let (cookie, csrf) = form_cookie(app, "/password-resets").await;
            let body = form(&[("csrf", &csrf), ("email", "ana@example.com")]);
            crate::inbox::request(app, "POST", "/password-resets", &cookie, Some(&body))
                .header("X-Forwarded-For", address)
                .send()
                .await
                .expect("answer")
        }
    };
    for _ in 0..5 {
        assert_eq!(from("203.0.113.9").await.status(), 200);
    }
    let refused = from("203.0.113.9").await;
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    // Another address is answered as usual, but Ana had her three links already.
    assert_eq!(from("198.51.100.7").await.status(), 200);
    let links = || app.count("SELECT count(*) FROM account_links WHERE kind = 'reset'");
    let finished = "SELECT count(*) FROM jobs WHERE kind = 'email.account_link' AND state = 'done'";
    crate::helpers::wait_until("three links mailed or passed over", WAIT, async || {
        crate::helpers::ok_if(app.count(finished), |n| *n == 3)
    })
    .await;
    assert_eq!(links(), 3);
    // Each newer link replaced the one before: only a link that still works is mailed, so the
    // last mail to arrive is never a dead link, however the mails were ordered on the way.
    let mails = sink.wait_for(1).await;
    let newest = link_in(mails.last().expect("a mail"));
    assert_eq!(send(&app, "GET", &newest, "", None).await.status, 200);
    for older in &mails[..mails.len() - 1] {
        assert_eq!(
            send(&app, "GET", &link_in(older), "", None).await.status,
            410
        );
    }
}

/// A mail held back by the SMTP server (451) is retried after its link was replaced: it is not
/// sent then, so the last mail Ana gets holds the link that works.
#[tokio::test]
async fn a_mail_whose_link_was_replaced_meanwhile_is_not_sent() {
    let sink = Sink::start_failing(1);
    let app = with_smtp(&sink).await;
    let first_job = "SELECT count(*) FROM jobs WHERE kind = 'email.account_link' AND attempt >= 1 \
                     AND state IN ('queued', 'running') AND last_error IS NOT NULL";
    assert_eq!(ask_for_link(&app, "ana@example.com").await.status, 200);
    crate::helpers::wait_until("the first mail to be refused for now", WAIT, async || {
        crate::helpers::ok_if(app.count(first_job), |n| *n == 1)
    })
    .await;
    assert_eq!(ask_for_link(&app, "ana@example.com").await.status, 200);
    let mails = sink.wait_for(1).await;
    let newest = link_in(&mails[0]);

    let skipped = "SELECT count(*) FROM jobs WHERE kind = 'email.account_link' AND state = 'done' \
                   AND external_ref LIKE 'not sent: the link was replaced%'";
    crate::helpers::wait_until(
        "the held mail's retry",
        Duration::from_mins(1),
        async || crate::helpers::ok_if(app.count(skipped), |n| *n == 1),
    )
    .await;
    assert_eq!(
        sink.wait_for(1).await.len(),
        1,
        "the replaced link was not mailed"
    );
    assert_eq!(send(&app, "GET", &newest, "", None).await.status, 200);
}

#[tokio::test]
async fn without_smtp_the_page_says_whom_to_ask() {
    let app = TestApp::spawn(&[]).await;
    setup_admin(&app).await;
    let page = send(&app, "GET", "/password-resets", "", None).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("ask an admin of your team"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("Mail me a link"), "{}", page.body);
    let login = send(&app, "GET", "/login", "", None).await;
    assert!(
        login.body.contains("href=\"/password-resets\""),
        "{}",
        login.body
    );
}
