//! Known visitors (docs/widget.md#known-visitors): an admin makes a site's identity secret; a
//! `hello.identity` with a valid `user_hash` reaches the same history from any browser and is
//! shown to agents as verified; a missing or wrong hash is shown as unverified and never merges.

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::attachments::{agent_reply_with, agent_upload, black_png, send_with, upload};
use crate::helpers::{Exchange, ORIGIN, TestApp, Widget};
use crate::inbox::{Browser, PASSWORD, add_user, form, send, setup_admin, sign_in, signed_in_from};
use crate::privacy::cli;
use crate::sealed_secrets::{porch_cli, stop};

/// What a site's server computes: lower-case hex HMAC-SHA256 of the user id.
pub(crate) fn user_hash(secret: &str, user_id: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(user_id.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// Turns known visitors on (or rotates) from the site page and reads the secret it shows.
pub(crate) async fn rotate_secret(app: &TestApp, admin: &Browser, site: &str) -> String {
    let body = form(&[("csrf", &admin.csrf)]);
    let path = format!("/sites/{site}/identity/rotate");
    let posted = send(app, "POST", &path, &admin.cookie, Some(&body)).await;
    assert_eq!(posted.status, 303, "{}", posted.body);
    let page = send(
        app,
        "GET",
        &format!("/sites/{site}/identity"),
        &admin.cookie,
        None,
    )
    .await;
    assert_eq!(page.status, 200);
    let at = page
        .body
        .find("id=\"identity-secret\"")
        .expect("the secret field");
    let value = &page.body[at..];
    let start = value.find("value=\"").expect("a value") + 7;
    let secret = value[start..].split('"').next().expect("value").to_owned();
    assert_eq!(secret.len(), 64, "{secret}");
    secret
}

/// A new browser (no token) saying hello with `identity`; returns the widget and welcome.
pub(crate) async fn browser_with(app: &TestApp, site: &str, identity: Value) -> (Widget, Value) {
    let mut widget = app.connect(site, ORIGIN).await;
    widget
        .send(json!({"type": "hello", "v": 1, "identity": identity}))
        .await;
    let welcome = widget.recv().await;
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    (widget, welcome)
}

fn bodies(welcome: &Value) -> Vec<String> {
    welcome["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["body"].as_str().expect("body").to_owned())
        .collect()
}

async fn conversation_page(app: &TestApp, admin: &Browser) -> String {
    let conversation = app.count("SELECT max(id) FROM conversations");
    let page = send(
        app,
        "GET",
        &format!("/conversations/{conversation}"),
        &admin.cookie,
        None,
    )
    .await;
    assert_eq!(page.status, 200);
    page.body
}

#[tokio::test]
async fn a_verified_user_finds_their_history_on_another_browser_and_agents_see_who_it_is() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let secret = rotate_secret(&app, &admin, &site).await;
    let ada = json!({"id": "u-42", "name": "Ada <Lovelace>", "email": "ada@example.org",
                     "user_hash": user_hash(&secret, "u-42")});

    let (mut laptop, welcome) = browser_with(&app, &site, ada.clone()).await;
    assert!(bodies(&welcome).is_empty());
    assert_eq!(laptop.say("c-1", "Where is my order?").await["type"], "ack");

    // Another browser, no token: the same user's history, and their messages join it.
    let (mut phone, welcome) = browser_with(&app, &site, ada.clone()).await;
    assert_eq!(bodies(&welcome), ["Where is my order?"]);
    assert_ne!(
        phone.say("c-2", "From my phone").await["type"],
        "error",
        "stored"
    );
    assert_eq!(app.count("SELECT count(*) FROM visitors"), 1);
    assert_eq!(app.count("SELECT count(*) FROM conversations"), 1);
    // The laptop sees the phone's message live, like another tab.
    let pushed = laptop.recv().await;
    assert_eq!(
        (pushed["type"].as_str(), pushed["body"].as_str()),
        (Some("message"), Some("From my phone"))
    );

    let page = conversation_page(&app, &admin).await;
    assert!(
        page.contains("data-identity=\"verified\"><bdi>u-42"),
        "the verified user id: {page}"
    );
    assert!(page.contains("Ada &lt;Lovelace&gt;"), "the name, escaped");
    assert!(!page.contains("<Lovelace>"), "never raw");
    assert!(page.contains("ada@example.org"), "the email");
    assert!(!page.contains("data-identity=\"unverified\""));
    // The inbox list shows the verified name too.
    let inbox = send(&app, "GET", "/inbox", &admin.cookie, None).await;
    assert!(
        inbox.body.contains("Ada &lt;Lovelace&gt;"),
        "{}",
        inbox.body
    );
}

/// Both browsers open before the user's first message: the one that did not write still gets
/// it, and the reply, live.
#[tokio::test]
async fn a_verified_users_other_browser_open_before_the_first_message_follows_it_live() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let secret = rotate_secret(&app, &admin, &site).await;
    let ada = json!({"id": "777", "user_hash": user_hash(&secret, "777")});
    let (mut laptop, _) = browser_with(&app, &site, ada.clone()).await;
    let (mut phone, welcome) = browser_with(&app, &site, ada).await;
    assert!(bodies(&welcome).is_empty());

    assert_eq!(laptop.say("c-1", "Hello?").await["type"], "ack");
    let pushed = phone.recv().await;
    assert_eq!(
        (&pushed["type"], &pushed["body"]),
        (&json!("message"), &json!("Hello?"))
    );
    let agent = app.add_agent_token("Bea");
    let conversation = app.count("SELECT id FROM conversations");
    let path = format!("/api/v1/conversations/{conversation}/messages");
    let (status, _) = app
        .api("POST", &path, &agent, Some(json!({"body": "agent to 777"})))
        .await;
    assert_eq!(status, 201);
    for browser in [&mut laptop, &mut phone] {
        assert_eq!(browser.recv().await["body"], "agent to 777");
    }
}

#[tokio::test]
async fn a_wrong_or_missing_user_hash_is_unverified_and_never_merges_histories() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let secret = rotate_secret(&app, &admin, &site).await;
    let (mut real, _) = browser_with(
        &app,
        &site,
        json!({"id": "u-42", "user_hash": user_hash(&secret, "u-42")}),
    )
    .await;
    assert_eq!(real.say("c-1", "My secret order").await["type"], "ack");

    let forged = [
        json!({"id": "u-42", "name": "Mallory"}),
        json!({"id": "u-42", "name": "Mallory", "user_hash": user_hash("guess", "u-42")}),
        json!({"id": "u-42", "name": "Mallory", "user_hash": user_hash(&secret, "u-43")}),
        json!({"id": "u-42", "name": "Mallory", "user_hash": "zz"}),
    ];
    for (n, identity) in forged.into_iter().enumerate() {
        let (mut other, welcome) = browser_with(&app, &site, identity.clone()).await;
        assert!(bodies(&welcome).is_empty(), "{identity}: no history");
        let answer = other.say(&format!("m-{n}"), "Hello").await;
        assert_eq!(answer["type"], "ack", "{answer}");
    }
    // Each unverified browser is its own visitor; the real user's row has one message.
    assert_eq!(app.count("SELECT count(*) FROM visitors"), 5);
    assert_eq!(
        app.count("SELECT count(*) FROM visitors WHERE user_id IS NOT NULL"),
        1
    );
    assert_eq!(
        app.count(
            "SELECT count(*) FROM messages m JOIN visitors v ON v.id = m.visitor_id \
             WHERE v.user_id = 'u-42'"
        ),
        1
    );
    let page = conversation_page(&app, &admin).await;
    assert!(
        page.contains("data-identity=\"unverified\"><bdi>u-42 \u{b7} Mallory"),
        "the claim, marked: {page}"
    );
    assert!(!page.contains("data-identity=\"verified\""));
}

#[tokio::test]
async fn without_a_secret_every_identity_is_unverified_and_a_numeric_id_is_its_decimal_text() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    // No secret yet: even a hash under some secret verifies nothing.
    let (mut first, _) = browser_with(
        &app,
        &site,
        json!({"id": 7, "user_hash": user_hash("anything", "7")}),
    )
    .await;
    assert_eq!(first.say("c-1", "Hi").await["type"], "ack");
    assert_eq!(
        app.count("SELECT count(*) FROM visitors WHERE claimed_user_id = '7' AND user_id IS NULL"),
        1
    );

    let secret = rotate_secret(&app, &admin, &site).await;
    let (mut second, welcome) = browser_with(
        &app,
        &site,
        json!({"id": 7, "user_hash": user_hash(&secret, "7")}),
    )
    .await;
    assert!(
        bodies(&welcome).is_empty(),
        "the unverified chat stays apart"
    );
    assert_eq!(second.say("c-1", "Verified now").await["type"], "ack");
    assert_eq!(
        app.count("SELECT count(*) FROM visitors WHERE user_id = '7'"),
        1
    );
}

#[tokio::test]
async fn rotating_or_removing_the_secret_stops_old_hashes_at_once_and_is_audited() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let old = rotate_secret(&app, &admin, &site).await;
    let identity = |secret: &str| json!({"id": "u-1", "user_hash": user_hash(secret, "u-1")});
    let (mut widget, _) = browser_with(&app, &site, identity(&old)).await;
    assert_eq!(widget.say("c-1", "Before").await["type"], "ack");

    let new = rotate_secret(&app, &admin, &site).await;
    assert_ne!(old, new);
    let (_, welcome) = browser_with(&app, &site, identity(&old)).await;
    assert!(
        bodies(&welcome).is_empty(),
        "the old hash no longer verifies"
    );
    let (_, welcome) = browser_with(&app, &site, identity(&new)).await;
    assert_eq!(bodies(&welcome), ["Before"], "the new one does");

    let body = form(&[("csrf", &admin.csrf)]);
    let path = format!("/sites/{site}/identity/remove");
    assert_eq!(
        send(&app, "POST", &path, &admin.cookie, Some(&body))
            .await
            .status,
        303
    );
    let (_, welcome) = browser_with(&app, &site, identity(&new)).await;
    assert!(bodies(&welcome).is_empty(), "off: nothing verifies");
    let page = send(
        &app,
        "GET",
        &format!("/sites/{site}/identity"),
        &admin.cookie,
        None,
    )
    .await;
    assert!(page.body.contains("data-identity-state=\"off\""));

    assert_eq!(
        app.count(
            "SELECT count(*) FROM audit_events WHERE action = 'site.identity_secret_rotated'"
        ),
        2
    );
    assert_eq!(
        app.count(
            "SELECT count(*) FROM audit_events WHERE action = 'site.identity_secret_removed'"
        ),
        1
    );
}

#[tokio::test]
async fn the_secret_is_sealed_at_rest_and_only_admins_with_the_csrf_token_change_it() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let secret = rotate_secret(&app, &admin, &site).await;
    let stored: String = app
        .db()
        .query_row("SELECT secret FROM site_identity_secrets", [], |r| r.get(0))
        .expect("a row");
    assert!(!stored.contains(&secret), "sealed, not in clear");

    add_user(&app, "bo@example.com", "agent");
    let agent = signed_in_from(&app, &sign_in(&app, "bo@example.com", PASSWORD).await).await;
    let page = send(
        &app,
        "GET",
        &format!("/sites/{site}/identity"),
        &agent.cookie,
        None,
    )
    .await;
    assert_eq!(page.status, 403, "agents do not see the secret");
    assert!(!page.body.contains(&secret));
    let rotate = format!("/sites/{site}/identity/rotate");
    let body = form(&[("csrf", &agent.csrf)]);
    assert_eq!(
        send(&app, "POST", &rotate, &agent.cookie, Some(&body))
            .await
            .status,
        403
    );
    let forged = form(&[("csrf", "forged")]);
    let refused = send(&app, "POST", &rotate, &admin.cookie, Some(&forged)).await;
    assert!(refused.status >= 400, "{}", refused.status);
    assert_eq!(
        app.count(
            "SELECT count(*) FROM audit_events WHERE action = 'site.identity_secret_rotated'"
        ),
        1
    );
}

#[tokio::test]
async fn the_identity_secret_still_verifies_after_the_sealing_key_is_rotated() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let secret = rotate_secret(&app, &admin, &site).await;
    let identity = json!({"id": "u-1", "user_hash": user_hash(&secret, "u-1")});
    let (mut widget, _) = browser_with(&app, &site, identity.clone()).await;
    assert_eq!(
        widget.say("c-1", "Before the rotation").await["type"],
        "ack"
    );
    drop(widget);
    let dir = stop(app).await;

    let out = porch_cli(dir.path(), &["secrets", "rotate"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let app = TestApp::spawn_in(dir, &[]).await;
    let (_, welcome) = browser_with(&app, &site, identity).await;
    assert_eq!(bodies(&welcome), ["Before the rotation"]);
    let detail: String = app
        .db()
        .query_row(
            "SELECT detail FROM audit_events WHERE action = 'secrets.rotated'",
            [],
            |r| r.get(0),
        )
        .expect("audited");
    assert!(detail.contains("\"identity_secrets\":1"), "{detail}");
}

/// What `porch export` prints for `args`, as JSON.
fn exported(app: &TestApp, args: &[&str]) -> Value {
    let out = cli(app, &[&["export"], args].concat());
    serde_json::from_str(&out).expect("JSON")
}

#[tokio::test]
async fn the_export_holds_the_verified_user_id_and_the_unverified_claims() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let secret = rotate_secret(&app, &admin, &site).await;
    let (mut ada, _) = browser_with(
        &app,
        &site,
        json!({"id": "u-42", "name": "Ada", "email": "ada@example.org",
               "user_hash": user_hash(&secret, "u-42")}),
    )
    .await;
    assert_eq!(ada.say("c-1", "Hi").await["type"], "ack");
    let (mut eve, _) = browser_with(
        &app,
        &site,
        json!({"id": "u-42", "name": "Eve", "email": "eve@example.org"}),
    )
    .await;
    assert_eq!(eve.say("c-1", "Hi").await["type"], "ack");

    let exports = exported(&app, &["--email", "ada@example.org"]);
    let visitor = &exports[0]["visitor"];
    assert_eq!(
        (
            &visitor["user_id"],
            &visitor["name"],
            &visitor["claimed_user_id"]
        ),
        (&json!("u-42"), &json!("Ada"), &Value::Null),
        "{visitor}"
    );
    let eve_id = app.count("SELECT id FROM visitors WHERE claimed_user_id IS NOT NULL");
    let exports = exported(&app, &["--visitor", &eve_id.to_string()]);
    let visitor = &exports[0]["visitor"];
    assert_eq!(
        [
            &visitor["user_id"],
            &visitor["claimed_user_id"],
            &visitor["claimed_name"],
            &visitor["claimed_email"],
            &visitor["email"],
        ],
        [
            &Value::Null,
            &json!("u-42"),
            &json!("Eve"),
            &json!("eve@example.org"),
            &Value::Null
        ],
        "{visitor}"
    );
    // The claimed address is Eve's data too: a lookup by it finds her, as `porch erase` does.
    let exports = exported(&app, &["--email", "EVE@example.org"]);
    assert_eq!(exports[0]["visitor"]["id"], eve_id, "{exports}");
    let dry = cli(&app, &["erase", "--email", "eve@example.org"]);
    assert!(
        dry.contains(&format!(
            "  visitor {eve_id} on Acme (eve@example.org, claimed by a page, unverified)"
        )),
        "{dry}"
    );
}

/// A verified user's messages are stored under their user id, but their uploads under the
/// browser's token (the upload request carries no identity): the message still takes the file,
/// and a resend of it is answered as the first.
#[tokio::test]
async fn a_verified_user_sends_a_file_uploaded_from_their_browser() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let secret = rotate_secret(&app, &admin, &site).await;
    let ada = json!({"id": "u-42", "user_hash": user_hash(&secret, "u-42")});
    let (mut laptop, welcome) = browser_with(&app, &site, ada).await;
    let token = welcome["token"].as_str().expect("token");
    let (status, file) = upload(&app, &site, token, "order.txt", b"order 17".to_vec()).await;
    assert_eq!(status, 201, "{file}");
    let id = file["id"].as_str().expect("id");

    let ack = send_with(&mut laptop, "c-1", "", &[id]).await;
    assert_eq!(ack["type"], "ack", "{ack}");
    let resent = send_with(&mut laptop, "c-1", "", &[id]).await;
    assert_eq!((&resent["type"], &resent["id"]), (&ack["type"], &ack["id"]));
    assert_eq!(
        app.count("SELECT count(*) FROM attachments WHERE message_id IS NOT NULL"),
        1
    );
}

/// `GET /widget/attachments/{id}` with a browser's token and, if given, `X-Porch-Identity` made
/// as the panel makes it (the identity's JSON, percent-encoded); the status.
async fn file_status(app: &TestApp, site: &str, token: &str, id: &str, who: Option<&Value>) -> u16 {
    let mut request = app
        .http
        .get(&format!("/widget/attachments/{id}?site={site}"))
        .header("origin", ORIGIN)
        .header("authorization", format!("Bearer {token}"));
    if let Some(who) = who {
        let json = who.to_string();
        let encoded =
            percent_encoding::utf8_percent_encode(&json, percent_encoding::NON_ALPHANUMERIC);
        request = request.header("x-porch-identity", encoded.to_string());
    }
    request.answer().await.status
}

#[tokio::test]
async fn a_verified_user_opens_their_conversations_files_from_any_browser() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let secret = rotate_secret(&app, &admin, &site).await;
    // An id that only fits in a header percent-encoded.
    let user = "Zoë \"42\" ✓";
    let ada = json!({"id": user, "user_hash": user_hash(&secret, user)});
    let (mut laptop, welcome) = browser_with(&app, &site, ada.clone()).await;
    let laptop_token = welcome["token"].as_str().expect("token").to_owned();
    let (_, file) = upload(&app, &site, &laptop_token, "a.txt", b"receipt".to_vec()).await;
    let own = file["id"].as_str().expect("id").to_owned();
    let ack = send_with(&mut laptop, "c-1", "my receipt", &[&own]).await;
    assert_eq!(ack["type"], "ack", "{ack}");
    let conversation = app.count("SELECT max(id) FROM conversations");
    let sent = agent_upload(&app, &admin, conversation, "chart.png", black_png(40, 20)).await;
    let agents = sent["id"].as_str().expect("id").to_owned();
    agent_reply_with(&app, &admin, conversation, &agents).await;

    let (_, welcome) = browser_with(&app, &site, ada.clone()).await;
    let phone = welcome["token"].as_str().expect("token").to_owned();
    let eve = json!({"id": "eve", "user_hash": user_hash(&secret, "eve")});
    let forged = json!({"id": user, "user_hash": user_hash("not the secret", user)});
    for id in [&own, &agents] {
        assert_eq!(file_status(&app, &site, &phone, id, Some(&ada)).await, 200);
        assert_eq!(
            file_status(&app, &site, &phone, id, None).await,
            404,
            "the browser's alone"
        );
        assert_eq!(
            file_status(&app, &site, &phone, id, Some(&forged)).await,
            404
        );
        assert_eq!(file_status(&app, &site, &phone, id, Some(&eve)).await, 404);
        let unreadable = json!("not an identity");
        assert_eq!(
            file_status(&app, &site, &phone, id, Some(&unreadable)).await,
            404
        );
        assert_eq!(
            file_status(&app, &site, &laptop_token, id, Some(&ada)).await,
            200
        );
    }
    // Once sent, the file is the user's: the uploading browser, too, reads it as the user.
    for id in [&own, &agents] {
        let status = file_status(&app, &site, &laptop_token, id, None).await;
        assert_eq!(status, 404, "{id}: not without the identity");
    }
    let thumbnail = format!("{agents}/thumbnail");
    assert_eq!(
        file_status(&app, &site, &phone, &thumbnail, Some(&ada)).await,
        200
    );
    assert_eq!(
        file_status(&app, &site, &phone, &thumbnail, None).await,
        404
    );
}

#[tokio::test]
async fn the_file_preflight_allows_the_identity_header() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Acme");
    let preflight = app
        .http
        .request(
            "OPTIONS",
            &format!("/widget/attachments/att_any?site={site}"),
        )
        .header("origin", ORIGIN)
        .header("access-control-request-method", "GET")
        .header(
            "access-control-request-headers",
            "authorization,x-porch-identity",
        )
        .answer()
        .await;
    assert_eq!(preflight.status, 204);
    let allowed = preflight
        .header("access-control-allow-headers")
        .unwrap_or("");
    assert!(allowed.contains("x-porch-identity"), "{allowed}");
}

/// A hello on an existing browser `token`, as the user `identity` or (`Null`) anonymous.
pub(crate) async fn hello_as(app: &TestApp, site: &str, token: &str, identity: Value) -> Widget {
    let mut widget = app.connect(site, ORIGIN).await;
    widget
        .send(json!({"type": "hello", "v": 1, "token": token, "identity": identity}))
        .await;
    let welcome = widget.recv().await;
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    widget
}

#[tokio::test]
async fn after_logout_a_shared_browser_neither_reads_nor_exports_the_users_files() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let secret = rotate_secret(&app, &admin, &site).await;
    let (mut anonymous, welcome) = app.visitor(&site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    assert_eq!(anonymous.say("a-1", "just browsing").await["type"], "ack");

    // Ada logs in on this computer and sends her passport scan.
    let ada = json!({"id": "ada", "user_hash": user_hash(&secret, "ada")});
    let mut as_ada = hello_as(&app, &site, &token, ada).await;
    let (_, file) = upload(&app, &site, &token, "passport.txt", b"SECRET".to_vec()).await;
    let passport = file["id"].as_str().expect("id").to_owned();
    let ack = send_with(&mut as_ada, "c-1", "", &[&passport]).await;
    assert_eq!(ack["type"], "ack", "{ack}");

    // She logs out; the next person on the computer is the browser's anonymous visitor again.
    hello_as(&app, &site, &token, Value::Null).await;
    let (_, pending) = upload(&app, &site, &token, "mine.txt", b"own".to_vec()).await;
    let pending = pending["id"].as_str().expect("id").to_owned();
    assert_eq!(
        file_status(&app, &site, &token, &pending, None).await,
        200,
        "not yet sent"
    );
    assert_eq!(file_status(&app, &site, &token, &passport, None).await, 404);
    let export = app
        .http
        .request("POST", &format!("/widget/export?site={site}"))
        .header("origin", ORIGIN)
        .header("content-type", "text/plain;charset=UTF-8")
        .body(token.clone())
        .answer()
        .await;
    assert_eq!(export.status, 200, "{}", export.body);
    assert!(export.body.contains("mine.txt"), "{}", export.body);
    assert!(!export.body.contains("passport"), "{}", export.body);
}
