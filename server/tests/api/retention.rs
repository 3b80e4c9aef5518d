//! Retention (issue #18, docs/privacy.md): a site's retention deletes exactly the conversations
//! past its cutoff, on the maintenance loop's own time, and is read and set over the API.

use std::time::Duration;

use porch::clock::now_ms;
use rusqlite::params;

use crate::helpers::{TestApp, WAIT, wait_until};
use crate::privacy::{Chat, chat, exists};

const DAY_MS: i64 = 24 * 60 * 60 * 1000;

/// Sets a conversation's last activity (and its messages' times) to `at`.
fn last_active(app: &TestApp, conversation: i64, at: i64) {
    let db = app.db();
    db.execute(
        "UPDATE conversations SET last_message_at = ?2, created_at = ?2 WHERE id = ?1",
        params![conversation, at],
    )
    .expect("backdate");
    db.execute(
        "UPDATE messages SET created_at = ?2 WHERE conversation_id = ?1",
        params![conversation, at],
    )
    .expect("backdate messages");
}

/// Adds a delivery job naming the message and one naming the conversation, with an attempt.
fn add_jobs(app: &TestApp, chat: &Chat) {
    let db = app.db();
    for args in [
        format!(r#"{{"message_id":{}}}"#, chat.message),
        format!(r#"{{"conversation_id":{}}}"#, chat.conversation),
    ] {
        db.execute(
            "INSERT INTO jobs (lane, kind, args, state, max_attempts, run_at, created_at, \
             finished_at) VALUES ('email', 'email.transcript', ?1, 'done', 1, 0, 0, 0)",
            [args],
        )
        .expect("job");
        db.execute(
            "INSERT INTO job_attempts (job_id, seq, attempt, started_at, finished_at, outcome) \
             VALUES (last_insert_rowid(), 1, 1, 0, 0, 'delivered')",
            [],
        )
        .expect("attempt");
    }
}

fn jobs_of(app: &TestApp, chat: &Chat) -> i64 {
    app.count(&format!(
        "SELECT count(*) FROM jobs WHERE json_extract(args, '$.message_id') = {} \
            OR json_extract(args, '$.conversation_id') = {}",
        chat.message, chat.conversation
    ))
}

#[tokio::test]
async fn retention_deletes_exactly_the_conversations_past_the_cutoff() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let other_site = app.add_site("Keeps everything");
    app.db()
        .execute(
            "UPDATE sites SET retention_days = 30 WHERE key = ?1",
            [&site],
        )
        .expect("retention");
    let now = now_ms();
    let cutoff = now - 30 * DAY_MS;

    // Due: last message one second before the cutoff, and exactly at it.
    let before = chat(&app, &site, "one second before the cutoff").await;
    last_active(&app, before.conversation, cutoff - 1000);
    add_jobs(&app, &before);
    let at = chat(&app, &site, "exactly at the cutoff").await;
    last_active(&app, at.conversation, cutoff);
    // Kept: one second after the cutoff; closed after it though its last message is older; a
    // site without retention; a visitor's other, recent conversation keeps the visitor.
    let after = chat(&app, &site, "one second after the cutoff").await;
    last_active(&app, after.conversation, cutoff + 1000);
    add_jobs(&app, &after);
    let closed = chat(&app, &site, "closed recently").await;
    last_active(&app, closed.conversation, cutoff - DAY_MS);
    app.db()
        .execute(
            "UPDATE conversations SET status = 'closed', closed_at = ?2 WHERE id = ?1",
            params![closed.conversation, cutoff + 1000],
        )
        .expect("close");
    let elsewhere = chat(&app, &other_site, "no retention here").await;
    last_active(&app, elsewhere.conversation, cutoff - 365 * DAY_MS);
    let returning = chat(&app, &site, "an old conversation").await;
    last_active(&app, returning.conversation, cutoff - DAY_MS);
    let db = app.db();
    db.execute(
        "INSERT INTO conversations (site_id, visitor_id, status, created_at, last_message_at) \
         SELECT site_id, visitor_id, 'closed', ?2, ?2 FROM conversations WHERE id = ?1",
        params![returning.conversation, now],
    )
    .expect("a recent conversation");
    db.execute(
        "UPDATE conversations SET status = 'closed', closed_at = ?2 WHERE id = ?1",
        params![returning.conversation, cutoff - DAY_MS],
    )
    .expect("close the old one");
    let messages_before = app.count("SELECT count(*) FROM messages");

    let server = app.server.as_ref().expect("running");
    let deleted = porch::privacy::purge_due(&server.app.writer, &server.app.readers, now)
        .await
        .expect("purge");

    for gone in [&before, &at] {
        assert!(!exists(&app, "conversations", gone.conversation));
        assert!(!exists(&app, "messages", gone.message));
        assert!(!exists(&app, "visitors", gone.visitor));
        assert_eq!(jobs_of(&app, gone), 0);
    }
    assert!(!exists(&app, "conversations", returning.conversation));
    assert!(exists(&app, "visitors", returning.visitor));
    for kept in [&after, &closed, &elsewhere] {
        assert!(exists(&app, "conversations", kept.conversation));
        assert!(exists(&app, "messages", kept.message));
        assert!(exists(&app, "visitors", kept.visitor));
    }
    assert_eq!(jobs_of(&app, &after), 2);
    assert_eq!(
        app.count("SELECT count(*) FROM job_attempts"),
        2,
        "only the kept jobs' attempts remain"
    );
    assert_eq!(deleted.messages, 3);
    assert_eq!(deleted.conversations, 3);
    assert_eq!(deleted.visitors, 2);
    assert_eq!(
        app.count("SELECT count(*) FROM messages"),
        messages_before - 3
    );
    assert!(!before.token.is_empty());
}

#[tokio::test]
async fn the_maintenance_loop_purges_due_conversations_on_its_own() {
    let app = TestApp::spawn_configured(&[], |config| {
        config.retention_every = Duration::from_millis(50);
    })
    .await;
    let site = app.add_site("Shop");
    app.db()
        .execute(
            "UPDATE sites SET retention_days = 1 WHERE key = ?1",
            [&site],
        )
        .expect("retention");
    // Both first: a conversation id freed by the purge could otherwise be given to the next.
    let old = chat(&app, &site, "two days old").await;
    let fresh = chat(&app, &site, "just now").await;
    last_active(&app, old.conversation, now_ms() - 2 * DAY_MS);
    wait_until("the old conversation to be purged", WAIT, async || {
        if exists(&app, "conversations", old.conversation) {
            Err("still there")
        } else {
            Ok(())
        }
    })
    .await;
    assert!(exists(&app, "conversations", fresh.conversation));
    // Nor is the purged text left in the running server's files: the WAL, which held the rows'
    // older pages, is emptied after the purge (before, it stayed there until later writes).
    let dir = app.data_dir.path();
    let holds = |name: &str, text: &str| {
        let file = std::fs::read(dir.join(name)).unwrap_or_default();
        file.windows(text.len()).any(|w| w == text.as_bytes())
    };
    wait_until("the purged text to leave the WAL", WAIT, async || {
        if holds("porch.db-wal", "two days old") {
            Err("still in the WAL")
        } else {
            Ok(())
        }
    })
    .await;
    assert!(!holds("porch.db", "two days old"), "in the database file");
    assert!(holds("porch.db", "just now"), "the scan finds what is kept");
    assert_eq!(
        app.db()
            .query_row("PRAGMA auto_vacuum", [], |r| r.get::<_, i64>(0))
            .expect("mode"),
        2,
        "a new database gives freed pages back in steps"
    );
}

/// Out of range, below and beyond what a Rust integer type holds, a retention is told the field's
/// own range, not a type's ("from 0 to 4294967295").
#[tokio::test]
async fn a_retention_out_of_range_is_told_the_fields_range() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let admin = app.add_user_token("Ana", "admin");
    let path = format!("/api/v1/sites/{site}/retention");
    for days in [0, -1, 4_294_967_296_i64] {
        let body = Some(serde_json::json!({"retention_days": days}));
        let (status, answer) = app.api("PUT", &path, &admin, body).await;
        assert_eq!(status, 422);
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("from 1 to 36500"), "{days}: {message}");
    }
}

#[tokio::test]
async fn an_admin_reads_and_sets_a_sites_retention_over_the_api() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let admin = app.add_user_token("Ana", "admin");
    let agent = app.add_user_token("Bo", "agent");
    let path = format!("/api/v1/sites/{site}/retention");
    let (status, body) = app.api("GET", &path, &admin, None).await;
    assert_eq!(
        (status, body["retention_days"].clone()),
        (200, serde_json::Value::Null)
    );
    let (status, body) = app
        .api(
            "PUT",
            &path,
            &admin,
            Some(serde_json::json!({"retention_days": 30})),
        )
        .await;
    assert_eq!(
        (status, body["retention_days"].clone()),
        (200, serde_json::json!(30))
    );
    assert_eq!(
        app.count("SELECT retention_days FROM sites"),
        30,
        "stored, other settings untouched"
    );
    // A fraction is told it must be a whole number, not the range of a Rust type that the
    // field's own 1 to 36,500 contradicts.
    let (status, body) = app
        .api(
            "PUT",
            &path,
            &admin,
            Some(serde_json::json!({"retention_days": 1.5})),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        body["error"]["message"],
        "Field `retention_days`: invalid type: floating point `1.5`, expected a whole number \
         (docs/api.md)."
    );
    let (status, _) = app
        .api(
            "PUT",
            &path,
            &agent,
            Some(serde_json::json!({"retention_days": 1})),
        )
        .await;
    assert_eq!(status, 403);
    // Set, then the value already set again: answered the same, and nothing more to record.
    for _ in 0..2 {
        let (status, body) = app
            .api(
                "PUT",
                &path,
                &admin,
                Some(serde_json::json!({"retention_days": null})),
            )
            .await;
        assert_eq!(
            (status, body["retention_days"].clone()),
            (200, serde_json::Value::Null)
        );
    }
    // A misspelt or missing key is refused, not read as "keep for ever".
    for body in [
        serde_json::json!({"retentionDays": 30}),
        serde_json::json!({}),
    ] {
        let (status, answer) = app.api("PUT", &path, &admin, Some(body)).await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (422, Some("invalid")),
            "{answer}"
        );
    }
    // Each change is recorded with the new value (a shorter retention deletes conversations);
    // the repeat is not.
    let details: Vec<String> = app
        .db()
        .prepare("SELECT detail FROM audit_events WHERE action = 'site.updated' ORDER BY id")
        .expect("query")
        .query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("details");
    assert_eq!(
        details,
        [
            r#"{"changed":["retention_days"],"retention_days":30}"#,
            r#"{"changed":["retention_days"],"retention_days":null}"#
        ]
    );
}
