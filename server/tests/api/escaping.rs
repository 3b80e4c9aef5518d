//! Stored admin text cannot end the element it is shown in. Leptos escapes text children, but not
//! a `<textarea>`'s: these payloads once closed the field and redirected every admin off-site.

use crate::helpers::TestApp;
use crate::inbox::{form, send, setup_admin, signed_in_from};

/// Markup that does harm without a script (CSP stops scripts, not these).
pub(crate) const PAYLOADS: [&str; 4] = [
    r#"</textarea><meta http-equiv="refresh" content="0;url=https://evil.example">"#,
    "</TEXTAREA ><a id=evil href=//evil.example>x</a>",
    "<img src=x onerror=alert(1)>",
    "<script>alert(2)</script>",
];

fn site_form<'a>(csrf: &'a str, origins: &'a str, greeting: &'a str) -> String {
    form(&[
        ("csrf", csrf),
        ("name", "Acme"),
        ("origins", origins),
        ("greeting", greeting),
        ("color", "#2563eb"),
        ("position", "right"),
        ("visitor_messages_per_minute", "30"),
        ("visitor_burst", "10"),
        ("flood_messages_per_minute", "600"),
        ("flood_conversations_per_minute", "60"),
    ])
}

/// No payload appears raw in `page`, and each appears escaped.
fn assert_escaped(page: &str, payload: &str) {
    assert!(
        !page.contains(payload),
        "raw payload in the page: {payload}"
    );
    assert!(
        page.contains(&porch_app::escape_html(payload)),
        "the escaped payload is missing: {payload}"
    );
}

#[tokio::test]
async fn site_greeting_and_origins_are_escaped_in_their_textareas() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    for payload in PAYLOADS {
        // A stored greeting, shown again on the site's settings page.
        let created = send(
            &app,
            "POST",
            "/sites",
            &admin.cookie,
            Some(&site_form(&admin.csrf, "https://acme.example", payload)),
        )
        .await;
        assert_eq!(created.status, 303, "{}", created.body);
        let location = created.header("location").expect("location").to_owned();
        let key = location
            .trim_start_matches("/sites/")
            .split(['?', '/'])
            .next()
            .expect("key")
            .to_owned();
        let page = send(&app, "GET", &format!("/sites/{key}"), &admin.cookie, None).await;
        assert_eq!(page.status, 200);
        assert_escaped(&page.body, payload);

        // Refused origins are shown back in their field.
        let refused = send(
            &app,
            "POST",
            "/sites",
            &admin.cookie,
            Some(&site_form(&admin.csrf, payload, "Hi")),
        )
        .await;
        assert_eq!(refused.status, 422, "{}", refused.body);
        assert_escaped(&refused.body, payload);
    }
}

#[tokio::test]
async fn links_in_a_visitors_message_are_links_and_nothing_else_is() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Shop <i>One</i>");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    let said = "see https://shop.example/order?id=1&x=2, or javascript:alert(1) <b>now</b>";
    assert_eq!(widget.say("m1", said).await["type"], "ack");
    let conversation: i64 = app
        .db()
        .query_row("SELECT id FROM conversations", [], |r| r.get(0))
        .expect("conversation");
    let page = send(
        &app,
        "GET",
        &format!("/conversations/{conversation}"),
        &admin.cookie,
        None,
    )
    .await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains(
            r#"<a href="https://shop.example/order?id=1&amp;x=2" rel="noopener noreferrer nofollow" target="_blank"><bdi>https://shop.example/order?id=1&amp;x=2</bdi></a>, or javascript:alert(1) &lt;b&gt;now&lt;/b&gt;"#
        ),
        "{}",
        page.body
    );
    assert!(!page.body.contains(r#"href="javascript"#), "{}", page.body);
    // The site's name is text, at the top of the page (the brand the agent answers as).
    assert!(
        page.body
            .contains("· Site: <bdi>Shop &lt;i&gt;One&lt;/i&gt;</bdi>"),
        "{}",
        page.body
    );
}
