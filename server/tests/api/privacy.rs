//! Privacy (issue #18, docs/privacy.md): what Porch holds of a person, exported and erased, by
//! an admin, the API, the command line and the visitor from the widget (retention is in
//! `retention.rs`).

use rusqlite::params;

use crate::helpers::TestApp;

/// A visitor's conversation, opened over the widget.
pub(crate) struct Chat {
    pub(crate) token: String,
    pub(crate) visitor: i64,
    pub(crate) conversation: i64,
    pub(crate) message: i64,
}

/// A new visitor on `site` says `body`; returns their token and rows.
pub(crate) async fn chat(app: &TestApp, site: &str, body: &str) -> Chat {
    let (mut widget, welcome) = app.visitor(site, None, 0).await;
    let token = welcome["token"].as_str().expect("a token").to_owned();
    let ack = widget.say("c-1", body).await;
    assert_eq!(ack["type"], "ack", "{ack}");
    let message = ack["id"].as_i64().expect("an id");
    let (visitor, conversation) = app
        .db()
        .query_row(
            "SELECT visitor_id, conversation_id FROM messages WHERE id = ?1",
            [message],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the message");
    Chat {
        token,
        visitor,
        conversation,
        message,
    }
}

pub(crate) fn exists(app: &TestApp, table: &str, id: i64) -> bool {
    app.count(&format!("SELECT count(*) FROM {table} WHERE id = {id}")) == 1
}

/// A visitor with everything Porch can hold about them: messages, an email address, an agent
/// reply and a note, a delivery job naming them (with the address in its facts), a Slack thread
/// and an agent's read marker.
pub(crate) struct Person {
    pub(crate) chat: Chat,
    pub(crate) email: String,
    pub(crate) body: String,
}

pub(crate) async fn person(app: &TestApp, site: &str, admin_token: &str, tag: &str) -> Person {
    let body = format!("unique-body-{tag}-7f3a9c");
    let email = format!("{tag}@example.org");
    let (mut widget, welcome) = app.visitor(site, None, 0).await;
    let token = welcome["token"].as_str().expect("token").to_owned();
    // A file holding the same text, on the first message: its bytes are a trace too.
    let file = {
        use crate::helpers::Exchange;
        app.http
            .request(
                "POST",
                &format!("/widget/attachments?site={site}&name=notes.txt"),
            )
            .header("origin", crate::helpers::ORIGIN)
            .header("authorization", format!("Bearer {token}"))
            .body(format!("my notes: {body}"))
            .answer()
            .await
    };
    assert_eq!(file.status, 201, "{}", file.body);
    widget
        .send(
            serde_json::json!({"type": "message", "client_id": "c-1", "body": body,
                                 "attachments": [file.json()["id"]]}),
        )
        .await;
    let ack = widget.recv().await;
    assert_eq!(ack["type"], "ack", "{ack}");
    widget
        .send(serde_json::json!({"type": "email", "email": email}))
        .await;
    assert_eq!(widget.recv().await["type"], "email_saved");
    let message = ack["id"].as_i64().expect("id");
    let (visitor, conversation): (i64, i64) = app
        .db()
        .query_row(
            "SELECT visitor_id, conversation_id FROM messages WHERE id = ?1",
            [message],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("message");
    let (status, reply) = app
        .api(
            "POST",
            &format!("/api/v1/conversations/{conversation}/messages"),
            admin_token,
            Some(serde_json::json!({"body": format!("reply to {tag}")})),
        )
        .await;
    assert_eq!(status, 201, "{reply}");
    tag_conversation(app, admin_token, conversation, tag).await;
    let db = app.db();
    db.execute(
        "INSERT INTO messages (conversation_id, author, body, created_at) \
         VALUES (?1, 'note', 'a private note', 0)",
        [conversation],
    )
    .expect("note");
    db.execute(
        "INSERT INTO jobs (lane, kind, args, state, max_attempts, run_at, created_at) \
         VALUES ('webhook', 'webhook.deliver', ?1, 'failed', 8, 0, 0)",
        [format!(
            r#"{{"event":"message.created","conversation_id":{conversation},"message_id":{message},"facts":{{"status":"open","visitor_email":"{email}","site_name":"Shop"}}}}"#
        )],
    )
    .expect("job");
    db.execute(
        "INSERT INTO job_attempts (job_id, seq, attempt, started_at, finished_at, outcome, error) \
         VALUES (last_insert_rowid(), 1, 1, 0, 0, 'retry', 'HTTP 500')",
        [],
    )
    .expect("attempt");
    db.execute(
        "INSERT INTO slack_threads (conversation_id, team_id, channel_id, thread_ts) \
         VALUES (?1, 'T1', 'C1', ?2)",
        params![conversation, format!("1700000000.{visitor:06}")],
    )
    .expect("thread");
    db.execute(
        "INSERT INTO conversation_reads (user_id, conversation_id, last_read_id) \
         SELECT id, ?1, ?2 FROM users LIMIT 1",
        params![conversation, message],
    )
    .expect("read");
    Person {
        chat: Chat {
            token,
            visitor,
            conversation,
            message,
        },
        email,
        body,
    }
}

/// Tags the person's conversation with a tag of its own and one the other person's has too.
async fn tag_conversation(app: &TestApp, admin_token: &str, conversation: i64, tag: &str) {
    let (status, tagged) = app
        .api(
            "POST",
            &format!("/api/v1/conversations/{conversation}/tags"),
            admin_token,
            Some(serde_json::json!({"add": [format!("{tag} only"), "shared"]})),
        )
        .await;
    assert_eq!(status, 200, "{tagged}");
}

/// Every tag's name.
fn tag_names(app: &TestApp) -> Vec<String> {
    app.db()
        .prepare("SELECT name FROM tags ORDER BY name")
        .expect("tags")
        .query_map([], |r| r.get(0))
        .expect("tags")
        .collect::<Result<_, _>>()
        .expect("tags")
}

/// Every (table, column) of the database file holding one of the person's traces: their
/// visitor id (in `visitor_id` columns and `visitors.id`), their conversation's id (in
/// `conversation_id` columns), token hash, email address or unique message text, anywhere.
pub(crate) fn scan(app: &TestApp, person: &Person) -> Vec<(String, String, i64)> {
    let db = app.db();
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .expect("tables")
        .query_map([], |r| r.get(0))
        .expect("tables")
        .collect::<Result<_, _>>()
        .expect("tables");
    let token_hash = porch::chat::hash_token(&person.chat.token).to_vec();
    let mut hits = Vec::new();
    for table in tables {
        let columns: Vec<String> = db
            .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
            .expect("columns")
            .query_map([], |r| r.get(0))
            .expect("columns")
            .collect::<Result<_, _>>()
            .expect("columns");
        for column in columns {
            let is_visitor_id = column == "visitor_id" || (table == "visitors" && column == "id");
            let is_conversation_id = column == "conversation_id";
            let n: i64 = db
                .query_row(
                    &format!(
                        "SELECT count(*) FROM \"{table}\" WHERE instr(CAST(\"{column}\" AS TEXT), ?1) > 0 \
                            OR instr(lower(CAST(\"{column}\" AS TEXT)), ?2) > 0 \
                            OR CAST(\"{column}\" AS BLOB) = ?3 \
                            OR (?4 AND \"{column}\" = ?5) OR (?6 AND \"{column}\" = ?7)"
                    ),
                    params![
                        person.body,
                        person.email.to_lowercase(),
                        token_hash,
                        is_visitor_id,
                        person.chat.visitor,
                        is_conversation_id,
                        person.chat.conversation
                    ],
                    |r| r.get(0),
                )
                .expect("scan");
            if n > 0 {
                hits.push((table.clone(), column, n));
            }
        }
    }
    hits
}

pub(crate) fn cli(app: &TestApp, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_porch"))
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
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The row ids of the files an export carries (with their bytes).
fn exported_file_rows(app: &TestApp, export: &serde_json::Value) -> Vec<i64> {
    let files = export["files"].as_array().expect("files");
    files
        .iter()
        .filter(|f| f["data_base64"].as_str().is_some_and(|d| !d.is_empty()))
        .map(|f| {
            app.count(&format!(
                "SELECT id FROM attachments WHERE public_id = '{}'",
                f["id"].as_str().expect("id")
            ))
        })
        .collect()
}

fn ids(values: &serde_json::Value) -> Vec<i64> {
    values
        .as_array()
        .expect("an array")
        .iter()
        .map(|v| v["id"].as_i64().expect("id"))
        .collect()
}

/// Tables where a person leaves traces: their visitor row, conversation, messages, files, jobs
/// and what hangs off the conversation.
const TRACED: [&str; 9] = [
    "visitors",
    "conversations",
    "messages",
    "attachments",
    "attachment_chunks",
    "jobs",
    "slack_threads",
    "conversation_reads",
    "conversation_tags",
];

#[tokio::test]
async fn the_export_holds_every_trace_and_an_erasure_leaves_none() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let admin = app.add_user_token("Ana", "admin");
    let ann = person(&app, &site, &admin, "ann").await;
    let bob = person(&app, &site, &admin, "bob").await;

    // Before: the scan finds the person in the visitor row, their conversation, messages, the job
    // and what hangs off the conversation, and the export holds each of those rows.
    let before = scan(&app, &ann);
    let tables: std::collections::BTreeSet<&str> =
        before.iter().map(|(t, _, _)| t.as_str()).collect();
    for table in TRACED {
        assert!(tables.contains(table), "{table} not found in {before:?}");
    }
    let out = cli(&app, &["export", "--email", "ANN@example.org"]);
    let exports: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let export = &exports[0];
    assert_eq!(exports.as_array().map(Vec::len), Some(1), "{out}");
    assert_eq!(export["porch_export"], 1);
    assert_eq!(export["visitor"]["id"], ann.chat.visitor);
    assert_eq!(export["visitor"]["email"], ann.email.as_str());
    let conversations = &export["conversations"];
    assert_eq!(ids(conversations), vec![ann.chat.conversation]);
    let messages = &conversations[0]["messages"];
    // The visitor's message, the reply, the tags' status line and the note.
    assert_eq!(messages.as_array().map(Vec::len), Some(4), "{messages}");
    assert_eq!(
        conversations[0]["tags"],
        serde_json::json!(["ann only", "shared"])
    );
    assert!(
        out.contains(&ann.body) && out.contains("reply to ann") && out.contains("a private note")
    );
    assert!(!out.contains(&bob.body) && !out.contains(&bob.email));
    let db = app.db();
    for (table, column, _) in &before {
        // Each row the scan found is in the export: by its own id or its conversation's.
        let (key, exported) = match table.as_str() {
            // The search indexes read their text from visitors and messages, by rowid.
            "visitors" | "visitor_search" => ("rowid", vec![ann.chat.visitor]),
            "conversations" => ("id", vec![ann.chat.conversation]),
            "messages" | "message_search" => ("rowid", ids(messages)),
            "jobs" => ("id", ids(&export["deliveries"])),
            "attachment_chunks" => ("attachment_id", exported_file_rows(&app, export)),
            _ => ("conversation_id", vec![ann.chat.conversation]),
        };
        let found: Vec<i64> = db
            .prepare(&format!(
                "SELECT {key} FROM {table} WHERE instr(CAST({column} AS TEXT), ?1) > 0 \
                    OR instr(lower(CAST({column} AS TEXT)), ?2) > 0 \
                    OR ('{column}' IN ('visitor_id', 'id') AND {column} = ?3) \
                    OR ('{column}' = 'conversation_id' AND {column} = ?4)"
            ))
            .expect("rows")
            .query_map(
                params![ann.body, ann.email, ann.chat.visitor, ann.chat.conversation],
                |r| r.get(0),
            )
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("rows");
        for id in found {
            assert!(
                exported.contains(&id),
                "{table}.{column}: row {id} is not exported"
            );
        }
    }

    // A dry run changes nothing; then the erasure.
    let dry = cli(&app, &["erase", "--visitor", &ann.chat.visitor.to_string()]);
    assert!(dry.contains("would erase"), "{dry}");
    assert_eq!(scan(&app, &ann), before);
    let erased = cli(&app, &["erase", "--email", &ann.email, "--yes"]);
    assert!(erased.contains("erased visitor"), "{erased}");

    assert_eq!(scan(&app, &ann), Vec::new(), "traces left after erasure");
    // A tag only Ann's conversation had went with it; the one Bob's has too stays.
    assert_eq!(tag_names(&app), ["bob only", "shared"]);
    assert!(
        !scan(&app, &bob).is_empty(),
        "the other visitor is untouched"
    );
    assert!(exists(&app, "messages", bob.chat.message));
    assert_eq!(
        app.count("SELECT count(*) FROM job_attempts"),
        1,
        "only Bob's"
    );
    let (detail, target): (String, String) = app
        .db()
        .query_row(
            "SELECT detail, target_label FROM audit_events WHERE action = 'privacy.erased'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("an audit event");
    assert_eq!(target, format!("visitor {}", ann.chat.visitor));
    assert!(
        detail.contains("\"via\":\"cli\"") && detail.contains("\"messages\":4"),
        "{detail}"
    );
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE action = 'privacy.exported'"),
        1
    );
    assert_file_forgets(app, &ann, &bob).await;
}

/// The database file's bytes once the server stopped and the WAL was checkpointed and emptied.
async fn stopped_file(mut app: TestApp) -> Vec<u8> {
    app.server.take().expect("server").stop().await;
    let db = app.db();
    db.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
    drop(db);
    std::fs::read(app.data_dir.path().join("porch.db")).expect("the file")
}

/// Nothing of `gone` is left in the database file's bytes (rows are not merely unlinked: their
/// space is zeroed or given back), while `kept`'s text is found, so the search could find it.
async fn assert_file_forgets(app: TestApp, gone: &Person, kept: &Person) {
    let file = stopped_file(app).await;
    let holds = |text: &str| file.windows(text.len()).any(|w| w == text.as_bytes());
    assert!(
        holds(&kept.body) && holds(&kept.email),
        "the scan finds what is kept"
    );
    let tag = gone.email.split('@').next().unwrap_or_default();
    for trace in [&gone.body, &gone.email, &format!("reply to {tag}")] {
        assert!(!holds(trace), "{trace:?} is still in the file");
    }
}

/// `porch export --all | head`: the reader stopped, and that is no failure of the export.
#[tokio::test]
async fn an_export_into_a_closed_pipe_ends_quietly() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let admin = app.add_user_token("Ana", "admin");
    person(&app, &site, &admin, "ann").await;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_porch"))
        .arg("--data-dir")
        .arg(app.data_dir.path())
        .args(["export", "--all"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run porch");
    // The reader goes before a byte is read: every write of the export meets a closed pipe.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("the export ends");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE action = 'privacy.exported'"),
        1,
        "recorded all the same"
    );
}

#[tokio::test]
async fn the_full_export_has_one_line_per_conversation() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let first = chat(&app, &site, "first").await;
    let second = chat(&app, &site, "second").await;
    let out = cli(&app, &["export", "--all"]);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON document a line"))
        .collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0]["id"], first.conversation);
    assert_eq!(lines[1]["id"], second.conversation);
    assert_eq!(lines[1]["visitor"]["id"], second.visitor);
    assert_eq!(lines[1]["messages"][0]["body"], "second");
    // The key it was sent with: duplicates can be checked in the export.
    assert_eq!(lines[1]["messages"][0]["client_id"], "c-1");
    assert_eq!(
        app.count(
            "SELECT count(*) FROM audit_events WHERE action = 'privacy.exported' \
             AND target_type = 'database'"
        ),
        1
    );
}

/// A visitor who wrote, still connected, erased by `porch erase` (which cannot tell the
/// connection): their open widget.
async fn erased_by_the_command_line_while_connected(app: &TestApp) -> crate::helpers::Widget {
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    assert_eq!(widget.say("c1", "Hello").await["type"], "ack");
    let visitor = app.count("SELECT id FROM visitors");
    cli(app, &["erase", "--visitor", &visitor.to_string(), "--yes"]);
    widget
}

#[tokio::test]
async fn a_visitor_erased_by_the_command_line_while_connected_is_told_on_their_next_message() {
    let app = TestApp::spawn(&[]).await;
    let mut widget = erased_by_the_command_line_while_connected(&app).await;

    // Not "unavailable, retry" forever: the connection says the data is gone and closes.
    let answer = widget.say("c2", "Still there?").await;
    assert_eq!(answer["type"], "erased", "{answer}");
    assert_eq!(widget.closed().await, Some(1000));
    assert_eq!(app.count("SELECT count(*) FROM messages"), 0);
}

/// Likewise an address left after the command line erased the visitor: not `email_saved` for an
/// address stored nowhere, which the widget would take as a promise of replies by email.
#[tokio::test]
async fn an_address_left_after_a_command_line_erasure_is_told_the_data_is_gone() {
    let app = TestApp::spawn(&[]).await;
    let mut widget = erased_by_the_command_line_while_connected(&app).await;

    widget
        .send(serde_json::json!({"type": "email", "email": "ghost@example.org"}))
        .await;
    let answer = widget.recv().await;
    assert_eq!(answer["type"], "erased", "{answer}");
    assert_eq!(widget.closed().await, Some(1000));
    assert_eq!(app.count("SELECT count(*) FROM visitors"), 0);
}

/// Rows are rewritten before an erasure (an email given after the first message, pages split as
/// visitors arrive): the older copies' bytes must not outlive the erasure in the file either.
#[tokio::test]
async fn an_erasure_leaves_no_older_copy_of_the_persons_rows_in_the_file() {
    let app = TestApp::spawn(&["--ip-conversations-burst", "100"]).await;
    let site = app.add_site("Shop");
    app.set_site_limits(&site, 10_000, 1_000, 100_000, 10_000);
    for n in 0..60 {
        let mut widget = app.connect(&site, crate::helpers::ORIGIN).await;
        widget
            .send(serde_json::json!({"type": "hello", "v": 1, "last_id": 0,
                "page": format!("https://shop.example/account?user=PAGE-p{n}x")}))
            .await;
        assert_eq!(widget.recv().await["type"], "welcome");
        let ack = widget.say("c-1", &format!("first MSG-p{n}x text")).await;
        assert_eq!(ack["type"], "ack", "{ack}");
        widget
            .send(serde_json::json!({"type": "email", "email": format!("p{n}x@example.org")}))
            .await;
        assert_eq!(widget.recv().await["type"], "email_saved");
    }
    let erased = cli(&app, &["erase", "--email", "p7x@example.org", "--yes"]);
    assert!(erased.contains("erased visitor"), "{erased}");

    let file = stopped_file(app).await;
    let holds = |text: &str| file.windows(text.len()).any(|w| w == text.as_bytes());
    assert!(holds("PAGE-p8x") && holds("MSG-p8x") && holds("p8x@example.org"));
    for trace in ["PAGE-p7x", "MSG-p7x", "p7x@example.org"] {
        assert!(!holds(trace), "{trace:?} is still in the file");
    }
}

/// An erasure leaves nothing in the running server's files: the WAL, which held the rows' older
/// pages, is checkpointed into the database file (where the erased space is zeroed) and
/// emptied at once. Before, erased text stayed in the WAL until later writes overwrote it, on
/// a quiet box for weeks, and in any copy of the data directory.
#[tokio::test]
async fn an_erasure_leaves_nothing_in_the_running_servers_files() {
    use crate::inbox::{form, send, setup_admin, signed_in_from};
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Shop");
    let api = app.add_user_token("Api", "admin");
    let ann = person(&app, &site, &api, "ann").await;
    let bob = person(&app, &site, &api, "bob").await;
    let erase = format!("/privacy/visitors/{}/erase", ann.chat.visitor);
    let csrf = form(&[("csrf", &admin.csrf)]);
    assert_eq!(
        send(&app, "POST", &erase, &admin.cookie, Some(&csrf))
            .await
            .status,
        303
    );
    let dir = app.data_dir.path();
    let wal = std::fs::read(dir.join("porch.db-wal")).unwrap_or_default();
    let db = std::fs::read(dir.join("porch.db")).expect("the database file");
    let holds = |file: &[u8], text: &str| file.windows(text.len()).any(|w| w == text.as_bytes());
    assert!(holds(&db, &bob.body), "the scan finds what is kept");
    for (name, file) in [("WAL", &wal), ("database", &db)] {
        for trace in [&ann.body, &ann.email] {
            assert!(!holds(file, trace), "{trace:?} is still in the {name}");
        }
    }
}
