//! The pre-chat form (docs/widget.md#pre-chat-form): enforced over a real websocket, answers
//! stored once and shown to agents. Business hours (docs/widget.md#business-hours): an admin
//! saves a site's hours on its hours page (validated, admins only, audited); `welcome.site` says
//! whether the site is open at the server's wall clock, which these tests fix at a boundary
//! instead of waiting for it.

use serde_json::Value;

use crate::helpers::TestApp;
use crate::inbox::{Browser, PASSWORD, add_user, form, send, setup_admin, sign_in, signed_in_from};

/// Monday 2026-03-02, 09:00:00 UTC: the opening of the hours below.
pub(crate) const MONDAY_NINE: i64 = 1_772_442_000_000;

/// Fixes the server's wall clock (business hours are judged by it).
pub(crate) fn set_clock(app: &TestApp, at_ms: i64) {
    let server = app.server.as_ref().expect("running");
    server.app.wall_clock.set(Some(at_ms));
}

/// Weekdays 09:00 to 17:00 in `zone`, with `away` and `mode` for out of hours.
pub(crate) fn hours_form(csrf: &str, zone: &str, monday: &str, away: &str, mode: &str) -> String {
    let weekday = "09:00-17:00";
    form(&[
        ("csrf", csrf),
        ("time_zone", zone),
        ("monday", monday),
        ("tuesday", weekday),
        ("wednesday", weekday),
        ("thursday", weekday),
        ("friday", weekday),
        ("saturday", ""),
        ("sunday", ""),
        ("away_message", away),
        ("out_of_hours", mode),
    ])
}

pub(crate) async fn save_hours(
    app: &TestApp,
    admin: &Browser,
    site: &str,
    body: &str,
) -> crate::helpers::Answer {
    let path = format!("/sites/{site}/hours");
    send(app, "POST", &path, &admin.cookie, Some(body)).await
}

/// `GET /sites/{site}/hours` as `who`.
pub(crate) async fn hours_page(app: &TestApp, who: &Browser, site: &str) -> crate::helpers::Answer {
    send(
        app,
        "GET",
        &format!("/sites/{site}/hours"),
        &who.cookie,
        None,
    )
    .await
}

pub(crate) async fn welcome_site(app: &TestApp, site: &str) -> Value {
    let (_widget, welcome) = app.visitor(site, None, 0).await;
    welcome["site"].clone()
}

pub(crate) async fn admin_with_site(app: &TestApp) -> (Browser, String) {
    let admin = signed_in_from(app, &setup_admin(app).await).await;
    (admin, app.add_site("Acme"))
}

#[tokio::test]
async fn welcome_says_closed_until_the_opening_and_open_from_it() {
    let app = TestApp::spawn(&[]).await;
    let (admin, site) = admin_with_site(&app).await;
    let body = hours_form(&admin.csrf, "UTC", "09:00-17:00", "Back soon!", "email");
    let saved = save_hours(&app, &admin, &site, &body).await;
    assert_eq!(saved.status, 303, "{}", saved.body);

    set_clock(&app, MONDAY_NINE - 1);
    let closed = welcome_site(&app, &site).await;
    assert_eq!(closed["open"], false, "{closed}");
    assert_eq!(closed["opens_at"], MONDAY_NINE, "{closed}");
    assert_eq!(closed["away_message"], "Back soon!");
    assert_eq!(closed["out_of_hours"], "email");

    set_clock(&app, MONDAY_NINE);
    let open = welcome_site(&app, &site).await;
    assert_eq!(open["open"], true, "{open}");
    for field in ["opens_at", "away_message", "out_of_hours"] {
        assert!(
            open.get(field).is_none(),
            "{field} only while closed: {open}"
        );
    }

    // 17:00 closes; the next opening is Tuesday 09:00.
    set_clock(&app, MONDAY_NINE + 8 * 3_600_000);
    let evening = welcome_site(&app, &site).await;
    assert_eq!(evening["open"], false, "{evening}");
    assert_eq!(evening["opens_at"], MONDAY_NINE + 24 * 3_600_000);
}

#[tokio::test]
async fn away_messages_in_other_languages_travel_while_closed_and_come_back_to_the_form() {
    let app = TestApp::spawn(&[]).await;
    let (admin, site) = admin_with_site(&app).await;
    let mut body = hours_form(&admin.csrf, "UTC", "09:00-17:00", "Back soon!", "email");
    body.push_str(
        "&away_messages=de%3A+Gleich+zur%C3%BCck%21%0Afr%3A+%3Cb%3EBient%C3%B4t%3C%2Fb%3E",
    );
    let saved = save_hours(&app, &admin, &site, &body).await;
    assert_eq!(saved.status, 303, "{}", saved.body);

    set_clock(&app, MONDAY_NINE - 1);
    let closed = welcome_site(&app, &site).await;
    assert_eq!(closed["away_message"], "Back soon!", "{closed}");
    assert_eq!(
        closed["away_messages"]["de"], "Gleich zur\u{fc}ck!",
        "{closed}"
    );
    assert_eq!(
        closed["away_messages"]["fr"], "<b>Bient\u{f4}t</b>",
        "{closed}"
    );
    set_clock(&app, MONDAY_NINE);
    let open = welcome_site(&app, &site).await;
    assert!(
        open.get("away_messages").is_none(),
        "only while closed: {open}"
    );

    // The page shows them back as typed, escaped.
    let page = hours_page(&app, &admin, &site).await;
    assert!(
        page.body.contains("de: Gleich zur\u{fc}ck!"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("fr: &lt;b&gt;Bient\u{f4}t&lt;/b&gt;"),
        "{}",
        page.body
    );

    // A language the widget does not speak is refused, and the saved ones stay.
    let mut body = hours_form(&admin.csrf, "UTC", "09:00-17:00", "Back soon!", "email");
    body.push_str("&away_messages=sv%3A+Strax+tillbaka");
    let refused = save_hours(&app, &admin, &site, &body).await;
    assert_eq!(refused.status, 422);
    assert!(
        refused
            .body
            .contains("sv: Strax tillbaka: An away message's language code is not one"),
        "{}",
        refused.body
    );
    set_clock(&app, MONDAY_NINE - 1);
    let closed = welcome_site(&app, &site).await;
    assert_eq!(
        closed["away_messages"]["de"], "Gleich zur\u{fc}ck!",
        "{closed}"
    );
}

#[tokio::test]
async fn hours_follow_the_site_time_zone() {
    let app = TestApp::spawn(&[]).await;
    let (admin, site) = admin_with_site(&app).await;
    // 09:00 in New York on 2026-03-02 (EST, UTC-5) is 14:00 UTC.
    let body = hours_form(&admin.csrf, "America/New_York", "09:00-17:00", "", "accept");
    assert_eq!(save_hours(&app, &admin, &site, &body).await.status, 303);
    set_clock(&app, MONDAY_NINE);
    let closed = welcome_site(&app, &site).await;
    assert_eq!(closed["open"], false, "{closed}");
    assert_eq!(closed["opens_at"], MONDAY_NINE + 5 * 3_600_000);
    assert_eq!(closed["out_of_hours"], "accept");
    set_clock(&app, MONDAY_NINE + 5 * 3_600_000);
    assert_eq!(welcome_site(&app, &site).await["open"], true);
}

#[tokio::test]
async fn a_site_without_hours_is_always_open() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Acme");
    set_clock(&app, MONDAY_NINE - 6 * 3_600_000);
    let info = welcome_site(&app, &site).await;
    assert_eq!(info["open"], true, "{info}");
    assert!(info.get("opens_at").is_none(), "{info}");
}

#[tokio::test]
async fn chats_and_email_addresses_are_taken_out_of_hours() {
    let app = TestApp::spawn(&[]).await;
    let (admin, site) = admin_with_site(&app).await;
    let body = hours_form(&admin.csrf, "UTC", "09:00-17:00", "Away", "email");
    assert_eq!(save_hours(&app, &admin, &site, &body).await.status, 303);
    set_clock(&app, MONDAY_NINE - 3_600_000);
    let (mut widget, welcome) = app.visitor(&site, None, 0).await;
    assert_eq!(welcome["site"]["open"], false);
    let ack = widget.say("c1", "Anyone there?").await;
    assert_eq!(ack["type"], "ack", "{ack}");
    widget
        .send(serde_json::json!({"type": "email", "email": "ada@example.com"}))
        .await;
    let saved = widget.recv().await;
    assert_eq!(saved["type"], "email_saved", "{saved}");
    assert_eq!(
        app.count("SELECT count(*) FROM visitors WHERE email = 'ada@example.com'"),
        1
    );
}

#[tokio::test]
async fn invalid_hours_are_refused_with_what_is_wrong_and_nothing_is_stored() {
    let app = TestApp::spawn(&[]).await;
    let (admin, site) = admin_with_site(&app).await;
    let cases = [
        (
            hours_form(&admin.csrf, "Mars/Olympus", "09:00-17:00", "", "email"),
            "not a time zone",
        ),
        (
            hours_form(&admin.csrf, "UTC", "09:00-25:00", "", "email"),
            "Monday: ",
        ),
        (
            hours_form(&admin.csrf, "UTC", "nine to five", "", "email"),
            "Monday: ",
        ),
        (
            hours_form(&admin.csrf, "UTC", "09:00-17:00", &"a".repeat(501), "email"),
            "at most 500",
        ),
        (
            hours_form(&admin.csrf, "UTC", "09:00-17:00", "", "sometimes"),
            "out of hours",
        ),
    ];
    for (body, error) in cases {
        let answer = save_hours(&app, &admin, &site, &body).await;
        assert_eq!(answer.status, 422, "{error}");
        assert!(answer.body.contains(error), "{error}: {}", answer.body);
    }
    assert_eq!(app.count("SELECT count(*) FROM site_hours"), 0);
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE action = 'site.updated'"),
        0
    );
}

#[tokio::test]
async fn saving_and_removing_hours_is_audited_escaped_and_for_admins_only() {
    let app = TestApp::spawn(&[]).await;
    let (admin, site) = admin_with_site(&app).await;
    let away = "<script>alert(1)</script> back at 9";
    let body = hours_form(
        &admin.csrf,
        "Europe/Berlin",
        "08:00-12:00, 13:00-18:00",
        away,
        "email",
    );
    assert_eq!(save_hours(&app, &admin, &site, &body).await.status, 303);
    let page = hours_page(&app, &admin, &site).await;
    assert_eq!(page.status, 200);
    // No SMTP here: the page says the out-of-hours choice asks for and promises nothing, and
    // names what is missing, not the site's email setting nothing could turn on.
    assert!(
        page.body.contains("Email is not configured on this server")
            && page.body.contains("<code>PORCH_SMTP_URL</code>"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("Email is off for this site"));
    assert!(
        page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("<script>alert(1)"));
    assert!(
        page.body.contains("value=\"08:00-12:00, 13:00-18:00\""),
        "{}",
        page.body
    );
    assert!(page.body.contains("value=\"Europe/Berlin\""));
    let detail: String = app
        .db()
        .query_row(
            "SELECT detail FROM audit_events WHERE action = 'site.updated'",
            [],
            |r| r.get(0),
        )
        .expect("one audit row");
    assert!(detail.contains("\"hours\":\"saved\""), "{detail}");
    assert!(detail.contains("Europe/Berlin"), "{detail}");

    add_user(&app, "bo@example.com", "agent");
    let agent = signed_in_from(&app, &sign_in(&app, "bo@example.com", PASSWORD).await).await;
    let page = hours_page(&app, &agent, &site).await;
    assert_eq!(page.status, 403);
    let refused = hours_form(&agent.csrf, "UTC", "", "", "accept");
    assert_eq!(save_hours(&app, &agent, &site, &refused).await.status, 403);
    let remove = format!("/sites/{site}/hours/remove");
    let agent_remove = form(&[("csrf", &agent.csrf)]);
    let answer = send(&app, "POST", &remove, &agent.cookie, Some(&agent_remove)).await;
    assert_eq!(answer.status, 403);
    assert_eq!(app.count("SELECT count(*) FROM site_hours"), 1);
    let no_csrf = hours_form("wrong", "UTC", "", "", "accept");
    assert_eq!(save_hours(&app, &admin, &site, &no_csrf).await.status, 403);

    let admin_remove = form(&[("csrf", &admin.csrf)]);
    let answer = send(&app, "POST", &remove, &admin.cookie, Some(&admin_remove)).await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    assert_eq!(app.count("SELECT count(*) FROM site_hours"), 0);
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE action = 'site.updated' AND detail LIKE '%removed%'"),
        1
    );
    assert_eq!(welcome_site(&app, &site).await["open"], true);
}

/// Saves the site's pre-chat form on its page: name and question required, email optional.
pub(crate) async fn save_prechat(app: &TestApp, admin: &Browser, site: &str) {
    let body = form(&[
        ("csrf", &admin.csrf),
        ("name_field", "required"),
        ("email_field", "optional"),
        ("question", "Order <number>?"),
        ("question_field", "required"),
    ]);
    let path = format!("/sites/{site}/prechat");
    let answer = send(app, "POST", &path, &admin.cookie, Some(&body)).await;
    assert_eq!(answer.status, 303, "{}", answer.body);
}

fn message_with(client_id: &str, body: &str, prechat: &Value) -> Value {
    serde_json::json!({"type": "message", "client_id": client_id, "body": body, "prechat": prechat})
}

#[tokio::test]
async fn prechat_required_fields_are_enforced_over_the_websocket() {
    let app = TestApp::spawn(&[]).await;
    let (admin, site) = admin_with_site(&app).await;
    save_prechat(&app, &admin, &site).await;
    let (mut widget, welcome) = app.visitor(&site, None, 0).await;
    let form = &welcome["site"]["prechat"];
    assert_eq!(form["name"], "required", "{welcome}");
    assert_eq!(form["email"], "optional");
    assert_eq!(form["question"]["label"], "Order <number>?");
    assert_eq!(form["question"]["mode"], "required");

    let refused = widget.say("c1", "Hello").await;
    assert_eq!(refused["type"], "error", "{refused}");
    assert_eq!(refused["code"], "invalid_prechat");
    assert_eq!(refused["client_id"], "c1");
    // Without answers, the first required field is named, as with empty ones.
    assert_eq!(refused["message"], "Please enter your name.");
    let cases = [
        (
            serde_json::json!({"answer": "42"}),
            "Please enter your name.",
        ),
        (
            serde_json::json!({"name": "Ada"}),
            "Please answer the question.",
        ),
        (
            serde_json::json!({"name": "Ada", "answer": "42", "email": "not-an-address"}),
            "Please check the email address.",
        ),
        (
            serde_json::json!({"name": "a".repeat(101), "answer": "42"}),
            "Your name can have at most 100 characters.",
        ),
    ];
    for (answers, message) in cases {
        widget.send(message_with("c1", "Hello", &answers)).await;
        let refused = widget.recv().await;
        assert_eq!(refused["code"], "invalid_prechat", "{refused}");
        assert_eq!(refused["message"], message);
    }
    assert_eq!(app.count("SELECT count(*) FROM messages"), 0);
}

#[tokio::test]
async fn prechat_answers_are_stored_once_and_not_asked_again() {
    let app = TestApp::spawn(&[]).await;
    let (admin, site) = admin_with_site(&app).await;
    save_prechat(&app, &admin, &site).await;
    let (mut widget, welcome) = app.visitor(&site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    let answers =
        serde_json::json!({"name": "Ada <b>", "email": "ada@example.org", "answer": "A-42"});
    widget
        .send(message_with("c1", "Where is it?", &answers))
        .await;
    let ack = widget.recv().await;
    assert_eq!(ack["type"], "ack", "{ack}");
    // A resend of the same message with other answers changes nothing.
    let other = serde_json::json!({"name": "Eve", "email": "eve@example.org", "answer": "B-1"});
    widget
        .send(message_with("c1", "Where is it?", &other))
        .await;
    assert_eq!(widget.recv().await["id"], ack["id"]);
    drop(widget);
    let row: (String, String, String, String) = app
        .db()
        .query_row(
            "SELECT name, email, prechat_question, prechat_answer FROM visitors",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .expect("one visitor");
    assert_eq!(
        row,
        (
            "Ada <b>".to_owned(),
            "ada@example.org".to_owned(),
            "Order <number>?".to_owned(),
            "A-42".to_owned()
        )
    );

    // Back with the same token: no form, and messages go through without answers.
    let (mut again, welcome) = app.visitor(&site, Some(&token), 0).await;
    assert!(welcome["site"].get("prechat").is_none(), "{welcome}");
    assert_eq!(again.say("c2", "Still there?").await["type"], "ack");

    // The agent sees the answers on the conversation page, escaped.
    let id = app.count("SELECT id FROM conversations");
    let page = send(
        &app,
        "GET",
        &format!("/conversations/{id}"),
        &admin.cookie,
        None,
    )
    .await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Order &lt;number&gt;?"), "{}", page.body);
    assert!(page.body.contains("A-42"));
    assert!(page.body.contains("ada@example.org"));
    assert!(!page.body.contains("Ada <b>"));

    // The visitor's export holds them.
    let export = crate::privacy::cli(&app, &["export", "--email", "ada@example.org"]);
    let export: Value = serde_json::from_str(&export).expect("JSON");
    assert_eq!(export[0]["visitor"]["prechat_question"], "Order <number>?");
    assert_eq!(export[0]["visitor"]["prechat_answer"], "A-42");
    assert_eq!(export[0]["visitor"]["name"], "Ada <b>");
}

#[tokio::test]
async fn the_prechat_page_is_validated_audited_and_for_admins_only() {
    let app = TestApp::spawn(&[]).await;
    let (admin, site) = admin_with_site(&app).await;
    let path = format!("/sites/{site}/prechat");
    let no_label = form(&[
        ("csrf", &admin.csrf),
        ("name_field", "off"),
        ("email_field", "off"),
        ("question", " "),
        ("question_field", "required"),
    ]);
    let answer = send(&app, "POST", &path, &admin.cookie, Some(&no_label)).await;
    assert_eq!(answer.status, 422);
    assert!(
        answer.body.contains("Write the question"),
        "{}",
        answer.body
    );
    assert_eq!(app.count("SELECT count(*) FROM site_prechat"), 0);

    save_prechat(&app, &admin, &site).await;
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE action = 'site.updated' AND detail LIKE '%\"prechat\":\"saved\"%'"),
        1
    );
    add_user(&app, "bo@example.com", "agent");
    let agent = signed_in_from(&app, &sign_in(&app, "bo@example.com", PASSWORD).await).await;
    assert_eq!(
        send(&app, "GET", &path, &agent.cookie, None).await.status,
        403
    );
    let off = |csrf: &str| {
        form(&[
            ("csrf", csrf),
            ("name_field", "off"),
            ("email_field", "off"),
            ("question", ""),
            ("question_field", "off"),
        ])
    };
    let answer = send(&app, "POST", &path, &agent.cookie, Some(&off(&agent.csrf))).await;
    assert_eq!(answer.status, 403);
    assert_eq!(app.count("SELECT count(*) FROM site_prechat"), 1);

    // Every field off is no form, and the page says it was removed (it shows the suggestion).
    let answer = send(&app, "POST", &path, &admin.cookie, Some(&off(&admin.csrf))).await;
    assert_eq!(answer.status, 303);
    let next = answer.header("location").expect("a location").to_owned();
    assert!(next.ends_with("?notice=prechat-removed"), "{next}");
    assert_eq!(app.count("SELECT count(*) FROM site_prechat"), 0);
    let page = send(&app, "GET", &next, &admin.cookie, None).await;
    assert!(
        page.body
            .contains("Pre-chat form removed: the widget asks nothing."),
        "{}",
        page.body
    );
    let (_widget, welcome) = app.visitor(&site, None, 0).await;
    assert!(welcome["site"].get("prechat").is_none(), "{welcome}");
}

#[tokio::test]
async fn a_visitor_who_wrote_before_the_form_is_asked_once_with_the_next_message() {
    let app = TestApp::spawn(&[]).await;
    let (admin, site) = admin_with_site(&app).await;
    let (mut widget, welcome) = app.visitor(&site, None, 0).await;
    assert!(welcome["site"].get("prechat").is_none(), "{welcome}");
    let token = welcome["token"].as_str().expect("token").to_owned();
    assert_eq!(widget.say("c1", "Hi").await["type"], "ack");
    drop(widget);

    save_prechat(&app, &admin, &site).await;
    let (mut again, welcome) = app.visitor(&site, Some(&token), 0).await;
    assert_eq!(welcome["site"]["prechat"]["name"], "required", "{welcome}");
    assert_eq!(again.say("c2", "Me again").await["code"], "invalid_prechat");
    let answers = serde_json::json!({"name": "Ada", "answer": "A-1"});
    let ack = {
        again.send(message_with("c2", "Me again", &answers)).await;
        again.recv().await
    };
    assert_eq!(ack["type"], "ack", "{ack}");
    assert_eq!(
        app.count("SELECT count(*) FROM visitors WHERE prechat_answer = 'A-1'"),
        1
    );
}
