//! Tags (docs/admin.md, "Tags"): agents tag conversations from the side panel or the API, each
//! change a status line; the inbox list and the API list filter by a tag, live; a tag exists
//! while a conversation has it.

use serde_json::json;

use crate::helpers::TestApp;
use crate::inbox::{Browser, form, send, setup_admin, signed_in_from};
use crate::live_inbox::LiveInbox;

/// Posts the side panel's tags form; the answer's status and `Location`.
async fn tag(app: &TestApp, who: &Browser, id: i64, field: (&str, &str)) -> (u16, String) {
    let body = form(&[("csrf", &who.csrf), field]);
    let path = format!("/conversations/{id}/tags");
    let answer = send(app, "POST", &path, &who.cookie, Some(&body)).await;
    let location = answer.header("location").unwrap_or("").to_owned();
    (answer.status, location)
}

/// The ids of the rows of an inbox page, in order.
fn rows(page: &str) -> Vec<i64> {
    page.split("id=\"conversation-")
        .skip(1)
        .filter_map(|rest| rest.split('"').next()?.parse().ok())
        .collect()
}

/// An admin signed in and two conversations of two visitors (oldest first).
async fn two_conversations() -> (TestApp, Browser, i64, i64) {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    for n in 0..2 {
        let (mut widget, _) = app.visitor(&site, None, 0).await;
        widget.say(&format!("c{n}"), "Hello").await;
    }
    let ids: Vec<i64> = app.column("SELECT id FROM conversations ORDER BY id");
    (app, admin, ids[0], ids[1])
}

/// The live list of one tag's open conversations.
fn tag_list(tag: &str) -> String {
    format!("/inbox/events?status=open&assignee=anyone&tag={tag}")
}

#[tokio::test]
async fn tags_from_the_side_panel_filter_the_inbox_live() {
    let (app, admin, one, two) = two_conversations().await;
    let (status, location) = tag(&app, &admin, one, ("add", "Refund,  VIP plan")).await;
    assert_eq!(status, 303);
    assert_eq!(location, format!("/conversations/{one}?notice=tagged"));
    let page = send(&app, "GET", &location, &admin.cookie, None).await;
    for said in [
        "Ana tagged this conversation refund and vip plan",
        "Tags saved.",
        "href=\"/inbox?tag=vip+plan\"",
        "aria-label=\"Remove the tag refund\"",
    ] {
        assert!(page.body.contains(said), "{said}: {}", page.body);
    }
    // The other conversation's page suggests the team's tags.
    let other = send(
        &app,
        "GET",
        &format!("/conversations/{two}"),
        &admin.cookie,
        None,
    )
    .await;
    assert!(
        other.body.contains("<option value=\"refund\">"),
        "{}",
        other.body
    );

    // A list of one tag: the filter's choice, the count line, and the rows' badges.
    let list = send(&app, "GET", "/inbox?tag=refund", &admin.cookie, None).await;
    assert_eq!(rows(&list.body), [one]);
    assert!(
        list.body.contains("1 open conversation tagged refund"),
        "{}",
        list.body
    );
    assert!(
        list.body.contains("<option value=\"refund\" selected"),
        "{}",
        list.body
    );
    assert!(
        list.body.contains("class=\"badge tag\">vip plan<"),
        "{}",
        list.body
    );

    // Live: tagging the other conversation brings its row into the tag's list; untagging the
    // first takes its row out.
    let mut live = LiveInbox::open_at(&app, &admin, &tag_list("refund")).await;
    tag(&app, &admin, two, ("add", "refund")).await;
    live.item_with(&format!("id=\"conversation-{two}\"")).await;
    let (status, _) = tag(&app, &admin, one, ("remove", "refund")).await;
    assert_eq!(status, 303);
    live.event_with("event: removed\n", &format!("data: {one}\n"))
        .await;
    let page = send(
        &app,
        "GET",
        &format!("/conversations/{one}"),
        &admin.cookie,
        None,
    )
    .await;
    assert!(
        page.body.contains("Ana removed the tag refund"),
        "{}",
        page.body
    );
}

#[tokio::test]
async fn a_tag_is_refused_with_a_reason_and_goes_with_its_last_use() {
    let (app, admin, one, two) = two_conversations().await;
    for (field, why) in [
        (("add", "<b>"), "A tag has letters, digits, spaces"),
        (("add", " , "), "Type a tag to add."),
        (("add", &"x".repeat(41)), "at most 40 characters"),
    ] {
        let (status, _) = tag(&app, &admin, one, field).await;
        assert_eq!(status, 422, "{field:?}");
        let body = form(&[("csrf", &admin.csrf), field]);
        let path = format!("/conversations/{one}/tags");
        let answer = send(&app, "POST", &path, &admin.cookie, Some(&body)).await;
        assert!(answer.body.contains(why), "{why}: {}", answer.body);
    }
    // The refused form comes back on the conversation's own page: the reason at the top, what was
    // typed kept in the field, which is marked and takes the focus (the reply box does not).
    let body = form(&[("csrf", &admin.csrf), ("add", "<b>x</b>, ok")]);
    let path = format!("/conversations/{one}/tags");
    let answer = send(&app, "POST", &path, &admin.cookie, Some(&body)).await;
    assert_eq!(answer.status, 422);
    let page = &answer.body;
    for said in [
        "id=\"form-error\" class=\"notice notice-error\">A tag has letters",
        "value=\"&lt;b&gt;x&lt;/b&gt;, ok\" aria-invalid=\"true\" aria-describedby=\"form-error tag-add-hint\" autofocus",
        &format!("action=\"/conversations/{one}/reply\""),
    ] {
        assert!(page.contains(said), "{said}: {page}");
    }
    assert_eq!(page.matches("autofocus").count(), 1, "{page}");
    // Adding a tag it has changes nothing, and says so.
    tag(&app, &admin, one, ("add", "billing")).await;
    let (_, location) = tag(&app, &admin, one, ("add", "Billing")).await;
    assert!(location.ends_with("?notice=tags_unchanged"), "{location}");
    let (_, location) = tag(&app, &admin, one, ("remove", "never had")).await;
    assert!(location.ends_with("?notice=tags_unchanged"), "{location}");
    assert_eq!(
        app.count("SELECT count(*) FROM messages WHERE author = 'system'"),
        1
    );
    // Twenty at most.
    let many: Vec<String> = (0..20).map(|n| format!("t{n}")).collect();
    let (status, _) = tag(&app, &admin, two, ("add", &many.join(","))).await;
    assert_eq!(status, 303);
    let (status, _) = tag(&app, &admin, two, ("add", "one more")).await;
    assert_eq!(status, 422);
    // Removing its last use deletes the tag: no longer a choice of the filter.
    tag(&app, &admin, one, ("remove", "billing")).await;
    assert_eq!(
        app.count("SELECT count(*) FROM tags WHERE name = 'billing'"),
        0
    );
    let list = send(&app, "GET", "/inbox", &admin.cookie, None).await;
    assert!(!list.body.contains("value=\"billing\""), "{}", list.body);
    // A tag nobody has lists nothing (a page left open on it says so); a name that is not a
    // tag is ignored, as an unknown site is.
    let list = send(&app, "GET", "/inbox?tag=Billing", &admin.cookie, None).await;
    assert_eq!(rows(&list.body), Vec::<i64>::new());
    assert!(
        list.body.contains("0 open conversations tagged billing."),
        "{}",
        list.body
    );
    let list = send(&app, "GET", "/inbox?tag=%3Cb%3E", &admin.cookie, None).await;
    assert_eq!(rows(&list.body), [two, one]);
}

#[tokio::test]
async fn the_api_tags_and_lists_by_tag() {
    let (app, _, one, two) = two_conversations().await;
    let token = app.add_user_token("Cy", "agent");
    let path = |id: i64| format!("/api/v1/conversations/{id}/tags");
    let (status, body) = app
        .api(
            "POST",
            &path(one),
            &token,
            Some(json!({"add": ["VIP", "refund"]})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tags"], json!(["refund", "vip"]));
    let (_, body) = app
        .api("POST", &path(two), &token, Some(json!({"add": ["vip"]})))
        .await;
    assert_eq!(body["tags"], json!(["vip"]));
    let (status, body) = app
        .api(
            "POST",
            &path(one),
            &token,
            Some(json!({"add": ["b2b"], "remove": ["refund", "never had"]})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["tags"], json!(["b2b", "vip"]));
    let lines: Vec<String> = app.column(&format!(
        "SELECT body FROM messages WHERE conversation_id = {one} AND author = 'system' ORDER BY id"
    ));
    assert_eq!(
        lines,
        [
            "Cy tagged this conversation vip and refund",
            "Cy tagged this conversation b2b and removed the tag refund"
        ]
    );

    let list = |query: &'static str| {
        let (app, token) = (&app, &token);
        async move {
            let (status, body) = app
                .api("GET", &format!("/api/v1/conversations{query}"), token, None)
                .await;
            assert_eq!(status, 200, "{body}");
            let ids: Vec<i64> = body["conversations"]
                .as_array()
                .expect("a list")
                .iter()
                .map(|c| c["id"].as_i64().expect("id"))
                .collect();
            ids
        }
    };
    assert_eq!(list("?tag=vip").await, [two, one]);
    assert_eq!(list("?tag=B2B&status=open").await, [one]);
    assert_eq!(list("?tag=b2b&status=closed").await, Vec::<i64>::new());
    assert_eq!(list("?tag=nobody%20has%20it").await, Vec::<i64>::new());

    let too_many: Vec<String> = (0..21).map(|n| format!("t{n}")).collect();
    // The list is too long, whatever the conversation has: not "remove one first".
    let (status, body) = app
        .api("POST", &path(one), &token, Some(json!({ "add": too_many })))
        .await;
    assert_eq!(
        (status, body["error"]["message"].as_str()),
        (422, Some("add: At most 20 different tags in one list."))
    );
    for refused in [
        json!({ "add": too_many }),
        json!({"add": []}),
        json!({}),
        json!({"add": ["<x>"]}),
        json!({"add": "vip"}),
        json!({"add": ["ok"], "colour": "red"}),
    ] {
        let (status, body) = app
            .api("POST", &path(one), &token, Some(refused.clone()))
            .await;
        assert_eq!(status, 422, "{refused}: {body}");
    }
    let (status, _) = app
        .api("GET", "/api/v1/conversations?tag=%3Cx%3E", &token, None)
        .await;
    assert_eq!(status, 422);
    let (status, _) = app
        .api("POST", &path(99_999), &token, Some(json!({"add": ["vip"]})))
        .await;
    assert_eq!(status, 404);

    // Two at once adding the same tag: it is added once, with one line.
    let body = || Some(json!({"add": ["same time"]}));
    let on_two = path(two);
    let (first, second) = tokio::join!(
        app.api("POST", &on_two, &token, body()),
        app.api("POST", &on_two, &token, body())
    );
    assert_eq!((first.0, second.0), (200, 200));
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM messages WHERE conversation_id = {two} AND body LIKE '%same time%'"
        )),
        1
    );
}

/// A list opened for a tag no conversation has yet (made, say, from a link a colleague sent)
/// shows the first conversation given the tag, live: the stream matches the tag by name, not by
/// an id that did not exist when it started.
#[tokio::test]
async fn a_list_of_a_tag_nobody_has_yet_shows_the_first_conversation_tagged_live() {
    let (app, admin, one, _) = two_conversations().await;
    let mut live = LiveInbox::open_at(&app, &admin, &tag_list("urgent")).await;
    let (status, _) = tag(&app, &admin, one, ("add", "Urgent")).await;
    assert_eq!(status, 303);
    live.item_with(&format!("id=\"conversation-{one}\"")).await;
}
