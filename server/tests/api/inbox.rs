//! The admin UI's security: the setup token, session cookies, CSRF on form posts, roles,
//! sign-in throttling, and disabled users. Driven over real HTTP like a browser would.
// Helpers outside #[test] functions: a failed expectation is a failed test.
#![allow(clippy::expect_used)]

use porch::store::{self, NewUser};
use reqwest::RequestBuilder;

use crate::helpers::{Answer, Exchange as _, TestApp, WAIT, ok_if, wait_until};

pub(crate) const PASSWORD: &str = "correct horse battery staple";

/// A request as the browser sends it: `cookies` as they are, and a form body when `form` is
/// given.
pub(crate) fn request(
    app: &TestApp,
    method: &str,
    path: &str,
    cookies: &str,
    form: Option<&str>,
) -> RequestBuilder {
    let mut request = app.http.request(method, path);
    if !cookies.is_empty() {
        request = request.header(reqwest::header::COOKIE, cookies);
    }
    if let Some(form) = form {
        request = request
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(form.to_owned());
    }
    request
}

/// Sends a [`request`] and reads the whole answer.
pub(crate) async fn send(
    app: &TestApp,
    method: &str,
    path: &str,
    cookies: &str,
    form: Option<&str>,
) -> Answer {
    request(app, method, path, cookies, form).answer().await
}

pub(crate) fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

pub(crate) fn form(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The value of the hidden `csrf` field in a page.
pub(crate) fn csrf_in(page: &str) -> String {
    let at = page.find("name=\"csrf\" value=\"").expect("a csrf field") + 19;
    page[at..].split('"').next().expect("value").to_owned()
}

/// The form cookie a public page sets: (cookie pair, token).
pub(crate) async fn form_cookie(app: &TestApp, path: &str) -> (String, String) {
    let page = send(app, "GET", path, "", None).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let (pair, _) = page.cookie("porch_form").expect("form cookie");
    let token = csrf_in(&page.body);
    (pair, token)
}

pub(crate) async fn setup_admin(app: &TestApp) -> Answer {
    let token = app
        .server
        .as_ref()
        .expect("running")
        .app
        .accounts
        .pending_setup_token()
        .expect("a fresh install has a setup token");
    let (cookie, csrf) = form_cookie(app, "/setup").await;
    let body = form(&[
        ("csrf", &csrf),
        ("token", &token),
        ("name", "Ana"),
        ("email", "ana@example.com"),
        ("password", PASSWORD),
    ]);
    send(app, "POST", "/setup", &cookie, Some(&body)).await
}

/// A signed-in browser: its session cookie and CSRF token.
pub(crate) struct Browser {
    pub(crate) cookie: String,
    pub(crate) csrf: String,
}

pub(crate) async fn signed_in_from(app: &TestApp, answer: &Answer) -> Browser {
    let (cookie, _) = answer.cookie("porch_session").expect("a session cookie");
    let page = send(app, "GET", "/account", &cookie, None).await;
    assert_eq!(page.status, 200);
    Browser {
        csrf: csrf_in(&page.body),
        cookie,
    }
}

pub(crate) async fn sign_in(app: &TestApp, email: &str, password: &str) -> Answer {
    let (cookie, csrf) = form_cookie(app, "/login").await;
    let body = form(&[("csrf", &csrf), ("email", email), ("password", password)]);
    send(app, "POST", "/login", &cookie, Some(&body)).await
}

pub(crate) fn add_user(app: &TestApp, email: &str, role: &str) -> porch::store::UserId {
    let password = porch::accounts::Password::parse(PASSWORD).expect("valid");
    let hash = porch::accounts::hash_password(&password).expect("hash");
    store::insert_user(
        &app.db(),
        &NewUser {
            email,
            name: "Bo",
            role,
            password_hash: Some(&hash),
            created_at: 0,
        },
    )
    .expect("insert user")
}

#[tokio::test]
async fn inbox_setup_needs_the_token_and_works_only_once() {
    let app = TestApp::spawn(&[]).await;
    let home = send(&app, "GET", "/", "", None).await;
    assert_eq!(
        (home.status, home.header("location")),
        (303, Some("/setup"))
    );

    let (cookie, csrf) = form_cookie(&app, "/setup").await;
    let wrong = form(&[
        ("csrf", &csrf),
        ("token", "guessed"),
        ("name", "Mallory"),
        ("email", "m@example.com"),
        ("password", PASSWORD),
    ]);
    let refused = send(&app, "POST", "/setup", &cookie, Some(&wrong)).await;
    assert_eq!(refused.status, 403);
    assert_eq!(app.count("SELECT count(*) FROM users"), 0);

    let created = setup_admin(&app).await;
    assert_eq!(created.status, 303, "{}", created.body);
    assert_eq!(
        app.count("SELECT count(*) FROM users WHERE role = 'admin'"),
        1
    );
    let accounts = &app.server.as_ref().expect("running").app.accounts;
    assert!(
        accounts.pending_setup_token().is_none(),
        "the token is spent"
    );

    // The setup page is closed for good.
    let again = send(&app, "GET", "/setup", "", None).await;
    assert_eq!(
        (again.status, again.header("location")),
        (303, Some("/login"))
    );
    let replay = send(&app, "POST", "/setup", &cookie, Some(&wrong)).await;
    assert_eq!(replay.status, 303);
    assert_eq!(app.count("SELECT count(*) FROM users"), 1);
}

#[tokio::test]
async fn inbox_session_cookie_is_http_only_lax_and_hashed_at_rest() {
    let app = TestApp::spawn(&[]).await;
    let answer = setup_admin(&app).await;
    let (pair, header) = answer.cookie("porch_session").expect("session cookie");
    assert!(header.contains("HttpOnly"), "{header}");
    assert!(header.contains("SameSite=Lax"), "{header}");
    assert!(header.contains("Path=/"), "{header}");
    assert!(
        !header.contains("Secure"),
        "plain http must not set Secure: {header}"
    );
    let value = pair.trim_start_matches("porch_session=");
    assert!(value.len() >= 43, "a 256-bit random id");
    let stored: Vec<u8> = app
        .db()
        .query_row("SELECT id_hash FROM sessions", [], |r| r.get(0))
        .expect("one session");
    assert_ne!(stored, value.as_bytes(), "the session id is stored hashed");
}

#[tokio::test]
async fn inbox_session_cookie_is_secure_behind_https() {
    let app = TestApp::spawn(&["--public-url", "https://chat.example.com"]).await;
    let answer = setup_admin(&app).await;
    let (_, header) = answer.cookie("porch_session").expect("session cookie");
    assert!(header.contains("; Secure"), "{header}");
}

#[tokio::test]
async fn inbox_form_posts_without_the_session_csrf_token_are_refused() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = [
        ("name", "Acme"),
        ("origins", "https://acme.example"),
        ("greeting", "Hi!"),
        ("color", "#2563eb"),
        ("position", "right"),
        ("visitor_messages_per_minute", "30"),
        ("visitor_burst", "10"),
        ("flood_messages_per_minute", "600"),
        ("flood_conversations_per_minute", "60"),
    ];
    let missing = send(&app, "POST", "/sites", &admin.cookie, Some(&form(&site))).await;
    assert_eq!(missing.status, 403);
    let mut forged = site.to_vec();
    forged.push(("csrf", "forged"));
    let wrong = send(&app, "POST", "/sites", &admin.cookie, Some(&form(&forged))).await;
    assert_eq!(wrong.status, 403);
    assert_eq!(app.count("SELECT count(*) FROM sites"), 0);

    let mut good = site.to_vec();
    good.push(("csrf", &admin.csrf));
    let created = send(&app, "POST", "/sites", &admin.cookie, Some(&form(&good))).await;
    assert_eq!(created.status, 303, "{}", created.body);
    assert_eq!(app.count("SELECT count(*) FROM sites"), 1);

    // Before sign-in, the form cookie must match the field.
    let (_, csrf) = form_cookie(&app, "/login").await;
    let body = form(&[
        ("csrf", &csrf),
        ("email", "ana@example.com"),
        ("password", PASSWORD),
    ]);
    let no_cookie = send(&app, "POST", "/login", "", Some(&body)).await;
    assert_eq!(no_cookie.status, 403);
}

#[tokio::test]
async fn inbox_agents_get_403_on_admin_pages() {
    let app = TestApp::spawn(&[]).await;
    setup_admin(&app).await;
    add_user(&app, "bo@example.com", "agent");
    let agent = signed_in_from(&app, &sign_in(&app, "bo@example.com", PASSWORD).await).await;
    assert_eq!(
        send(&app, "GET", "/inbox", &agent.cookie, None)
            .await
            .status,
        200
    );
    for path in ["/sites", "/sites/new", "/team"] {
        let page = send(&app, "GET", path, &agent.cookie, None).await;
        assert_eq!(page.status, 403, "{path}");
        assert!(page.body.contains("Only admins"), "{path}");
    }
    let invite = form(&[
        ("csrf", &agent.csrf),
        ("name", "Eve"),
        ("email", "eve@example.com"),
        ("role", "admin"),
    ]);
    let posted = send(&app, "POST", "/team/invite", &agent.cookie, Some(&invite)).await;
    assert_eq!(posted.status, 403);
    assert_eq!(app.count("SELECT count(*) FROM users"), 2);

    let anonymous = send(&app, "GET", "/inbox", "", None).await;
    assert_eq!(
        (anonymous.status, anonymous.header("location")),
        (303, Some("/login?next=/inbox"))
    );
}

#[tokio::test]
async fn inbox_sign_in_is_throttled_after_repeated_failures() {
    let app = TestApp::spawn(&[]).await;
    setup_admin(&app).await;
    for _ in 0..porch::accounts::ACCOUNT_FAILURES {
        let failed = sign_in(&app, "ana@example.com", "wrong password!").await;
        assert_eq!(failed.status, 401);
    }
    let throttled = sign_in(&app, "ana@example.com", PASSWORD).await;
    assert_eq!(throttled.status, 429);
    assert!(throttled.body.contains("Too many failed sign-ins"));
    assert!(throttled.header("retry-after").is_some());
    assert!(throttled.cookie("porch_session").is_none());
}

#[tokio::test]
async fn inbox_a_disabled_user_is_locked_out_at_once() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let bo = add_user(&app, "bo@example.com", "agent");
    let token = porch::http::auth::new_api_token();
    store::insert_api_token(
        &app.db(),
        &store::NewApiToken {
            user_id: bo,
            name: "t",
            token_hash: &porch::http::auth::hash_api_token(&token),
            scope: porch::values::TokenScope::ReadWrite,
            expires_at: None,
            now: 0,
        },
    )
    .expect("token");
    let agent = signed_in_from(&app, &sign_in(&app, "bo@example.com", PASSWORD).await).await;
    assert_eq!(
        send(&app, "GET", "/inbox", &agent.cookie, None)
            .await
            .status,
        200
    );
    assert_eq!(
        app.api("GET", "/api/v1/conversations", &token, None)
            .await
            .0,
        200
    );

    let body = form(&[("csrf", &admin.csrf)]);
    let disabled = send(
        &app,
        "POST",
        &format!("/team/{bo}/disable"),
        &admin.cookie,
        Some(&body),
    )
    .await;
    assert_eq!(disabled.status, 303, "{}", disabled.body);

    let page = send(&app, "GET", "/inbox", &agent.cookie, None).await;
    assert_eq!(page.status, 303, "the session ended");
    assert_eq!(
        app.api("GET", "/api/v1/conversations", &token, None)
            .await
            .0,
        401
    );
    // The right password is told the account is disabled, and gets no session.
    let again = sign_in(&app, "bo@example.com", PASSWORD).await;
    assert_eq!(again.status, 403);
    assert!(again.cookie("porch_session").is_none());
}

/// A server wired to a Slack mock, its admin signed in, and a site.
async fn slack_admin() -> (TestApp, porch::loadtest::SlackMock, Browser, String) {
    let mock =
        porch::loadtest::SlackMock::start(([127, 0, 0, 1], 0).into(), std::time::Duration::ZERO)
            .await
            .expect("mock");
    let app = TestApp::spawn(&["--slack-api-url", &mock.api_url()]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Shop");
    (app, mock, admin, site)
}

async fn connect_slack(app: &TestApp, admin: &Browser, site: &str, token: &str) -> Answer {
    let body = form(&[
        ("csrf", &admin.csrf),
        ("bot_token", token),
        ("channel_id", "C1"),
        ("signing_secret", "s"),
    ]);
    send(
        app,
        "POST",
        &format!("/sites/{site}/slack"),
        &admin.cookie,
        Some(&body),
    )
    .await
}

#[tokio::test]
async fn inbox_admins_connect_slack_from_the_site_page() {
    let (app, mock, admin, site) = slack_admin().await;
    let page = send(
        &app,
        "GET",
        &format!("/sites/{site}/slack"),
        &admin.cookie,
        None,
    )
    .await;
    assert!(
        page.status == 200 && page.body.contains("Connect Slack"),
        "{}",
        page.body
    );
    // Not a bot token at all: said before Slack is asked.
    let refused = connect_slack(&app, &admin, &site, "not-a-token").await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body.contains("The bot token starts with xoxb-"),
        "{}",
        refused.body
    );
    mock.revoke_token("xoxb-revoked");
    let refused = connect_slack(&app, &admin, &site, "xoxb-revoked").await;
    assert_eq!(refused.status, 422, "a token Slack refuses is not saved");
    assert!(refused.body.contains("invalid_auth"));
    // The channel id as typed stays in the form; the token Slack refused is not shown.
    assert!(refused.body.contains("value=\"C1\""), "{}", refused.body);
    assert!(!refused.body.contains("xoxb-revoked"));
    assert_eq!(
        connect_slack(&app, &admin, &site, "xoxb-test").await.status,
        303
    );
    let page = send(
        &app,
        "GET",
        &format!("/sites/{site}/slack"),
        &admin.cookie,
        None,
    )
    .await;
    assert!(
        page.body.contains("data-health=\"healthy\"") && page.body.contains("/integrations/slack/"),
        "{}",
        page.body
    );
    for endpoint in ["events", "commands", "interactive"] {
        assert!(
            page.body
                .contains(&format!("/integrations/slack/1/{endpoint}</dd>")),
            "the page shows the {endpoint} URL for the manifest"
        );
    }
    assert!(
        !page.body.contains("xoxb-test"),
        "secrets are never shown back"
    );
}

#[tokio::test]
async fn inbox_admins_see_failed_deliveries_and_retry_them() {
    let (app, mock, admin, site) = slack_admin().await;
    assert_eq!(
        connect_slack(&app, &admin, &site, "xoxb-test").await.status,
        303
    );
    mock.set_failure(
        "C1",
        Some(porch::loadtest::Failure::SlackError("msg_too_long".into())),
    );
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget.say("m", "hello").await;
    wait_until("the delivery to fail", WAIT, async || {
        ok_if(
            app.count("SELECT count(*) FROM jobs WHERE state = 'failed'"),
            |n| *n > 0,
        )
    })
    .await;
    let deliveries = send(&app, "GET", "/deliveries", &admin.cookie, None).await;
    assert!(
        deliveries.body.contains("Slack")
            && deliveries.body.contains("a message")
            && deliveries.body.contains("msg_too_long"),
        "{}",
        deliveries.body
    );
    let conversation: i64 = app
        .db()
        .query_row("SELECT id FROM conversations", [], |r| r.get(0))
        .expect("conversation");
    let path = format!("/conversations/{conversation}");
    // Each row says where the delivery goes, for which site and conversation.
    assert!(
        deliveries.body.contains("Slack · Shop")
            && deliveries.body.contains(&format!("href=\"{path}\""))
            && deliveries.body.contains("tried once"),
        "{}",
        deliveries.body
    );
    let page = send(&app, "GET", &path, &admin.cookie, None).await;
    assert!(
        page.body.contains("delivery-failed"),
        "the message shows its failed delivery"
    );

    mock.set_failure("C1", None);
    let retry = form(&[("csrf", &admin.csrf)]);
    assert_eq!(
        send(
            &app,
            "POST",
            "/deliveries/retry",
            &admin.cookie,
            Some(&retry)
        )
        .await
        .status,
        303
    );
    assert_eq!(mock.wait_for_posts(2, WAIT).await.len(), 2);
    // A delivery that is not (or no longer) failed is not said to be queued again.
    let gone = send(
        &app,
        "POST",
        "/deliveries/99999/retry",
        &admin.cookie,
        Some(&retry),
    )
    .await;
    assert_eq!(gone.status, 303);
    assert_eq!(
        gone.header("location"),
        Some("/deliveries?notice=not-retried")
    );
    wait_until("the message shown as posted", WAIT, async || {
        let page = send(&app, "GET", &path, &admin.cookie, None).await;
        if page.body.contains("delivery-posted") {
            Ok(())
        } else {
            Err(page.body)
        }
    })
    .await;
}

/// What the inbox script gets after its session ended, where a form post gets the sign-in page:
/// a status it can act on, never a redirect that `fetch` would follow to a page.
#[tokio::test]
async fn inbox_script_writes_after_sign_out_get_401_and_plain_posts_still_redirect() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let (mut widget, _) = app.visitor(&app.add_site("Shop"), None, 0).await;
    widget.say("m", "hello").await;
    let id: i64 = app
        .db()
        .query_row("SELECT id FROM conversations", [], |r| r.get(0))
        .expect("conversation");
    let reply = format!("/conversations/{id}/reply");
    // What the inbox script's `fetch` sends, telling it apart from a plain form post.
    let script = |form: &str| {
        request(&app, "POST", &reply, &admin.cookie, Some(form))
            .header("X-Porch-Fetch", "1")
            .answer()
    };
    let body = form(&[
        ("csrf", &admin.csrf),
        ("body", "Hi there"),
        ("kind", "reply"),
    ]);

    let sent = script(&body).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    assert_eq!(sent.header("x-porch-fragment"), Some("message"));
    assert!(sent.body.contains("id=\"message-"), "{}", sent.body);

    let stale = form(&[("csrf", "an-older-session"), ("body", "Lost?")]);
    let refused = script(&stale).await;
    assert_eq!(refused.status, 403);
    assert!(
        refused.body.contains(r#""code":"form_expired""#),
        "{}",
        refused.body
    );

    let logout = form(&[("csrf", &admin.csrf)]);
    let out = send(&app, "POST", "/logout", &admin.cookie, Some(&logout)).await;
    assert_eq!(out.status, 303);
    let late = script(&body).await;
    assert_eq!(late.status, 401, "{}", late.body);
    assert_eq!(late.header("location"), None);
    assert_eq!(late.header("content-type"), Some("application/json"));
    assert!(
        late.body.contains(r#""code":"signed_out""#),
        "{}",
        late.body
    );

    let plain = send(&app, "POST", &reply, &admin.cookie, Some(&body)).await;
    assert_eq!(
        (plain.status, plain.header("location")),
        (303, Some("/login"))
    );
    assert_eq!(
        app.count("SELECT count(*) FROM messages WHERE author = 'agent'"),
        1,
        "only the reply sent while signed in was stored"
    );
}

#[tokio::test]
async fn a_form_is_read_only_when_sent_as_a_form() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let (mut widget, _) = app.visitor(&app.add_site("Shop"), None, 0).await;
    widget.say("m", "hello").await;
    let reply = format!(
        "/conversations/{}/reply",
        app.count("SELECT id FROM conversations")
    );
    let body = form(&[("csrf", &admin.csrf), ("body", "Hi there")]);
    // A page elsewhere can post `text/plain` without a preflight; a body that looks like a form
    // is still not one, even with the right token in it.
    let typed = |content_type: &'static str| {
        request(&app, "POST", &reply, &admin.cookie, None)
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .body(body.clone())
    };
    let page = typed("text/plain").answer().await;
    assert_eq!(page.status, 415, "{}", page.body);
    assert!(page.body.contains("Form not understood"), "{}", page.body);
    let script = typed("text/plain;charset=UTF-8")
        .header("X-Porch-Fetch", "1")
        .answer()
        .await;
    assert_eq!(script.status, 415);
    assert!(
        script.body.contains(r#""code":"unsupported_media_type""#),
        "{}",
        script.body
    );
    let bare = request(&app, "POST", &reply, &admin.cookie, None)
        .body(body.clone())
        .answer()
        .await;
    assert_eq!(bare.status, 415, "no content type at all");
    assert_eq!(
        app.count("SELECT count(*) FROM messages WHERE author = 'agent'"),
        0
    );
    let sent = typed("Application/X-WWW-Form-Urlencoded; charset=utf-8")
        .answer()
        .await;
    assert_eq!(sent.status, 303, "{}", sent.body);
    assert_eq!(
        app.count("SELECT count(*) FROM messages WHERE author = 'agent'"),
        1
    );
}

#[tokio::test]
async fn a_site_delete_with_the_wrong_name_shows_the_form_again_and_deletes_nothing() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let key = app.add_site("Shop");
    let path = format!("/sites/{key}/delete");
    let first = send(&app, "GET", &path, &admin.cookie, None).await;
    assert!(!first.body.contains("autofocus"), "nothing to say yet");
    let wrong = form(&[("csrf", &admin.csrf), ("confirm", "shop")]);
    let refused = send(&app, "POST", &path, &admin.cookie, Some(&wrong)).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body.contains("does not match the site"),
        "{}",
        refused.body
    );
    assert!(refused.body.contains("name=\"confirm\""), "the form again");
    assert!(refused.body.contains("aria-invalid=\"true\""));
    let field = refused
        .body
        .split("id=\"confirm\"")
        .nth(1)
        .and_then(|f| f.split('>').next());
    assert!(field.is_some_and(|f| f.contains("autofocus")), "{field:?}");
    assert_eq!(app.count("SELECT count(*) FROM sites"), 1);
    let right = form(&[("csrf", &admin.csrf), ("confirm", "Shop")]);
    let deleted = send(&app, "POST", &path, &admin.cookie, Some(&right)).await;
    assert_eq!(deleted.status, 303, "{}", deleted.body);
    assert_eq!(app.count("SELECT count(*) FROM sites"), 0);
}
