//! Snooze (docs/admin.md, "Snooze"): a snoozed conversation leaves the Open list and the unread
//! counts until its time is up (a "Snooze ended" line, an alert, back at the top) or the visitor
//! writes; the API snoozes, unsnoozes and assigns as the inbox does.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;

use crate::helpers::TestApp;
use crate::inbox::{PASSWORD, add_user, form, send, setup_admin, sign_in, signed_in_from};
use crate::unread_counts::{Events, counts};

fn now_ms() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock");
    i64::try_from(since.as_millis()).expect("ms")
}

#[tokio::test]
async fn a_snoozed_conversation_leaves_open_and_the_counts_until_the_visitor_writes() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget.say("c1", "Hello").await;
    let id: i64 = app.count("SELECT id FROM conversations");
    let mut counts_now = Events::open_at(&app, "/inbox/counts", &admin.cookie).await;
    assert_eq!(counts_now.next("counts").await, counts(1, 0, 1));
    let mut list = Events::open_at(&app, "/inbox/events", &admin.cookie).await;

    let snoozed = send(
        &app,
        "POST",
        &format!("/conversations/{id}/snooze"),
        &admin.cookie,
        Some(&form(&[("csrf", &admin.csrf), ("minutes", "60")])),
    )
    .await;
    assert_eq!(snoozed.status, 303);
    let page = format!("/conversations/{id}?notice=snoozed");
    assert_eq!(snoozed.header("location"), Some(page.as_str()));
    assert_eq!(counts_now.next("counts").await, counts(0, 0, 0));
    assert_eq!(list.next("removed").await, id);

    // A page opened while it is snoozed counts nothing for it either.
    let mut fresh = Events::open_at(&app, "/inbox/counts", &admin.cookie).await;
    assert_eq!(fresh.next("counts").await, counts(0, 0, 0));
    let row = format!("id=\"conversation-{id}\"");
    let open = send(&app, "GET", "/inbox", &admin.cookie, None).await;
    assert!(!open.body.contains(&row), "{}", open.body);
    let tab = send(&app, "GET", "/inbox?filter=snoozed", &admin.cookie, None).await;
    assert!(tab.body.contains(&row), "{}", tab.body);
    assert!(tab.body.contains("Snoozed until "), "{}", tab.body);
    let shown = send(&app, "GET", &page, &admin.cookie, None).await;
    assert!(
        shown.body.contains("snoozed this conversation for 1 hour"),
        "the status line: {}",
        shown.body
    );
    assert!(shown.body.contains("Unsnooze"), "{}", shown.body);
    assert!(
        shown
            .body
            .contains("Snoozed: the conversation is out of Open")
    );

    // The visitor writes: back in Open, counted and alerted.
    widget.say("c2", "Still there?").await;
    let alert = counts_now.next("alert").await;
    assert_eq!(alert["kind"], "message");
    assert_eq!(counts_now.next("counts").await, counts(1, 0, 1));
    assert_eq!(fresh.next("counts").await, counts(1, 0, 1));
    let open = send(&app, "GET", "/inbox", &admin.cookie, None).await;
    assert!(open.body.contains(&row), "{}", open.body);
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM conversations WHERE id = {id} AND snoozed_until IS NULL"
        )),
        1
    );
    // A closed conversation has no Snooze to offer and refuses one.
    let closed = send(
        &app,
        "POST",
        &format!("/conversations/{id}/close"),
        &admin.cookie,
        Some(&form(&[("csrf", &admin.csrf)])),
    )
    .await;
    assert_eq!(closed.status, 303);
    let refused = send(
        &app,
        "POST",
        &format!("/conversations/{id}/snooze"),
        &admin.cookie,
        Some(&form(&[("csrf", &admin.csrf), ("minutes", "60")])),
    )
    .await;
    assert_eq!(
        refused.status, 303,
        "back to the page, which shows it closed"
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM conversations WHERE id = {id} AND snoozed_until IS NULL"
        )),
        1
    );
}

#[tokio::test]
async fn a_snooze_ends_on_time_with_a_line_an_alert_and_the_top_of_the_list() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let token = app.add_user_token("Cy", "agent");
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget.say("c1", "Hello").await;
    let id: i64 = app.count("SELECT id FROM conversations");
    // Read before the snooze: what counts after it is the snooze's end, not the message.
    let page = send(
        &app,
        "GET",
        &format!("/conversations/{id}"),
        &admin.cookie,
        None,
    )
    .await;
    assert_eq!(page.status, 200);
    let mut events = Events::open_at(&app, "/inbox/counts", &admin.cookie).await;
    assert_eq!(events.next("counts").await, counts(0, 0, 0));

    let until = now_ms() + 1_500;
    let path = format!("/api/v1/conversations/{id}/snooze");
    let (status, body) = app
        .api("POST", &path, &token, Some(json!({"until": until})))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["snoozed_until"], until);

    // Nothing happens until the time is up; then Porch's own line, an alert, the counts.
    let alert = events.next("alert").await;
    assert!(now_ms() >= until, "not before its time");
    assert_eq!(alert["kind"], "woke");
    assert_eq!(alert["conversation"], id);
    assert!(
        alert["body"]
            .as_str()
            .is_some_and(|b| b.ends_with(": Snooze ended")),
        "{alert}"
    );
    assert_eq!(
        events.next("counts").await,
        counts(1, 0, 1),
        "unread again until opened"
    );
    let (_, conversation) = app
        .api("GET", &format!("/api/v1/conversations/{id}"), &token, None)
        .await;
    assert_eq!(conversation["snoozed_until"], serde_json::Value::Null);
    assert!(
        conversation["last_message_at"]
            .as_i64()
            .is_some_and(|at| at >= until),
        "back at the top: {conversation}"
    );
    let (_, messages) = app
        .api(
            "GET",
            &format!("/api/v1/conversations/{id}/messages"),
            &token,
            None,
        )
        .await;
    let last = messages["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .expect("messages");
    assert_eq!(last["author"], "system");
    assert_eq!(last["body"], "Snooze ended");
    assert_eq!(last["author_name"], serde_json::Value::Null);
}

#[tokio::test]
async fn changes_to_a_snoozed_conversation_alert_its_assignee_as_an_open_ones_would() {
    let app = TestApp::spawn(&[]).await;
    setup_admin(&app).await;
    let cy = app.add_user_token("Cy", "agent");
    let bo_id = add_user(&app, "bo@example.com", "agent");
    let bo = signed_in_from(&app, &sign_in(&app, "bo@example.com", PASSWORD).await).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget.say("c1", "Hello").await;
    let id: i64 = app.count("SELECT id FROM conversations");
    let at = |what: &str| format!("/api/v1/conversations/{id}/{what}");
    let hour = json!({"until": now_ms() + 3_600_000});
    let (status, _) = app
        .api(
            "POST",
            &at("assign"),
            &cy,
            Some(json!({"assignee": bo_id.0})),
        )
        .await;
    assert_eq!(status, 200);
    let mut bos = Events::open_at(&app, "/inbox/counts", &bo.cookie).await;
    bos.next("counts").await;

    // Bo has it all along: unsnoozing it is no news to him.
    for (what, body) in [
        ("snooze", Some(hour.clone())),
        ("unsnooze", None),
        ("snooze", Some(hour)),
    ] {
        let (status, answer) = app.api("POST", &at(what), &cy, body).await;
        assert_eq!(status, 200, "{what}: {answer}");
    }
    // Taking it from him, snoozed, is.
    let (status, _) = app
        .api("POST", &at("assign"), &cy, Some(json!({"assignee": null})))
        .await;
    assert_eq!(status, 200);
    let alert = bos.next("alert").await;
    assert_eq!(
        alert["kind"], "unassigned",
        "the first alert he gets: {alert}"
    );
}

#[tokio::test]
async fn the_api_snoozes_unsnoozes_and_assigns_and_refuses_what_it_cannot() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_user_token("Ana", "agent");
    let bo = app.add_user_token("Bo", "agent");
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget.say("c1", "Hello").await;
    let id: i64 = app.count("SELECT id FROM conversations");
    let at = |what: &str| format!("/api/v1/conversations/{id}/{what}");
    let hour = now_ms() + 3_600_000;

    for (body, why) in [
        (json!({"until": now_ms() - 1}), "in the past"),
        (json!({"until": now_ms() + 366 * 86_400_000}), "over a year"),
        (json!({}), "no until"),
        (json!({"until": "soon"}), "not a number"),
    ] {
        let (status, answer) = app.api("POST", &at("snooze"), &token, Some(body)).await;
        assert_eq!(status, 422, "{why}: {answer}");
    }
    let (status, _) = app
        .api(
            "POST",
            "/api/v1/conversations/999/snooze",
            &token,
            Some(json!({"until": hour})),
        )
        .await;
    assert_eq!(status, 404);
    let (status, body) = app
        .api("POST", &at("snooze"), &token, Some(json!({"until": hour})))
        .await;
    assert_eq!((status, &body["snoozed_until"]), (200, &json!(hour)));
    let (status, body) = app.api("POST", &at("unsnooze"), &token, None).await;
    assert_eq!((status, &body["snoozed_until"]), (200, &json!(null)));
    let (status, body) = app.api("POST", &at("unsnooze"), &token, None).await;
    assert_eq!(status, 200, "not snoozed: nothing to do, {body}");

    // Assign: to a user, to nobody; a body without `assignee` or naming nobody real is refused.
    let bo_id = app.count("SELECT id FROM users WHERE email = 'bo@example.com'");
    let (status, body) = app
        .api(
            "POST",
            &at("assign"),
            &token,
            Some(json!({"assignee": bo_id})),
        )
        .await;
    assert_eq!((status, &body["assignee"]["id"]), (200, &json!(bo_id)));
    // Each refusal says what is wrong: an enabled user's id written as `2.0` is not "no enabled user".
    let an_id = "a whole number";
    let enabled = "the id of an enabled user";
    for (body, says) in [
        (json!({}), "assignee"),
        (json!({"assignee": 999}), enabled),
        (json!({"assignee": "bo"}), an_id),
        (
            serde_json::from_str(&format!(r#"{{"assignee": {bo_id}.0}}"#)).expect("json"),
            an_id,
        ),
    ] {
        let (status, answer) = app
            .api("POST", &at("assign"), &bo, Some(body.clone()))
            .await;
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(status, 422, "{body}: {answer}");
        assert!(message.contains(says), "{body}: {message}");
    }
    let (status, body) = app
        .api("POST", &at("assign"), &bo, Some(json!({"assignee": null})))
        .await;
    assert_eq!((status, &body["assignee"]), (200, &json!(null)));
    let lines: Vec<String> = app.column(&format!(
        "SELECT body FROM messages WHERE conversation_id = {id} AND author = 'system' ORDER BY id"
    ));
    assert_eq!(
        lines,
        [
            "Ana snoozed this conversation for 1 hour",
            "Ana unsnoozed this conversation",
            "Ana assigned this conversation to Bo",
            "Bo unassigned this conversation",
        ]
    );

    // A closed conversation cannot be snoozed.
    let (status, _) = app.api("POST", &at("close"), &token, None).await;
    assert_eq!(status, 200);
    let (status, body) = app
        .api("POST", &at("snooze"), &token, Some(json!({"until": hour})))
        .await;
    assert_eq!((status, &body["error"]["code"]), (409, &json!("conflict")));
}

/// A signed-in admin, and a conversation a visitor started (its id).
async fn admin_and_conversation(app: &TestApp) -> (crate::inbox::Browser, i64) {
    let admin = signed_in_from(app, &setup_admin(app).await).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget.say("c1", "Hello").await;
    (admin, app.count("SELECT id FROM conversations"))
}

/// A refused "until a date and time…" (left empty, or in the past) comes back with the reason on
/// the conversation's own page, not a page of its own with only a way to the inbox: the choice and
/// the field given back, the field marked and focused.
#[tokio::test]
async fn a_refused_custom_snooze_comes_back_on_the_conversation_page() {
    let app = TestApp::spawn(&[]).await;
    let (admin, id) = admin_and_conversation(&app).await;
    let path = format!("/conversations/{id}/snooze");
    let post = async |fields: &[(&str, &str)]| {
        let mut all = vec![("csrf", admin.csrf.as_str())];
        all.extend_from_slice(fields);
        send(&app, "POST", &path, &admin.cookie, Some(&form(&all))).await
    };
    let empty = post(&[("minutes", "custom")]).await;
    let in_the_past = post(&[("minutes", "custom"), ("until", "2020-01-01T10:00")]).await;
    let said = [
        (&empty, "", "Choose the date and time the snooze ends."),
        (
            &in_the_past,
            "2020-01-01T10:00",
            "A snooze must end in the future.",
        ),
    ];
    for (refused, typed, why) in said {
        let page = &refused.body;
        assert_eq!(refused.status, 422);
        assert!(page.contains(why), "{page}");
        assert!(
            page.contains("id=\"reply-form\""),
            "the conversation page: {page}"
        );
        assert!(
            page.contains(r#"<option value="custom" selected"#),
            "{page}"
        );
        let field = page
            .split("<input type=\"datetime-local\"")
            .nth(1)
            .and_then(|rest| rest.split('>').next())
            .expect("the field");
        assert!(
            field.contains(&format!("value=\"{typed}\""))
                && field.contains("aria-invalid=\"true\"")
                && field.contains("autofocus"),
            "{field}"
        );
    }
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM conversations WHERE id = {id} AND snoozed_until IS NULL"
        )),
        1
    );
}

#[tokio::test]
async fn a_snooze_until_a_chosen_date_and_time_in_the_agents_zone() {
    let app = TestApp::spawn(&[]).await;
    let (admin, id) = admin_and_conversation(&app).await;
    let path = format!("/conversations/{id}/snooze");
    let post = |fields: Vec<(&'static str, String)>| {
        let (app, admin, path) = (&app, &admin, &path);
        async move {
            let mut all = vec![("csrf", admin.csrf.clone())];
            all.extend(fields);
            let pairs: Vec<(&str, &str)> = all.iter().map(|(k, v)| (*k, v.as_str())).collect();
            send(app, "POST", path, &admin.cookie, Some(&form(&pairs))).await
        }
    };
    // Ten days from now at 14:30 in Tokyo (UTC+9, no daylight saving): 05:30 UTC that day.
    let day = jiff::Timestamp::from_millisecond(now_ms() + 10 * 86_400_000)
        .expect("time")
        .to_zoned_datetime(jiff::tz::TimeZone::get("Asia/Tokyo").expect("zone"))
        .date();
    let snoozed = post(vec![
        ("minutes", "custom".into()),
        ("until", format!("{day}T14:30")),
        ("time_zone", "Asia/Tokyo".into()),
    ])
    .await;
    assert_eq!(snoozed.status, 303, "{}", snoozed.body);
    let until: i64 = app.count(&format!(
        "SELECT snoozed_until FROM conversations WHERE id = {id}"
    ));
    let expected = day
        .to_datetime(jiff::civil::Time::new(14, 30, 0, 0).expect("time"))
        .to_zoned_datetime(jiff::tz::TimeZone::get("Asia/Tokyo").expect("zone"))
        .expect("zoned")
        .timestamp()
        .as_millisecond();
    assert_eq!(until, expected);

    // Snoozed already (another tab): nothing changes, and the page says why.
    let again = post(vec![("minutes", "60".into())]).await;
    assert_eq!(again.status, 303);
    assert_eq!(
        app.count(&format!(
            "SELECT snoozed_until FROM conversations WHERE id = {id}"
        )),
        until
    );
    let script = crate::inbox::request(
        &app,
        "POST",
        &path,
        &admin.cookie,
        Some(&form(&[("csrf", &admin.csrf), ("minutes", "60")])),
    )
    .header("x-porch-fetch", "1")
    .send()
    .await
    .expect("answer");
    assert_eq!(script.status(), 409);
    let said = script.text().await.expect("body");
    assert!(said.contains("It is snoozed already"), "{said}");
}
