//! Assign, close and reopen answer in two shapes (docs/admin.md, "Keyboard"): a browser's form
//! post is sent back to the conversation page, which says what was done; the inbox script (the
//! list's `e`, `a` and *Undo*) gets `204` when done, or a `409` whose JSON says why nothing was.

use crate::helpers::{Answer, Exchange as _, TestApp};
use crate::inbox::{Browser, form, request, send, setup_admin, signed_in_from};
use crate::other_conversations::said;

/// `action` on conversation `id`, posted as the inbox script posts it.
async fn by_script(
    app: &TestApp,
    who: &Browser,
    id: i64,
    action: &str,
    fields: &[(&str, &str)],
) -> Answer {
    let mut body = vec![("csrf", who.csrf.as_str())];
    body.extend_from_slice(fields);
    let path = format!("/conversations/{id}/{action}");
    request(app, "POST", &path, &who.cookie, Some(&form(&body)))
        .header("X-Porch-Fetch", "1")
        .answer()
        .await
}

fn status_of(app: &TestApp, id: i64) -> String {
    app.db()
        .query_row(
            "SELECT status || '/' || coalesce(assignee_id, 0) FROM conversations WHERE id = ?1",
            [id],
            |r| r.get(0),
        )
        .expect("conversation")
}

#[tokio::test]
async fn the_inbox_script_gets_204_when_done_and_a_409_that_says_why_not() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let me = app.count("SELECT id FROM users");
    let (mut widget, _) = app.visitor(&app.add_site("Acme"), None, 0).await;
    said(&mut widget, "c1", "Hello").await;
    let id = app.count("SELECT max(id) FROM conversations");

    let took = by_script(
        &app,
        &admin,
        id,
        "assign",
        &[("assignee", "me"), ("from", "")],
    )
    .await;
    assert_eq!((took.status, took.body.as_str()), (204, ""));
    assert_eq!(status_of(&app, id), format!("open/{me}"));
    // A list row showed it unassigned, but it is someone's now: nothing changes, and why.
    let stale = by_script(
        &app,
        &admin,
        id,
        "assign",
        &[("assignee", ""), ("from", "")],
    )
    .await;
    assert_eq!(stale.status, 409, "{}", stale.body);
    assert!(
        stale.body.contains(r#""code":"assignee_changed""#),
        "{}",
        stale.body
    );
    assert_eq!(status_of(&app, id), format!("open/{me}"));

    let closed = by_script(&app, &admin, id, "close", &[]).await;
    assert_eq!(closed.status, 204, "{}", closed.body);
    assert_eq!(status_of(&app, id), format!("closed/{me}"));
    // A row still shown open that someone closed meanwhile: no Undo may reopen their close.
    let again = by_script(&app, &admin, id, "close", &[]).await;
    assert_eq!(again.status, 409, "{}", again.body);
    assert!(
        again.body.contains(r#""code":"already_closed""#),
        "{}",
        again.body
    );
    let undone = by_script(&app, &admin, id, "reopen", &[]).await;
    assert_eq!(undone.status, 204, "{}", undone.body);
    assert_eq!(status_of(&app, id), format!("open/{me}"));

    // Closed again, and the visitor writes: their message starts a newer conversation, so an
    // Undo from the list is refused and says so.
    assert_eq!(by_script(&app, &admin, id, "close", &[]).await.status, 204);
    said(&mut widget, "c2", "Back again").await;
    let refused = by_script(&app, &admin, id, "reopen", &[]).await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(
        refused.body.contains(r#""code":"newer_conversation""#),
        "{}",
        refused.body
    );
    assert!(
        refused.body.contains("this one stays closed"),
        "{}",
        refused.body
    );
    // And names where to go on: the newer conversation's page, which says why.
    let newer = app.count("SELECT max(id) FROM conversations");
    assert!(
        refused
            .body
            .contains(&format!(r#""href":"/conversations/{newer}?error=newer""#)),
        "{}",
        refused.body
    );
    assert_eq!(status_of(&app, id), format!("closed/{me}"));

    // A session's form from elsewhere is refused as JSON too, never with a page.
    let forged = request(
        &app,
        "POST",
        &format!("/conversations/{id}/reopen"),
        &admin.cookie,
        Some(&form(&[("csrf", "not-this-session")])),
    )
    .header("X-Porch-Fetch", "1")
    .answer()
    .await;
    assert_eq!(forged.status, 403);
    assert!(
        forged.body.contains(r#""code":"form_expired""#),
        "{}",
        forged.body
    );
}

#[tokio::test]
async fn the_conversation_page_says_what_its_forms_did() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let (mut widget, _) = app.visitor(&app.add_site("Acme"), None, 0).await;
    said(&mut widget, "c1", "Hello").await;
    let id = app.count("SELECT max(id) FROM conversations");
    let page = format!("/conversations/{id}");
    let csrf = form(&[("csrf", &admin.csrf)]);

    for (action, notice, says) in [
        (
            "close",
            "closed",
            "Conversation closed. Reopen undoes it until the visitor writes again",
        ),
        ("reopen", "reopened", "Conversation reopened."),
    ] {
        let posted = send(
            &app,
            "POST",
            &format!("{page}/{action}"),
            &admin.cookie,
            Some(&csrf),
        )
        .await;
        let there = format!("{page}?notice={notice}");
        assert_eq!(
            (posted.status, posted.header("location")),
            (303, Some(there.as_str()))
        );
        let shown = send(&app, "GET", &there, &admin.cookie, None).await;
        assert!(
            shown.body.contains(&format!(
                r#"<p role="status" class="notice notice-success">{says}"#
            )),
            "{}",
            shown.body
        );
    }
    let nobody = form(&[("csrf", &admin.csrf), ("assignee", "")]);
    let unassigned = send(
        &app,
        "POST",
        &format!("{page}/assign"),
        &admin.cookie,
        Some(&nobody),
    )
    .await;
    assert_eq!(
        unassigned.header("location"),
        Some(format!("{page}?notice=assignee").as_str())
    );
    let shown = send(
        &app,
        "GET",
        &format!("{page}?notice=assignee"),
        &admin.cookie,
        None,
    )
    .await;
    assert!(
        shown
            .body
            .contains("Unassigned: nobody has this conversation now."),
        "{}",
        shown.body
    );
}
