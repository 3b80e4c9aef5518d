//! Slack saying the app lost its access (`app_uninstalled`, or `tokens_revoked` naming the bot):
//! every integration of that app in that workspace is parked at once, so a visitor's message
//! waits blocked instead of failing, and saving a bot token resumes it
//! (docs/integrations/slack.md, "Failures").

use serde_json::{Value, json};

use crate::helpers::{WAIT, ok_if, wait_until};
use crate::slack::{Fixture, SECRET, now_secs};

/// Each integration's status and last error, by id.
fn statuses(fx: &Fixture) -> Vec<(i64, String, Option<String>)> {
    let conn = fx.app.db();
    let mut stmt = conn
        .prepare("SELECT id, status, last_error FROM integrations ORDER BY id")
        .expect("sql");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows")
}

fn callback(event_id: &str, event: &Value) -> Value {
    json!({"type": "event_callback", "team_id": "T0MOCK", "event_id": event_id, "event": event})
}

#[tokio::test]
async fn an_uninstall_parks_every_integration_of_the_app_until_a_token_is_saved() {
    let fx = Fixture::start().await;
    let (site, first) = fx.site_with_slack("Shop", "C1", json!({})).await;
    let (blog, second) = fx.site_with_slack("Blog", "C2", json!({})).await;

    // People's tokens revoked, or another app's bot: nothing to park.
    let people = json!({"type": "tokens_revoked", "tokens": {"oauth": ["U1"]}});
    assert_eq!(
        fx.send_event(first, &callback("Ev1", &people), now_secs())
            .await,
        200
    );
    let other = json!({"type": "tokens_revoked", "tokens": {"bot": ["UOTHER"]}});
    assert_eq!(
        fx.send_event(first, &callback("Ev2", &other), now_secs())
            .await,
        200
    );
    // Another workspace's uninstall (a signed request, but not this integration's team).
    let mut elsewhere = callback("Ev0", &json!({"type": "app_uninstalled"}));
    elsewhere["team_id"] = json!("T0OTHER");
    assert_eq!(fx.send_event(first, &elsewhere, now_secs()).await, 200);
    let healthy: Vec<_> = statuses(&fx).into_iter().map(|(_, s, _)| s).collect();
    assert_eq!(healthy, ["ok", "ok"]);

    let uninstalled = callback("Ev3", &json!({"type": "app_uninstalled"}));
    assert_eq!(fx.send_event(first, &uninstalled, now_secs()).await, 200);
    for (id, status, error) in statuses(&fx) {
        assert_eq!(status, "broken", "integration {id}");
        let error = error.unwrap_or_default();
        assert!(
            error.contains("app_uninstalled"),
            "integration {id}: {error}"
        );
    }
    // As the admin API shows it.
    let path = format!("/api/v1/sites/{blog}/integrations");
    let (_, listed) = fx.app.api("GET", &path, &fx.admin, None).await;
    let listed = &listed["integrations"][0];
    assert_eq!(
        (&listed["id"], &listed["status"]),
        (&json!(second), &json!("broken")),
        "{listed}"
    );

    // The token still works at the mock: only the event stops the post.
    let (mut widget, _) = fx.app.visitor(&site, None, 0).await;
    assert_eq!(
        widget.say("m1", "hello after the uninstall").await["type"],
        "ack"
    );
    wait_until("the delivery blocked", WAIT, async || {
        let blocked = "SELECT count(*) FROM jobs WHERE state = 'blocked'";
        ok_if(fx.app.count(blocked), |n| *n >= 1)
    })
    .await;
    assert!(fx.mock.posts().is_empty(), "{:?}", fx.mock.posts());

    let fixed = json!({"bot_token": "xoxb-test", "channel_id": "C1", "signing_secret": SECRET});
    let path = format!("/api/v1/integrations/{first}/slack");
    let (status, answer) = fx.app.api("PUT", &path, &fx.admin, Some(fixed)).await;
    assert_eq!(status, 200, "{answer}");
    let posts = fx.mock.wait_for_posts(2, WAIT).await;
    assert_eq!(posts[1].text, "hello after the uninstall");
    fx.wait_until_settled().await;
    // Slack resending the same event (its answer came late) does not park it again.
    assert_eq!(fx.send_event(first, &uninstalled, now_secs()).await, 200);
    let (id, status, _) = statuses(&fx).remove(0);
    assert_eq!((id, status.as_str()), (first, "ok"));
}

#[tokio::test]
async fn a_revoked_bot_token_parks_the_integration() {
    let fx = Fixture::start().await;
    let (_, integration) = fx.site_with_slack("Shop", "C1", json!({})).await;
    let revoked = json!({"type": "tokens_revoked", "tokens": {"oauth": [], "bot": ["UBOT"]}});
    let event = callback("Ev1", &revoked);
    assert_eq!(fx.send_event(integration, &event, now_secs()).await, 200);
    let (_, status, error) = statuses(&fx).remove(0);
    assert_eq!(status, "broken");
    assert!(error.unwrap_or_default().contains("tokens_revoked"));
}
