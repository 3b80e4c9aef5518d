//! An agent's reply sent twice is stored once: through the API with an `Idempotency-Key`, and
//! from the inbox form, which carries an id of its own. The visitor sees it once; the same id
//! with another message is refused, never silently answered with the first.

use serde_json::{Value, json};

use crate::helpers::{Answer, Exchange, TestApp, Widget};
use crate::inbox::{Browser, form, request, setup_admin, signed_in_from};

/// A visitor with one message, and the id of its conversation.
async fn conversation(app: &TestApp) -> (Widget, i64) {
    let (mut widget, _) = app.visitor(&app.add_site("Shop"), None, 0).await;
    assert_eq!(widget.say("m1", "Do you ship?").await["type"], "ack");
    let id = app
        .db()
        .query_row("SELECT max(id) FROM conversations", [], |r| r.get(0))
        .expect("a conversation");
    (widget, id)
}

/// `POST …/messages` with these `Idempotency-Key` headers.
async fn reply(app: &TestApp, token: &str, id: i64, keys: &[&str], body: &str) -> Answer {
    let mut request = app
        .http
        .request("POST", &format!("/api/v1/conversations/{id}/messages"))
        .bearer_auth(token)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(json!({ "body": body }).to_string());
    for key in keys {
        request = request.header("Idempotency-Key", *key);
    }
    request.answer().await
}

/// The next agent message the widget is sent (typing and receipts are skipped).
async fn next_agent_message(widget: &mut Widget) -> Value {
    loop {
        let frame = widget.recv().await;
        if frame["type"] == "message" {
            return frame;
        }
    }
}

fn agent_messages(app: &TestApp) -> i64 {
    app.count("SELECT count(*) FROM messages WHERE author = 'agent'")
}

#[tokio::test]
async fn an_api_reply_resent_with_its_idempotency_key_is_stored_and_shown_once() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_user_token("ana", "agent");
    let (mut widget, id) = conversation(&app).await;

    let first = reply(
        &app,
        &token,
        id,
        &["7c1f0e2a-6b1d-4c8e-9a53-2f0d8e4b1a66"],
        "Yes.",
    )
    .await;
    assert_eq!(first.status, 201, "{}", first.body);
    assert_eq!(first.header("idempotent-replayed"), None);
    assert_eq!(
        first.json()["client_id"],
        "7c1f0e2a-6b1d-4c8e-9a53-2f0d8e4b1a66"
    );
    // The draft standard's form, a quoted string, names the same key.
    let again = reply(
        &app,
        &token,
        id,
        &["\"7c1f0e2a-6b1d-4c8e-9a53-2f0d8e4b1a66\""],
        "Yes.",
    )
    .await;
    assert_eq!(again.status, 201, "{}", again.body);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(
        again.json(),
        first.json(),
        "the first reply, as it was answered"
    );
    assert_eq!(agent_messages(&app), 1);

    // The visitor got it once: the next message after it is the next reply.
    assert_eq!(next_agent_message(&mut widget).await["body"], "Yes.");
    let other = reply(&app, &token, id, &["k-2"], "Anything else?").await;
    assert_eq!(other.status, 201, "{}", other.body);
    assert_eq!(
        next_agent_message(&mut widget).await["body"],
        "Anything else?"
    );

    // Without a key every post is a new message, as before.
    for _ in 0..2 {
        assert_eq!(reply(&app, &token, id, &[], "Bye.").await.status, 201);
    }
    assert_eq!(agent_messages(&app), 4);
}

#[tokio::test]
async fn an_idempotency_key_names_one_message_of_one_user() {
    let app = TestApp::spawn(&[]).await;
    let ana = app.add_user_token("ana", "agent");
    let bo = app.add_user_token("bo", "agent");
    let (_widget, id) = conversation(&app).await;
    let (_other_widget, other) = conversation(&app).await;
    assert_eq!(reply(&app, &ana, id, &["k1"], "Yes.").await.status, 201);

    // The same key with other text, or in another conversation, is refused with its own code.
    for (conversation, body) in [(id, "No."), (other, "Yes.")] {
        let refused = reply(&app, &ana, conversation, &["k1"], body).await;
        assert_eq!(refused.status, 422, "{}", refused.body);
        assert_eq!(refused.json()["error"]["code"], "idempotency_key_reused");
    }
    // Keys are each user's own: another agent's `k1` is another message.
    let bos = reply(&app, &bo, id, &["k1"], "Yes.").await;
    assert_eq!(bos.status, 201, "{}", bos.body);
    assert_eq!(bos.header("idempotent-replayed"), None);
    assert_eq!(agent_messages(&app), 2);

    // A key outside the client id alphabet, or two keys, are refused before anything is stored.
    let odd = reply(&app, &ana, id, &["has space"], "Yes.").await;
    assert_eq!(odd.status, 422, "{}", odd.body);
    assert_eq!(odd.json()["error"]["code"], "invalid");
    let long = "k".repeat(65);
    assert_eq!(reply(&app, &ana, id, &[&long], "Yes.").await.status, 422);
    let two = reply(&app, &ana, id, &["k1", "k2"], "Yes.").await;
    assert_eq!(two.status, 400, "{}", two.body);
    assert_eq!(two.json()["error"]["code"], "bad_request");
    assert_eq!(agent_messages(&app), 2);
}

/// The inbox script's post of the reply form (as `inbox.js` sends it).
async fn post_form(app: &TestApp, admin: &Browser, id: i64, fields: &[(&str, &str)]) -> Answer {
    let mut all = vec![("csrf", admin.csrf.as_str())];
    all.extend_from_slice(fields);
    request(
        app,
        "POST",
        &format!("/conversations/{id}/reply"),
        &admin.cookie,
        Some(&form(&all)),
    )
    .header("X-Porch-Fetch", "1")
    .answer()
    .await
}

#[tokio::test]
async fn the_inbox_form_sent_twice_stores_one_message() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let (mut widget, id) = conversation(&app).await;
    let page = request(
        &app,
        "GET",
        &format!("/conversations/{id}"),
        &admin.cookie,
        None,
    )
    .answer()
    .await;
    let at = page
        .body
        .find("name=\"client_id\" value=\"")
        .expect("the form's id")
        + 24;
    let form_id = page.body[at..]
        .split('"')
        .next()
        .expect("a value")
        .to_owned();
    assert!(form_id.len() >= 22, "{form_id}");

    let fields = [
        ("body", "On its way."),
        ("kind", "reply"),
        ("client_id", &form_id),
    ];
    let first = post_form(&app, &admin, id, &fields).await;
    let again = post_form(&app, &admin, id, &fields).await;
    for answer in [&first, &again] {
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(answer.header("x-porch-fragment"), Some("message"));
    }
    assert_eq!(
        first.body, again.body,
        "the same message, shown the same way"
    );
    assert_eq!(agent_messages(&app), 1);
    assert_eq!(next_agent_message(&mut widget).await["body"], "On its way.");

    // The same id as a note is another message: refused, and nothing stored.
    let note = [
        ("body", "On its way."),
        ("kind", "note"),
        ("client_id", &form_id),
    ];
    let refused = post_form(&app, &admin, id, &note).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(
        app.count("SELECT count(*) FROM messages WHERE author = 'note'"),
        0
    );
    // A note has ids of its own, with the same guarantee.
    let note = [("body", "Shipped."), ("kind", "note"), ("client_id", "n-1")];
    for _ in 0..2 {
        assert_eq!(post_form(&app, &admin, id, &note).await.status, 200);
    }
    assert_eq!(
        app.count("SELECT count(*) FROM messages WHERE author = 'note'"),
        1
    );
}

#[tokio::test]
async fn a_reply_form_of_an_unknown_kind_is_refused_never_sent_as_a_reply() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let (_widget, id) = conversation(&app).await;
    for kind in ["Note", "notes", "private"] {
        let answer = post_form(
            &app,
            &admin,
            id,
            &[("body", "Internal only"), ("kind", kind)],
        )
        .await;
        assert_eq!(answer.status, 422, "{kind}: {}", answer.body);
    }
    assert_eq!(
        app.count("SELECT count(*) FROM messages WHERE author <> 'visitor'"),
        0
    );
}

/// Files uploaded side by side finish in any order: a resend of the form is the same message,
/// whatever order its files were stored in.
#[tokio::test]
async fn a_resend_with_files_is_the_same_message_whatever_their_order() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let (_widget, id) = conversation(&app).await;
    let mut ids = Vec::new();
    for name in ["a.txt", "b.txt"] {
        let uploaded =
            crate::attachments::agent_upload(&app, &admin, id, name, b"plain text".to_vec()).await;
        ids.push(uploaded["id"].as_str().expect("an id").to_owned());
    }
    let send = async |files: &str| {
        let fields = [
            ("body", "Both files"),
            ("kind", "reply"),
            ("client_id", "files-1"),
            ("attachments", files),
        ];
        post_form(&app, &admin, id, &fields).await
    };
    // Named the second first, as when the second upload finished first: stored in upload order,
    // they come back the other way round. The resend is the same form, the same order.
    let named = format!("{},{}", ids[1], ids[0]);
    let stored = send(&named).await;
    let again = send(&named).await;
    assert_eq!(stored.status, 200, "{}", stored.body);
    assert_eq!(again.status, 200, "{}", again.body);
    for file in ["a.txt", "b.txt"] {
        assert!(
            again.body.contains(&format!("download=\"{file}\"")),
            "{}",
            again.body
        );
    }
    let reply = format!(
        "id=\"message-{}\"",
        app.count("SELECT id FROM messages WHERE client_id = 'files-1'")
    );
    assert!(stored.body.contains(&reply), "{}", stored.body);
    assert!(
        again.body.contains(&reply),
        "the same message: {}",
        again.body
    );
    assert_eq!(agent_messages(&app), 1);
}
