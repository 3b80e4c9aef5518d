//! The conversation page lists the visitor's other conversations (docs/admin.md), so an agent
//! sees what the visitor asked before, and finds the newer conversation of a closed one.

use serde_json::json;

use crate::helpers::{TestApp, Widget};
use crate::inbox::{Browser, form, send, setup_admin, signed_in_from};

async fn page(app: &TestApp, admin: &Browser, id: i64) -> String {
    let page = send(
        app,
        "GET",
        &format!("/conversations/{id}"),
        &admin.cookie,
        None,
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    // Without Leptos's `<!>` markers, which fall between text pieces.
    page.body.replace("<!>", "")
}

async fn close(app: &TestApp, admin: &Browser, id: i64) {
    let body = form(&[("csrf", admin.csrf.as_str())]);
    let path = format!("/conversations/{id}/close");
    let closed = send(app, "POST", &path, &admin.cookie, Some(&body)).await;
    assert_eq!(closed.status, 303, "{}", closed.body);
}

/// Sends a message and waits for its ack past the frames an agent's actions push (`read`,
/// `closed`, `reopened`).
pub(crate) async fn said(widget: &mut Widget, client_id: &str, body: &str) {
    widget
        .send(json!({"type": "message", "client_id": client_id, "body": body}))
        .await;
    loop {
        let frame = widget.recv().await;
        if frame["type"] == "ack" {
            return;
        }
        assert!(
            ["read", "closed", "reopened"].contains(&frame["type"].as_str().unwrap_or_default()),
            "{frame}"
        );
    }
}

#[tokio::test]
async fn a_conversation_page_links_the_visitors_other_conversations() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    let (mut stranger, _) = app.visitor(&site, None, 0).await;
    said(&mut stranger, "s1", "Someone else").await;

    let long = format!("Do you ship to Norway? {}", "x".repeat(200));
    said(&mut widget, "c1", &long).await;
    let first = app.count("SELECT max(conversation_id) FROM messages WHERE client_id = 'c1'");
    assert!(
        !page(&app, &admin, first)
            .await
            .contains("Other conversations")
    );

    close(&app, &admin, first).await;
    said(&mut widget, "c2", "Back again").await;
    let second = app.count("SELECT max(conversation_id) FROM messages WHERE client_id = 'c2'");
    assert_ne!(first, second);

    let newer = page(&app, &admin, second).await;
    assert!(newer.contains("Other conversations"), "{newer}");
    assert!(
        newer.contains(&format!("href=\"/conversations/{first}\"")),
        "{newer}"
    );
    // The start of the first message, cut; the other visitor's conversation is not listed.
    assert!(newer.contains("Do you ship to Norway? xxx"), "{newer}");
    assert!(!newer.contains(&"x".repeat(120)), "cut at 120 characters");
    assert!(!newer.contains("Someone else"), "{newer}");

    // The closed one leads to the newer, open one.
    let older = page(&app, &admin, first).await;
    let link = format!(
        "href=\"/conversations/{second}\">Conversation {second}</a> <span class=\"badge badge-open\">Open"
    );
    assert!(older.contains(&link), "{older}");
    // It offers no Reopen (which would be refused), and its reply box says where to answer.
    assert!(!older.contains("Reopen conversation"), "{older}");
    assert!(
        older.contains("The visitor has started a newer conversation: "),
        "{older}"
    );
    let hint = format!(
        "<p id=\"closed-hint\" class=\"notice notice-warning\">This conversation is closed and \
         the visitor has started a newer one: answer in <a href=\"/conversations/{second}\">"
    );
    assert!(older.contains(&hint), "{older}");
    // The open one's hint is there for the script, hidden.
    assert!(
        newer.contains("<p id=\"closed-hint\" hidden class=\"notice notice-warning\">"),
        "{newer}"
    );
    // A Reopen from a page loaded before the visitor came back is refused, and leads to the newer
    // conversation, which says why.
    let reopen = format!("/conversations/{first}/reopen");
    let body = form(&[("csrf", &admin.csrf)]);
    let refused = send(&app, "POST", &reopen, &admin.cookie, Some(&body)).await;
    let there = format!("/conversations/{second}?error=newer");
    assert_eq!(
        (refused.status, refused.header("location")),
        (303, Some(there.as_str()))
    );
    let told = send(&app, "GET", &there, &admin.cookie, None).await;
    assert!(
        told.body.contains("The older conversation stays closed"),
        "{}",
        told.body
    );
}

#[tokio::test]
async fn a_closed_conversation_says_a_reply_reaches_the_visitor_but_their_answer_goes_elsewhere() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    said(&mut widget, "c1", "Hello").await;
    let id = app.count("SELECT max(id) FROM conversations");
    close(&app, &admin, id).await;
    let closed = page(&app, &admin, id).await;
    assert!(closed.contains("Reopen conversation"), "{closed}");
    assert!(
        closed.contains(
            "<p id=\"closed-hint\" class=\"notice notice-warning\">This conversation is closed. \
             A reply still reaches the visitor, but their answer starts a new conversation"
        ),
        "{closed}"
    );
}
