//! `GET /api/v1/conversations` narrowed by snooze, assignee and site (each alone and together),
//! as an integrator lists "my chats", "nobody's", "snoozed" or one site's; values that do not
//! parse are refused, and a site or user that does not exist lists none.

use serde_json::json;

use crate::helpers::TestApp;

/// The ids `query` lists, in order.
async fn listed(app: &TestApp, token: &str, query: &str) -> Vec<i64> {
    let (status, body) = app
        .api(
            "GET",
            &format!("/api/v1/conversations?{query}"),
            token,
            None,
        )
        .await;
    assert_eq!(status, 200, "{query}: {body}");
    body["conversations"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|c| c["id"].as_i64().expect("an id"))
        .collect()
}

/// A new visitor's conversation on `site`: its id, once the first message is acked.
async fn conversation_on(app: &TestApp, site: &str, token: &str) -> i64 {
    let (mut widget, _) = app.visitor(site, None, 0).await;
    assert_eq!(widget.say("m1", "hello").await["type"], "ack");
    let (_, body) = app
        .api("GET", "/api/v1/conversations?limit=1", token, None)
        .await;
    body["conversations"][0]["id"].as_i64().expect("an id")
}

async fn post(app: &TestApp, token: &str, path: &str, body: serde_json::Value) {
    let (status, answer) = app.api("POST", path, token, Some(body)).await;
    assert_eq!(status, 200, "{path}: {answer}");
}

#[tokio::test]
async fn conversations_are_listed_by_snooze_assignee_and_site() {
    let app = TestApp::spawn(&[]).await;
    let ana = app.add_user_token("ana", "agent");
    let bo = app.add_user_token("bo", "agent");
    let bo_id: i64 = app
        .db()
        .query_row("SELECT id FROM users WHERE name = 'bo'", [], |r| r.get(0))
        .expect("bo's id");
    let (shop, blog) = (app.add_site("Shop"), app.add_site("Blog"));
    // Newest first: mine (shop, Ana's, snoozed), bos (blog, Bo's), nobody (shop, closed).
    let nobody = conversation_on(&app, &shop, &ana).await;
    let bos = conversation_on(&app, &blog, &ana).await;
    let mine = conversation_on(&app, &shop, &ana).await;
    let path = |id: i64, action: &str| format!("/api/v1/conversations/{id}/{action}");
    post(&app, &ana, &path(nobody, "close"), json!({})).await;
    post(&app, &ana, &path(bos, "assign"), json!({"assignee": bo_id})).await;
    let ana_id: i64 = app
        .db()
        .query_row("SELECT id FROM users WHERE name = 'ana'", [], |r| r.get(0))
        .expect("ana's id");
    post(
        &app,
        &ana,
        &path(mine, "assign"),
        json!({"assignee": ana_id}),
    )
    .await;
    let tomorrow = porch::clock::now_ms() + 86_400_000;
    post(
        &app,
        &ana,
        &path(mine, "snooze"),
        json!({"until": tomorrow}),
    )
    .await;

    for (query, want) in [
        ("", vec![mine, bos, nobody]),
        ("snoozed=true", vec![mine]),
        ("snoozed=false", vec![bos, nobody]),
        ("status=open&snoozed=false", vec![bos]),
        ("assignee=me", vec![mine]),
        (&format!("assignee={bo_id}") as &str, vec![bos]),
        ("assignee=unassigned", vec![nobody]),
        (&format!("site={shop}"), vec![mine, nobody]),
        (&format!("site={blog}&assignee=me"), vec![]),
        (
            &format!("site={shop}&assignee=me&snoozed=true&status=open"),
            vec![mine],
        ),
        // A site or user that does not exist has no conversations.
        ("site=s_0000000000000000", vec![]),
        ("assignee=999999", vec![]),
    ] {
        assert_eq!(listed(&app, &ana, query).await, want, "{query}");
    }
    // Bo's `me` is Bo.
    assert_eq!(listed(&app, &bo, "assignee=me").await, vec![bos]);
    // Paging keeps the filters: one a page, each once.
    let (_, first) = app
        .api(
            "GET",
            &format!("/api/v1/conversations?site={shop}&limit=1"),
            &ana,
            None,
        )
        .await;
    let next = first["next"].as_str().expect("a next page");
    assert_eq!(
        listed(&app, &ana, &format!("site={shop}&limit=1&before={next}")).await,
        vec![nobody]
    );

    for query in [
        "snoozed=yes",
        "snoozed=",
        "assignee=someone",
        "assignee=0",
        "assignee=+2",
        "assignee=-1",
    ] {
        let (status, body) = app
            .api("GET", &format!("/api/v1/conversations?{query}"), &ana, None)
            .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (422, Some("invalid")),
            "{query}: {body}"
        );
    }
}
