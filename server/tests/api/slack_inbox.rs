//! Slack as a full inbox, against the Slack mock over loopback: message shortcuts and the
//! `/porch` slash command over HTTP (signed like events) and over Socket Mode (a real websocket)
//! close, reopen, assign and add private notes through the inbox's own use cases; unmapped users,
//! strangers' threads and bad signatures are refused; the thread header shows the state after a
//! change made in Slack or in the inbox, through the job runner (429s retried).

use std::time::Duration;

use porch::integrations::slack::sign;
use serde_json::{Value, json};

use crate::helpers::{Answer, Exchange as _, WAIT, ok_if, wait_until};
use crate::inbox::{add_user, form, send, sign_in, signed_in_from};
use crate::slack::{Fixture, SECRET, now_secs};

/// The mapped agent: a Porch account and the Slack user with the same email.
const ANA: &str = "U-ANA";

/// A conversation with its Slack thread, and Ana both in Porch and in Slack.
struct Scene {
    fx: Fixture,
    integration: i64,
    conversation: i64,
    thread: String,
    widget: crate::helpers::Widget,
}

async fn scene(extra: Value) -> Scene {
    let fx = Fixture::start().await;
    let (site, integration) = fx.site_with_slack("Shop", "C1", extra).await;
    fx.app.add_user_token("Ana", "agent");
    fx.mock.add_user(ANA, "ana.slack", Some("ana@example.com"));
    let (mut widget, _) = fx.app.visitor(&site, None, 0).await;
    widget.say("q", "is anyone there?").await;
    let posts = fx.mock.wait_for_posts(2, WAIT).await;
    let thread = posts[0].ts.clone();
    let conversation = fx.app.count("SELECT max(id) FROM conversations");
    Scene {
        fx,
        integration,
        conversation,
        thread,
        widget,
    }
}

impl Scene {
    /// Posts a form to one of the integration's Slack endpoints, signed at `signed_at` with
    /// `secret`; returns the status.
    async fn post_form(&self, endpoint: &str, body: &str, secret: &str, signed_at: i64) -> u16 {
        self.post_form_answer(endpoint, body, (secret, signed_at))
            .await
            .status
    }

    /// As [`Scene::post_form`], with the whole answer.
    async fn post_form_answer(
        &self,
        endpoint: &str,
        body: &str,
        (secret, signed_at): (&str, i64),
    ) -> Answer {
        let signature = sign(secret, signed_at, body.as_bytes());
        self.fx
            .app
            .http
            .request(
                "POST",
                &format!("/integrations/slack/{}/{endpoint}", self.integration),
            )
            .header("X-Slack-Request-Timestamp", signed_at.to_string())
            .header("X-Slack-Signature", signature)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body.to_owned())
            .answer()
            .await
    }

    /// Sends an interactivity payload over HTTP, signed now.
    async fn interact(&self, payload: &Value) -> u16 {
        let body = form(&[("payload", &payload.to_string())]);
        self.post_form("interactive", &body, SECRET, now_secs())
            .await
    }

    /// Sends `/porch {text}` over HTTP as `user`, signed now.
    async fn command(&self, user: &str, text: &str) -> u16 {
        let body = form(&command_fields(user, text));
        self.post_form("commands", &body, SECRET, now_secs()).await
    }

    fn state(&self) -> (String, Option<i64>) {
        let conn = self.fx.app.db();
        conn.query_row(
            "SELECT status, assignee_id FROM conversations WHERE id = ?1",
            [self.conversation],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("conversation")
    }

    async fn wait_for_state(&self, status: &str, assignee: Option<i64>) {
        wait_until("the conversation's state", WAIT, async || {
            ok_if(self.state(), |s| s.0 == status && s.1 == assignee)
        })
        .await;
    }

    /// The ephemeral answer whose text has `needle` (waiting for it), as (user, thread, text).
    async fn answer(&self, needle: &str) -> (String, Option<String>, String) {
        let call = wait_until("an ephemeral answer", WAIT, async || {
            let calls = self.fx.mock.calls("chat.postEphemeral");
            calls
                .iter()
                .find(|c| c["text"].as_str().is_some_and(|t| t.contains(needle)))
                .cloned()
                .ok_or(calls)
        })
        .await;
        (
            call["user"].as_str().unwrap_or_default().to_owned(),
            call["thread_ts"].as_str().map(str::to_owned),
            call["text"].as_str().unwrap_or_default().to_owned(),
        )
    }

    fn ana(&self) -> i64 {
        self.fx
            .app
            .count("SELECT id FROM users WHERE email = 'ana@example.com'")
    }

    fn audited(&self, action: &str) -> i64 {
        self.fx.app.count(&format!(
            "SELECT count(*) FROM audit_events WHERE action = 'slack.conversation_action' \
             AND target_id = '{}' AND ip = 'slack:T0MOCK/{ANA}' \
             AND json_extract(detail, '$.action') = '{action}'",
            self.conversation
        ))
    }

    /// Waits for a `chat.update` of the thread's header whose text has `needle`.
    async fn wait_for_header(&self, needle: &str) -> Value {
        wait_until("the header to be updated", WAIT, async || {
            let updates = self.fx.mock.calls("chat.update");
            updates
                .iter()
                .rev()
                .find(|u| {
                    u["ts"] == self.thread.as_str()
                        && u["text"].as_str().is_some_and(|t| t.contains(needle))
                })
                .cloned()
                .ok_or(updates)
        })
        .await
    }
}

fn shortcut(callback: &str, thread: &str, user: &str) -> Value {
    json!({
        "type": "message_action", "callback_id": callback, "trigger_id": "trigger-1",
        "team": {"id": "T0MOCK"}, "user": {"id": user}, "channel": {"id": "C1"},
        "message": {"type": "message", "ts": thread, "text": "New conversation"},
        "response_url": "http://127.0.0.1:9/unused",
    })
}

fn command_fields<'a>(user: &'a str, text: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("team_id", "T0MOCK"),
        ("channel_id", "C1"),
        ("user_id", user),
        ("command", "/porch"),
        ("text", text),
        ("trigger_id", "trigger-2"),
        ("response_url", "http://127.0.0.1:9/unused"),
    ]
}

fn note_submission(thread: &str, text: &str) -> Value {
    json!({
        "type": "view_submission", "team": {"id": "T0MOCK"}, "user": {"id": ANA},
        "view": {"callback_id": "porch_note",
                 "private_metadata": json!({"channel": "C1", "thread_ts": thread}).to_string(),
                 "state": {"values": {"note": {"text": {"type": "plain_text_input", "value": text}}}}},
    })
}

#[tokio::test]
async fn shortcuts_over_http_close_reopen_and_assign_as_the_mapped_agent() {
    let s = scene(json!({})).await;
    assert_eq!(
        s.interact(&shortcut("porch_close", &s.thread, ANA)).await,
        200
    );
    s.wait_for_state("closed", None).await;
    let (user, thread, _) = s.answer("is closed").await;
    assert_eq!(
        (user.as_str(), thread.as_deref()),
        (ANA, Some(s.thread.as_str()))
    );
    // The inbox shows it as if done there: the status line under Ana's name, and the audit log
    // says it came from Slack.
    assert_eq!(
        s.fx.app.count(
            "SELECT count(*) FROM messages WHERE author = 'system' \
             AND body = 'Ana closed this conversation'"
        ),
        1
    );
    assert_eq!(s.audited("close"), 1);
    s.wait_for_header("Closed").await;

    assert_eq!(
        s.interact(&shortcut("porch_reopen", &s.thread, ANA)).await,
        200
    );
    s.wait_for_state("open", None).await;
    assert_eq!(s.audited("reopen"), 1);

    assert_eq!(
        s.interact(&shortcut("porch_assign", &s.thread, ANA)).await,
        200
    );
    s.wait_for_state("open", Some(s.ana())).await;
    assert_eq!(s.audited("assign"), 1);
    let header = s.wait_for_header("assigned to Ana").await;
    assert_eq!(header["channel"], "C1");
    assert!(header["text"].as_str().is_some_and(|t| t.contains("Open")));
}

#[tokio::test]
async fn the_note_shortcut_opens_a_form_whose_note_the_visitor_never_sees() {
    let mut s = scene(json!({})).await;
    assert_eq!(
        s.interact(&shortcut("porch_note", &s.thread, ANA)).await,
        200
    );
    let views = s.fx.mock.wait_for_calls("views.open", 1, WAIT).await;
    assert_eq!(views[0]["trigger_id"], "trigger-1");
    let metadata = views[0]["view"]["private_metadata"]
        .as_str()
        .expect("metadata");
    assert!(metadata.contains(&s.thread), "{metadata}");

    let submitted = note_submission(&s.thread, "VIP: call back <after> 5 & not before");
    assert_eq!(s.interact(&submitted).await, 200);
    let notes = || {
        s.fx.app.count(
            "SELECT count(*) FROM messages WHERE author = 'note' \
             AND body = 'VIP: call back <after> 5 & not before' AND author_name = 'Ana'",
        )
    };
    wait_until("the note", WAIT, async || ok_if(notes(), |n| *n == 1)).await;
    assert_eq!(s.audited("note"), 1);
    s.answer("Your private note is on conversation").await;
    // The visitor is sent nothing: the next frame they get is a later agent reply.
    let agent = s.fx.app.add_agent_token("Bo");
    let (status, _) =
        s.fx.app
            .api(
                "POST",
                &format!("/api/v1/conversations/{}/messages", s.conversation),
                &agent,
                Some(json!({"body": "hello"})),
            )
            .await;
    assert_eq!(status, 201);
    assert_eq!(s.widget.recv().await["body"], "hello");
}

#[tokio::test]
async fn the_slash_command_acts_by_conversation_number_and_explains_itself() {
    let s = scene(json!({})).await;
    let id = s.conversation;
    assert_eq!(s.command(ANA, &format!("assign #{id}")).await, 200);
    s.wait_for_state("open", Some(s.ana())).await;
    assert_eq!(
        s.command(ANA, &format!("note {id} refund &lt;approved&gt;"))
            .await,
        200
    );
    wait_until("the note", WAIT, async || {
        ok_if(
            s.fx.app.count(
                "SELECT count(*) FROM messages WHERE author = 'note' AND body = 'refund <approved>'",
            ),
            |n| *n == 1,
        )
    })
    .await;
    assert_eq!(s.command(ANA, &format!("close {id}")).await, 200);
    s.wait_for_state("closed", Some(s.ana())).await;
    assert_eq!(s.audited("close"), 1);

    assert_eq!(s.command(ANA, "help").await, 200);
    let (_, thread, _) = s.answer("/porch close 42").await;
    assert_eq!(thread, None, "a command's answer is in the channel");

    assert_eq!(s.command(ANA, &format!("close {}", id + 100)).await, 200);
    s.answer(&format!("Porch has no conversation #{}", id + 100))
        .await;
    assert_eq!(s.command(ANA, "archive everything").await, 200);
    s.answer("Porch does not know `archive everything`").await;
}

/// A note with nothing visible in it keeps its modal open with the reason under the field, over
/// HTTP and over Socket Mode: nothing is stored, and no ephemeral message is sent for it.
#[tokio::test]
async fn a_blank_note_keeps_its_modal_open_with_the_reason() {
    let s = scene(json!({"app_token": "xapp-test"})).await;
    let blank = note_submission(&s.thread, " \u{200B}\n ");
    let body = form(&[("payload", &blank.to_string())]);
    let answer = s
        .post_form_answer("interactive", &body, (SECRET, now_secs()))
        .await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("content-type"), Some("application/json"));
    let refusal = answer.json();
    assert_eq!(
        refusal,
        json!({"response_action": "errors", "errors": {"note": "The note is empty."}})
    );

    // From another workspace it is not this integration's to refuse: ignored, as all from there.
    let mut stranger = blank.clone();
    stranger["team"]["id"] = json!("T0OTHER");
    let body = form(&[("payload", &stranger.to_string())]);
    let answer = s
        .post_form_answer("interactive", &body, (SECRET, now_secs()))
        .await;
    assert_eq!((answer.status, answer.body.as_str()), (200, ""));

    assert!(s.fx.mock.wait_for_socket(WAIT).await, "Porch connected");
    let envelope =
        s.fx.mock
            .send_socket_envelope("interactive", &blank)
            .expect("a connected client");
    assert!(s.fx.mock.wait_for_ack(&envelope, WAIT).await);
    assert_eq!(s.fx.mock.ack_payload(&envelope), Some(refusal));

    // A note after them is stored and answered; the blank ones were neither.
    assert_eq!(
        s.interact(&note_submission(&s.thread, "call back")).await,
        200
    );
    s.answer("Your private note is on conversation").await;
    let notes = "SELECT count(*) FROM messages WHERE author = 'note'";
    assert_eq!(s.fx.app.count(notes), 1);
    let answers = s.fx.mock.calls("chat.postEphemeral");
    assert_eq!(answers.len(), 1, "{answers:?}");
}

#[tokio::test]
async fn socket_mode_shortcuts_and_commands_are_acknowledged_and_done() {
    let s = scene(json!({"app_token": "xapp-test"})).await;
    assert!(s.fx.mock.wait_for_socket(WAIT).await, "Porch connected");
    let close =
        s.fx.mock
            .send_socket_envelope("interactive", &shortcut("porch_close", &s.thread, ANA))
            .expect("a connected client");
    assert!(s.fx.mock.wait_for_ack(&close, WAIT).await, "acknowledged");
    s.wait_for_state("closed", None).await;

    let command = |text: String| {
        let fields: serde_json::Map<String, Value> = command_fields(ANA, &text)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), Value::from(v)))
            .collect();
        s.fx.mock
            .send_socket_envelope("slash_commands", &Value::Object(fields))
            .expect("a connected client")
    };
    let reopen = command(format!("reopen {}", s.conversation));
    assert!(s.fx.mock.wait_for_ack(&reopen, WAIT).await);
    s.wait_for_state("open", None).await;
    let assign = command(format!("assign {}", s.conversation));
    assert!(s.fx.mock.wait_for_ack(&assign, WAIT).await);
    s.wait_for_state("open", Some(s.ana())).await;

    let note =
        s.fx.mock
            .send_socket_envelope("interactive", &shortcut("porch_note", &s.thread, ANA))
            .expect("connected");
    assert!(s.fx.mock.wait_for_ack(&note, WAIT).await);
    s.fx.mock.wait_for_calls("views.open", 1, WAIT).await;
    let submitted =
        s.fx.mock
            .send_socket_envelope(
                "interactive",
                &note_submission(&s.thread, "over the socket"),
            )
            .expect("connected");
    assert!(s.fx.mock.wait_for_ack(&submitted, WAIT).await);
    wait_until("the note", WAIT, async || {
        ok_if(
            s.fx.app.count(
                "SELECT count(*) FROM messages WHERE author = 'note' AND body = 'over the socket'",
            ),
            |n| *n == 1,
        )
    })
    .await;
    for action in ["close", "reopen", "assign", "note"] {
        assert_eq!(s.audited(action), 1, "{action}");
    }
    s.wait_for_header("assigned to Ana").await;
}

/// A signed request to an integration of another site: its own signature, its own conversations.
#[tokio::test]
async fn a_command_finds_only_its_own_sites_conversations() {
    let s = scene(json!({})).await;
    let (_, other) = s.fx.site_with_slack("Other", "C2", json!({})).await;
    let body = form(&command_fields(ANA, &format!("close {}", s.conversation)));
    let signature = sign(SECRET, now_secs(), body.as_bytes());
    let status =
        s.fx.app
            .http
            .request("POST", &format!("/integrations/slack/{other}/commands"))
            .header("X-Slack-Request-Timestamp", now_secs().to_string())
            .header("X-Slack-Signature", signature)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body)
            .answer()
            .await
            .status;
    assert_eq!(status, 200);
    s.answer(&format!("Porch has no conversation #{}", s.conversation))
        .await;
    assert_eq!(s.state(), ("open".to_owned(), None));
}

#[tokio::test]
async fn bad_or_stale_signatures_are_refused_on_both_endpoints() {
    let s = scene(json!({})).await;
    let payload = form(&[(
        "payload",
        &shortcut("porch_close", &s.thread, ANA).to_string(),
    )]);
    let command = form(&command_fields(ANA, &format!("close {}", s.conversation)));
    for (endpoint, body) in [("interactive", &payload), ("commands", &command)] {
        assert_eq!(
            s.post_form(endpoint, body, "wrong-secret", now_secs())
                .await,
            401
        );
        assert_eq!(
            s.post_form(endpoint, body, SECRET, now_secs() - 301).await,
            401
        );
        let unsigned =
            s.fx.app
                .http
                .request(
                    "POST",
                    &format!("/integrations/slack/{}/{endpoint}", s.integration),
                )
                .header("Content-Type", "application/x-www-form-urlencoded")
                .body(body.clone())
                .answer()
                .await;
        assert_eq!(unsigned.status, 401);
    }
    // A correctly signed one goes through, so the refusals above were about the signature.
    assert_eq!(
        s.post_form("commands", &command, SECRET, now_secs() - 200)
            .await,
        200
    );
    s.wait_for_state("closed", None).await;
    assert_eq!(s.audited("close"), 1);
}

#[tokio::test]
async fn an_unmapped_slack_user_and_a_strangers_thread_are_refused_with_an_answer() {
    let s = scene(json!({})).await;
    s.fx.mock
        .add_user("U-EVE", "eve", Some("eve@elsewhere.example"));
    assert_eq!(
        s.interact(&shortcut("porch_close", &s.thread, "U-EVE"))
            .await,
        200
    );
    let (user, _, _) = s.answer("not linked to an active Porch agent").await;
    assert_eq!(user, "U-EVE");
    // A disabled account maps to nobody either.
    s.fx.app
        .db()
        .execute(
            "UPDATE users SET is_disabled = 1 WHERE email = 'ana@example.com'",
            [],
        )
        .expect("disable");
    assert_eq!(
        s.interact(&shortcut("porch_assign", &s.thread, ANA)).await,
        200
    );
    wait_until("both refusals", WAIT, async || {
        let calls = s.fx.mock.calls("chat.postEphemeral");
        ok_if(calls, |c| c.len() == 2)
    })
    .await;
    let (user, _, _) = s.answer("not linked").await;
    assert_eq!(user, "U-EVE", "the first refusal");
    let calls = s.fx.mock.calls("chat.postEphemeral");
    assert!(
        calls
            .iter()
            .any(|c| c["user"] == ANA
                && c["text"].as_str().is_some_and(|t| t.contains("not linked")))
    );

    assert_eq!(
        s.interact(&shortcut("porch_close", "1111.000001", ANA))
            .await,
        200
    );
    s.answer("not the thread of a Porch conversation").await;

    assert_eq!(s.state(), ("open".to_owned(), None));
    assert_eq!(
        s.fx.app
            .count("SELECT count(*) FROM audit_events WHERE action = 'slack.conversation_action'"),
        0
    );
}

#[tokio::test]
async fn the_header_shows_a_change_made_in_the_inbox() {
    let s = scene(json!({})).await;
    let bo = "bo@example.com";
    add_user(&s.fx.app, bo, "agent");
    let browser = signed_in_from(
        &s.fx.app,
        &sign_in(&s.fx.app, bo, crate::inbox::PASSWORD).await,
    )
    .await;
    let post = async |action: &str, fields: &[(&str, &str)]| {
        let mut all = vec![("csrf", browser.csrf.as_str())];
        all.extend_from_slice(fields);
        let path = format!("/conversations/{}/{action}", s.conversation);
        send(&s.fx.app, "POST", &path, &browser.cookie, Some(&form(&all)))
            .await
            .status
    };
    assert_eq!(post("assign", &[("assignee", "me")]).await, 303);
    s.wait_for_header("assigned to Bo").await;
    assert_eq!(post("close", &[]).await, 303);
    let header = s.wait_for_header("Closed").await;
    assert!(
        header["text"]
            .as_str()
            .is_some_and(|t| t.contains("Conversation #"))
    );
    assert_eq!(header["metadata"]["event_type"], "porch_conversation");
    // The visitor's name, set on the conversation page, reaches the header too.
    let named = [
        ("name", "Jane Doe"),
        ("email", "jane@acme.example"),
        ("shown_name", ""),
        ("shown_email", ""),
    ];
    assert_eq!(post("visitor", &named).await, 303);
    s.wait_for_header("from Jane Doe").await;
}

/// A visitor without a name who leaves an address in the widget: the thread's next posts are
/// theirs under that address, and so is the header, not "Visitor #1" any more.
#[tokio::test]
async fn the_header_names_a_visitor_by_the_address_they_leave() {
    let mut s = scene(json!({})).await;
    s.widget
        .send(json!({"type": "email", "email": "alice@example.org"}))
        .await;
    assert_eq!(s.widget.recv().await["type"], "email_saved");
    s.wait_for_header("from alice@example.org").await;
    // The same address again changes nothing, and rewrites nothing.
    s.widget
        .send(json!({"type": "email", "email": "alice@example.org"}))
        .await;
    assert_eq!(s.widget.recv().await["type"], "email_saved");
    s.fx.wait_until_settled().await;
    assert_eq!(
        s.fx.app
            .count("SELECT count(*) FROM jobs WHERE kind = 'slack.header'"),
        1
    );
}

#[tokio::test]
async fn a_429_on_the_header_update_is_retried() {
    let s = scene(json!({})).await;
    s.fx.mock.rate_limit_updates(1);
    assert_eq!(
        s.interact(&shortcut("porch_close", &s.thread, ANA)).await,
        200
    );
    s.wait_for_state("closed", None).await;
    s.wait_for_header("Closed").await;
    assert_eq!(s.fx.mock.rate_limited_count(), 1);
    s.fx.wait_until_settled().await;
    assert_eq!(
        s.fx.app
            .count("SELECT count(*) FROM jobs WHERE kind = 'slack.header' AND state = 'done'"),
        1
    );
    // Nothing but the header changed in the thread.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(s.fx.mock.posts().len(), 2);
}
