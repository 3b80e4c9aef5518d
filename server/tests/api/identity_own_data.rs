//! A known visitor's own data from the widget (docs/widget-protocol.md, "Your data"): the
//! download and the erasure prove the user with `X-Porch-Identity`, as file requests do, and
//! then reach the user's history from any browser; without it, or with a forged one, only the
//! browser's own (anonymous) visitor.

use serde_json::{Value, json};

use crate::attachments::upload;
use crate::helpers::{Answer, Exchange, ORIGIN, TestApp, Widget};
use crate::identity::{browser_with, hello_as, rotate_secret, user_hash};
use crate::inbox::{setup_admin, signed_in_from};

/// `POST /widget/{call}?site=…` with the browser's token as the body and, when given, the
/// identity header the Porch widget sends.
async fn own_data(
    app: &TestApp,
    call: &str,
    site: &str,
    token: &str,
    who: Option<&Value>,
) -> Answer {
    let mut request = app
        .http
        .request("POST", &format!("/widget/{call}?site={site}"))
        .header("origin", ORIGIN)
        .header("content-type", "text/plain;charset=UTF-8")
        .body(token.to_owned());
    if let Some(who) = who {
        let json = who.to_string();
        let encoded =
            percent_encoding::utf8_percent_encode(&json, percent_encoding::NON_ALPHANUMERIC);
        request = request.header("x-porch-identity", encoded.to_string());
    }
    request.answer().await
}

/// A verified `user` on a new browser who has written `text`: (their identity, the browser's
/// widget, its token).
async fn user_who_wrote(
    app: &TestApp,
    (site, secret): (&str, &str),
    user: &str,
    text: &str,
) -> (Value, Widget, String) {
    let who = json!({"id": user, "user_hash": user_hash(secret, user)});
    let (mut widget, welcome) = browser_with(app, site, who.clone()).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    assert_eq!(widget.say("c-1", text).await["type"], "ack");
    (who, widget, token)
}

/// A server with a site whose known visitors are on: (app, site key, identity secret).
async fn known_site() -> (TestApp, String, String) {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let secret = rotate_secret(&app, &admin, &site).await;
    (app, site, secret)
}

#[tokio::test]
async fn a_verified_user_downloads_and_erases_their_history_from_any_browser() {
    let (app, site, secret) = known_site().await;
    let (ada, mut laptop, _) =
        user_who_wrote(&app, (&site, &secret), "ada", "ada-from-laptop").await;
    let (_, welcome) = browser_with(&app, &site, ada.clone()).await;
    let phone = welcome["token"].as_str().expect("token").to_owned();

    // The phone's token alone, a forged proof and another user reach nothing of Ada's.
    let forged = json!({"id": "ada", "user_hash": user_hash("not the secret", "ada")});
    let eve = json!({"id": "eve", "user_hash": user_hash(&secret, "eve")});
    for who in [None, Some(&forged), Some(&eve)] {
        let export = own_data(&app, "export", &site, &phone, who).await;
        assert_eq!(export.status, 404, "{who:?}: {}", export.body);
        assert_eq!(export.json()["error"]["code"], "nothing_stored");
    }
    for who in [&forged, &eve] {
        let erased = own_data(&app, "erase", &site, &phone, Some(who)).await;
        assert_eq!(erased.status, 200, "{}", erased.body);
        assert_eq!(erased.json()["messages"], 0, "{who}");
    }

    let export = own_data(&app, "export", &site, &phone, Some(&ada)).await;
    assert_eq!(export.status, 200, "{}", export.body);
    assert!(export.body.contains("ada-from-laptop"), "{}", export.body);
    assert_eq!(export.json()["visitor"]["user_id"], "ada");

    let erased = own_data(&app, "erase", &site, &phone, Some(&ada)).await;
    assert_eq!(erased.status, 200, "{}", erased.body);
    assert_eq!(erased.json()["conversations"], 1);
    assert_eq!(erased.json()["messages"], 1);
    assert_eq!(
        laptop.recv().await["type"],
        "erased",
        "the user's other browser"
    );
    let left = app.count("SELECT count(*) FROM messages WHERE body = 'ada-from-laptop'");
    assert_eq!(left, 0);
    assert_eq!(
        app.count("SELECT count(*) FROM visitors WHERE user_id = 'ada'"),
        0
    );
    let recorded = app.count("SELECT count(*) FROM audit_events WHERE action = 'privacy.erased'");
    assert_eq!(recorded, 1);
}

#[tokio::test]
async fn the_own_data_preflight_allows_the_identity_header() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Acme");
    for call in ["export", "erase"] {
        let preflight = app
            .http
            .request("OPTIONS", &format!("/widget/{call}?site={site}"))
            .header("origin", ORIGIN)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "x-porch-identity")
            .answer()
            .await;
        assert_eq!(preflight.status, 204, "{call}");
        assert_eq!(
            preflight.header("access-control-allow-origin"),
            Some(ORIGIN)
        );
        let allowed = preflight
            .header("access-control-allow-headers")
            .unwrap_or("");
        assert!(allowed.contains("x-porch-identity"), "{call}: {allowed}");
    }
}

#[tokio::test]
async fn a_verified_users_erasure_takes_the_browsers_chats_from_before_the_sign_in_too() {
    let (app, site, secret) = known_site().await;
    // Anonymous first, then signed in on the same browser.
    let (mut anonymous, welcome) = app.visitor(&site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    assert_eq!(anonymous.say("a-1", "before-sign-in").await["type"], "ack");
    let bo = json!({"id": "bo", "user_hash": user_hash(&secret, "bo")});
    let mut signed_in = hello_as(&app, &site, &token, bo.clone()).await;
    assert_eq!(signed_in.say("b-1", "after-sign-in").await["type"], "ack");

    let erased = own_data(&app, "erase", &site, &token, Some(&bo)).await;
    assert_eq!(erased.status, 200, "{}", erased.body);
    assert_eq!(erased.json()["conversations"], 2);
    assert_eq!(erased.json()["messages"], 2);
    let left = "SELECT count(*) FROM messages WHERE body IN ('before-sign-in', 'after-sign-in')";
    assert_eq!(app.count(left), 0);
    assert_eq!(app.count("SELECT count(*) FROM visitors"), 0);
}

/// A browser that wrote anonymously, then signed in as `who` and is still connected: (its widget,
/// its token).
async fn signed_in_after(app: &TestApp, site: &str, who: &Value, text: &str) -> (Widget, String) {
    let (mut anonymous, welcome) = app.visitor(site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    assert_eq!(anonymous.say("a-1", text).await["type"], "ack");
    (hello_as(app, site, &token, who.clone()).await, token)
}

#[tokio::test]
async fn the_erasure_takes_the_pre_sign_in_chats_of_each_browser_connected_as_the_user() {
    let (app, site, secret) = known_site().await;
    let cy = json!({"id": "cy", "user_hash": user_hash(&secret, "cy")});
    let (mut tablet, _) = signed_in_after(&app, &site, &cy, "tablet-before").await;
    let (closed, closed_token) = signed_in_after(&app, &site, &cy, "closed-before").await;
    drop(closed);
    // Closed as far as the server knows (the tablet's alone is open), or it would be told too.
    crate::metrics::metrics_until(&app, "the closed browser to be gone", |body| {
        crate::metrics::value_of(body, "porch_widget_connections") == Some(1.0)
    })
    .await;
    let (_, _, phone) = user_who_wrote(&app, (&site, &secret), "cy", "cy-after").await;

    let erased = own_data(&app, "erase", &site, &phone, Some(&cy)).await;
    assert_eq!(erased.status, 200, "{}", erased.body);
    assert_eq!(
        erased.json()["messages"],
        1,
        "the user's history: {}",
        erased.body
    );
    // The tablet forgets its token on `erased`: its chats from before the sign-in went first.
    // (Before it, the phone's message reached the tablet live, as the same user's.)
    let mut frame = tablet.recv().await;
    while frame["type"] == "message" {
        frame = tablet.recv().await;
    }
    assert_eq!(frame["type"], "erased", "{frame}");
    let left = |body: &str| {
        app.count(&format!(
            "SELECT count(*) FROM messages WHERE body = '{body}'"
        ))
    };
    assert_eq!(left("tablet-before"), 0);
    // A browser not connected keeps its token, and its own request reaches both.
    assert_eq!(left("closed-before"), 1);
    let later = own_data(&app, "erase", &site, &closed_token, Some(&cy)).await;
    assert_eq!(later.json()["messages"], 1, "{}", later.body);
    assert_eq!(app.count("SELECT count(*) FROM visitors"), 0);
    let recorded = app.count("SELECT count(*) FROM audit_events WHERE action = 'privacy.erased'");
    assert_eq!(
        recorded, 3,
        "the user, the tablet's visitor, the closed browser's"
    );
}

#[tokio::test]
async fn the_own_data_rate_is_the_users_across_browsers() {
    let (app, site, secret) = known_site().await;
    let (cy, _laptop, laptop_token) = user_who_wrote(&app, (&site, &secret), "cy", "cy-asks").await;
    let (_, welcome) = browser_with(&app, &site, cy.clone()).await;
    let phone = welcome["token"].as_str().expect("token").to_owned();

    // A burst of 5 for the user, whichever browser asks; the phone's own token has its own.
    for token in [&laptop_token, &laptop_token, &phone, &phone, &phone] {
        let export = own_data(&app, "export", &site, token, Some(&cy)).await;
        assert_eq!(export.status, 200, "{}", export.body);
    }
    let over = own_data(&app, "export", &site, &laptop_token, Some(&cy)).await;
    assert_eq!(over.status, 429, "{}", over.body);
    assert_eq!(over.json()["error"]["code"], "rate_limited");
    let own = own_data(&app, "export", &site, &phone, None).await;
    assert_eq!(own.status, 404, "the token's own visitor: {}", own.body);
}

#[tokio::test]
async fn a_verified_users_erasure_takes_the_browsers_unsent_uploads() {
    let (app, site, secret) = known_site().await;
    let (di, _laptop, token) = user_who_wrote(&app, (&site, &secret), "di", "di-asks").await;
    let (status, _) = upload(&app, &site, &token, "draft.txt", b"UNSENT".to_vec()).await;
    assert_eq!(status, 201);
    assert_eq!(app.count("SELECT count(*) FROM attachments"), 1);

    let erased = own_data(&app, "erase", &site, &token, Some(&di)).await;
    assert_eq!(erased.status, 200, "{}", erased.body);
    assert_eq!(app.count("SELECT count(*) FROM attachments"), 0);
}
