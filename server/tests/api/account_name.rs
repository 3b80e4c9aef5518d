//! A user's own name, on `/account`: saved (and audited) for what they send from now on, refused
//! with the reason when empty or too long.

use crate::helpers::TestApp;
use crate::inbox::{form, send, setup_admin, signed_in_from};

#[tokio::test]
async fn a_user_renames_themselves_and_their_next_reply_carries_it() {
    let app = TestApp::spawn(&[]).await;
    let ana = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget.say("c1", "Hi").await;
    let id = app.count("SELECT id FROM conversations");
    let reply = |text: &str| form(&[("csrf", &ana.csrf), ("body", text), ("kind", "reply")]);
    let path = format!("/conversations/{id}/reply");
    send(&app, "POST", &path, &ana.cookie, Some(&reply("before"))).await;

    let rename = |name: &str| form(&[("csrf", &ana.csrf), ("name", name)]);
    for (name, reason) in [
        ("  ", "Enter a name."),
        (&"x".repeat(81)[..], "at most 80 characters"),
    ] {
        let refused = send(
            &app,
            "POST",
            "/account/name",
            &ana.cookie,
            Some(&rename(name)),
        )
        .await;
        assert_eq!(refused.status, 422, "{}", refused.body);
        assert!(refused.body.contains(reason), "{}", refused.body);
    }
    let saved = send(
        &app,
        "POST",
        "/account/name",
        &ana.cookie,
        Some(&rename(" Ana Lima ")),
    )
    .await;
    assert_eq!(
        (saved.status, saved.header("location")),
        (303, Some("/account?notice=name-changed"))
    );
    let page = send(
        &app,
        "GET",
        "/account?notice=name-changed",
        &ana.cookie,
        None,
    )
    .await;
    assert!(page.body.contains(r#"value="Ana Lima""#) && page.body.contains("Name saved."));

    send(&app, "POST", &path, &ana.cookie, Some(&reply("after"))).await;
    let name_of = |body: &str| {
        app.db()
            .query_row(
                "SELECT author_name FROM messages WHERE body = ?1",
                [body],
                |r| r.get::<_, String>(0),
            )
            .expect("reply")
    };
    assert_eq!(
        (name_of("before"), name_of("after")),
        ("Ana".into(), "Ana Lima".into())
    );
    let audited = app.count(
        "SELECT count(*) FROM audit_events WHERE action = 'user.renamed' \
         AND json_extract(detail, '$.from') = 'Ana' AND json_extract(detail, '$.to') = 'Ana Lima'",
    );
    assert_eq!(audited, 1);
}

/// An admin corrects a colleague's name on the team page (an invitation's typo, before they ever
/// sign in); an agent cannot.
#[tokio::test]
async fn an_admin_renames_a_colleague_and_an_agent_cannot() {
    let app = TestApp::spawn(&[]).await;
    let ana = signed_in_from(&app, &setup_admin(&app).await).await;
    let bo = crate::inbox::add_user(&app, "bo@example.com", "agent");
    let path = format!("/team/{bo}/name");
    let named = |csrf: &str, name: &str| form(&[("csrf", csrf), ("name", name)]);
    let refused = send(
        &app,
        "POST",
        &path,
        &ana.cookie,
        Some(&named(&ana.csrf, "")),
    )
    .await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(refused.body.contains("Enter a name."), "{}", refused.body);
    let saved = send(
        &app,
        "POST",
        &path,
        &ana.cookie,
        Some(&named(&ana.csrf, "Bo Lindqvist")),
    )
    .await;
    assert_eq!(
        (saved.status, saved.header("location")),
        (303, Some("/team?notice=renamed"))
    );
    let name = app
        .db()
        .query_row("SELECT name FROM users WHERE id = ?1", [bo], |r| {
            r.get::<_, String>(0)
        });
    assert_eq!(name.expect("user"), "Bo Lindqvist");

    let agent = crate::inbox::signed_in_from(
        &app,
        &crate::inbox::sign_in(&app, "bo@example.com", crate::inbox::PASSWORD).await,
    )
    .await;
    let denied = send(
        &app,
        "POST",
        &path,
        &agent.cookie,
        Some(&named(&agent.csrf, "Boss")),
    )
    .await;
    assert_eq!(denied.status, 403, "{}", denied.body);
    assert_eq!(
        app.count("SELECT count(*) FROM users WHERE name = 'Boss'"),
        0
    );
}
