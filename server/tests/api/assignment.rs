//! Taking a conversation from the inbox: each assignment form names the assignee its page showed
//! (`from`), so two agents pressing "Assign to me" at once, or a stale page, never silently take
//! a conversation from a colleague; taking one over is its own, named button.

use crate::helpers::TestApp;
use crate::inbox::{Browser, add_user, form, send, setup_admin, sign_in, signed_in_from};

/// Ana (admin) and Bo (agent) signed in, and a visitor's new conversation (`id`) on a site.
struct Team {
    app: TestApp,
    ana: Browser,
    bo: Browser,
    id: i64,
    ana_id: i64,
}

/// Who has conversation `id` (0: nobody).
fn assignee_of(app: &TestApp, id: i64) -> i64 {
    app.count(&format!(
        "SELECT coalesce(assignee_id, 0) FROM conversations WHERE id = {id}"
    ))
}

/// How many "… took this conversation" lines there are.
fn took_lines(app: &TestApp) -> i64 {
    app.count("SELECT count(*) FROM messages WHERE author = 'system' AND body LIKE '% took %'")
}

async fn team_and_a_chat() -> Team {
    let app = TestApp::spawn(&[]).await;
    let ana = signed_in_from(&app, &setup_admin(&app).await).await;
    add_user(&app, "bo@example.com", "agent");
    let bo = signed_in_from(
        &app,
        &sign_in(&app, "bo@example.com", crate::inbox::PASSWORD).await,
    )
    .await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget.say("c1", "Hi").await;
    let id = app.count("SELECT id FROM conversations");
    let ana_id = app.count("SELECT id FROM users WHERE email = 'ana@example.com'");
    Team {
        app,
        ana,
        bo,
        id,
        ana_id,
    }
}

#[tokio::test]
async fn a_conversation_taken_meanwhile_is_not_taken_again_silently() {
    let Team {
        app,
        ana,
        bo,
        id,
        ana_id,
    } = team_and_a_chat().await;
    let page = format!("/conversations/{id}");
    let path = format!("{page}/assign");
    let done = format!("{page}?notice=assignee");
    let assignee = || assignee_of(&app, id);
    let took = || took_lines(&app);

    // Both saw it unassigned; Ana's press lands first.
    let shown = send(&app, "GET", &page, &bo.cookie, None).await;
    assert!(shown.body.contains("Assign to me") && shown.body.contains(r#"name="from" value="""#));
    let as_shown = |csrf: &str| form(&[("csrf", csrf), ("assignee", "me"), ("from", "")]);
    let first = send(&app, "POST", &path, &ana.cookie, Some(&as_shown(&ana.csrf))).await;
    assert_eq!(
        (first.status, first.header("location")),
        (303, Some(done.as_str()))
    );
    let said = send(&app, "GET", &done, &ana.cookie, None).await;
    assert!(said.body.contains("Assigned to you."), "{}", said.body);
    let second = send(&app, "POST", &path, &bo.cookie, Some(&as_shown(&bo.csrf))).await;
    let refused = format!("{page}?error=assigned");
    assert_eq!(
        (second.status, second.header("location")),
        (303, Some(refused.as_str()))
    );
    assert_eq!((assignee(), took()), (ana_id, 1), "Bo took it from Ana");
    let told = send(&app, "GET", &refused, &bo.cookie, None).await;
    assert!(
        told.body.contains("Someone changed the assignee meanwhile"),
        "{}",
        told.body
    );

    // Bo's page now names the colleague, and taking it over is that button's explicit act.
    assert!(told.body.contains("Take over from Ana"), "{}", told.body);
    assert!(
        told.body
            .contains(&format!(r#"name="from" value="{ana_id}""#))
    );
    let over = form(&[
        ("csrf", &bo.csrf),
        ("assignee", "me"),
        ("from", &ana_id.to_string()),
    ]);
    let taken = send(&app, "POST", &path, &bo.cookie, Some(&over)).await;
    assert_eq!(
        (taken.status, taken.header("location")),
        (303, Some(done.as_str()))
    );
    let seen_by_ana = send(&app, "GET", &done, &ana.cookie, None).await;
    assert!(
        seen_by_ana.body.contains("Assigned to Bo."),
        "{}",
        seen_by_ana.body
    );
    assert_ne!(assignee(), ana_id);
    // Pressed twice: already his, so no complaint.
    let again = send(&app, "POST", &path, &bo.cookie, Some(&over)).await;
    assert_eq!(again.header("location"), Some(done.as_str()));

    // A post without `from` assigns whoever has it (the documented old form).
    let plain = form(&[("csrf", &ana.csrf), ("assignee", "me")]);
    let back = send(&app, "POST", &path, &ana.cookie, Some(&plain)).await;
    assert_eq!(
        (back.header("location"), assignee()),
        (Some(done.as_str()), ana_id)
    );
}

#[tokio::test]
async fn a_reply_from_the_inbox_takes_an_open_conversation_nobody_has() {
    let Team {
        app,
        ana,
        bo,
        id,
        ana_id,
    } = team_and_a_chat().await;
    let path = format!("/conversations/{id}/reply");
    let assignee = || assignee_of(&app, id);
    let took = || took_lines(&app);
    // The conversation page's reply form, as `who` posts it.
    let post_reply = async |who: &Browser, kind: &str, client_id: &str| {
        let body = form(&[
            ("csrf", &who.csrf),
            ("kind", kind),
            ("body", "Hello there"),
            ("client_id", client_id),
        ]);
        send(&app, "POST", &path, &who.cookie, Some(&body)).await
    };

    // A private note takes nothing.
    let note = post_reply(&ana, "note", "n1").await;
    assert_eq!(note.status, 303, "{}", note.body);
    assert_eq!(assignee(), 0);

    // Ana's reply takes it, with the line Assign to me writes, before the reply in the history
    // (as "Ana took this conversation", then what she wrote).
    let first = post_reply(&ana, "reply", "r1").await;
    assert_eq!(first.status, 303, "{}", first.body);
    assert_eq!((assignee(), took()), (ana_id, 1));
    assert!(
        app.count("SELECT id FROM messages WHERE author = 'system' AND body LIKE '% took %'")
            < app.count("SELECT id FROM messages WHERE client_id = 'r1'"),
        "the line comes first"
    );

    // Bo's reply leaves it with Ana; Ana's resend changes nothing either.
    post_reply(&bo, "reply", "b1").await;
    post_reply(&ana, "reply", "r1").await;
    assert_eq!((assignee(), took()), (ana_id, 1));

    // Unassigned again, a reply through the API takes nothing (a bot's answer is nobody's work).
    let unassign = form(&[("csrf", &ana.csrf), ("assignee", "")]);
    let assign = format!("/conversations/{id}/assign");
    send(&app, "POST", &assign, &ana.cookie, Some(&unassign)).await;
    assert_eq!(assignee(), 0);
    // A resend of a reply already stored takes nothing: its first send did.
    let resent = post_reply(&ana, "reply", "r1").await;
    assert_eq!(resent.status, 303, "{}", resent.body);
    assert_eq!((assignee(), took()), (0, 1));
    let token = app.add_user_token("Cy", "agent");
    let api = format!("/api/v1/conversations/{id}/messages");
    let (status, _) = app
        .api(
            "POST",
            &api,
            &token,
            Some(serde_json::json!({"body": "From the API"})),
        )
        .await;
    assert_eq!(status, 201);
    assert_eq!(assignee(), 0);

    // A closed conversation is not taken by a reply.
    let close = format!("/conversations/{id}/close");
    send(
        &app,
        "POST",
        &close,
        &ana.cookie,
        Some(&form(&[("csrf", &ana.csrf)])),
    )
    .await;
    post_reply(&ana, "reply", "r2").await;
    assert_eq!(assignee(), 0);
}

/// A closed conversation keeps the agent who had it after they are disabled: its page shows them
/// as the one selected, and *Assign* pressed as it is changes nothing (it unassigned it).
#[tokio::test]
async fn a_disabled_assignee_stays_selected_and_an_unchanged_assign_keeps_them() {
    let Team {
        app, ana, bo, id, ..
    } = team_and_a_chat().await;
    let page = format!("/conversations/{id}");
    let bo_id = app.count("SELECT id FROM users WHERE email = 'bo@example.com'");
    let take = form(&[("csrf", &bo.csrf), ("assignee", "me"), ("from", "")]);
    send(
        &app,
        "POST",
        &format!("{page}/assign"),
        &bo.cookie,
        Some(&take),
    )
    .await;
    send(
        &app,
        "POST",
        &format!("{page}/close"),
        &bo.cookie,
        Some(&form(&[("csrf", &bo.csrf)])),
    )
    .await;
    let disable = form(&[("csrf", &ana.csrf)]);
    let disabled = send(
        &app,
        "POST",
        &format!("/team/{bo_id}/disable"),
        &ana.cookie,
        Some(&disable),
    )
    .await;
    assert_eq!(disabled.status, 303);
    assert_eq!(
        assignee_of(&app, id),
        bo_id,
        "a closed conversation keeps its assignee"
    );

    let shown = send(&app, "GET", &page, &ana.cookie, None).await;
    let selected = format!(r#"<option value="{bo_id}" selected>Bo (disabled)</option>"#);
    assert!(shown.body.contains(&selected), "{}", shown.body);
    let unchanged = form(&[
        ("csrf", &ana.csrf),
        ("assignee", &bo_id.to_string()),
        ("from", &bo_id.to_string()),
    ]);
    let answer = send(
        &app,
        "POST",
        &format!("{page}/assign"),
        &ana.cookie,
        Some(&unchanged),
    )
    .await;
    assert_eq!(answer.status, 303);
    assert_eq!(assignee_of(&app, id), bo_id, "still Bo's");

    // The same unchanged form from a page older than a colleague's change is told so.
    let take = form(&[
        ("csrf", &ana.csrf),
        ("assignee", "me"),
        ("from", &bo_id.to_string()),
    ]);
    send(
        &app,
        "POST",
        &format!("{page}/assign"),
        &ana.cookie,
        Some(&take),
    )
    .await;
    let stale = send(
        &app,
        "POST",
        &format!("{page}/assign"),
        &ana.cookie,
        Some(&unchanged),
    )
    .await;
    let refused = format!("{page}?error=assigned");
    assert_eq!(stale.header("location"), Some(refused.as_str()));
    assert_ne!(assignee_of(&app, id), bo_id);
}

/// *Assign* to a colleague disabled since the page was drawn (its picker still offered them):
/// the conversation's page again, 409, saying who is disabled, with the picker drawn anew
/// without them and marked; nothing changes. It was a 404 page saying the agent "may have been
/// deleted", with no way back but the inbox.
#[tokio::test]
async fn assigning_someone_disabled_meanwhile_comes_back_to_the_page() {
    let Team { app, ana, id, .. } = team_and_a_chat().await;
    let page = format!("/conversations/{id}");
    let bo_id = app.count("SELECT id FROM users WHERE email = 'bo@example.com'");
    let offered = format!(r#"<option value="{bo_id}">Bo</option>"#);
    assert!(
        send(&app, "GET", &page, &ana.cookie, None)
            .await
            .body
            .contains(&offered)
    );
    let disabled = send(
        &app,
        "POST",
        &format!("/team/{bo_id}/disable"),
        &ana.cookie,
        Some(&form(&[("csrf", &ana.csrf)])),
    )
    .await;
    assert_eq!(disabled.status, 303);

    let to_bo = form(&[
        ("csrf", &ana.csrf),
        ("assignee", &bo_id.to_string()),
        ("from", ""),
    ]);
    let answer = send(
        &app,
        "POST",
        &format!("{page}/assign"),
        &ana.cookie,
        Some(&to_bo),
    )
    .await;
    assert_eq!(answer.status, 409, "{}", answer.body);
    assert!(
        answer
            .body
            .contains("Bo is disabled, so nothing changed: choose someone else."),
        "{}",
        answer.body
    );
    assert!(
        !answer.body.contains(&offered),
        "the picker still offers Bo"
    );
    assert!(
        answer
            .body
            .contains(r#"<select id="assignee" name="assignee" aria-invalid="true""#),
        "{}",
        answer.body
    );
    assert_eq!(assignee_of(&app, id), 0, "nobody has it");

    // Someone deleted from the database altogether is named as no longer on the team.
    let gone = form(&[("csrf", &ana.csrf), ("assignee", "999"), ("from", "")]);
    let answer = send(
        &app,
        "POST",
        &format!("{page}/assign"),
        &ana.cookie,
        Some(&gone),
    )
    .await;
    assert_eq!(answer.status, 409);
    assert!(
        answer.body.contains("no longer on the team"),
        "{}",
        answer.body
    );
}

/// A reply refused takes nothing: one naming an upload that is not the agent's (swept after its
/// hour, already sent, or made up) was refused "Not saved" after it had taken the conversation,
/// with a lone "… took this conversation" line and no reply. A text holding a control character
/// is said to, not to be "longer than 4,000 characters".
#[tokio::test]
async fn a_refused_reply_takes_nothing_and_says_why() {
    let Team { app, bo, id, .. } = team_and_a_chat().await;
    let path = format!("/conversations/{id}/reply");
    let unknown = form(&[
        ("csrf", &bo.csrf),
        ("kind", "reply"),
        ("body", "Here is the invoice"),
        ("client_id", "r-unknown"),
        ("attachments", "att_aaaaaaaaaaaaaaaaaaaaaaaaaa"),
    ]);
    let refused = send(&app, "POST", &path, &bo.cookie, Some(&unknown)).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(
        (assignee_of(&app, id), took_lines(&app)),
        (0, 0),
        "a refused reply took the conversation"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM messages WHERE author = 'agent'"),
        0
    );

    let control = form(&[
        ("csrf", &bo.csrf),
        ("kind", "reply"),
        ("body", "a\u{0}b"),
        ("client_id", "r-control"),
    ]);
    let refused = send(&app, "POST", &path, &bo.cookie, Some(&control)).await;
    let location = format!("/conversations/{id}?error=control");
    assert_eq!(refused.header("location"), Some(location.as_str()));
    let page = send(&app, "GET", &location, &bo.cookie, None).await;
    assert!(
        page.body
            .contains("The reply holds a control character (such as NUL"),
        "{}",
        page.body
    );
    assert_eq!(assignee_of(&app, id), 0);
}

/// On a closed conversation a colleague has, Reopen comes first and taking it over is a plain
/// button: reopening, not taking over, is what an agent opening it mostly wants.
#[tokio::test]
async fn a_closed_conversation_offers_reopen_before_taking_it_over() {
    let Team {
        app, ana, bo, id, ..
    } = team_and_a_chat().await;
    let page = format!("/conversations/{id}");
    let mine = form(&[("csrf", &ana.csrf), ("assignee", "me")]);
    send(
        &app,
        "POST",
        &format!("{page}/assign"),
        &ana.cookie,
        Some(&mine),
    )
    .await;
    let closed = send(
        &app,
        "POST",
        &format!("{page}/close"),
        &ana.cookie,
        Some(&form(&[("csrf", &ana.csrf)])),
    )
    .await;
    assert_eq!(closed.status, 303, "{}", closed.body);
    let shown = send(&app, "GET", &page, &bo.cookie, None).await;
    let reopen = shown.body.find("Reopen conversation").expect("Reopen");
    let take = shown.body.find("Take over from Ana").expect("Take over");
    assert!(reopen < take, "{}", shown.body);
    assert!(
        shown
            .body
            .contains(r#"<button type="submit" class="button">Take over from Ana</button>"#),
        "{}",
        shown.body
    );
}
