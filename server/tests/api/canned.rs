//! Canned replies over real HTTP: agents manage their personal replies and admins the shared
//! ones (CSRF and role checks, audited), shortcuts are unique per owner, the page escapes what
//! it shows, and the picker's JSON fills the placeholders for one conversation.

use serde_json::Value;

use crate::helpers::TestApp;
use crate::inbox::{Browser, PASSWORD, add_user, form, send, setup_admin, sign_in, signed_in_from};

async fn admin(app: &TestApp) -> Browser {
    signed_in_from(app, &setup_admin(app).await).await
}

async fn agent(app: &TestApp, email: &str) -> Browser {
    add_user(app, email, "agent");
    signed_in_from(app, &sign_in(app, email, PASSWORD).await).await
}

/// Posts a canned-reply form as `who`; returns the status.
async fn post(app: &TestApp, who: &Browser, path: &str, fields: &[(&str, &str)]) -> u16 {
    let mut all = vec![("csrf", who.csrf.as_str())];
    all.extend_from_slice(fields);
    send(app, "POST", path, &who.cookie, Some(&form(&all)))
        .await
        .status
}

fn reply_id(app: &TestApp, shortcut: &str) -> i64 {
    app.db()
        .query_row(
            "SELECT id FROM canned_replies WHERE shortcut = ?1",
            [shortcut],
            |r| r.get(0),
        )
        .expect("the reply")
}

/// The picker's replies for `conversation`, as `who` gets them.
async fn picker(app: &TestApp, who: &Browser, conversation: i64) -> Vec<Value> {
    let answer = send(
        app,
        "GET",
        &format!("/conversations/{conversation}/canned"),
        &who.cookie,
        None,
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.header("cache-control"), Some("no-store"));
    answer.json()["replies"]
        .as_array()
        .expect("replies")
        .clone()
}

#[tokio::test]
async fn canned_agents_manage_their_own_replies_and_admins_the_shared_ones() {
    let app = TestApp::spawn(&[]).await;
    let ana = admin(&app).await;
    let bo = agent(&app, "bo@example.com").await;
    let body = [
        ("shortcut", "thanks"),
        ("body", "Thanks!"),
        ("scope", "shared"),
    ];
    assert_eq!(post(&app, &ana, "/canned", &body).await, 303);
    let shared = reply_id(&app, "thanks");
    let mine = [
        ("shortcut", "/Bye"),
        ("body", "Bye {visitor.name}"),
        ("scope", "personal"),
    ];
    assert_eq!(post(&app, &bo, "/canned", &mine).await, 303);
    let bye = reply_id(&app, "bye");
    let anas = [("shortcut", "secret"), ("body", "Ana's own")];
    assert_eq!(post(&app, &ana, "/canned", &anas).await, 303);
    let secret = reply_id(&app, "secret");

    // An agent cannot add, change or delete shared replies.
    let attempt = [("shortcut", "promo"), ("body", "x"), ("scope", "shared")];
    assert_eq!(post(&app, &bo, "/canned", &attempt).await, 403);
    let change = [("shortcut", "thanks"), ("body", "Changed")];
    assert_eq!(
        post(&app, &bo, &format!("/canned/{shared}"), &change).await,
        403
    );
    assert_eq!(
        post(&app, &bo, &format!("/canned/{shared}/delete"), &[]).await,
        403
    );
    // Someone else's personal reply does not exist for them.
    assert_eq!(
        post(&app, &bo, &format!("/canned/{secret}"), &change).await,
        404
    );
    assert_eq!(
        post(&app, &bo, &format!("/canned/{secret}/delete"), &[]).await,
        404
    );
    assert_eq!(
        app.count("SELECT count(*) FROM canned_replies WHERE body IN ('Changed', 'x')"),
        0
    );

    // The page lists the shared replies and the agent's own, not Ana's personal one.
    let page = send(&app, "GET", "/canned", &bo.cookie, None).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("/thanks") && page.body.contains("bye"));
    assert!(!page.body.contains("secret"), "{}", page.body);
    assert!(
        !page.body.contains(&format!("/canned/{shared}/delete")),
        "no delete button on a shared reply for an agent"
    );

    // Owners and admins do what they may; every change is in the audit log.
    let edit = [("shortcut", "bye"), ("body", "See you, {visitor.name}")];
    assert_eq!(post(&app, &bo, &format!("/canned/{bye}"), &edit).await, 303);
    assert_eq!(
        post(&app, &bo, &format!("/canned/{bye}/delete"), &[]).await,
        303
    );
    let edit = [("shortcut", "thanks"), ("body", "Thank you!")];
    assert_eq!(
        post(&app, &ana, &format!("/canned/{shared}"), &edit).await,
        303
    );
    let audited: Vec<(String, String, String)> = app
        .db()
        .prepare(
            "SELECT action, actor, detail FROM audit_events \
             WHERE action LIKE 'canned_reply.%' ORDER BY id",
        )
        .expect("prepare")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    let codes: Vec<&str> = audited.iter().map(|(a, _, _)| a.as_str()).collect();
    assert_eq!(
        codes,
        [
            "canned_reply.created",
            "canned_reply.created",
            "canned_reply.created",
            "canned_reply.updated",
            "canned_reply.deleted",
            "canned_reply.updated",
        ]
    );
    assert_eq!(audited[1].1, "bo@example.com");
    assert_eq!(audited[0].2, r#"{"scope":"shared"}"#);
    assert_eq!(audited[1].2, r#"{"scope":"personal"}"#);
}

#[tokio::test]
async fn canned_forms_need_the_session_csrf_token() {
    let app = TestApp::spawn(&[]).await;
    let ana = admin(&app).await;
    let body = form(&[("csrf", "forged"), ("shortcut", "x"), ("body", "y")]);
    let forged = send(&app, "POST", "/canned", &ana.cookie, Some(&body)).await;
    assert_eq!(forged.status, 403);
    let anonymous = send(&app, "POST", "/canned", "", Some(&body)).await;
    assert_eq!(anonymous.status, 303);
    assert_eq!(app.count("SELECT count(*) FROM canned_replies"), 0);
}

#[tokio::test]
async fn canned_shortcuts_are_checked_and_unique_per_owner() {
    let app = TestApp::spawn(&[]).await;
    let ana = admin(&app).await;
    for bad in ["", "/", "two words", "héllo", &"x".repeat(33)] {
        let fields = [("shortcut", bad), ("body", "text")];
        assert_eq!(post(&app, &ana, "/canned", &fields).await, 422, "{bad:?}");
    }
    let empty = [("shortcut", "ok"), ("body", "   ")];
    assert_eq!(post(&app, &ana, "/canned", &empty).await, 422);
    let first = [("shortcut", "hi"), ("body", "Hi")];
    assert_eq!(post(&app, &ana, "/canned", &first).await, 303);
    assert_eq!(post(&app, &ana, "/canned", &first).await, 409);
    // The same shortcut is fine once among the shared replies and once per person.
    let shared = [("shortcut", "hi"), ("body", "Hello"), ("scope", "shared")];
    assert_eq!(post(&app, &ana, "/canned", &shared).await, 303);
    assert_eq!(post(&app, &ana, "/canned", &shared).await, 409);
    let bo = agent(&app, "bo@example.com").await;
    assert_eq!(post(&app, &bo, "/canned", &first).await, 303);
    assert_eq!(app.count("SELECT count(*) FROM canned_replies"), 3);
    // A scope misspelt is refused, never saved as a personal reply the team cannot see.
    for scope in ["SHARED", "team", " shared"] {
        let typo = [("shortcut", "typo"), ("body", "Hi all"), ("scope", scope)];
        assert_eq!(post(&app, &ana, "/canned", &typo).await, 422, "{scope:?}");
    }
    let personal = [("shortcut", "mine"), ("body", "Hi"), ("scope", "personal")];
    assert_eq!(post(&app, &ana, "/canned", &personal).await, 303);
    assert_eq!(app.count("SELECT count(*) FROM canned_replies"), 4);
}

#[tokio::test]
async fn canned_page_escapes_what_it_shows() {
    let app = TestApp::spawn(&[]).await;
    let ana = admin(&app).await;
    let hostile = "</textarea><script>alert(1)</script><b>x</b>";
    assert_eq!(
        post(
            &app,
            &ana,
            "/canned",
            &[("shortcut", "evil"), ("body", hostile), ("scope", "shared")]
        )
        .await,
        303
    );
    let bo = agent(&app, "bo@example.com").await;
    for who in [&ana, &bo] {
        let page = send(&app, "GET", "/canned", &who.cookie, None).await;
        assert!(!page.body.contains("<script>alert"), "{}", page.body);
        assert!(!page.body.contains("<b>x"), "{}", page.body);
        assert!(
            page.body.contains("&lt;/textarea&gt;&lt;script&gt;"),
            "{}",
            page.body
        );
    }
}

#[tokio::test]
async fn canned_picker_fills_placeholders_for_the_conversation() {
    let app = TestApp::spawn(&[]).await;
    let ana = admin(&app).await;
    let site = app.add_site("Acme Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    assert_eq!(widget.say("v1", "hello").await["type"], "ack");
    let db = app.db();
    let conversation: i64 = db
        .query_row("SELECT max(id) FROM conversations", [], |r| r.get(0))
        .expect("conversation");
    db.execute("UPDATE visitors SET name = 'Zoë <b>'", [])
        .expect("name");
    let text = "Hi {visitor.name} ({visitor.email}), {agent.name} from {site.name}. {other}";
    let fields = [("shortcut", "hi"), ("body", text), ("scope", "shared")];
    assert_eq!(post(&app, &ana, "/canned", &fields).await, 303);
    let bo = agent(&app, "bo@example.com").await;
    let own = [("shortcut", "mine"), ("body", "Bo's {agent.name}")];
    assert_eq!(post(&app, &bo, "/canned", &own).await, 303);

    let replies = picker(&app, &ana, conversation).await;
    assert_eq!(replies.len(), 1, "Bo's personal reply is his: {replies:?}");
    assert_eq!(replies[0]["shortcut"], "hi");
    assert_eq!(replies[0]["scope"], "shared");
    assert_eq!(
        replies[0]["text"],
        "Hi Zoë <b> (), Ana from Acme Shop. {other}"
    );
    let replies = picker(&app, &bo, conversation).await;
    let shortcuts: Vec<&str> = replies
        .iter()
        .filter_map(|r| r["shortcut"].as_str())
        .collect();
    assert_eq!(shortcuts, ["hi", "mine"]);
    assert_eq!(replies[1]["text"], "Bo's Bo");

    let missing = send(
        &app,
        "GET",
        "/conversations/999999/canned",
        &bo.cookie,
        None,
    )
    .await;
    assert_eq!(missing.status, 404);
    let anonymous = send(
        &app,
        "GET",
        &format!("/conversations/{conversation}/canned"),
        "",
        None,
    )
    .await;
    assert_eq!(anonymous.status, 303);
}

#[tokio::test]
async fn an_edit_that_sends_a_scope_is_refused_not_answered_saved() {
    let app = TestApp::spawn(&[]).await;
    admin(&app).await;
    let bo = agent(&app, "bo@example.com").await;
    let mine = [("shortcut", "bye"), ("body", "Bye")];
    assert_eq!(post(&app, &bo, "/canned", &mine).await, 303);
    let bye = reply_id(&app, "bye");
    let sharing = [
        ("shortcut", "bye"),
        ("body", "Shared now?"),
        ("scope", "shared"),
    ];
    assert_eq!(
        post(&app, &bo, &format!("/canned/{bye}"), &sharing).await,
        422
    );
    assert_eq!(
        app.column::<String>("SELECT body FROM canned_replies WHERE owner_id IS NOT NULL"),
        ["Bye"]
    );
}
