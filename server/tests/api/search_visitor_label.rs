//! Searching for an anonymous visitor by the inbox's name for them ("Visitor #9"), which an
//! agent is told and the digest mail uses: it found nothing, since no message holds the words.

use crate::helpers::TestApp;
use crate::inbox::{form, send, setup_admin, signed_in_from};

#[tokio::test]
async fn the_inbox_label_of_a_visitor_finds_their_conversations() {
    let app = TestApp::spawn(&[]).await;
    let ana = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Shop");
    let (mut first, _) = app.visitor(&site, None, 0).await;
    first.say("c1", "Hello").await;
    let (mut other, _) = app.visitor(&site, None, 0).await;
    other.say("c2", "Hi there").await;
    let visitor = app.count("SELECT max(visitor_id) FROM conversations");
    let conversation = app.count(&format!(
        "SELECT id FROM conversations WHERE visitor_id = {visitor}"
    ));
    let link = format!(r#"href="/conversations/{conversation}""#);
    for query in [
        format!("Visitor #{visitor}"),
        format!("#{visitor}"),
        format!("v{visitor}"),
    ] {
        let path = format!("/search?{}", form(&[("q", &query)]));
        let page = send(&app, "GET", &path, &ana.cookie, None).await;
        assert_eq!(page.status, 200, "{query}: {}", page.body);
        assert!(page.body.contains(&link), "{query}: {}", page.body);
        assert_eq!(
            page.body.matches(r#"href="/conversations/"#).count(),
            1,
            "{query}: the other visitor is not found"
        );
    }
    // A bare number is text, not a visitor.
    let path = format!("/search?{}", form(&[("q", &visitor.to_string())]));
    let page = send(&app, "GET", &path, &ana.cookie, None).await;
    assert!(!page.body.contains(&link), "{}", page.body);
}
