//! What Porch puts on the wire to Slack beyond the message itself: headers Slack checks and
//! warns about.

use serde_json::json;

use crate::helpers::WAIT;
use crate::slack::Fixture;

#[tokio::test]
async fn slack_posts_declare_utf8_json_so_slack_adds_no_missing_charset_warning() {
    let fx = Fixture::start().await;
    let (site, _) = fx.site_with_slack("Shop", "C1", json!({})).await;
    let (mut widget, _) = fx.app.visitor(&site, None, 0).await;
    assert_eq!(widget.say("m0", "héllo ✓").await["type"], "ack");
    let posts = fx.mock.wait_for_posts(2, WAIT).await;
    assert_eq!(posts.len(), 2, "a header and the message");
    for post in &posts {
        assert_eq!(
            post.content_type.as_deref(),
            Some("application/json; charset=utf-8"),
            "{}",
            post.text
        );
    }
    assert_eq!(posts[1].text, "héllo ✓");
}
