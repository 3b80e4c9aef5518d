//! Outgoing webhooks against a receiver on loopback: every event signed per Standard Webhooks
//! and verified by an independent implementation (the `standardwebhooks` package from the Python package index,
//! installed into tests/deliveries/.venv by scripts/test), also across a secret rotation; a
//! retry after a 5xx with the same `webhook-id`; one id, one body (a retry or a replay after the
//! conversation changed sends the bytes of the first attempt); 410 disabling the endpoint;
//! redirects not followed; replay from the delivery log; and the SSRF guard.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use porch::loadtest::{Received, WebhookMock};
use porch::store::{ConversationId, Expected, UserId};
use serde_json::{Value, json};

use crate::helpers::{TestApp, WAIT, ok_if, wait_until};

/// The events about a conversation (not `visitor.erased`: `webhook_erasure.rs`).
const CONVERSATION_EVENTS: [&str; 4] = [
    "conversation.created",
    "message.created",
    "conversation.assigned",
    "conversation.closed",
];

pub(crate) struct Fixture {
    pub(crate) app: TestApp,
    pub(crate) mock: WebhookMock,
    pub(crate) admin: String,
    pub(crate) site: String,
}

impl Fixture {
    /// Replays delivered job `job` of endpoint `id` through the API, as an admin would.
    pub(crate) async fn replay(&self, id: i64, job: i64) {
        let (status, answer) = self
            .app
            .api(
                "POST",
                &format!("/api/v1/integrations/{id}/deliveries/{job}/replay"),
                &self.admin,
                None,
            )
            .await;
        assert_eq!(status, 202, "{answer}");
    }

    pub(crate) async fn start(args: &[&str]) -> Self {
        let mock = WebhookMock::start(([127, 0, 0, 1], 0).into())
            .await
            .expect("receiver");
        let app = TestApp::spawn(args).await;
        let admin = app.add_user_token("Admin", "admin");
        let site = app.add_site("Shop");
        app.set_site_limits(&site, 10_000, 1_000, 100_000, 10_000);
        Self {
            app,
            mock,
            admin,
            site,
        }
    }

    /// Adds an endpoint at `path` of the receiver; returns (id, secret).
    pub(crate) async fn endpoint(&self, path: &str, events: &[&str]) -> (i64, String) {
        let (status, answer) = self
            .app
            .api(
                "POST",
                &format!("/api/v1/sites/{}/integrations/webhooks", self.site),
                &self.admin,
                Some(json!({"url": self.mock.url(path), "events": events})),
            )
            .await;
        assert_eq!(status, 201, "{answer}");
        let secret = answer["secret"].as_str().expect("secret").to_owned();
        assert!(secret.starts_with("whsec_"));
        (answer["id"].as_i64().expect("id"), secret)
    }

    pub(crate) async fn log(&self, id: i64) -> Value {
        let (status, log) = self
            .app
            .api(
                "GET",
                &format!("/api/v1/integrations/{id}/deliveries"),
                &self.admin,
                None,
            )
            .await;
        assert_eq!(status, 200, "{log}");
        log
    }

    async fn wait_for_sql(&self, sql: &str, at_least: i64) {
        wait_until(&format!("{sql} to reach {at_least}"), WAIT, async || {
            ok_if(self.app.count(sql), |n| *n >= at_least)
        })
        .await;
    }

    fn conversation(&self) -> ConversationId {
        ConversationId(self.app.count("SELECT max(id) FROM conversations"))
    }

    /// Closes the conversation as the admin does from the inbox; returns once committed.
    async fn close(&self, conversation: ConversationId) {
        let app = &self.app.server.as_ref().expect("server").app;
        let admin_id = UserId(self.app.count("SELECT id FROM users WHERE name = 'Admin'"));
        let admin = app
            .readers
            .read(move |c| porch::store::find_user(c, admin_id))
            .await
            .expect("read")
            .expect("admin");
        app.chat
            .close_conversation(conversation, &admin, None)
            .await
            .expect("close");
    }
}

/// The `webhook-timestamp` of a delivery, in Unix seconds.
fn signed_at(received: &Received) -> i64 {
    received.headers["webhook-timestamp"]
        .parse()
        .expect("webhook-timestamp is a number")
}

pub(crate) fn payload(received: &Received) -> Value {
    serde_json::from_str(&received.body).expect("JSON body")
}

/// The interpreter of tests/deliveries/.venv (made by scripts/test), or `PORCH_TEST_PYTHON`.
fn referee_python() -> PathBuf {
    if let Ok(python) = std::env::var("PORCH_TEST_PYTHON") {
        return python.into();
    }
    let python =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/deliveries/.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/test once (it installs the standardwebhooks package there)",
        python.display()
    );
    python
}

/// Verifies the deliveries with the `standardwebhooks` package; returns its report.
pub(crate) fn verify_with_referee(secret: &str, deliveries: &[Received]) -> Result<String, String> {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/deliveries/verify_webhooks.py");
    let input = json!({
        "secret": secret,
        "deliveries": deliveries.iter().map(|d| json!({"headers": d.headers, "body": d.body})).collect::<Vec<_>>(),
    });
    let mut child = Command::new(referee_python())
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python runs");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(input.to_string().as_bytes())
            .expect("write");
    }
    let output = child.wait_with_output().expect("python finishes");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if output.status.success() {
        Ok(report)
    } else {
        Err(report)
    }
}

#[tokio::test]
async fn every_event_is_signed_and_verifies_with_standardwebhooks_also_after_rotation() {
    let f = Fixture::start(&["--allow-private-networks"]).await;
    let (id, secret) = f.endpoint("/hook", &CONVERSATION_EVENTS).await;
    let (mut visitor, _) = f.app.visitor(&f.site, None, 0).await;
    visitor.say("v1", "Hello <b>there</b>").await;
    f.mock.wait_for(2, WAIT).await;
    let conversation = f.conversation();
    let (status, _) = f
        .app
        .api(
            "POST",
            &format!("/api/v1/conversations/{conversation}/messages"),
            &f.admin,
            Some(json!({"body": "Hi, how can I help?"})),
        )
        .await;
    assert_eq!(status, 201);
    let app = &f.app.server.as_ref().expect("server").app;
    let admin_id = UserId(f.app.count("SELECT id FROM users WHERE name = 'Admin'"));
    let admin = app
        .readers
        .read(move |c| porch::store::find_user(c, admin_id))
        .await
        .expect("read")
        .expect("admin");
    app.chat
        .assign_conversation(conversation, &admin, Some(&admin), Expected::Any, None)
        .await
        .expect("assign");
    app.chat
        .close_conversation(conversation, &admin, None)
        .await
        .expect("close");
    let received = f.mock.wait_for(5, WAIT).await;
    let types: Vec<String> = received
        .iter()
        .map(|r| payload(r)["type"].as_str().expect("type").to_owned())
        .collect();
    assert_eq!(
        types,
        [
            "conversation.created",
            "message.created",
            "message.created",
            "conversation.assigned",
            "conversation.closed"
        ]
    );
    let visitor_message = payload(&received[1]);
    assert_eq!(visitor_message["data"]["message"]["author"], "visitor");
    assert_eq!(
        visitor_message["data"]["message"]["body"],
        "Hello <b>there</b>"
    );
    assert_eq!(visitor_message["data"]["message"]["attachments"], json!([]));
    assert_eq!(payload(&received[2])["data"]["message"]["author"], "agent");
    assert_eq!(payload(&received[3])["data"]["assignee"]["name"], "Admin");
    assert_eq!(
        payload(&received[4])["data"]["conversation"]["status"],
        "closed"
    );
    for r in &received {
        assert!(r.headers["webhook-id"].starts_with("msg_"));
        assert!(r.headers["webhook-signature"].starts_with("v1,"));
        assert_eq!(r.headers["content-type"], "application/json");
    }
    let report = verify_with_referee(&secret, &received).expect("signatures verify");
    assert_eq!(report.lines().filter(|l| l.starts_with("OK")).count(), 5);
    assert!(
        verify_with_referee("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &received[..1]).is_err(),
        "the referee refuses a wrong secret"
    );

    // Rotation: both secrets sign while receivers switch over.
    let (status, rotated) = f
        .app
        .api(
            "POST",
            &format!("/api/v1/integrations/{id}/webhook/rotate"),
            &f.admin,
            None,
        )
        .await;
    assert_eq!(status, 200, "{rotated}");
    let new_secret = rotated["secret"].as_str().expect("secret").to_owned();
    assert_ne!(new_secret, secret);
    visitor.say("v2", "after the rotation").await;
    let received = f.mock.wait_for(8, WAIT).await;
    let after: Vec<Received> = received[5..].to_vec();
    assert!(
        after
            .iter()
            .all(|r| r.headers["webhook-signature"].split(' ').count() == 2)
    );
    verify_with_referee(&new_secret, &after).expect("the new secret verifies");
    verify_with_referee(&secret, &after).expect("the old secret still verifies");
}

#[tokio::test]
async fn a_5xx_is_retried_with_the_same_webhook_id_and_logged() {
    let f = Fixture::start(&["--allow-private-networks"]).await;
    let (id, secret) = f.endpoint("/hook", &["message.created"]).await;
    f.mock.answer("/hook", &[500]);
    let (mut visitor, _) = f.app.visitor(&f.site, None, 0).await;
    visitor.say("v1", "retry me").await;
    // The Standard Webhooks schedule retries 5 seconds after the first failure.
    let received = f.mock.wait_for(2, WAIT + WAIT).await;
    assert_eq!(received.len(), 2);
    assert_eq!(
        (received[0].status, received[1].status),
        (500, 200),
        "failed, then delivered"
    );
    assert_eq!(
        received[0].headers["webhook-id"],
        received[1].headers["webhook-id"]
    );
    assert!(received[1].at.duration_since(received[0].at) >= Duration::from_secs(4));
    verify_with_referee(&secret, &received).expect("signatures verify");
    f.wait_for_sql("SELECT count(*) FROM jobs WHERE state = 'done'", 1)
        .await;

    let log = f.log(id).await;
    let attempts = log["deliveries"].as_array().expect("log");
    assert_eq!(attempts.len(), 2, "{log}");
    assert_eq!(attempts[0]["http_status"], 200);
    assert_eq!(attempts[0]["event"], "message.created");
    assert_eq!(attempts[1]["http_status"], 500);
    assert_eq!(attempts[1]["outcome"], "retry");
    let error = attempts[1]["error"].as_str().expect("error");
    assert!(error.starts_with("HTTP 500"), "{error}");
    assert!(error.len() < 1000, "the answer is capped in the log");
    assert!(attempts[0]["latency_ms"].as_i64().is_some());
    assert_eq!(
        log["health"],
        json!({"state": "healthy"}),
        "delivered at last"
    );

    // Replay from the log: a new job, same webhook-id.
    let job = attempts[0]["job_id"].as_i64().expect("job id");
    f.replay(id, job).await;
    let received = f.mock.wait_for(3, WAIT).await;
    assert_eq!(
        received[2].headers["webhook-id"],
        received[0].headers["webhook-id"]
    );
    assert_eq!(received[2].body, received[1].body);
}

/// A receiver's `Retry-After` is its own to choose, however large: it once overflowed the
/// runner's clock, and the panic stopped every delivery of every site until a restart (which
/// met the same job again). Now it counts for an hour at most, and the other endpoint's
/// deliveries go on.
#[tokio::test]
async fn a_huge_retry_after_waits_an_hour_and_stops_no_other_delivery() {
    let f = Fixture::start(&["--allow-private-networks"]).await;
    f.endpoint("/huge", &["message.created"]).await;
    f.endpoint("/other", &["message.created"]).await;
    f.mock
        .answer_with_retry_after("/huge", 500, &u64::MAX.to_string());
    let (mut visitor, _) = f.app.visitor(&f.site, None, 0).await;
    visitor.say("v1", "first").await;
    f.wait_for_sql(
        "SELECT count(*) FROM jobs WHERE state = 'queued' AND attempt = 1",
        1,
    )
    .await;
    visitor.say("v2", "second").await;
    wait_until(
        "the second message at the other endpoint",
        WAIT,
        async || {
            let bodies: Vec<String> = f
                .mock
                .received()
                .into_iter()
                .filter(|r| r.path == "/other")
                .map(|r| r.body)
                .collect();
            ok_if(bodies, |b| b.iter().any(|body| body.contains("second")))
        },
    )
    .await;
    let wait_ms = f.app.count(
        "SELECT j.run_at - a.finished_at FROM jobs j JOIN job_attempts a ON a.job_id = j.id \
         WHERE j.state = 'queued' AND j.attempt = 1",
    );
    let hour = 3_600_000;
    assert!(
        (hour - 5_000..=hour + 5_000).contains(&wait_ms),
        "waits an hour: {wait_ms} ms"
    );
}

#[tokio::test]
async fn a_410_disables_the_endpoint_and_redirects_are_not_followed() {
    let f = Fixture::start(&["--allow-private-networks"]).await;
    let (gone, _) = f.endpoint("/gone", &["message.created"]).await;
    let (moved, _) = f.endpoint("/moved", &["message.created"]).await;
    f.mock.answer("/gone", &[410]);
    f.mock.answer("/moved", &[302]);
    let (mut visitor, _) = f.app.visitor(&f.site, None, 0).await;
    visitor.say("v1", "first").await;
    f.wait_for_sql(
        &format!("SELECT count(*) FROM integrations WHERE id = {gone} AND is_enabled = 0"),
        1,
    )
    .await;
    f.wait_for_sql(
        &format!("SELECT count(*) FROM jobs WHERE integration_id = {moved} AND attempt >= 1 AND state = 'queued'"),
        1,
    )
    .await;
    let log = f.log(moved).await;
    let error = log["deliveries"][0]["error"].as_str().expect("error");
    assert!(error.contains("redirect"), "{error}");
    // Retried on its schedule: enabled, not broken, and failing, as its page says.
    assert_eq!(
        (&log["is_enabled"], &log["status"]),
        (&json!(true), &json!("ok"))
    );
    assert_eq!(log["health"]["state"], "failing", "{log}");
    assert_eq!(log["health"]["error"], error);
    assert_eq!(log["health"]["at"], log["deliveries"][0]["started_at"]);
    assert!(
        f.mock.received().iter().all(|r| r.path != "/elsewhere"),
        "the redirect was not followed"
    );
    // The endpoint is disabled by the delivery itself; its attempt is recorded with the
    // runner's next round.
    f.wait_for_sql(
        &format!(
            "SELECT count(*) FROM job_attempts a JOIN jobs j ON j.id = a.job_id \
              WHERE j.integration_id = {gone} AND a.http_status = 410"
        ),
        1,
    )
    .await;
    let log = f.log(gone).await;
    assert_eq!(log["is_enabled"], false);
    let (status, listed) = f
        .app
        .api(
            "GET",
            &format!("/api/v1/sites/{}/integrations", f.site),
            &f.admin,
            None,
        )
        .await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["integrations"][0]["is_enabled"], false);
    assert_eq!(listed["integrations"][0]["status"], "broken");
    assert_eq!(listed["integrations"][0]["health"]["state"], "blocked");
    let moved_listed = &listed["integrations"][1];
    assert_eq!(moved_listed["id"], moved);
    assert_eq!(moved_listed["health"]["state"], "failing", "{listed}");
    assert!(
        !listed.to_string().contains("whsec_"),
        "secrets are never listed"
    );
    assert_eq!(log["deliveries"][0]["http_status"], 410);

    visitor.say("v2", "second").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        f.app.count(&format!(
            "SELECT count(*) FROM jobs WHERE integration_id = {gone}"
        )),
        1,
        "a disabled endpoint gets no new deliveries"
    );
    assert_eq!(
        f.mock
            .received()
            .iter()
            .filter(|r| r.path == "/gone")
            .count(),
        1
    );

    retrying_waits_for_the_fix(&f, gone).await;
}

/// Retrying the deliveries of an endpoint a 410 turned off leaves them waiting for the fix
/// (running them could only fail them, and the fix would then find nothing to resume);
/// saving the endpoint again sends them.
async fn retrying_waits_for_the_fix(f: &Fixture, gone: i64) {
    let job = f.app.count(&format!(
        "SELECT id FROM jobs WHERE integration_id = {gone}"
    ));
    let blocked = format!("SELECT count(*) FROM jobs WHERE id = {job} AND state = 'blocked'");
    assert_eq!(f.app.count(&blocked), 1);
    let (status, answer) = f
        .app
        .api("POST", "/api/v1/jobs/retry", &f.admin, None)
        .await;
    assert_eq!(
        (status, answer["retried"].as_i64()),
        (200, Some(0)),
        "{answer}"
    );
    let one = format!("/api/v1/jobs/{job}/retry");
    let (status, answer) = f.app.api("POST", &one, &f.admin, None).await;
    assert_eq!(
        (status, &answer),
        (200, &json!({"retried": 0, "waiting": 1})),
        "{answer}"
    );
    assert_eq!(f.app.count(&blocked), 1, "still waiting");
    // A replay meanwhile waits too.
    let replay = format!("/api/v1/integrations/{gone}/deliveries/{job}/replay");
    let (status, answer) = f.app.api("POST", &replay, &f.admin, None).await;
    assert_eq!(status, 202, "{answer}");
    let waiting =
        format!("SELECT count(*) FROM jobs WHERE integration_id = {gone} AND state = 'blocked'");
    assert_eq!(f.app.count(&waiting), 2);
    let settings = json!({"url": f.mock.url("/gone"), "events": ["message.created"]});
    let path = format!("/api/v1/integrations/{gone}/webhook");
    let (status, answer) = f.app.api("PUT", &path, &f.admin, Some(settings)).await;
    assert_eq!(
        (status, answer["resumed_jobs"].as_i64()),
        (200, Some(2)),
        "{answer}"
    );
    f.wait_for_sql(
        &format!("SELECT count(*) FROM jobs WHERE integration_id = {gone} AND state = 'done'"),
        2,
    )
    .await;
}

#[tokio::test]
async fn the_ssrf_guard_refuses_private_addresses_unless_allowed() {
    let f = Fixture::start(&[]).await;
    for url in [
        f.mock.url("/hook"),
        format!("http://localhost:{}/hook", f.mock.addr.port()),
        "http://[::ffff:127.0.0.1]/hook".to_owned(),
        "http://169.254.169.254/latest/meta-data".to_owned(),
        "file:///etc/passwd".to_owned(),
    ] {
        let (status, answer) = f
            .app
            .api(
                "POST",
                &format!("/api/v1/sites/{}/integrations/webhooks", f.site),
                &f.admin,
                Some(json!({"url": url, "events": ["message.created"]})),
            )
            .await;
        assert_eq!(status, 422, "{url}: {answer}");
    }

    // A name that resolved to a public address when saved and to loopback now (DNS rebinding)
    // is refused at connect time: simulated by storing the URL directly.
    let conn = f.app.db();
    conn.execute(
        "INSERT INTO integrations (site_id, kind, name, config, secrets, created_at, updated_at) \
         SELECT id, 'webhook', 'Webhook', json_object('url', ?1, 'events', json_array('message.created')), \
                json_object('secret', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'), 0, 0 FROM sites",
        [format!("http://localhost:{}/hook", f.mock.addr.port())],
    )
    .expect("insert");
    let (mut visitor, _) = f.app.visitor(&f.site, None, 0).await;
    visitor.say("v1", "probe").await;
    f.wait_for_sql(
        "SELECT count(*) FROM job_attempts WHERE error LIKE '%private or special-purpose%'",
        1,
    )
    .await;
    assert!(f.mock.received().is_empty(), "nothing reached loopback");

    // With the per-install setting, the same URL is accepted, once: a second endpoint for it on
    // the same site is refused, so no event is delivered twice under two ids.
    let f = Fixture::start(&["--allow-private-networks"]).await;
    let (first, _) = f.endpoint("/hook", &["message.created"]).await;
    let (status, answer) = f
        .app
        .api(
            "POST",
            &format!("/api/v1/sites/{}/integrations/webhooks", f.site),
            &f.admin,
            Some(json!({"url": f.mock.url("/hook"), "events": ["conversation.closed"]})),
        )
        .await;
    assert_eq!(status, 409, "{answer}");
    assert_eq!(answer["error"]["code"], "conflict");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(&format!("(id {first})"))),
        "{answer}"
    );
    f.endpoint("/other", &["message.created"]).await;
}

/// Nor can another endpoint be moved onto a URL the site posts to, or reach it with a #fragment
/// (never sent, so it would post to the same place under a different-looking URL).
#[tokio::test]
async fn one_endpoint_per_url_holds_for_changes_and_a_fragment_is_refused() {
    let f = Fixture::start(&["--allow-private-networks"]).await;
    let (first, _) = f.endpoint("/hook", &["message.created"]).await;
    let (other, _) = f.endpoint("/other", &["message.created"]).await;
    let (status, answer) = f
        .app
        .api(
            "PUT",
            &format!("/api/v1/integrations/{other}/webhook"),
            &f.admin,
            Some(json!({"url": f.mock.url("/hook"), "events": ["message.created"]})),
        )
        .await;
    assert_eq!(status, 409, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(&format!("(id {first})"))),
        "{answer}"
    );
    let stored: String = f
        .app
        .db()
        .query_row(
            "SELECT json_extract(config, '$.url') FROM integrations WHERE id = ?1",
            [other],
            |row| row.get(0),
        )
        .expect("the endpoint");
    assert_eq!(
        stored,
        f.mock.url("/other"),
        "the refused change left it as it was"
    );
    let (status, answer) = f
        .app
        .api(
            "POST",
            &format!("/api/v1/sites/{}/integrations/webhooks", f.site),
            &f.admin,
            Some(json!({"url": format!("{}#again", f.mock.url("/hook")), "events": ["message.created"]})),
        )
        .await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(answer["error"]["code"], "url_refused");
    // An endpoint keeps its own URL when only its events change.
    let (status, answer) = f
        .app
        .api(
            "PUT",
            &format!("/api/v1/integrations/{first}/webhook"),
            &f.admin,
            Some(json!({"url": f.mock.url("/hook"), "events": ["conversation.closed"]})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
}

#[tokio::test]
async fn a_private_literal_and_a_name_resolving_to_loopback_are_both_blocked_with_the_reason() {
    let f = Fixture::start(&[]).await;
    // Stored directly, as if they had passed the check when saved: a literal private address
    // (refused before any connection) and a name that now resolves to loopback only.
    let conn = f.app.db();
    for (name, url) in [
        ("Literal", "http://10.0.0.5/hook".to_owned()),
        (
            "Rebound",
            format!("http://localhost:{}/hook", f.mock.addr.port()),
        ),
    ] {
        conn.execute(
            "INSERT INTO integrations (site_id, kind, name, config, secrets, created_at, updated_at) \
             SELECT id, 'webhook', ?1, json_object('url', ?2, 'events', json_array('message.created')), \
                    json_object('secret', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'), 0, 0 FROM sites",
            [name, url.as_str()],
        )
        .expect("insert");
    }
    let (mut visitor, _) = f.app.visitor(&f.site, None, 0).await;
    visitor.say("v1", "probe").await;
    wait_until("both jobs to be blocked", WAIT, async || {
        if f.app
            .count("SELECT count(*) FROM jobs WHERE state = 'blocked'")
            >= 2
        {
            return Ok(());
        }
        let jobs: Vec<(String, Option<String>)> = conn
            .prepare("SELECT state, last_error FROM jobs")
            .expect("prepare")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        Err(jobs)
    })
    .await;
    let mut statuses: Vec<(String, String, String)> = conn
        .prepare(
            "SELECT i.name, i.status || ': ' || i.last_error, j.last_error \
               FROM integrations i JOIN jobs j ON j.integration_id = i.id ORDER BY i.name",
        )
        .expect("prepare")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    statuses.sort();
    assert_eq!(statuses.len(), 2, "{statuses:?}");
    for (name, integration, job) in &statuses {
        let reason = "refused by the SSRF guard: the host resolves to a private or special-purpose";
        assert!(
            integration.starts_with(&format!("broken: {reason}")),
            "{name}: {integration}"
        );
        assert!(job.starts_with(reason), "{name}: {job}");
    }
    assert_eq!(
        f.app.count("SELECT count(*) FROM job_attempts"),
        2,
        "one attempt each, no retries"
    );
    assert!(f.mock.received().is_empty(), "nothing reached loopback");
}

#[tokio::test]
async fn a_retry_after_the_conversation_closed_carries_the_same_body_under_the_same_id() {
    let f = Fixture::start(&["--allow-private-networks"]).await;
    let (_, secret) = f
        .endpoint("/hook", &["conversation.created", "message.created"])
        .await;
    f.mock.answer("/hook", &[500]);
    let (mut visitor, _) = f.app.visitor(&f.site, None, 0).await;
    visitor.say("v1", "Hello").await;
    let first = f.mock.wait_for(1, WAIT).await;
    assert_eq!(first[0].status, 500);
    // Closed before the retry, which the schedule sends 5 seconds after the failure.
    f.close(f.conversation()).await;
    let received = f.mock.wait_for(3, WAIT + WAIT).await;
    let (failed, retried, message) = (&received[0], &received[1], &received[2]);
    assert_eq!(retried.status, 200);
    assert_eq!(retried.headers["webhook-id"], failed.headers["webhook-id"]);
    assert_eq!(retried.body, failed.body, "one webhook-id, one body");
    assert_eq!(payload(retried)["data"]["conversation"]["status"], "open");
    // The signature's timestamp is the attempt's own, so a receiver's five-minute tolerance
    // holds for late retries.
    assert!(signed_at(retried) >= signed_at(failed) + 4);
    // The message's event happened while the conversation was open too, and says so although
    // its first attempt (behind the retried event, in order) came after the closing.
    assert_eq!(payload(message)["type"], "message.created");
    assert_eq!(payload(message)["data"]["conversation"]["status"], "open");
    assert_eq!(
        payload(message)["data"]["conversation"]["closed_at"],
        Value::Null
    );
    verify_with_referee(&secret, &received).expect("every attempt verifies");
}

#[tokio::test]
async fn a_replay_after_the_conversation_closed_carries_the_original_body_and_id() {
    let f = Fixture::start(&["--allow-private-networks"]).await;
    let (id, secret) = f.endpoint("/hook", &["conversation.created"]).await;
    let (mut visitor, _) = f.app.visitor(&f.site, None, 0).await;
    visitor.say("v1", "Hello").await;
    f.mock.wait_for(1, WAIT).await;
    f.wait_for_sql("SELECT count(*) FROM jobs WHERE state = 'done'", 1)
        .await;
    f.close(f.conversation()).await;
    let job = f.app.count("SELECT max(id) FROM jobs WHERE state = 'done'");
    f.replay(id, job).await;
    let received = f.mock.wait_for(2, WAIT).await;
    let (original, replayed) = (&received[0], &received[1]);
    assert_eq!(
        replayed.headers["webhook-id"],
        original.headers["webhook-id"]
    );
    assert_eq!(replayed.body, original.body, "one webhook-id, one body");
    assert_eq!(payload(replayed)["data"]["conversation"]["status"], "open");
    assert!(signed_at(replayed) >= signed_at(original));
    verify_with_referee(&secret, &received).expect("the replay verifies");
}

/// A message's files reach a receiver as the API lists them (`id`, `name`, `type`, `size`), with
/// `url` the absolute API address a token reads the bytes from; `body` still names them.
#[tokio::test]
async fn a_message_with_files_lists_them_as_the_api_does_with_absolute_urls() {
    let f = Fixture::start(&["--allow-private-networks"]).await;
    f.endpoint("/hook", &["message.created"]).await;
    let mut visitor = crate::attachments::visitor(&f.app, &f.site).await;
    let (status, file) = crate::attachments::upload(
        &f.app,
        &f.site,
        &visitor.token,
        "notes.txt",
        b"twelve bytes".to_vec(),
    )
    .await;
    assert_eq!(status, 201, "{file}");
    let id = file["id"].as_str().expect("id");
    let ack = crate::attachments::send_with(&mut visitor.widget, "v1", "See the file", &[id]).await;
    assert_eq!(ack["type"], "ack", "{ack}");

    let received = f.mock.wait_for(1, WAIT).await;
    let data = &payload(&received[0])["data"];
    assert_eq!(
        data["message"]["body"],
        "See the file\n[file: notes.txt, 12 bytes]"
    );
    let conversation = data["conversation"]["id"].as_i64().expect("id");
    let (status, listed) = f
        .app
        .api(
            "GET",
            &format!("/api/v1/conversations/{conversation}/messages"),
            &f.admin,
            None,
        )
        .await;
    assert_eq!(status, 200, "{listed}");
    let mut expected = listed["messages"][0]["attachments"].clone();
    let path = expected[0]["url"].as_str().expect("url").to_owned();
    assert_eq!(
        path,
        format!("/api/v1/conversations/{conversation}/attachments/{id}")
    );
    let (public_url, _) = data["conversation"]["url"]
        .as_str()
        .expect("url")
        .rsplit_once("/conversations/")
        .expect("a conversation URL");
    expected[0]["url"] = json!(format!("{public_url}{path}"));
    assert_eq!(data["message"]["attachments"], expected);
    assert_eq!(expected[0]["name"], "notes.txt");
    assert_eq!(expected[0]["size"], 12);

    let bytes = f
        .app
        .http
        .get(&path)
        .header("authorization", format!("Bearer {}", f.admin))
        .send()
        .await
        .expect("an answer");
    assert_eq!(bytes.status(), 200);
    assert_eq!(&bytes.bytes().await.expect("bytes")[..], b"twelve bytes");
}

/// Turning an integration off and on, and deleting it, through the API as the page's buttons
/// do: off plans nothing for it, on sends again, delete removes it; agents are refused. Turning
/// off or on what already is records nothing in the audit log.
#[tokio::test]
async fn the_api_turns_an_integration_off_and_on_and_deletes_it() {
    let f = Fixture::start(&["--allow-private-networks"]).await;
    let (id, _) = f.endpoint("/hook", &["message.created"]).await;
    let call = async |method: &str, path: &str, token: &str| {
        let path = format!("/api/v1/integrations/{id}{path}");
        f.app.api(method, &path, token, None).await
    };
    let agent = f.app.add_agent_token("Bo");
    assert_eq!(call("POST", "/turn-off", &agent).await.0, 403);
    // A call for another kind names nothing (404) and says what the id is instead.
    let slack = format!("/api/v1/integrations/{id}/slack");
    let (status, wrong) = f.app.api("PUT", &slack, &f.admin, Some(json!({}))).await;
    assert_eq!(
        (status, &wrong["error"]["code"]),
        (404, &json!("not_found"))
    );
    assert_eq!(
        wrong["error"]["message"],
        format!("Integration {id} is a webhook endpoint, not a Slack integration.")
    );
    assert_eq!(call("DELETE", "", &agent).await.0, 403);

    // Turned off twice (a retried call): the second changes nothing and records nothing.
    for _ in 0..2 {
        let (status, off) = call("POST", "/turn-off", &f.admin).await;
        assert_eq!((status, &off["is_enabled"]), (200, &json!(false)), "{off}");
    }
    // Off, nothing is planned for it (docs/integrations/webhooks.md).
    let (mut visitor, _) = f.app.visitor(&f.site, None, 0).await;
    visitor.say("v1", "while off").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(f.app.count("SELECT count(*) FROM jobs"), 0);
    assert!(f.mock.received().is_empty(), "nothing sent while off");
    let log = f.log(id).await;
    assert_eq!(
        log["health"],
        json!({"state": "blocked", "reason": "turned off by an admin"})
    );

    let (status, on) = call("POST", "/turn-on", &f.admin).await;
    assert_eq!(status, 200, "{on}");
    assert_eq!(
        (&on["is_enabled"], &on["resumed_jobs"]),
        (&json!(true), &json!(0))
    );
    let (status, again) = call("POST", "/turn-on", &f.admin).await;
    assert_eq!(
        (status, &again["resumed_jobs"]),
        (200, &json!(0)),
        "{again}"
    );
    visitor.say("v2", "back on").await;
    let received = f.mock.wait_for(1, WAIT).await;
    assert_eq!(payload(&received[0])["data"]["message"]["body"], "back on");

    let (status, deleted) = call("DELETE", "", &f.admin).await;
    assert_eq!(
        (status, &deleted["deleted"]),
        (200, &json!(true)),
        "{deleted}"
    );
    assert_eq!(call("DELETE", "", &f.admin).await.0, 404, "gone");
    assert_eq!(
        f.app.count(
            "SELECT count(*) FROM audit_events WHERE action IN \
             ('integration.disabled', 'integration.enabled', 'integration.deleted')"
        ),
        3
    );
}

/// A delivery retrying on the Standard Webhooks schedule (5 minutes after its second failure):
/// turned off and on again, it goes out at once, as the page says ("Waiting deliveries go out
/// now"), not when its retry was due. The runner used to keep it at that time.
#[tokio::test]
async fn a_retrying_delivery_goes_out_at_once_when_its_webhook_is_turned_on_again() {
    let f = Fixture::start(&["--allow-private-networks"]).await;
    let (id, _) = f.endpoint("/hook", &["message.created"]).await;
    f.mock.answer("/hook", &[500, 500]);
    let (mut visitor, _) = f.app.visitor(&f.site, None, 0).await;
    visitor.say("v1", "after the outage").await;
    f.mock.wait_for(2, WAIT + WAIT).await;
    f.wait_for_sql(
        "SELECT count(*) FROM jobs WHERE attempt = 2 AND state = 'queued' \
         AND run_at > (unixepoch('subsec') * 1000) + 60000",
        1,
    )
    .await;

    for action in ["turn-off", "turn-on"] {
        let path = format!("/api/v1/integrations/{id}/{action}");
        let (status, answer) = f.app.api("POST", &path, &f.admin, None).await;
        assert_eq!(status, 200, "{answer}");
    }
    let received = f.mock.wait_for(3, Duration::from_secs(10)).await;
    assert_eq!(received.len(), 3, "not sent within 10 s of turning it on");
    assert_eq!(received[2].status, 200);
    assert_eq!(
        payload(&received[2])["data"]["message"]["body"],
        "after the outage"
    );
}

/// A delivery waiting for its next try keeps the endpoint failing although a newer one went out:
/// it is on no other page while it retries (docs/admin.md, "Destination health").
#[tokio::test]
async fn a_retrying_delivery_keeps_the_endpoint_failing_after_a_newer_one_went_out() {
    let f = Fixture::start(&["--allow-private-networks"]).await;
    let (id, _) = f.endpoint("/hook", &["message.created"]).await;
    f.mock.answer("/hook", &[500, 500]);
    let (mut first, _) = f.app.visitor(&f.site, None, 0).await;
    first.say("v1", "retry me").await;
    // Its first try and the one 5 seconds later fail; the next is minutes away.
    f.wait_for_sql(
        "SELECT count(*) FROM job_attempts WHERE outcome = 'retry'",
        2,
    )
    .await;
    let (mut second, _) = f.app.visitor(&f.site, None, 0).await;
    second.say("v2", "I go out").await;
    f.wait_for_sql("SELECT count(*) FROM jobs WHERE state = 'done'", 1)
        .await;

    let log = f.log(id).await;
    assert_eq!(log["deliveries"][0]["outcome"], "delivered", "{log}");
    let retrying = &log["deliveries"][1];
    assert_eq!(retrying["outcome"], "retry", "{log}");
    assert_eq!(log["health"]["state"], "failing", "{log}");
    assert_eq!(log["health"]["given_up"], false, "{log}");
    assert_eq!(log["health"]["error"], retrying["error"]);
    assert_eq!(log["health"]["at"], retrying["started_at"]);
}
