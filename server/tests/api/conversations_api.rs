//! `GET /api/v1/conversations` pages through every conversation by last activity: each exactly
//! once, newest first, with `next` as the cursor and clear refusals for a bad one. One
//! conversation is read, closed and reopened through the API as from the inbox. The sites their
//! `site` names are listed.

use serde_json::{Value, json};

use crate::helpers::{Exchange, TestApp, Widget};

/// The ids and `next` of one page.
async fn page(app: &TestApp, token: &str, query: &str) -> (Vec<i64>, Value) {
    let (status, body) = app
        .api("GET", &format!("/api/v1/conversations{query}"), token, None)
        .await;
    assert_eq!(status, 200, "{body}");
    let ids = body["conversations"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|c| c["id"].as_i64().expect("an id"))
        .collect();
    (ids, body["next"].clone())
}

#[tokio::test]
async fn conversations_are_paged_newest_first_each_once() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_user_token("ana", "agent");
    let site = app.add_site("Shop");
    for n in 0..5 {
        let (mut widget, _) = app.visitor(&site, None, 0).await;
        assert_eq!(widget.say(&format!("m{n}"), "hello").await["type"], "ack");
    }
    let newest_first: Vec<i64> = {
        let conn = app.db();
        // The list merges a page per status, so make them interleave: the 1st and 3rd are
        // closed, and the 2nd to 4th share one time. Newest first that is 5 (open), 1 (closed),
        // then the tie by id: 4 (open), 3 (closed), 2 (open), with a page boundary between 3
        // and 2. Pages taken per status and joined, or ties not ordered by id, fail below.
        conn.execute_batch(
            "UPDATE conversations SET status = 'closed', closed_at = last_message_at \
                 WHERE id IN (SELECT id FROM conversations ORDER BY id LIMIT 1) \
                    OR id IN (SELECT id FROM conversations ORDER BY id LIMIT 1 OFFSET 2); \
             UPDATE conversations SET last_message_at = 1000 \
                 WHERE id IN (SELECT id FROM conversations ORDER BY id LIMIT 3 OFFSET 1);",
        )
        .expect("close two and tie three");
        let mut stmt = conn
            .prepare("SELECT id FROM conversations ORDER BY last_message_at DESC, id DESC")
            .expect("prepare");
        stmt.query_map([], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    };
    assert_eq!(newest_first.len(), 5);

    let mut seen = Vec::new();
    let mut query = "?limit=2".to_owned();
    let mut pages = 0;
    loop {
        let (ids, next) = page(&app, &token, &query).await;
        pages += 1;
        seen.extend(ids);
        match next.as_str() {
            Some(cursor) => query = format!("?limit=2&before={cursor}"),
            None => break,
        }
        assert!(pages < 5, "paging must end");
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, newest_first, "every conversation once, newest first");

    // Without a limit: one page of everything (up to 200), and no next page.
    let (all, next) = page(&app, &token, "").await;
    assert_eq!(all, newest_first);
    assert!(next.is_null(), "{next}");
}

#[tokio::test]
async fn a_bad_cursor_or_limit_is_refused_with_a_code() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_user_token("ana", "agent");
    for query in [
        "?before=yesterday",
        "?before=12",
        "?before=-1.-1",
        "?before=1764470100456.-7",
        "?limit=0",
        "?limit=201",
        "?limit=ten",
    ] {
        let (status, body) = app
            .api(
                "GET",
                &format!("/api/v1/conversations{query}"),
                &token,
                None,
            )
            .await;
        assert_eq!(status, 422, "{query}: {body}");
        assert_eq!(body["error"]["code"], "invalid", "{query}: {body}");
    }
}

/// Two credentials are none: the API does not pick one (as with two `Idempotency-Key`s).
#[tokio::test]
async fn two_authorization_headers_are_refused_even_when_one_is_good() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_user_token("ana", "agent");
    let answer = app
        .http
        .get("/api/v1/conversations")
        .header("authorization", format!("Bearer {token}"))
        .header("authorization", "Bearer x")
        .answer()
        .await;
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert_eq!(answer.json()["error"]["code"], "bad_request");
}

/// The conversation of a visitor's first message: its id, once the message is acked.
async fn first_conversation(app: &TestApp, site: &str, token: &str) -> (Widget, i64) {
    let (mut widget, _) = app.visitor(site, None, 0).await;
    assert_eq!(widget.say("m1", "hello").await["type"], "ack");
    let (_, body) = app
        .api("GET", "/api/v1/conversations?status=open", token, None)
        .await;
    let id = body["conversations"][0]["id"].as_i64().expect("an id");
    (widget, id)
}

/// `POST /api/v1/conversations/{id}/{action}` (`close`, `reopen`) with no body.
async fn act(app: &TestApp, token: &str, id: i64, action: &str) -> (u16, Value) {
    app.api(
        "POST",
        &format!("/api/v1/conversations/{id}/{action}"),
        token,
        None,
    )
    .await
}

/// A refused reopen: `409 conflict`, naming conversation `instead` as where to answer.
fn assert_refused_for(answer: &(u16, Value), instead: i64) {
    let (status, body) = answer;
    assert_eq!(*status, 409, "{body}");
    assert_eq!(body["error"]["code"], "conflict");
    let message = body["error"]["message"].as_str().expect("a message");
    assert!(message.contains(&format!("#{instead}")), "{body}");
}

/// The next frame of `kind`, skipping the others (`read`, `typing`, …).
async fn frame_of(widget: &mut Widget, kind: &str) -> Value {
    loop {
        let frame = widget.recv().await;
        if frame["type"] == kind {
            return frame;
        }
    }
}

#[tokio::test]
async fn one_conversation_is_read_closed_and_reopened_through_the_api() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_user_token("ana", "agent");
    let site = app.add_site("Shop");
    let (mut widget, id) = first_conversation(&app, &site, &token).await;
    let path = format!("/api/v1/conversations/{id}");

    let (status, open) = app.api("GET", &path, &token, None).await;
    assert_eq!(status, 200, "{open}");
    assert_eq!(open["id"], id);
    assert_eq!(open["site"], site);
    assert_eq!(open["status"], "open");
    assert!(
        open["closed_at"].is_null() && open["assignee"].is_null(),
        "{open}"
    );
    // A reply from the inbox would take it; through the API nobody has it (docs/api.md).
    let (status, _) = app
        .api(
            "POST",
            &format!("{path}/messages"),
            &token,
            Some(json!({"body": "Hi"})),
        )
        .await;
    assert_eq!(status, 201);

    // Closing tells the visitor's widget, is listed as closed, and again changes nothing.
    let (status, closed) = act(&app, &token, id, "close").await;
    assert_eq!(status, 200, "{closed}");
    assert_eq!(closed["status"], "closed");
    assert!(
        closed["closed_at"].as_i64().expect("closed_at")
            >= open["created_at"].as_i64().expect("created_at")
    );
    assert_eq!(frame_of(&mut widget, "closed").await["conversation_id"], id);
    let (status, again) = act(&app, &token, id, "close").await;
    assert_eq!(
        (status, &again),
        (200, &closed),
        "a second close is a no-op"
    );
    let (_, listed) = app
        .api("GET", "/api/v1/conversations?status=closed", &token, None)
        .await;
    assert_eq!(listed["conversations"], json!([closed]));
    let (_, none_open) = app
        .api("GET", "/api/v1/conversations?status=open", &token, None)
        .await;
    assert_eq!(none_open["conversations"], json!([]));
    let lines = app.count(&format!(
        "SELECT count(*) FROM messages WHERE conversation_id = {id} AND body = 'ana closed this conversation'"
    ));
    assert_eq!(lines, 1, "one status line, as from the inbox");

    let (status, reopened) = act(&app, &token, id, "reopen").await;
    assert_eq!(status, 200, "{reopened}");
    assert_eq!(reopened["status"], "open");
    assert!(reopened["closed_at"].is_null(), "{reopened}");
    assert_eq!(
        frame_of(&mut widget, "reopened").await["conversation_id"],
        id
    );
}

#[tokio::test]
async fn a_conversation_the_visitor_has_moved_on_from_is_not_reopened() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_user_token("ana", "agent");
    let site = app.add_site("Shop");
    let (mut widget, first) = first_conversation(&app, &site, &token).await;
    let (status, _) = act(&app, &token, first, "close").await;
    assert_eq!(status, 200);
    frame_of(&mut widget, "closed").await;
    assert_eq!(widget.say("m2", "one more thing").await["type"], "ack");
    let (_, open) = app
        .api("GET", "/api/v1/conversations?status=open", &token, None)
        .await;
    let second = open["conversations"][0]["id"]
        .as_i64()
        .expect("a new conversation");
    assert_ne!(second, first);

    assert_refused_for(&act(&app, &token, first, "reopen").await, second);
    let (_, still) = app
        .api(
            "GET",
            &format!("/api/v1/conversations/{first}"),
            &token,
            None,
        )
        .await;
    assert_eq!(still["status"], "closed");

    // With the newer one closed too, the old one still stays closed: only the newest reopens
    // (else the widget would show the newest closed while the next message joined the old one).
    let (status, _) = act(&app, &token, second, "close").await;
    assert_eq!(status, 200);
    assert_refused_for(&act(&app, &token, first, "reopen").await, second);
    let (status, newest) = act(&app, &token, second, "reopen").await;
    assert_eq!(
        (status, newest["status"].as_str()),
        (200, Some("open")),
        "{newest}"
    );
}

/// Disabling an agent gives their open conversations back to the team; a closed one of theirs
/// reopened later comes back to the team too, not to the disabled agent.
#[tokio::test]
async fn a_conversation_reopened_after_its_agent_was_disabled_is_nobodys() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_user_token("ana", "admin");
    let site = app.add_site("Shop");
    let (_widget, id) = first_conversation(&app, &site, &token).await;
    let bo = app.add_user_token("bo", "agent");
    let (status, _) = act(&app, &bo, id, "close").await;
    assert_eq!(status, 200);
    {
        let db = app.db();
        db.execute(
            "UPDATE conversations SET assignee_id = (SELECT id FROM users WHERE name = 'bo') WHERE id = ?1",
            [id],
        )
        .expect("bo had it");
        db.execute("UPDATE users SET is_disabled = 1 WHERE name = 'bo'", [])
            .expect("bo is disabled");
    }
    let (_, closed) = app
        .api("GET", &format!("/api/v1/conversations/{id}"), &token, None)
        .await;
    assert_eq!(
        closed["assignee"]["name"], "bo",
        "a closed one keeps who had it"
    );
    let (status, reopened) = act(&app, &token, id, "reopen").await;
    assert_eq!(status, 200, "{reopened}");
    assert!(reopened["assignee"].is_null(), "{reopened}");
}

#[tokio::test]
async fn unknown_conversations_statuses_and_bodies_are_refused() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_user_token("ana", "agent");
    let site = app.add_site("Shop");
    let (_widget, id) = first_conversation(&app, &site, &token).await;
    for (method, path, body, status, code) in [
        (
            "GET",
            "/api/v1/conversations/999".to_owned(),
            None,
            404,
            "not_found",
        ),
        (
            "POST",
            "/api/v1/conversations/999/close".to_owned(),
            None,
            404,
            "not_found",
        ),
        (
            "POST",
            "/api/v1/conversations/999/reopen".to_owned(),
            None,
            404,
            "not_found",
        ),
        (
            "GET",
            "/api/v1/conversations?status=pending".to_owned(),
            None,
            422,
            "invalid",
        ),
        (
            "POST",
            format!("/api/v1/conversations/{id}/close"),
            Some(json!({"status": "closed"})),
            422,
            "invalid",
        ),
        (
            "POST",
            format!("/api/v1/conversations/{id}/close?now=1"),
            None,
            422,
            "invalid",
        ),
        (
            "GET",
            format!("/api/v1/conversations/{id}?status=open"),
            None,
            422,
            "invalid",
        ),
    ] {
        let (got, answer) = app.api(method, &path, &token, body).await;
        assert_eq!(
            (got, answer["error"]["code"].as_str()),
            (status, Some(code)),
            "{method} {path}: {answer}"
        );
    }
    let (_, still) = app
        .api("GET", &format!("/api/v1/conversations/{id}"), &token, None)
        .await;
    assert_eq!(still["status"], "open", "nothing refused changed anything");
}

/// The sites a conversation's `site` names: the list and one site, for agents as for admins,
/// never a secret or a limit; an unknown key is 404.
#[tokio::test]
async fn sites_are_listed_and_read_by_key() {
    let app = TestApp::spawn(&[]).await;
    let agent = app.add_user_token("ana", "agent");
    let shop = app.add_site("Shop");
    let blog = app.add_site("Blog");

    let (status, body) = app.api("GET", "/api/v1/sites", &agent, None).await;
    assert_eq!(status, 200, "{body}");
    let sites = body["sites"].as_array().expect("a list");
    let keys: Vec<&str> = sites
        .iter()
        .map(|s| s["key"].as_str().expect("a key"))
        .collect();
    assert_eq!(keys, [shop.as_str(), blog.as_str()], "oldest first");
    assert_eq!(sites[0]["name"], "Shop");
    assert_eq!(sites[0]["origins"], json!([crate::helpers::ORIGIN]));
    assert_eq!(sites[0]["created_at"], 0, "as the test stored it");
    let mut fields: Vec<&str> = sites[0]
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(fields, ["created_at", "key", "name", "origins"]);

    let (status, one) = app
        .api("GET", &format!("/api/v1/sites/{blog}"), &agent, None)
        .await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one, sites[1]);

    let (status, missing) = app.api("GET", "/api/v1/sites/s_nope", &agent, None).await;
    assert_eq!(status, 404, "{missing}");
    assert_eq!(missing["error"]["code"], "not_found");
    let (status, refused) = app.api("GET", "/api/v1/sites?limit=1", &agent, None).await;
    assert_eq!(status, 422, "{refused}");
}

/// Last activity, as docs/api.md defines it: a reply moves a conversation to the front of the
/// list; closing and reopening one does not.
#[tokio::test]
async fn a_reply_moves_a_conversation_to_the_front_and_a_close_or_reopen_does_not() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_user_token("ana", "agent");
    let site = app.add_site("Shop");
    let mut widgets = Vec::new();
    for n in 0..2 {
        let (mut widget, _) = app.visitor(&site, None, 0).await;
        assert_eq!(widget.say(&format!("m{n}"), "hello").await["type"], "ack");
        widgets.push(widget);
    }
    // Long ago, the second the newer: nothing done below can tie with them.
    app.db()
        .execute("UPDATE conversations SET last_message_at = 1000 + id", [])
        .expect("age them");
    let (older, newer) = (1, 2);
    assert_eq!(page(&app, &token, "").await.0, vec![newer, older]);
    let path = format!("/api/v1/conversations/{older}/messages");
    let (status, _) = app
        .api("POST", &path, &token, Some(json!({"body": "Hi!"})))
        .await;
    assert_eq!(status, 201);
    assert_eq!(page(&app, &token, "").await.0, vec![older, newer]);
    for action in ["close", "reopen"] {
        assert_eq!(act(&app, &token, newer, action).await.0, 200, "{action}");
        assert_eq!(
            page(&app, &token, "").await.0,
            vec![older, newer],
            "{action}"
        );
    }
}
