//! Query strings and names the API refuses: a parameter or field a call does not take is named
//! (cut short, three at most), never ignored; a page cursor that is no id is named as a bad
//! date is (docs/api.md, "Errors").

use crate::api_errors::error_of;
use crate::helpers::{Exchange, TestApp};

/// An audit page cursor that is no event id is refused as a bad date is, naming it, as the other
/// lists' cursors are (it was the bare 400 of a query string that does not deserialize).
#[tokio::test]
async fn an_audit_cursor_that_is_no_event_id_is_named() {
    let app = TestApp::spawn(&[]).await;
    let admin = app.add_user_token("Ada", "admin");
    for cursor in ["abc", "0", "2.5"] {
        let answer = app
            .http
            .get(&format!("/api/v1/audit?before={cursor}"))
            .bearer_auth(&admin)
            .answer()
            .await;
        let (status, code, message) = error_of(&answer);
        assert_eq!((status, code.as_str()), (422, "invalid"), "{message}");
        assert!(
            message.contains(&format!("“{cursor}” is not an event id")),
            "{message}"
        );
    }
    let (status, body) = app
        .api("GET", "/api/v1/audit?before=99", &admin, None)
        .await;
    assert_eq!(status, 200, "{body}");
}

/// A misspelled query parameter is refused, naming it, rather than ignored: ignoring it answered
/// a plausible page for a question that was not asked.
#[tokio::test]
async fn a_query_parameter_the_call_does_not_take_is_refused_by_name() {
    let app = TestApp::spawn(&[]).await;
    let admin = app.add_user_token("Ada", "admin");
    for (path, unknown) in [
        ("/api/v1/conversations?limt=1", "limt"),
        ("/api/v1/jobs?State=done", "State"),
        ("/api/v1/audit?actor=cli&page=2", "page"),
    ] {
        let answer = app.http.get(path).bearer_auth(&admin).answer().await;
        let (status, code, message) = error_of(&answer);
        assert_eq!((status, code.as_str()), (422, "invalid"), "{path}");
        assert!(
            message.contains(&format!("`{unknown}`")),
            "{path}: {message}"
        );
    }
    // A call that takes no query string refuses any, before it does anything.
    let site = app.add_site("Shop");
    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("c1", "Hello").await;
    let conversation = app.count("SELECT max(id) FROM conversations");
    let messages = format!("/api/v1/conversations/{conversation}/messages?limt=5");
    for (method, path) in [
        ("POST", messages.clone()),
        ("GET", messages.clone()),
        ("POST", "/api/v1/jobs/retry?x=1".to_owned()),
        ("GET", format!("/api/v1/sites/{site}/integrations?x=1&x=2")),
        ("PUT", format!("/api/v1/sites/{site}/retention?bogus")),
    ] {
        let mut request = app.http.request(method, &path).bearer_auth(&admin);
        if method != "GET" {
            request = request
                .header("content-type", "application/json")
                .body(r#"{"body": "x", "retention_days": 1}"#.to_owned());
        }
        let (status, code, message) = error_of(&request.answer().await);
        assert_eq!((status, code.as_str()), (422, "invalid"), "{method} {path}");
        let name = if path.contains("limt") {
            "`limt`"
        } else if path.contains("bogus") {
            "`bogus`"
        } else {
            "`x`"
        };
        assert!(
            message.ends_with(&format!(
                "parameter {name}: this endpoint takes none (docs/api.md)."
            )),
            "{path}: {message}"
        );
    }
    // Nothing was done: no reply stored, the retention left as it was.
    assert_eq!(app.count("SELECT count(*) FROM messages"), 1);
    assert_eq!(
        app.count("SELECT count(*) FROM sites WHERE retention_days IS NOT NULL"),
        0
    );
    // Before the token is looked at (docs/api.md, "Errors").
    let anonymous = app
        .http
        .request("POST", "/api/v1/jobs/1/retry?x=1")
        .answer()
        .await;
    assert_eq!(error_of(&anonymous).0, 422, "{}", anonymous.body);
    // Many names: the first three, and how many more.
    let many = app
        .http
        .get(&format!("/api/v1/sites/{site}/integrations?a&b&c&d&e&a"))
        .bearer_auth(&admin)
        .answer()
        .await;
    let (_, _, message) = error_of(&many);
    assert!(
        message.contains("parameters `a`, `b`, `c` and 2 more:"),
        "{message}"
    );
    let answer = app
        .http
        .get(&format!("/api/v1/sites/{site}/integrations?"))
        .bearer_auth(&admin)
        .answer()
        .await;
    assert_eq!(
        answer.status, 200,
        "an empty query string is none: {}",
        answer.body
    );
    for path in [
        "/api/v1/conversations?limit=1",
        "/api/v1/jobs?state=done",
        "/api/v1/audit?actor=cli&action=user&since=2026-01-01",
    ] {
        let answer = app.http.get(path).bearer_auth(&admin).answer().await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.body);
    }
}

/// Unknown names are echoed cut short, and at most three of them, in a body or a query string,
/// with or without a token: a 900 KB field name came back whole.
#[tokio::test]
async fn unknown_names_are_echoed_short() {
    let app = TestApp::spawn(&[]).await;
    let admin = app.add_user_token("Ada", "admin");
    let long = "k".repeat(8_000);
    let cut = format!("`{}…`", "k".repeat(64));
    let query = app
        .http
        .get(&format!("/api/v1/conversations?{long}=1"))
        .bearer_auth(&admin)
        .answer()
        .await;
    let anonymous = app
        .http
        .request("POST", &format!("/api/v1/jobs/retry?{long}"))
        .answer()
        .await;
    let keys: serde_json::Map<String, serde_json::Value> = (0..50)
        .map(|i| (format!("{long}{i}"), serde_json::Value::Null))
        .collect();
    let body = app
        .http
        .request("POST", "/api/v1/jobs/retry")
        .bearer_auth(&admin)
        .header("content-type", "application/json")
        .body(serde_json::Value::Object(keys).to_string())
        .answer()
        .await;
    for (what, answer) in [
        ("query", &query),
        ("anonymous", &anonymous),
        ("body", &body),
    ] {
        let (status, _, message) = error_of(answer);
        assert_eq!(status, 422, "{what}");
        assert!(message.contains(&cut), "{what}: {message}");
        assert!(message.len() < 400, "{what}: {} bytes", message.len());
    }
    assert!(error_of(&body).2.contains(" and 47 more:"));
}
