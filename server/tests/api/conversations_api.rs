//! `GET /api/v1/conversations` pages through every conversation by last activity: each exactly
//! once, newest first, with `next` as the cursor and clear refusals for a bad one.

use serde_json::Value;

use crate::helpers::{Exchange, TestApp};

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
