//! Languages (docs/widget.md, "Languages"): the translations served to the panel, and a site's
//! fixed widget language, set on the site page and written into its snippet.

use crate::helpers::TestApp;
use crate::inbox::{Browser, form, send, setup_admin, signed_in_from};

/// The site form's other fields, valid.
const SITE_FIELDS: [(&str, &str); 8] = [
    ("origins", "https://shop.example.com"),
    ("greeting", "Hi!"),
    ("color", "#2563eb"),
    ("position", "right"),
    ("visitor_messages_per_minute", "30"),
    ("visitor_burst", "10"),
    ("flood_messages_per_minute", "600"),
    ("flood_conversations_per_minute", "60"),
];

async fn save_site(
    app: &TestApp,
    admin: &Browser,
    path: &str,
    locale: &str,
    greetings: &str,
) -> (u16, String) {
    let mut fields = vec![
        ("csrf", admin.csrf.as_str()),
        ("name", "Shop"),
        ("locale", locale),
        ("greetings", greetings),
    ];
    fields.extend_from_slice(&SITE_FIELDS);
    let answer = send(app, "POST", path, &admin.cookie, Some(&form(&fields))).await;
    let location = answer.header("location").unwrap_or_default().to_owned();
    (
        answer.status,
        if location.is_empty() {
            answer.body
        } else {
            location
        },
    )
}

/// The site page's text with HTML escapes undone, so the snippet in its textarea reads as pasted.
async fn site_page(app: &TestApp, admin: &Browser, key: &str) -> String {
    let page = send(app, "GET", &format!("/sites/{key}"), &admin.cookie, None).await;
    assert_eq!(page.status, 200);
    page.body
        .replace("&amp;", "&")
        .replace("&amp;", "&")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
}

#[tokio::test]
async fn a_fixed_widget_language_is_saved_and_written_into_the_snippet() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let (status, location) = save_site(&app, &admin, "/sites", "fr", "").await;
    assert_eq!(status, 303, "{location}");
    let key = location
        .trim_start_matches("/sites/")
        .split('?')
        .next()
        .expect("the new site's key")
        .to_owned();

    let page = site_page(&app, &admin, &key).await;
    assert!(
        page.contains(r#""locale":"fr""#),
        "no locale in the snippet"
    );
    assert!(
        page.contains(r#""label":"Discutons""#),
        "the button's label is not French"
    );
    assert!(
        page.contains(r#"<option value="fr" selected"#),
        "fr is not selected"
    );

    // Back to automatic: no locale, the English label.
    let (status, _) = save_site(&app, &admin, &format!("/sites/{key}"), "", "").await;
    assert_eq!(status, 303);
    let page = site_page(&app, &admin, &key).await;
    assert!(
        !page.contains(r#""locale":"#),
        "a locale is left in the snippet"
    );
    assert!(page.contains(r#""label":"Chat with us""#));
}

#[tokio::test]
async fn a_language_the_widget_does_not_speak_is_refused() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let (status, body) = save_site(&app, &admin, "/sites", "sv", "").await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("language"), "{body}");
    let (status, body) = save_site(&app, &admin, "/sites", "", "sv: Hej!").await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("code"), "{body}");
}

#[tokio::test]
async fn greetings_in_other_languages_reach_the_widget_beside_the_greeting() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let greetings = "de: Hallo! Wie k\u{f6}nnen wir helfen?\r\nja: <b>\u{3053}\u{3093}\u{306b}\u{3061}\u{306f}</b>";
    let (status, location) = save_site(&app, &admin, "/sites", "", greetings).await;
    assert_eq!(status, 303, "{location}");
    let key = location
        .trim_start_matches("/sites/")
        .split('?')
        .next()
        .expect("key");

    let (_widget, welcome) = app.visitor(key, None, 0).await;
    let site = &welcome["site"];
    assert_eq!(site["greeting"], "Hi!");
    assert_eq!(
        site["greetings"]["de"],
        "Hallo! Wie k\u{f6}nnen wir helfen?"
    );
    assert_eq!(
        site["greetings"]["ja"],
        "<b>\u{3053}\u{3093}\u{306b}\u{3061}\u{306f}</b>"
    );
    assert_eq!(
        site["greetings"].as_object().map(serde_json::Map::len),
        Some(2)
    );

    // The page shows them back (escaped) for editing.
    let page = send(&app, "GET", &format!("/sites/{key}"), &admin.cookie, None).await;
    assert!(page.body.contains("de: Hallo!"), "greetings not shown back");
    assert!(
        !page.body.contains("<b>\u{3053}"),
        "a greeting is not escaped"
    );
}

#[tokio::test]
async fn a_site_without_greetings_in_other_languages_sends_none() {
    let app = TestApp::spawn(&[]).await;
    let key = app.add_site("Plain");
    let (_widget, welcome) = app.visitor(&key, None, 0).await;
    assert!(welcome["site"].get("greetings").is_none(), "{welcome}");
}

#[tokio::test]
async fn translations_are_served_as_utf8_json_cached_like_the_panel() {
    let app = TestApp::spawn(&[]).await;
    let de = send(&app, "GET", "/widget/locales/de.json", "", None).await;
    assert_eq!(de.status, 200);
    assert_eq!(
        de.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    assert_eq!(de.header("cache-control"), Some("public, max-age=300"));
    assert_eq!(de.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(de.header("access-control-allow-origin"), Some("*"));
    let texts: serde_json::Value = serde_json::from_str(&de.body).expect("JSON");
    assert_eq!(texts["send"], "Senden");
    assert_eq!(texts["erase"], "Meine Daten l\u{f6}schen");

    for path in [
        "/widget/locales/en.json",
        "/widget/locales/sv.json",
        "/widget/locales/de",
        "/widget/locales/..%2Fpanel.js",
    ] {
        let answer = send(&app, "GET", path, "", None).await;
        assert_eq!(answer.status, 404, "{path}");
    }
}
