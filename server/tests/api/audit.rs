//! The audit log (issue #14): each audited action writes exactly one event with the right actor,
//! target and address; failed sign-ins are grouped per minute; no secret reaches the table;
//! agents cannot read it; old events are pruned. Over real HTTP, the real CLI and real SQLite.

use std::process::Command;
use std::time::Duration;

use porch::loadtest::WebhookMock;
use porch::metrics::SamplerTiming;
use serde_json::json;

use crate::helpers::{Answer, TestApp, WAIT, ok_if, wait_until};
use crate::inbox::{Browser, PASSWORD, add_user, form, send, setup_admin, sign_in, signed_in_from};

/// An event as (actor, target type, target label, ip, count).
type Event = (String, Option<String>, Option<String>, String, i64);

/// The events with `action`, oldest first.
fn events(app: &TestApp, action: &str) -> Vec<Event> {
    let db = app.db();
    let mut stmt = db
        .prepare(
            "SELECT actor, target_type, target_label, ip, count FROM audit_events \
             WHERE action = ?1 ORDER BY id",
        )
        .expect("prepare");
    stmt.query_map([action], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    })
    .expect("query")
    .collect::<Result<_, _>>()
    .expect("rows")
}

fn one(app: &TestApp, action: &str) -> Event {
    let mut found = events(app, action);
    assert_eq!(found.len(), 1, "exactly one {action}: {found:?}");
    found.remove(0)
}

/// The site form's fields besides name and origins, at their defaults.
pub(crate) const SITE_FIELDS: [(&str, &str); 7] = [
    ("greeting", "Hi!"),
    ("color", "#2563eb"),
    ("position", "right"),
    ("visitor_messages_per_minute", "30"),
    ("visitor_burst", "10"),
    ("flood_messages_per_minute", "600"),
    ("flood_conversations_per_minute", "60"),
];

fn cli(app: &TestApp, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_porch"))
        .arg("--data-dir")
        .arg(app.data_dir.path())
        .args(args)
        .output()
        .expect("run porch");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A form post as the signed-in admin sends it; the site form gets its other fields.
async fn admin_post(app: &TestApp, admin: &Browser, path: &str, fields: &[(&str, &str)]) -> Answer {
    let mut all = vec![("csrf", admin.csrf.as_str())];
    all.extend_from_slice(fields);
    if path.starts_with("/sites") && !path.ends_with("/delete") {
        all.extend_from_slice(&SITE_FIELDS);
    }
    let answer = send(app, "POST", path, &admin.cookie, Some(&form(&all))).await;
    assert!(
        answer.status == 303 || answer.status == 200,
        "{path}: {}",
        answer.status
    );
    answer
}

#[tokio::test]
async fn site_changes_write_one_event_each_with_actor_target_and_address() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let me = "ana@example.com".to_owned();
    let local = "127.0.0.1".to_owned();
    assert_eq!(one(&app, "user.created").0, me);
    assert_eq!(one(&app, "session.signed_in").3, local);

    let post =
        async |path: &str, fields: &[(&str, &str)]| admin_post(&app, &admin, path, fields).await;
    let created = post(
        "/sites",
        &[("name", "Shop"), ("origins", "https://shop.example.com")],
    )
    .await;
    let key = created
        .header("location")
        .expect("to the site")
        .split('/')
        .nth(2)
        .expect("key");
    let key = key.split('?').next().expect("key").to_owned();
    post(
        &format!("/sites/{key}"),
        &[
            ("name", "Shop two"),
            ("origins", "https://shop.example.com"),
        ],
    )
    .await;
    assert_eq!(
        one(&app, "site.created"),
        (
            me.clone(),
            Some("site".into()),
            Some("Shop".into()),
            local.clone(),
            1
        )
    );
    assert_eq!(one(&app, "site.updated").2.as_deref(), Some("Shop two"));
    post(&format!("/sites/{key}/delete"), &[("confirm", "Shop two")]).await;
    assert_eq!(one(&app, "site.deleted").2.as_deref(), Some("Shop two"));

    // The page and the API show them, newest first, filtered by action prefix.
    let page = send(&app, "GET", "/audit?action=site", &admin.cookie, None).await;
    assert_eq!(page.status, 200);
    let (deleted, created) = (
        page.body.find("<code>site.deleted</code>"),
        page.body.find("<code>site.created</code>"),
    );
    assert!(deleted.is_some() && deleted < created, "{}", page.body);
    assert!(
        !page.body.contains("<code>session.signed_in</code>"),
        "filtered out"
    );
}

#[tokio::test]
async fn team_changes_write_one_event_each_with_actor_target_and_address() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let me = "ana@example.com".to_owned();
    let local = "127.0.0.1".to_owned();
    let post =
        async |path: &str, fields: &[(&str, &str)]| admin_post(&app, &admin, path, fields).await;
    post(
        "/team/invite",
        &[
            ("email", "bo@example.com"),
            ("name", "Bo"),
            ("role", "agent"),
        ],
    )
    .await;
    let bo = app.count("SELECT id FROM users WHERE email = 'bo@example.com'");
    post(&format!("/team/{bo}/role"), &[("role", "admin")]).await;
    // The role Bo has now: nothing to change, nothing recorded (one event below, not two).
    let again = post(&format!("/team/{bo}/role"), &[("role", "admin")]).await;
    assert_eq!(
        again.header("location"),
        Some("/team?notice=role-unchanged")
    );
    post(&format!("/team/{bo}/disable"), &[]).await;
    post(&format!("/team/{bo}/enable"), &[]).await;
    for action in [
        "user.invited",
        "user.role_changed",
        "user.disabled",
        "user.enabled",
    ] {
        assert_eq!(
            one(&app, action),
            (
                me.clone(),
                Some("user".into()),
                Some("bo@example.com".into()),
                local.clone(),
                1
            ),
            "{action}"
        );
    }
    let detail = app.db().query_row(
        "SELECT detail FROM audit_events WHERE action = 'user.role_changed'",
        [],
        |r| r.get::<_, String>(0),
    );
    assert_eq!(detail.expect("detail"), r#"{"from":"agent","to":"admin"}"#);
    // Nobody changes their own role, even with another admin there (Bo): nothing recorded.
    let ana = app.count("SELECT id FROM users WHERE email = 'ana@example.com'");
    let own_role = form(&[("csrf", admin.csrf.as_str()), ("role", "agent")]);
    let own = send(
        &app,
        "POST",
        &format!("/team/{ana}/role"),
        &admin.cookie,
        Some(&own_role),
    )
    .await;
    assert_eq!(own.status, 409, "{}", own.body);
    assert!(
        own.body
            .contains("You cannot change your own role: another admin can."),
        "{}",
        own.body
    );
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE action = 'user.role_changed'"),
        1
    );

    let changed = post(
        "/account/password",
        &[("current", PASSWORD), ("new", "another long password")],
    )
    .await;
    assert_eq!(changed.status, 303);
    assert_eq!(one(&app, "user.password_changed").0, me);

    let token = app.add_user_token("Auditor", "admin");
    let (status, body) = app
        .api(
            "GET",
            "/api/v1/audit?action=user.role_changed",
            &token,
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["events"][0]["target"]["label"], "bo@example.com");
    assert_eq!(body["events"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn failed_sign_ins_are_recorded_and_grouped_per_email_address_and_minute() {
    let app = TestApp::spawn(&[]).await;
    add_user(&app, "bo@example.com", "agent");
    for _ in 0..3 {
        assert_eq!(
            sign_in(&app, "bo@example.com", "wrong password!")
                .await
                .status,
            401
        );
    }
    assert_eq!(
        sign_in(&app, "nobody@example.com", "wrong password!")
            .await
            .status,
        401
    );
    let bo = events(&app, "session.sign_in_failed");
    let total: i64 = bo
        .iter()
        .filter(|e| e.0 == "bo@example.com")
        .map(|e| e.4)
        .sum();
    let rows = bo.iter().filter(|e| e.0 == "bo@example.com").count();
    assert_eq!(total, 3, "{bo:?}");
    assert!(
        rows <= 2,
        "one row a minute (two if the minute turned): {bo:?}"
    );
    assert_eq!(bo.iter().filter(|e| e.0 == "nobody@example.com").count(), 1);
    assert!(bo.iter().all(|e| e.3 == "127.0.0.1"));
    // The account is linked when it exists; a made-up email is kept as typed, unlinked.
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE actor = 'nobody@example.com' AND actor_id IS NULL"),
        1
    );
    assert_eq!(
        app.count(
            "SELECT count(*) FROM audit_events WHERE actor = 'bo@example.com' AND actor_id IS NULL"
        ),
        0
    );
}

#[tokio::test]
async fn no_secret_reaches_the_audit_log() {
    let mock = WebhookMock::start(([127, 0, 0, 1], 0).into())
        .await
        .expect("receiver");
    let app = TestApp::spawn(&["--allow-private-networks"]).await;
    let admin = app.add_user_token("Admin", "admin");
    let site = app.add_site("Shop");
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/sites/{site}/integrations/webhooks"),
            &admin,
            Some(
                json!({"url": mock.url("/hook?key=url-secret-123"), "events": ["message.created"]}),
            ),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let id = answer["id"].as_i64().expect("id");
    let (status, rotated) = app
        .api(
            "POST",
            &format!("/api/v1/integrations/{id}/webhook/rotate"),
            &admin,
            None,
        )
        .await;
    assert_eq!(status, 200, "{rotated}");
    let user = add_user(&app, "bo@example.com", "agent");
    let token = cli(
        &app,
        &["token", "add", "--user", "bo@example.com", "--name", "ci"],
    );
    assert_eq!(one(&app, "token.created").0, "cli");
    assert_eq!(one(&app, "token.created").3, "cli");
    let token_id = app.count(&format!(
        "SELECT id FROM api_tokens WHERE user_id = {}",
        user.0
    ));
    cli(&app, &["token", "revoke", &token_id.to_string()]);
    assert_eq!(one(&app, "token.revoked").2.as_deref(), Some("ci"));
    // A second revoke says the token was revoked already, and when and by whom, from the log.
    let again = revoke(&app, token_id);
    let said = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{said}");
    assert!(
        said.starts_with(&format!(
            "error: API token {token_id} was revoked already, at 20"
        )) && said.trim_end().ends_with(" by cli"),
        "{said}"
    );
    let created = one(&app, "integration.created");
    assert_eq!(created.2.as_deref(), Some("webhook"));
    assert_eq!(created.3, "127.0.0.1");
    assert_eq!(one(&app, "integration.secret_rotated").0, created.0);

    let secrets = [
        answer["secret"].as_str().expect("secret"),
        rotated["secret"].as_str().expect("secret"),
        "url-secret-123",
        token.as_str(),
        admin.as_str(),
        PASSWORD,
    ];
    let db = app.db();
    let mut stmt = db.prepare("SELECT * FROM audit_events").expect("prepare");
    let columns = stmt.column_count();
    let all: Vec<String> = stmt
        .query_map([], |r| {
            Ok((0..columns)
                .map(|i| format!("{:?}", r.get_ref(i).expect("column")))
                .collect::<Vec<_>>()
                .join("|"))
        })
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert!(all.len() >= 4, "{all:?}");
    for row in &all {
        for secret in secrets {
            assert!(!row.contains(secret), "{row} holds a secret");
        }
    }
}

#[tokio::test]
async fn agents_cannot_read_the_audit_log() {
    let app = TestApp::spawn(&[]).await;
    add_user(&app, "bo@example.com", "agent");
    let agent = signed_in_from(&app, &sign_in(&app, "bo@example.com", PASSWORD).await).await;
    assert_eq!(
        send(&app, "GET", "/audit", &agent.cookie, None)
            .await
            .status,
        403
    );
    let token = app.add_agent_token("Cy");
    assert_eq!(app.api("GET", "/api/v1/audit", &token, None).await.0, 403);
    assert_eq!(
        send(&app, "GET", "/audit", "", None).await.status,
        303,
        "to sign in"
    );
}

#[tokio::test]
async fn events_past_the_retention_are_pruned() {
    let app = TestApp::spawn_configured(&["--audit-retention", "2days"], |config| {
        config.sampler = SamplerTiming {
            every: Duration::from_millis(50),
            rollup_every: Duration::from_millis(200),
        };
    })
    .await;
    let now = porch::clock::now_ms();
    for (actor, at) in [("old", now - 3 * 86_400_000), ("recent", now - 86_400_000)] {
        app.db()
            .execute(
                "INSERT INTO audit_events (at, actor, action, ip, last_at) \
                 VALUES (?1, ?2, 'site.updated', 'cli', ?1)",
                rusqlite::params![at, actor],
            )
            .expect("insert");
    }
    wait_until(
        "the old event pruned, the recent one kept",
        WAIT,
        async || {
            let left = (
                app.count("SELECT count(*) FROM audit_events WHERE actor = 'old'"),
                app.count("SELECT count(*) FROM audit_events WHERE actor = 'recent'"),
            );
            ok_if(left, |l| *l == (0, 1))
        },
    )
    .await;
}

#[tokio::test]
async fn signing_out_is_recorded_with_the_user_and_address() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let fields = form(&[("csrf", admin.csrf.as_str())]);
    let answer = send(&app, "POST", "/logout", &admin.cookie, Some(&fields)).await;
    assert_eq!(answer.status, 303);
    assert_eq!(
        one(&app, "session.signed_out"),
        (
            "ana@example.com".to_owned(),
            Some("user".into()),
            Some("ana@example.com".into()),
            "127.0.0.1".to_owned(),
            1
        )
    );
}

#[tokio::test]
async fn a_new_reset_link_is_recorded_with_its_kind_never_its_token() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let bo = add_user(&app, "bo@example.com", "agent");
    let answer = admin_post(&app, &admin, &format!("/team/{bo}/link"), &[]).await;
    let link = answer
        .body
        .split("/password-resets/")
        .nth(1)
        .and_then(|rest| rest.split(['"', '<']).next())
        .expect("a reset link on the page")
        .to_owned();
    let event = one(&app, "user.link_created");
    assert_eq!(event.0, "ana@example.com");
    assert_eq!(event.2.as_deref(), Some("bo@example.com"));
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE action = 'user.link_created' AND detail = '{\"kind\":\"reset\"}'"),
        1
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM audit_events WHERE detail LIKE '%{link}%'"
        )),
        0
    );

    // A disabled account gets no link (it could not be used, and would work once enabled):
    // refused with the reason, nothing made or recorded.
    admin_post(&app, &admin, &format!("/team/{bo}/disable"), &[]).await;
    let csrf = form(&[("csrf", admin.csrf.as_str())]);
    let link = format!("/team/{bo}/link");
    let refused = send(&app, "POST", &link, &admin.cookie, Some(&csrf)).await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert!(
        refused
            .body
            .contains("This account is disabled: enable it first"),
        "{}",
        refused.body
    );
    assert!(!refused.body.contains("/password-resets/"));
    assert!(
        !refused.body.contains("Reset link for Bo"),
        "no button for it"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE action = 'user.link_created'"),
        1
    );
}

#[tokio::test]
async fn throttled_sign_ins_are_recorded_and_grouped_like_failures() {
    let app = TestApp::spawn(&[]).await;
    add_user(&app, "bo@example.com", "agent");
    let mut statuses = Vec::new();
    for _ in 0..8 {
        statuses.push(
            sign_in(&app, "bo@example.com", "wrong password!")
                .await
                .status,
        );
    }
    let throttled = statuses.iter().filter(|s| **s == 429).count();
    assert!(throttled >= 3, "{statuses:?}");
    let events = events(&app, "session.sign_in_throttled");
    let total: i64 = events.iter().map(|e| e.4).sum();
    assert_eq!(
        usize::try_from(total).expect("count"),
        throttled,
        "{events:?}"
    );
    assert!(events.len() <= 2, "one row a minute: {events:?}");
    assert!(
        events
            .iter()
            .all(|e| e.0 == "bo@example.com" && e.3 == "127.0.0.1")
    );
}

/// An address over its own limit typing a new made-up email each time adds one row a minute,
/// not one per email: the emails are the attacker's choice.
#[tokio::test]
async fn a_throttled_address_typing_made_up_emails_adds_one_row_a_minute() {
    let app = TestApp::spawn(&[]).await;
    add_user(&app, "bo@example.com", "agent");
    let mut statuses = Vec::new();
    for n in 0..40 {
        statuses.push(
            sign_in(&app, &format!("guess{n}@example.com"), "wrong password!")
                .await
                .status,
        );
    }
    let throttled = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(throttled, 20, "20 failures per address first: {statuses:?}");
    let events = events(&app, "session.sign_in_throttled");
    assert!(events.len() <= 2, "one row a minute: {events:?}");
    assert!(
        events
            .iter()
            .all(|e| e.0 == "(any email)" && e.3 == "127.0.0.1"),
        "{events:?}"
    );
    let total: i64 = events.iter().map(|e| e.4).sum();
    assert_eq!(total, 20);
    // The failures before the limit are each recorded with the email typed.
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE action = 'session.sign_in_failed'"),
        20
    );
}

/// `porch token revoke ID` on the server's data directory, as an operator runs it.
fn revoke(app: &TestApp, id: i64) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_porch"))
        .arg("--data-dir")
        .arg(app.data_dir.path())
        .args(["token", "revoke", &id.to_string()])
        .output()
        .expect("run porch")
}

/// A token that went with its user's access (disabled, removed) is said to have gone so by
/// `porch token revoke`, not never to have existed: its making is in the audit log.
#[tokio::test]
async fn revoking_a_token_gone_with_its_user_says_so() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let bo = add_user(&app, "bo@example.com", "agent");
    cli(
        &app,
        &[
            "token",
            "add",
            "--user",
            "bo@example.com",
            "--name",
            "second",
        ],
    );
    let second = app.count("SELECT max(id) FROM api_tokens");
    let disable = form(&[("csrf", &admin.csrf)]);
    let path = format!("/team/{}/disable", bo.0);
    let disabled = send(&app, "POST", &path, &admin.cookie, Some(&disable)).await;
    assert_eq!(disabled.status, 303, "{}", disabled.body);
    let gone = revoke(&app, second);
    let said = String::from_utf8_lossy(&gone.stderr);
    assert_eq!(gone.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "API token {second} no longer exists: it went when its user (bo@example.com) was \
             disabled or removed"
        )),
        "{said}"
    );
}
