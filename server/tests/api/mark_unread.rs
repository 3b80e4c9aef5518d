//! Mark unread (docs/admin.md, "Unread"): an agent's conversation counts as unread for them
//! again, on every open page at once, until they next read it; a colleague's state and what the
//! visitor was shown ("Seen") stay as they were.

use crate::helpers::{Exchange as _, TestApp};
use crate::inbox::{PASSWORD, add_user, form, request, send, setup_admin, sign_in, signed_in_from};
use crate::unread_counts::{Events, counts};

#[tokio::test]
async fn marked_unread_it_counts_again_for_that_agent_alone_until_they_read_it() {
    let app = TestApp::spawn(&[]).await;
    let ana = signed_in_from(&app, &setup_admin(&app).await).await;
    add_user(&app, "bo@example.com", "agent");
    let bo = signed_in_from(&app, &sign_in(&app, "bo@example.com", PASSWORD).await).await;
    let site = app.add_site("Acme");
    let (mut widget, welcome) = app.visitor(&site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    let hello = widget.say("c1", "Hello").await;
    let id: i64 = app.count("SELECT id FROM conversations");
    let page = format!("/conversations/{id}");
    for agent in [&ana, &bo] {
        assert_eq!(
            send(&app, "GET", &page, &agent.cookie, None).await.status,
            200
        );
    }
    assert_eq!(
        widget.recv().await["type"],
        "read",
        "the visitor was told Seen"
    );

    let mut counts_now = Events::open_at(&app, "/inbox/counts", &ana.cookie).await;
    assert_eq!(counts_now.next("counts").await, counts(0, 0, 0));
    let mut list = Events::open_at(&app, "/inbox/events", &ana.cookie).await;

    let path = format!("/conversations/{id}/unread");
    let marked = send(
        &app,
        "POST",
        &path,
        &ana.cookie,
        Some(&form(&[("csrf", &ana.csrf)])),
    )
    .await;
    assert_eq!(marked.status, 303);
    assert_eq!(
        marked.header("location"),
        Some("/inbox?notice=marked-unread")
    );
    assert_eq!(counts_now.next("counts").await, counts(1, 0, 1));
    assert_eq!(list.next("unread").await, id);

    let inbox = send(
        &app,
        "GET",
        "/inbox?notice=marked-unread",
        &ana.cookie,
        None,
    )
    .await;
    assert!(
        inbox.body.contains("class=\"conversation unread\""),
        "{}",
        inbox.body
    );
    assert!(
        inbox
            .body
            .contains("Marked unread: it counts as unread for you")
    );
    let theirs = send(&app, "GET", "/inbox", &bo.cookie, None).await;
    assert!(
        theirs.body.contains("id=\"conversation-"),
        "{}",
        theirs.body
    );
    assert!(
        !theirs.body.contains("class=\"conversation unread\""),
        "Bo read it: not unread for him"
    );

    // The visitor's "Seen" is not taken back: a resume still says it.
    drop(widget);
    let last_id = hello["id"].as_i64().expect("id");
    let (mut again, _) = app.visitor(&site, Some(&token), last_id).await;
    let resumed = again.recv().await;
    assert_eq!(resumed["type"], "read", "{resumed}");
    assert_eq!(resumed["up_to"], hello["id"]);

    // Reading it again clears the mark, here and in the counts.
    assert_eq!(
        send(&app, "GET", &page, &ana.cookie, None).await.status,
        200
    );
    assert_eq!(counts_now.next("counts").await, counts(0, 0, 0));
    let inbox = send(&app, "GET", "/inbox", &ana.cookie, None).await;
    assert!(
        !inbox.body.contains("class=\"conversation unread\""),
        "{}",
        inbox.body
    );
}

#[tokio::test]
async fn the_list_script_gets_204_and_a_bad_request_changes_nothing() {
    let app = TestApp::spawn(&[]).await;
    let ana = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget.say("c1", "Hello").await;
    let id: i64 = app.count("SELECT id FROM conversations");
    // As the inbox script posts (the `u` key on the list).
    let post = |id: i64, fields: &str| {
        request(
            &app,
            "POST",
            &format!("/conversations/{id}/unread"),
            &ana.cookie,
            Some(fields),
        )
        .header("x-porch-fetch", "1")
        .answer()
    };
    let csrf = form(&[("csrf", &ana.csrf)]);
    let marked = "SELECT count(*) FROM conversation_reads WHERE is_marked_unread = 1";
    assert_eq!(post(id + 1, &csrf).await.status, 404);
    assert_eq!(post(id, "").await.status, 403, "no CSRF token");
    assert_eq!(app.count(marked), 0);
    assert_eq!(post(id, &csrf).await.status, 204);
    assert_eq!(app.count(marked), 1);
}
