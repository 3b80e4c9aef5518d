//! What `hello` tells about the visitor's browser (page, referrer, language, time zone) reaches
//! the agent's conversation page, escaped; a returning visitor's new connection refreshes it;
//! malformed hints are dropped without costing the visitor their chat.

use serde_json::json;

use crate::helpers::{ORIGIN, TestApp};
use crate::inbox::{send, setup_admin, signed_in_from};

async fn hello(
    app: &TestApp,
    site: &str,
    token: Option<&str>,
    fields: serde_json::Value,
) -> (crate::helpers::Widget, String) {
    let mut widget = app.connect(site, ORIGIN).await;
    let mut frame = json!({"type": "hello", "v": 1, "token": token});
    for (name, value) in fields.as_object().expect("fields") {
        frame[name] = value.clone();
    }
    widget.send(frame).await;
    let welcome = widget.recv().await;
    assert_eq!(welcome["type"], "welcome", "{welcome}");
    let token = welcome["token"].as_str().expect("a token").to_owned();
    (widget, token)
}

/// The newest conversation's page, as `cookie`'s agent opens it.
async fn newest_conversation_page(app: &TestApp, cookie: &str) -> crate::helpers::Answer {
    let conversation = app.count("SELECT max(id) FROM conversations");
    let page = send(
        app,
        "GET",
        &format!("/conversations/{conversation}"),
        cookie,
        None,
    )
    .await;
    assert_eq!(page.status, 200, "{}", page.body);
    page
}

#[tokio::test]
async fn the_browser_context_from_hello_is_shown_to_agents_and_follows_the_visitor() {
    let app = TestApp::spawn(&[]).await;
    let ana = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");

    let (mut widget, token) = hello(
        &app,
        &site,
        None,
        json!({
            "page": "https://shop.example.com/pricing",
            "referrer": "https://search.example/?q=<b>porch</b>",
            "language": "de-DE",
            "time_zone": "Europe/Berlin",
        }),
    )
    .await;
    assert_eq!(widget.say("c-1", "Hallo").await["type"], "ack");
    let page = newest_conversation_page(&app, &ana.cookie).await;
    assert!(
        page.body.contains("https://shop.example.com/pricing"),
        "the page"
    );
    assert!(
        page.body
            .contains("https://search.example/?q=&lt;b&gt;porch&lt;/b&gt;"),
        "the referrer, escaped: {}",
        page.body
    );
    assert!(!page.body.contains("<b>porch"), "never raw");
    assert!(
        page.body.contains("<dd><bdi>de-DE</bdi></dd>"),
        "the language"
    );
    assert!(
        page.body.contains("data-time-zone=\"Europe/Berlin\""),
        "the time zone for the local clock"
    );
    drop(widget);

    // Back later from another page, in another zone, with a malformed language: the page and
    // zone follow the visitor, the bad hint is dropped (the old language stays), the first
    // referrer stays.
    let (mut widget, _) = hello(
        &app,
        &site,
        Some(&token),
        json!({
            "page": "https://shop.example.com/checkout",
            "referrer": "https://other.example/",
            "language": "<script>",
            "time_zone": "America/New_York",
        }),
    )
    .await;
    // Ana has opened the conversation: the widget hears so (`read`) right after welcome.
    assert_eq!(widget.recv().await["type"], "read");
    assert_eq!(widget.say("c-2", "Still there?").await["type"], "ack");
    let page = newest_conversation_page(&app, &ana.cookie).await;
    assert!(
        page.body.contains("https://shop.example.com/checkout"),
        "the new page"
    );
    assert!(page.body.contains("data-time-zone=\"America/New_York\""));
    assert!(page.body.contains("<dd><bdi>de-DE</bdi></dd>"));
    assert!(page.body.contains("search.example"), "the first referrer");
    assert!(!page.body.contains("other.example"));
    assert!(
        !page.body.contains("&lt;script&gt;"),
        "a malformed language is dropped"
    );
}

#[tokio::test]
async fn a_hello_without_the_context_fields_is_served_as_before() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Acme");
    let (mut plain, _) = hello(&app, &site, None, json!({})).await;
    assert_eq!(plain.say("c-1", "Hi").await["type"], "ack");
    assert_eq!(
        app.count(
            "SELECT count(*) FROM visitors \
             WHERE language IS NULL AND time_zone IS NULL AND referrer IS NULL AND last_page IS NULL"
        ),
        1
    );
}

/// A direction override turns the text after it around: `invoice\u{202E}fdp.exe` reads as
/// "invoiceexe.pdf". Names and URLs from the page lose such characters before agents see them,
/// and what stays is shown fenced in `<bdi>`, so it cannot turn the line's badge around either.
#[tokio::test]
async fn direction_overrides_do_not_reach_agents_in_names_and_urls() {
    let app = TestApp::spawn(&[]).await;
    let ana = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = hello(
        &app,
        &site,
        None,
        json!({
            "page": "https://shop.example.com/invoice\u{202E}fdp.exe",
            "referrer": "https://search.example/\u{2066}x\u{200B}y",
            "identity": {"id": "u-9", "name": "Ana\u{202E}tnega"},
        }),
    )
    .await;
    assert_eq!(widget.say("c-1", "Hallo").await["type"], "ack");
    let page = newest_conversation_page(&app, &ana.cookie).await;
    assert!(
        page.body
            .contains("<bdi>https://shop.example.com/invoicefdp.exe</bdi>"),
        "{}",
        page.body
    );
    assert!(page.body.contains("<bdi>https://search.example/xy</bdi>"));
    assert!(page.body.contains("<bdi>u-9 \u{b7} Anatnega</bdi>"));
    for c in ['\u{202E}', '\u{2066}', '\u{200B}'] {
        assert!(!page.body.contains(c), "{c:?} reached the page");
    }
}

/// A visitor who opens the chat on a password-reset link must not hand its token to every agent,
/// Slack channel and webhook: the address is kept with the token's value redacted
/// (docs/privacy.md#page-addresses), and so is the referrer.
#[tokio::test]
async fn a_reset_links_token_is_not_kept_from_the_page_address() {
    let app = TestApp::spawn(&[]).await;
    let ana = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = hello(
        &app,
        &site,
        None,
        json!({
            "page": "https://ann:pw-9@shop.example.com/reset?token=SECRET-RESET-1&lang=de#access_token=SECRET-OAUTH-2",
            "referrer": "https://mail.example/open?sessionId=SECRET-SESSION-3",
        }),
    )
    .await;
    assert_eq!(widget.say("c-1", "The link fails").await["type"], "ack");
    let stored: (String, String) = app
        .db()
        .query_row("SELECT last_page, referrer FROM visitors", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("the visitor");
    assert_eq!(
        stored,
        (
            "https://shop.example.com/reset?token=redacted&lang=de".to_owned(),
            "https://mail.example/open?sessionId=redacted".to_owned()
        )
    );
    let page = newest_conversation_page(&app, &ana.cookie).await;
    assert!(page.body.contains("/reset?token=redacted&amp;lang=de"));
    for secret in ["SECRET-", "pw-9"] {
        assert!(!page.body.contains(secret), "{secret} reached the page");
    }
}

/// "Last seen" follows the visitor's messages, not only the first message of their connection
/// (which is when the visitor row is written): a new user saw "Last seen 11:00" beside messages
/// the visitor wrote at 11:04.
#[tokio::test]
async fn last_seen_is_the_visitors_newest_message() {
    let app = TestApp::spawn(&[]).await;
    let ana = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = hello(&app, &site, None, json!({})).await;
    assert_eq!(widget.say("c-1", "Hello").await["type"], "ack");
    // As if that first message was written two hours ago.
    app.db()
        .execute_batch(
            "UPDATE visitors SET first_seen_at = first_seen_at - 7200000, \
                                 last_seen_at = last_seen_at - 7200000; \
             UPDATE messages SET created_at = created_at - 7200000;",
        )
        .expect("back in time");
    let newest = widget.say("c-2", "Still there?").await;
    assert_eq!(newest["type"], "ack");
    let at = newest["at"].as_i64().expect("the ack's time");
    let page = newest_conversation_page(&app, &ana.cookie).await;
    let at = std::time::UNIX_EPOCH
        + std::time::Duration::from_millis(u64::try_from(at).expect("after 1970"));
    let iso = humantime::format_rfc3339_seconds(at);
    assert!(
        page.body
            .contains(&format!("<dt>Last seen</dt><dd><time datetime=\"{iso}\">")),
        "{}",
        page.body
    );
}
