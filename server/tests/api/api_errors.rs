//! Every error under `/api/` is `{"error": {"code", "message"}}` (docs/api.md, "Errors"), also
//! the refusals the framework and its layers make by themselves: a body that is not JSON or not
//! of the expected shape, a missing `Content-Type`, a path id that is not a number, a wrong
//! method, an oversize body, a request that takes too long. A page's form address opened in
//! the browser gets an HTML page.

use std::io::Read;
use std::time::Duration;

use serde_json::Value;
use tokio::io::AsyncWriteExt;

use crate::helpers::{Answer, Exchange, TestApp};
use crate::inbox::{add_user, send, setup_admin, signed_in_from};

/// The status, code and message of an answer that must be the API's error JSON.
pub(crate) fn error_of(answer: &Answer) -> (u16, String, String) {
    assert_eq!(
        answer.header("content-type"),
        Some("application/json"),
        "{}: {}",
        answer.status,
        answer.body
    );
    let body: Value = serde_json::from_str(&answer.body).expect("JSON");
    let text = |key: &str| body["error"][key].as_str().expect("a text").to_owned();
    (answer.status, text("code"), text("message"))
}

async fn post(app: &TestApp, token: &str, path: &str, kind: Option<&str>, body: &str) -> Answer {
    let mut request = app.http.request("POST", path).bearer_auth(token);
    if let Some(kind) = kind {
        request = request.header("content-type", kind);
    }
    request.body(body.to_owned()).answer().await
}

#[tokio::test]
async fn the_frameworks_own_refusals_are_the_apis_error_json() {
    let app = TestApp::spawn(&["--body-limit", "1024"]).await;
    let token = app.add_agent_token("Ana");
    let messages = "/api/v1/conversations/1/messages";
    let json = Some("application/json");

    let (status, code, message) = error_of(&post(&app, &token, messages, json, "{}").await);
    assert_eq!((status, code.as_str()), (422, "invalid"));
    assert!(message.contains("missing field `body`"), "{message}");
    let wrong_type = post(&app, &token, messages, json, r#"{"body": 5}"#).await;
    assert_eq!(error_of(&wrong_type).1, "invalid");
    // A field the endpoint does not take is named, not ignored (a typo must not pass silently).
    let typo = post(
        &app,
        &token,
        messages,
        json,
        r#"{"body": "hi", "bodyy": "x"}"#,
    )
    .await;
    let (status, code, message) = error_of(&typo);
    assert_eq!((status, code.as_str()), (422, "invalid"));
    assert!(message.contains("Unknown field `bodyy`"), "{message}");
    // Misspelled, a field is named as such, not as the field that is then missing.
    let (_, _, message) = error_of(&post(&app, &token, messages, json, r#"{"bdy": "x"}"#).await);
    assert!(message.contains("Unknown field `bdy`"), "{message}");
    // An array is not the object the endpoint takes, though serde would read it as the fields.
    for array in [r#"["hi"]"#, "[]", "\"hi\"", "null"] {
        let (status, code, message) = error_of(&post(&app, &token, messages, json, array).await);
        assert_eq!((status, code.as_str()), (422, "invalid"), "{array}");
        assert!(
            message.contains("must be a JSON object"),
            "{array}: {message}"
        );
    }

    // A NUL in the text is refused and said so; a body of only a zero width space is empty.
    let nul = post(&app, &token, messages, json, r#"{"body": "a\u0000b"}"#).await;
    let (status, code, message) = error_of(&nul);
    assert_eq!((status, code.as_str()), (422, "invalid"));
    assert!(message.contains("control character"), "{message}");
    let blank = post(&app, &token, messages, json, r#"{"body": "\u200b"}"#).await;
    assert_eq!(error_of(&blank).2, "The message is empty.");

    let (status, code, _) = error_of(&post(&app, &token, messages, json, "{not json").await);
    assert_eq!((status, code.as_str()), (400, "bad_request"));

    let untyped = post(&app, &token, messages, None, r#"{"body": "hi"}"#).await;
    let (status, code, message) = error_of(&untyped);
    assert_eq!((status, code.as_str()), (415, "unsupported_media_type"));
    assert!(message.contains("application/json"), "{message}");

    let path_id = app
        .http
        .get("/api/v1/conversations/abc/messages")
        .bearer_auth(&token)
        .answer()
        .await;
    let (status, _, message) = error_of(&path_id);
    assert_eq!(status, 400);
    assert_eq!(
        message,
        "The URL has `abc` where a number belongs (docs/api.md)."
    );
    let admin = app.add_user_token("Ada", "admin");
    let query = app
        .http
        .get("/api/v1/audit?actor=a&actor=b")
        .bearer_auth(&admin)
        .answer()
        .await;
    let (_, code, message) = error_of(&query);
    assert_eq!(code, "bad_request");
    assert!(
        message.starts_with("The query string cannot be read: ")
            && message.ends_with("(docs/api.md)."),
        "{message}"
    );
    // A path of two numbers names the value, not the framework's index.
    let replay = app
        .http
        .request("POST", "/api/v1/integrations/1/deliveries/abc/replay")
        .bearer_auth(&admin)
        .answer()
        .await;
    assert_eq!(
        error_of(&replay).2,
        "The URL has `abc` where a number belongs (docs/api.md)."
    );

    let method = app
        .http
        .request("DELETE", "/api/v1/conversations")
        .bearer_auth(&token)
        .answer()
        .await;
    let (status, code, _) = error_of(&method);
    assert_eq!((status, code.as_str()), (405, "method_not_allowed"));
    assert_eq!(method.header("allow"), Some("GET,HEAD"));

    let big = format!("{{\"body\": \"{}\"}}", "x".repeat(4096));
    let too_large = post(&app, &token, messages, json, &big).await;
    let (status, code, message) = error_of(&too_large);
    assert_eq!((status, code.as_str()), (413, "too_large"));
    assert_eq!(message, "The body is larger than the server accepts.");
    // The rest of the body is not read, so the connection closes: said, so a client's next
    // request goes on a new one.
    assert_eq!(too_large.header("connection"), Some("close"));

    // Outside the API the framework's answers stay as they are.
    let elsewhere = app.http.request("DELETE", "/healthz").answer().await;
    assert_eq!(elsewhere.status, 405);
    assert_ne!(elsewhere.header("content-type"), Some("application/json"));
}

/// A body that is not JSON is `400 bad_request` with serde's words, without the path serde had
/// reached: for a body nested too deep that was 128 steps of `[0]`.
#[tokio::test]
async fn a_body_that_is_not_json_is_told_in_a_line() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_agent_token("Ana");
    let messages = "/api/v1/conversations/1/messages";
    let json = Some("application/json");
    let (status, code, message) = error_of(&post(&app, &token, messages, json, "{not json").await);
    assert_eq!((status, code.as_str()), (400, "bad_request"));
    assert_eq!(
        message,
        "The body is not JSON: key must be a string at line 1 column 2 (docs/api.md)."
    );
    let deep = format!("{}{}", "[".repeat(128), "]".repeat(128));
    let (status, _, message) = error_of(&post(&app, &token, messages, json, &deep).await);
    assert_eq!(
        (status, message.as_str()),
        (
            400,
            "The JSON is nested more than 127 levels deep (docs/api.md)."
        )
    );
}

#[tokio::test]
async fn a_compressed_refusal_keeps_its_words() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_agent_token("Ana");
    let response = app
        .http
        .request("POST", "/api/v1/conversations/1/messages")
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .header("accept-encoding", "gzip")
        .body("{}")
        .send()
        .await
        .expect("an answer");
    assert_eq!(response.status(), 422);
    assert_eq!(response.headers()["content-encoding"], "gzip");
    let bytes = response.bytes().await.expect("a body");
    let mut text = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut text)
        .expect("gzip");
    assert!(text.contains("missing field `body`"), "{text}");
}

/// A key given twice is refused: which one was meant is not for the server to guess. The message
/// is a sentence of Porch's, as every other refusal of a body.
#[tokio::test]
async fn a_key_given_twice_is_refused_by_name() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_agent_token("Ana");
    let twice = r#"{"body": "checked", "body": "stored"}"#;
    let messages = "/api/v1/conversations/1/messages";
    let answer = post(&app, &token, messages, Some("application/json"), twice).await;
    let (status, code, message) = error_of(&answer);
    assert_eq!((status, code.as_str()), (422, "invalid"));
    assert!(
        message.starts_with("The key `body` is given twice"),
        "{message}"
    );
    assert!(message.ends_with("(docs/api.md)."), "{message}");
}

/// A compressed request body is a media type the API does not take (415), said before it is
/// read, not a 400 "not JSON" about its compressed bytes; `identity` is no compression.
#[tokio::test]
async fn a_compressed_request_body_is_refused_as_such() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_user_token("Ops", "admin");
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gzip, br#"{"body": "hi"}"#).expect("gzip");
    let compressed = gzip.finish().expect("gzip");
    for path in ["/api/v1/conversations/1/messages", "/api/v1/jobs/retry"] {
        let answer = app
            .http
            .request("POST", path)
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .header("content-encoding", "gzip")
            .body(compressed.clone())
            .answer()
            .await;
        let (status, code, message) = error_of(&answer);
        assert_eq!(
            (status, code.as_str()),
            (415, "unsupported_media_type"),
            "{path}"
        );
        assert!(message.contains("without Content-Encoding"), "{message}");
    }
    let plain = app
        .http
        .request("POST", "/api/v1/conversations/1/messages")
        .bearer_auth(&token)
        .header("content-type", "application/json")
        .header("content-encoding", "identity")
        .body("{}")
        .answer()
        .await;
    assert_eq!(error_of(&plain).0, 422, "read as any other body");
    // A coding after `identity`, in the same header or a second one, is a coding all the same.
    for codings in [&["identity, gzip"][..], &["identity", "gzip"]] {
        let mut request = app
            .http
            .request("POST", "/api/v1/conversations/1/messages")
            .bearer_auth(&token)
            .header("content-type", "application/json");
        for coding in codings {
            request = request.header("content-encoding", *coding);
        }
        let answer = request.body("{}").answer().await;
        assert_eq!(error_of(&answer).0, 415, "{codings:?}");
    }
}

#[tokio::test]
async fn a_request_that_takes_too_long_gets_a_timeout_code() {
    let app = TestApp::spawn(&["--request-timeout", "300ms"]).await;
    let token = app.add_agent_token("Ana");
    // Headers that promise a body which never comes: the handler waits on it until the timeout.
    let mut stream = tokio::net::TcpStream::connect(app.addr)
        .await
        .expect("connect");
    let head = format!(
        "POST /api/v1/conversations/1/messages HTTP/1.1\r\nHost: porch\r\n\
         Authorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{"
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), async {
        use tokio::io::AsyncReadExt;
        let mut buf = [0; 4096];
        loop {
            let n = stream.read(&mut buf).await.expect("read");
            answer.extend_from_slice(&buf[..n]);
            if n == 0 || String::from_utf8_lossy(&answer).contains("}}") {
                break;
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no answer");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains(r#""code":"timeout""#), "{text}");
    assert!(
        text.to_lowercase().contains("\r\nconnection: close\r\n"),
        "{text}"
    );
}

#[tokio::test]
async fn a_call_that_takes_no_body_refuses_a_field_instead_of_ignoring_it() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_user_token("Ana", "admin");
    // Meant to retry job 7 alone; this call retries every job, so it must not run.
    let (status, body) = app
        .api(
            "POST",
            "/api/v1/jobs/retry",
            &token,
            Some(serde_json::json!({"id": 7})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("invalid")),
        "{body}"
    );
    assert_eq!(
        body["error"]["message"],
        "Unknown field `id`: this endpoint does not take it (docs/api.md).",
    );
    let (status, body) = app
        .api(
            "DELETE",
            "/api/v1/integrations/1",
            &token,
            Some(serde_json::json!(["x"])),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    // No body, or an empty object, is what these calls take.
    for body in [None, Some(serde_json::json!({}))] {
        let (status, answer) = app.api("POST", "/api/v1/jobs/retry", &token, body).await;
        assert_eq!(
            (status, answer["retried"].as_i64()),
            (200, Some(0)),
            "{answer}"
        );
    }
    let broken = app
        .http
        .request("POST", "/api/v1/jobs/retry")
        .bearer_auth(&token)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body("{not json")
        .answer()
        .await;
    assert_eq!(error_of(&broken).0, 400);
}

#[tokio::test]
async fn an_error_page_seen_signed_in_has_the_top_bar_and_signed_out_a_sign_in_link() {
    let app = TestApp::spawn(&[]).await;
    setup_admin(&app).await;
    add_user(&app, "bo@example.com", "agent");
    let bo = signed_in_from(
        &app,
        &crate::inbox::sign_in(&app, "bo@example.com", crate::inbox::PASSWORD).await,
    )
    .await;
    // An extractor's refusal (admins only), a missing page, the framework's own refusals (a
    // form's address opened, a path id that is not a number).
    for (path, status) in [
        ("/team", 403),
        ("/no-such-page", 404),
        ("/team/1/role", 405),
        ("/conversations/abc", 400),
    ] {
        let page = send(&app, "GET", path, &bo.cookie, None).await;
        assert_eq!(page.status, status, "{path}: {}", page.body);
        assert!(
            page.body.contains(r#"<nav aria-label="Main">"#)
                && page
                    .body
                    .contains(r#"<a href="/" class="button">Go to the inbox</a>"#)
                && !page.body.contains("Sign in</a>"),
            "{path}: {}",
            page.body
        );
        let signed_out = send(&app, "GET", path, "", None).await;
        if signed_out.status == status {
            assert!(
                !signed_out.body.contains("<nav") && signed_out.body.contains(">Sign in</a>"),
                "{path}: {}",
                signed_out.body
            );
        }
    }
}

#[tokio::test]
async fn a_form_address_opened_in_the_browser_gets_a_page_not_an_empty_answer() {
    let app = TestApp::spawn(&[]).await;
    let opened = app.http.get("/team/1/role").answer().await;
    assert_eq!(opened.status, 405);
    assert_eq!(opened.header("allow"), Some("POST"));
    assert!(
        opened
            .header("content-type")
            .is_some_and(|kind| kind.starts_with("text/html")),
        "{:?}",
        opened.headers
    );
    assert!(opened.body.contains("Not a page"), "{}", opened.body);
    // The other way round: a post to a page that is only opened is not told to use a form.
    let posted = app.http.request("POST", "/healthz").answer().await;
    assert_eq!(posted.status, 405);
    assert!(posted.body.contains("Not accepted here"), "{}", posted.body);
    assert!(
        !posted.body.contains("form's submission"),
        "{}",
        posted.body
    );
}

/// The address an invitation or a reset link was shown at, opened again (a new user did, and got
/// "405 Not a page"), is the team page: the link was shown once, by the form's answer.
#[tokio::test]
async fn the_address_a_link_was_shown_at_leads_back_to_the_team() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let bo = add_user(&app, "bo@example.com", "agent");
    for path in ["/team/invite".to_owned(), format!("/team/{}/link", bo.0)] {
        let opened = send(&app, "GET", &path, &admin.cookie, None).await;
        assert_eq!(
            (opened.status, opened.header("location")),
            (303, Some("/team")),
            "{path}"
        );
    }
}

#[tokio::test]
async fn a_page_address_that_does_not_parse_gets_an_html_page_with_the_pages_headers() {
    let app = TestApp::spawn(&[]).await;
    let admin = crate::inbox::signed_in_from(&app, &crate::inbox::setup_admin(&app).await).await;
    let opened = crate::inbox::send(&app, "GET", "/conversations/abc", &admin.cookie, None).await;
    assert_eq!(opened.status, 400, "{}", opened.body);
    assert!(
        opened
            .header("content-type")
            .is_some_and(|kind| kind.starts_with("text/html")),
        "{:?}",
        opened.headers
    );
    assert_eq!(opened.header("x-content-type-options"), Some("nosniff"));
    assert!(opened.header("content-security-policy").is_some());
    assert!(
        opened.body.contains("Not a valid address"),
        "{}",
        opened.body
    );
    assert!(!opened.body.contains("abc"), "the address is not echoed");
}

#[tokio::test]
async fn the_bearer_scheme_is_read_in_any_case() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_user_token("Ana", "agent");
    for scheme in ["Bearer", "bearer", "BEARER"] {
        let answer = app
            .http
            .get("/api/v1/conversations")
            .header("authorization", format!("{scheme} {token}"))
            .answer()
            .await;
        assert_eq!(answer.status, 200, "{scheme}: {}", answer.body);
    }
    let other = app
        .http
        .get("/api/v1/conversations")
        .header("authorization", format!("Basic {token}"))
        .answer()
        .await;
    assert_eq!(error_of(&other).0, 401);
}
