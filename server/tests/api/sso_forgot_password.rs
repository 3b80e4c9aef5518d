//! "Forgot your password?" for people who sign in through single sign-on: someone linked to the
//! provider without a password is mailed how they sign in, not a link to choose a password (so
//! being offboarded at the provider keeps them out), and the page answers them as it answers
//! everyone else.
// Helpers outside #[test] functions: a failed expectation is a failed test.
#![allow(clippy::expect_used)]

use porch::store::{self, NewUser};

use crate::email::Sink;
use crate::helpers::{Answer, TestApp};
use crate::inbox::{
    PASSWORD, add_user, form, form_cookie, send, setup_admin, sign_in, signed_in_from,
};

const LABEL: &str = "Sign in with Acme ID";

async fn ask_for_link(app: &TestApp, email: &str) -> Answer {
    let (cookie, csrf) = form_cookie(app, "/password-resets").await;
    let body = form(&[("csrf", &csrf), ("email", email)]);
    send(app, "POST", "/password-resets", &cookie, Some(&body)).await
}

/// A server with SMTP and single sign-on configured. The provider is never reached: none of
/// this needs it (a closed loopback port stands in for it).
async fn with_sso(sink: &Sink) -> TestApp {
    let smtp = format!("smtp://127.0.0.1:{}", sink.port);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let issuer = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let app = TestApp::spawn(&[
        "--smtp-url",
        &smtp,
        "--mail-from",
        "chat@porch.test",
        "--public-url",
        "http://chat.porch.test",
        "--oidc-issuer",
        &issuer,
        "--oidc-client-id",
        "porch",
        "--oidc-client-secret",
        "a-client-secret",
        "--oidc-label",
        LABEL,
    ])
    .await;
    assert_eq!(setup_admin(&app).await.status, 303);
    app
}

/// A user without a password, as `porch user add` or an auto-provisioned sign-in makes them;
/// `linked` when they signed in through single sign-on already.
fn add_passwordless(app: &TestApp, email: &str, linked: bool) {
    let db = app.db();
    let id = store::insert_user(
        &db,
        &NewUser {
            email,
            name: "Cy",
            role: "agent",
            password_hash: None,
            created_at: 0,
        },
    )
    .expect("insert user");
    if linked {
        db.execute(
            "INSERT INTO oidc_links (user_id, issuer, subject, created_at) \
             VALUES (?1, 'https://id.example.com', ?2, 0)",
            rusqlite::params![id, format!("sub-of-{email}")],
        )
        .expect("link");
    }
}

#[tokio::test]
async fn a_linked_user_without_a_password_is_told_to_use_single_sign_on_and_gets_no_link() {
    let sink = Sink::start();
    let app = with_sso(&sink).await;
    add_passwordless(&app, "cy@example.com", true);

    let unknown = ask_for_link(&app, "nobody@example.com").await;
    let linked = ask_for_link(&app, "cy@example.com").await;
    assert_eq!((unknown.status, linked.status), (200, 200));
    assert_eq!(
        unknown.body.replace("nobody@example.com", "cy@example.com"),
        linked.body,
        "the answer does not tell whether, or how, an account signs in"
    );

    let mails = sink.wait_for(1).await;
    assert_eq!(mails[0]["rcpt_tos"], serde_json::json!(["cy@example.com"]));
    let text = mails[0]["text"].as_str().expect("text");
    assert!(text.contains("single sign-on"), "{text}");
    assert!(text.contains(LABEL), "the mail names the button: {text}");
    assert!(text.contains("ask an admin"), "{text}");
    assert!(text.contains("http://chat.porch.test/login"), "{text}");
    assert!(
        !text.contains("/invitations/") && !text.contains("/password-resets/"),
        "no link that sets a password: {text}"
    );
    assert_eq!(app.count("SELECT count(*) FROM account_links"), 0);
    let kind: String = app
        .db()
        .query_row(
            "SELECT json_extract(detail, '$.kind') FROM audit_events \
             WHERE action = 'user.password_reset_requested'",
            [],
            |r| r.get(0),
        )
        .expect("the request is audited");
    assert_eq!(kind, "sso");
}

#[tokio::test]
async fn someone_invited_who_never_signed_in_through_the_provider_still_gets_an_invitation() {
    let sink = Sink::start();
    let app = with_sso(&sink).await;
    add_passwordless(&app, "dee@example.com", false);

    assert_eq!(ask_for_link(&app, "dee@example.com").await.status, 200);
    let mails = sink.wait_for(1).await;
    let text = mails[0]["text"].as_str().expect("text");
    assert!(text.contains("/invitations/"), "{text}");
    // Asked for by whoever typed the address: it says so, and how long the link lasts.
    assert!(text.contains("someone asked for a password"), "{text}");
    assert!(
        text.contains("If it was not you, ignore this mail"),
        "{text}"
    );
    assert!(text.contains("(the link works once, for 7 days)"), "{text}");
    assert_eq!(
        app.count("SELECT count(*) FROM account_links WHERE kind = 'invite'"),
        1
    );
}

/// Someone who signs in only through the provider has no password to change and no password
/// sign-in for two-factor to guard: the account page says so instead of offering forms that can
/// only fail, and a post of either form is answered with that, using up none of the sign-in
/// throttle (a wrong "current password" would).
#[tokio::test]
async fn the_account_page_of_someone_without_a_password_offers_neither_password_nor_two_factor() {
    let sink = Sink::start();
    let app = with_sso(&sink).await;
    let id = add_user(&app, "cy@example.com", "agent");
    let signed_in = sign_in(&app, "cy@example.com", PASSWORD).await;
    let cy = signed_in_from(&app, &signed_in).await;
    // As after an SSO-only start: linked, no password (the session is what matters here).
    app.db()
        .execute("UPDATE users SET password_hash = NULL WHERE id = ?1", [id])
        .expect("no password");

    let page = send(&app, "GET", "/account", &cy.cookie, None).await;
    assert!(
        page.body
            .contains("You sign in with single sign-on and have no password."),
        "{}",
        page.body
    );
    assert!(!page.body.contains("Current password"), "{}", page.body);
    assert!(
        !page.body.contains("Set up two-factor sign-in"),
        "{}",
        page.body
    );

    for _ in 0..6 {
        let body = form(&[
            ("csrf", &cy.csrf),
            ("current", "a guess"),
            ("new", "a long new password"),
        ]);
        let answer = send(&app, "POST", "/account/password", &cy.cookie, Some(&body)).await;
        assert_eq!(
            answer.status, 409,
            "never a throttled guess: {}",
            answer.body
        );
        assert!(
            answer.body.contains("have no password to change"),
            "{}",
            answer.body
        );
    }
    let body = form(&[("csrf", &cy.csrf)]);
    let answer = send(
        &app,
        "POST",
        "/account/two-factor/setup",
        &cy.cookie,
        Some(&body),
    )
    .await;
    assert_eq!(answer.status, 409, "{}", answer.body);
    assert!(
        answer.body.contains("guards sign-ins with a password"),
        "{}",
        answer.body
    );
    assert_eq!(app.count("SELECT count(*) FROM user_totp"), 0);
}
