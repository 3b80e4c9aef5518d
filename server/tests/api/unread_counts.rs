//! The agent's unread counts and alerts on `/inbox/counts` (and every live stream): a visitor's
//! message in an unassigned or own conversation counts and alerts; reading the conversation (in
//! any tab) clears it; a conversation assigned to someone else counts as open only; closing it
//! clears it.

use reqwest::Response;
use serde_json::Value;

use crate::helpers::{Exchange as _, TestApp, WAIT};
use crate::inbox::{add_user, form, send, setup_admin, signed_in_from};
use crate::revocation::open_stream;

/// A live stream read event by event.
pub(crate) struct Events {
    stream: Response,
    buffer: String,
    /// Every event read so far, whole.
    seen: Vec<String>,
}

impl Events {
    async fn open(app: &TestApp, cookie: &str) -> Self {
        Self::open_at(app, "/inbox/counts", cookie).await
    }

    /// Any live stream: `/inbox/events`, a conversation's.
    pub(crate) async fn open_at(app: &TestApp, path: &str, cookie: &str) -> Self {
        let (stream, buffer) = open_stream(app, path, cookie).await;
        Self {
            stream,
            buffer,
            seen: Vec::new(),
        }
    }

    /// The data of the next `event: {name}` (events of other names are skipped).
    pub(crate) async fn next(&mut self, name: &str) -> Value {
        let marker = format!("event: {name}\n");
        let Self {
            stream,
            buffer,
            seen,
        } = self;
        tokio::time::timeout(WAIT, async {
            loop {
                while let Some(end) = buffer.find("\n\n") {
                    let event: String = buffer.drain(..end + 2).collect();
                    seen.push(event.clone());
                    if event.contains(&marker) {
                        let data = event
                            .lines()
                            .find_map(|l| l.strip_prefix("data: "))
                            .expect("data");
                        return serde_json::from_str(data).expect("JSON data");
                    }
                }
                let chunk = stream.chunk().await.expect("read").expect("open stream");
                buffer.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {name} event"))
    }
}

pub(crate) fn counts(open: u64, mine: u64, unassigned: u64) -> Value {
    serde_json::json!({"open": open, "mine": mine, "unassigned": unassigned, "needs": mine + unassigned})
}

#[tokio::test]
async fn visitor_messages_count_and_alert_until_the_agent_reads_them() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let mut events = Events::open(&app, &admin.cookie).await;
    assert_eq!(events.next("counts").await, counts(0, 0, 0));

    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget.say("c1", "Is anyone there?").await;
    let alert = events.next("alert").await;
    assert_eq!(alert["is_new"], true);
    assert_eq!(alert["body"], "Is anyone there?");
    assert_eq!(events.next("counts").await, counts(1, 0, 1));

    // Opening the conversation (another tab) reads it.
    let id = alert["conversation"].as_i64().expect("id");
    let page = send(
        &app,
        "GET",
        &format!("/conversations/{id}"),
        &admin.cookie,
        None,
    )
    .await;
    assert_eq!(page.status, 200);
    assert_eq!(events.next("counts").await, counts(0, 0, 0));

    widget.say("c2", "Hello?").await;
    let alert = events.next("alert").await;
    assert_eq!(alert["is_new"], false);
    assert_eq!(events.next("counts").await, counts(1, 0, 1));
}

#[tokio::test]
async fn another_agents_conversation_counts_as_open_and_closing_clears_it() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let bo = add_user(&app, "bo@example.com", "agent");
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget.say("c1", "Hi").await;
    let id: i64 = app.count("SELECT id FROM conversations");

    let mut events = Events::open(&app, &admin.cookie).await;
    assert_eq!(events.next("counts").await, counts(1, 0, 1));

    let assign = form(&[("csrf", &admin.csrf), ("assignee", &bo.0.to_string())]);
    let path = format!("/conversations/{id}/assign");
    assert_eq!(
        send(&app, "POST", &path, &admin.cookie, Some(&assign))
            .await
            .status,
        303
    );
    assert_eq!(events.next("counts").await, counts(1, 0, 0));
    // A visitor message there alerts no one but Bo.
    widget.say("c2", "Hello?").await;
    let mine = form(&[("csrf", &admin.csrf), ("assignee", "me")]);
    assert_eq!(
        send(&app, "POST", &path, &admin.cookie, Some(&mine))
            .await
            .status,
        303
    );
    assert_eq!(events.next("counts").await, counts(1, 1, 0));
    assert!(
        !events.seen.iter().any(|e| e.contains("event: alert")),
        "{:?}",
        events.seen
    );

    let close = form(&[("csrf", &admin.csrf)]);
    let path = format!("/conversations/{id}/close");
    assert_eq!(
        send(&app, "POST", &path, &admin.cookie, Some(&close))
            .await
            .status,
        303
    );
    assert_eq!(events.next("counts").await, counts(0, 0, 0));
}

#[tokio::test]
async fn an_erased_visitors_conversation_leaves_the_counts_of_open_pages() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    let (mut widget, welcome) = app.visitor(&site, None, 0).await;
    widget.say("c1", "Please forget me").await;
    let mut events = Events::open(&app, &admin.cookie).await;
    assert_eq!(events.next("counts").await, counts(1, 0, 1));

    let token = welcome["token"].as_str().expect("token").to_owned();
    let erased = app
        .http
        .request("POST", &format!("/widget/erase?site={site}"))
        .header("origin", crate::helpers::ORIGIN)
        .header("content-type", "text/plain;charset=UTF-8")
        .body(token)
        .answer()
        .await;
    assert_eq!(erased.status, 200, "{}", erased.body);
    assert_eq!(events.next("counts").await, counts(0, 0, 0));
}
