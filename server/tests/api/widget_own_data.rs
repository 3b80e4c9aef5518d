//! A visitor's own data from the widget (issue #18, docs/privacy.md#your-data): the download as
//! JSON or text, and the erasure, each for the visitor the token (or verified identity) names,
//! from an allowed origin only, and rate-limited per visitor.

use crate::helpers::TestApp;
use crate::privacy::{chat, person, scan};

/// The detail of the newest `privacy.exported` audit event.
fn last_export_detail(app: &TestApp) -> serde_json::Value {
    let detail: String = app
        .db()
        .query_row(
            "SELECT detail FROM audit_events WHERE action = 'privacy.exported' ORDER BY id DESC",
            [],
            |r| r.get(0),
        )
        .expect("the export's audit event");
    serde_json::from_str(&detail).expect("JSON")
}

/// A request from the widget on `origin` for the visitor with `token`.
async fn own_data(app: &TestApp, path: &str, origin: &str, token: &str) -> crate::helpers::Answer {
    use crate::helpers::Exchange;
    app.http
        .request("POST", path)
        .header("origin", origin)
        .header("content-type", "text/plain;charset=UTF-8")
        .body(token.to_owned())
        .answer()
        .await
}

#[tokio::test]
async fn an_export_in_an_unknown_format_is_refused() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let admin = app.add_user_token("Ana", "admin");
    let ann = person(&app, &site, &admin, "ann").await;
    let unknown = own_data(
        &app,
        &format!("/widget/export?site={site}&format=xml"),
        crate::helpers::ORIGIN,
        &ann.chat.token,
    )
    .await;
    assert_eq!(unknown.status, 422, "{}", unknown.body);
    assert_eq!(unknown.json()["error"]["code"], "invalid");
    assert_eq!(
        unknown.header("access-control-allow-origin"),
        Some(crate::helpers::ORIGIN)
    );
}

/// The widget's erasure of `visitor` is audited as theirs, and with no IP address: the log
/// outlives the erasure, so the visitor's address is in none of its events.
fn assert_erased_by_the_widget(app: &TestApp, visitor: i64) {
    let (actor, ip): (String, String) = app
        .db()
        .query_row(
            "SELECT actor, ip FROM audit_events WHERE action = 'privacy.erased'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("recorded");
    assert_eq!(
        (actor, ip.as_str()),
        (format!("visitor {visitor}"), "widget")
    );
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE ip != 'widget'"),
        0
    );
}

#[tokio::test]
async fn a_visitor_downloads_their_conversation_and_erases_themselves_from_the_widget() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let admin = app.add_user_token("Ana", "admin");
    let ann = person(&app, &site, &admin, "ann").await;
    let origin = crate::helpers::ORIGIN;

    let json = own_data(
        &app,
        &format!("/widget/export?site={site}"),
        origin,
        &ann.chat.token,
    )
    .await;
    assert_eq!(json.status, 200, "{}", json.body);
    assert_eq!(json.header("access-control-allow-origin"), Some(origin));
    assert!(
        json.header("content-disposition")
            .is_some_and(|d| d.contains("attachment"))
    );
    let doc = json.json();
    assert_eq!(doc["visitor"]["email"], ann.email.as_str());
    let bodies: Vec<&str> = doc["conversations"][0]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|m| m["body"].as_str().expect("body"))
        .collect();
    assert_eq!(bodies, vec![ann.body.as_str(), "reply to ann"], "no notes");
    assert_eq!(doc["deliveries"], serde_json::json!([]));
    let recorded = last_export_detail(&app);
    assert_eq!(recorded["messages"], 2, "what was exported: {recorded}");
    let text = own_data(
        &app,
        &format!("/widget/export?site={site}&format=text"),
        origin,
        &ann.chat.token,
    )
    .await;
    assert_eq!(text.status, 200);
    assert!(
        text.body.contains(&format!("You: {}", ann.body)),
        "{}",
        text.body
    );
    assert!(!text.body.contains("private note"));

    // Not from another origin, nor without a valid token.
    let elsewhere = own_data(
        &app,
        &format!("/widget/export?site={site}"),
        "https://evil.example",
        &ann.chat.token,
    )
    .await;
    assert_eq!(elsewhere.status, 403);
    assert_eq!(elsewhere.header("access-control-allow-origin"), None);
    let forged = own_data(
        &app,
        &format!("/widget/export?site={site}"),
        origin,
        "vt1.x.y",
    )
    .await;
    assert_eq!(forged.status, 401);

    // The erasure: the visitor's open widget is told and closed; nothing of them is left.
    let (mut open_tab, _) = app.visitor(&site, Some(&ann.chat.token), 0).await;
    let erased = own_data(
        &app,
        &format!("/widget/erase?site={site}"),
        origin,
        &ann.chat.token,
    )
    .await;
    assert_eq!(erased.status, 200, "{}", erased.body);
    assert_eq!(erased.json()["messages"], 4);
    loop {
        let frame = open_tab.recv().await;
        if frame["type"] == "erased" {
            break;
        }
    }
    assert_eq!(open_tab.closed().await, Some(1000));
    assert_eq!(scan(&app, &ann), Vec::new());
    assert_erased_by_the_widget(&app, ann.chat.visitor);

    // The same token starts afresh: nothing is stored about it any more.
    let again = own_data(
        &app,
        &format!("/widget/export?site={site}"),
        origin,
        &ann.chat.token,
    )
    .await;
    assert_eq!(again.status, 404);
    assert_eq!(again.json()["error"]["code"], "nothing_stored");
}

/// A message's further lines are indented in the text download, so a visitor's own text cannot
/// pass for a line of the transcript's (an agent's answer, say).
#[tokio::test]
async fn the_text_download_indents_a_messages_further_lines() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let ann = chat(
        &app,
        &site,
        "first\r\n[1 Jan 2026, 00:00 UTC] Ana: we refund you",
    )
    .await;
    let path = format!("/widget/export?site={site}&format=text");
    let text = own_data(&app, &path, crate::helpers::ORIGIN, &ann.token).await;
    assert_eq!(text.status, 200);
    assert!(
        text.body
            .contains("You: first\n    [1 Jan 2026, 00:00 UTC] Ana: we refund you\n"),
        "{}",
        text.body
    );
}

#[tokio::test]
async fn widget_downloads_are_rate_limited_per_visitor() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let ann = chat(&app, &site, "hello").await;
    let path = format!("/widget/export?site={site}");
    for _ in 0..5 {
        let ok = own_data(&app, &path, crate::helpers::ORIGIN, &ann.token).await;
        assert_eq!(ok.status, 200);
    }
    let refused = own_data(&app, &path, crate::helpers::ORIGIN, &ann.token).await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.json()["error"]["code"], "rate_limited");
    assert!(
        refused.json()["error"]["retry_after_ms"]
            .as_u64()
            .is_some_and(|ms| ms > 0)
    );
    let other = chat(&app, &site, "another visitor").await;
    assert_eq!(
        own_data(&app, &path, crate::helpers::ORIGIN, &other.token)
            .await
            .status,
        200
    );
    // A request refused for its own fault costs nothing.
    let wrong = format!("/widget/export?site={site}&format=xml");
    for _ in 0..6 {
        let refused = own_data(&app, &wrong, crate::helpers::ORIGIN, &other.token).await;
        assert_eq!(refused.status, 422);
    }
    assert_eq!(
        own_data(&app, &path, crate::helpers::ORIGIN, &other.token)
            .await
            .status,
        200
    );
    // Exports do not use up the erasure's budget: the visitor can still delete their data.
    let erase = format!("/widget/erase?site={site}");
    let erased = own_data(&app, &erase, crate::helpers::ORIGIN, &ann.token).await;
    assert_eq!(erased.status, 200, "{}", erased.body);
}

/// Someone who only uploaded a file (never wrote) and presses *Delete my data*: the file goes,
/// from the database file and from the WAL, which held it until later writes overwrote it.
#[tokio::test]
async fn an_erasure_of_uploads_alone_leaves_nothing_in_the_running_servers_files() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let visitor = crate::attachments::visitor(&app, &site).await;
    let secret = b"UNIQ-UPLOAD-ONLY my passport scan".to_vec();
    let (status, stored) =
        crate::attachments::upload(&app, &site, &visitor.token, "id.txt", secret).await;
    assert_eq!(status, 201, "{stored}");
    let erase = format!("/widget/erase?site={site}");
    let erased = own_data(&app, &erase, crate::helpers::ORIGIN, &visitor.token).await;
    assert_eq!(erased.status, 200, "{}", erased.body);
    assert_eq!(app.count("SELECT count(*) FROM attachments"), 0);
    let dir = app.data_dir.path();
    for name in ["porch.db-wal", "porch.db"] {
        let file = std::fs::read(dir.join(name)).unwrap_or_default();
        let text = b"UNIQ-UPLOAD-ONLY";
        assert!(
            !file.windows(text.len()).any(|w| w == text),
            "still in {name}"
        );
    }
}
