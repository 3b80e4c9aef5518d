//! Inbox search over real HTTP and a real SQLite file: what is indexed (visitor messages,
//! replies, notes, visitor names and emails; not status lines), the background indexer
//! (within the promised time, catching up after a restart), the index following edits and
//! deletes in the same transaction, newest first, escaped snippets, hostile queries, filters,
//! pages and who may search.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::{TestApp, ok_if, wait_until};
use crate::inbox::{Browser, PASSWORD, add_user, form, send, setup_admin, sign_in, signed_in_from};

/// Seeds a conversation of a new visitor on `site` with `bodies` as visitor messages (through
/// SQL, as a bulk import would: the indexer finds them like any write); returns (conversation
/// id, message ids).
fn seed(db: &rusqlite::Connection, site: &str, status: &str, bodies: &[&str]) -> (i64, Vec<i64>) {
    db.execute(
        "INSERT INTO visitors (site_id, token_hash, first_seen_at, last_seen_at) \
         SELECT id, randomblob(32), 0, 0 FROM sites WHERE key = ?1",
        [site],
    )
    .expect("visitor");
    let visitor = db.last_insert_rowid();
    db.execute(
        "INSERT INTO conversations (site_id, visitor_id, status, created_at, last_message_at) \
         SELECT id, ?2, ?3, 1, 1 FROM sites WHERE key = ?1",
        rusqlite::params![site, visitor, status],
    )
    .expect("conversation");
    let conversation = db.last_insert_rowid();
    let ids = bodies
        .iter()
        .enumerate()
        .map(|(i, body)| {
            db.execute(
                "INSERT INTO messages (conversation_id, author, visitor_id, client_id, body, \
                 created_at) VALUES (?1, 'visitor', ?2, ?3, ?4, 1)",
                rusqlite::params![conversation, visitor, format!("c{i}"), body],
            )
            .expect("message");
            db.last_insert_rowid()
        })
        .collect();
    (conversation, ids)
}

/// The search promise (docs/admin.md#search): a message is searchable this soon after it was
/// stored, under normal load.
const SEARCHABLE_WITHIN: Duration = Duration::from_secs(2);

/// (The indexer's watermark, the newest message id.)
fn watermark(app: &TestApp) -> (i64, i64) {
    app.db()
        .query_row(
            "SELECT last_message_id, (SELECT coalesce(max(id), 0) FROM messages) \
             FROM search_watermark",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("watermark")
}

/// Waits until the indexer has reached the newest message.
async fn indexed(app: &TestApp) {
    wait_until(
        "the indexer to catch up",
        Duration::from_secs(30),
        async || ok_if(watermark(app), |(done, newest)| done >= newest),
    )
    .await;
}

/// The results page for `query` (plus `extra` parameters), once the indexer has caught up.
async fn search(app: &TestApp, who: &Browser, query: &str, extra: &str) -> String {
    indexed(app).await;
    search_now(app, who, query, extra).await
}

/// The results page for `query` as it is now.
async fn search_now(app: &TestApp, who: &Browser, query: &str, extra: &str) -> String {
    let path = format!("/search?{}{extra}", form(&[("q", query)]));
    let page = send(app, "GET", &path, &who.cookie, None).await;
    assert_eq!(page.status, 200, "{path}: {}", page.body);
    page.body
}

/// The message ids the results link to, in order.
fn hits(page: &str) -> Vec<i64> {
    page.split("#m")
        .skip(1)
        .filter_map(|s| s.split('"').next().and_then(|id| id.parse().ok()))
        .collect()
}

/// The message ids found for "pelican" with `extra`, sorted.
async fn sorted_hits(app: &TestApp, who: &Browser, extra: &str) -> Vec<i64> {
    let mut found = hits(&search(app, who, "pelican", extra).await);
    found.sort_unstable();
    found
}

async fn admin(app: &TestApp) -> Browser {
    signed_in_from(app, &setup_admin(app).await).await
}

/// Checks both indexes against their content tables (FTS5's own consistency check).
fn assert_indexes_consistent(app: &TestApp) {
    let db = app.db();
    db.execute_batch(
        "INSERT INTO message_search (message_search, rank) VALUES ('integrity-check', 1); \
         INSERT INTO visitor_search (visitor_search, rank) VALUES ('integrity-check', 1);",
    )
    .expect("the indexes match their content");
}

#[tokio::test]
async fn search_finds_visitor_messages_replies_and_notes_but_not_status_lines() {
    let app = TestApp::spawn(&[]).await;
    let who = admin(&app).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    let ack = widget.say("v1", "My parcel never arrived").await;
    assert_eq!(ack["type"], "ack", "{ack}");
    let visitor_message = ack["id"].as_i64().expect("id");
    let conversation: i64 = app
        .db()
        .query_row("SELECT max(id) FROM conversations", [], |r| r.get(0))
        .expect("conversation");
    let token = app.add_agent_token("bot");
    let (status, reply) = app
        .api(
            "POST",
            &format!("/api/v1/conversations/{conversation}/messages"),
            &token,
            Some(json!({"body": "Your parcel is on its way"})),
        )
        .await;
    assert_eq!(status, 201, "{reply}");
    let note = form(&[
        ("csrf", &who.csrf),
        ("body", "Parcel refund approved"),
        ("kind", "note"),
    ]);
    let posted = send(
        &app,
        "POST",
        &format!("/conversations/{conversation}/reply"),
        &who.cookie,
        Some(&note),
    )
    .await;
    assert_eq!(posted.status, 303, "{}", posted.body);
    let close = form(&[("csrf", &who.csrf)]);
    let closed = send(
        &app,
        "POST",
        &format!("/conversations/{conversation}/close"),
        &who.cookie,
        Some(&close),
    )
    .await;
    assert_eq!(closed.status, 303);

    let page = search(&app, &who, "parcel", "").await;
    let found = hits(&page);
    assert_eq!(found.len(), 3, "{page}");
    assert!(found.contains(&visitor_message));
    assert!(page.contains(&format!("/conversations/{conversation}#m{visitor_message}")));
    assert!(page.contains("private note"), "a note is labelled as one");
    assert!(page.contains("Found 3 messages, showing 1–3."), "{page}");
    // "Ana closed this conversation" is a status line: not searchable.
    assert!(hits(&search(&app, &who, "closed", "").await).is_empty());
    assert_indexes_consistent(&app);
}

#[tokio::test]
async fn search_index_follows_edits_and_deletes_in_the_same_transaction() {
    let app = TestApp::spawn(&[]).await;
    let who = admin(&app).await;
    let site = app.add_site("Acme");
    let other = app.add_site("Other");
    let db = app.db();
    let (gone, _) = seed(&db, &site, "open", &["walrus one"]);
    let (_, ids) = seed(&db, &site, "open", &["walrus two"]);
    let (_, on_other) = seed(&db, &other, "open", &["walrus three"]);
    assert_eq!(hits(&search(&app, &who, "walrus", "").await).len(), 3);

    // A deleted conversation takes its messages (a cascade) out of the index with it.
    db.execute("DELETE FROM conversations WHERE id = ?1", [gone])
        .expect("delete");
    // An edited (redacted) message is found by its new text only.
    db.execute(
        "UPDATE messages SET body = 'redacted' WHERE id = ?1",
        [ids[0]],
    )
    .expect("update");
    let found = hits(&search(&app, &who, "walrus", "").await);
    assert_eq!(found, on_other);
    assert_eq!(hits(&search(&app, &who, "redacted", "").await), ids);

    // Deleting a site from the admin UI deletes everything it holds, index entries included.
    let delete = form(&[("csrf", &who.csrf), ("confirm", "Other")]);
    let deleted = send(
        &app,
        "POST",
        &format!("/sites/{other}/delete"),
        &who.cookie,
        Some(&delete),
    )
    .await;
    assert_eq!(deleted.status, 303, "{}", deleted.body);
    assert!(hits(&search(&app, &who, "walrus", "").await).is_empty());
    assert_indexes_consistent(&app);
}

/// How many of the index's pages hold `word`'s bytes.
fn pages_holding(db: &rusqlite::Connection, word: &str) -> i64 {
    db.query_row(
        "SELECT (SELECT count(*) FROM message_search_data WHERE instr(block, CAST(?1 AS BLOB)) > 0)               + (SELECT count(*) FROM visitor_search_data WHERE instr(block, CAST(?1 AS BLOB)) > 0)",
        [word],
        |r| r.get(0),
    )
    .expect("pages")
}

#[tokio::test]
async fn a_deleted_message_or_visitor_leaves_no_word_in_the_index_pages() {
    // FTS5 normally forgets a row by adding a delete marker and keeps the old entries until a
    // later merge; secure-delete (set by the migration) removes them at once. An erasure must
    // leave nothing (docs/privacy.md).
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Acme");
    let db = app.db();
    let (conversation, _) = seed(&db, &site, "open", &["my code is qzvkxwjq thanks"]);
    db.execute(
        "UPDATE visitors SET name = 'Wxqzvkjp Person' \
         WHERE id = (SELECT visitor_id FROM conversations WHERE id = ?1)",
        [conversation],
    )
    .expect("name");
    indexed(&app).await;
    assert!(pages_holding(&db, "qzvkxwjq") > 0, "the word is indexed");
    assert!(pages_holding(&db, "wxqzvkjp") > 0, "the name is indexed");

    db.execute_batch(&format!(
        "CREATE TEMP TABLE gone AS SELECT visitor_id AS id FROM conversations WHERE id = {conversation}; \
         DELETE FROM messages WHERE conversation_id = {conversation}; \
         DELETE FROM conversations WHERE id = {conversation}; \
         DELETE FROM visitors WHERE id IN (SELECT id FROM gone);"
    ))
    .expect("delete the messages, the conversation and the visitor");
    assert_eq!(pages_holding(&db, "qzvkxwjq"), 0);
    assert_eq!(pages_holding(&db, "wxqzvkjp"), 0);
    assert_indexes_consistent(&app);
}

#[tokio::test]
async fn search_finds_a_message_within_the_promised_time_after_its_ack() {
    let app = TestApp::spawn(&[]).await;
    let who = admin(&app).await;
    let site = app.add_site("Acme");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    for i in 0..3 {
        let ack = widget
            .say(&format!("m{i}"), &format!("kumquat number {i}"))
            .await;
        assert_eq!(ack["type"], "ack", "{ack}");
        let acked = Instant::now();
        let id = ack["id"].as_i64();
        let found = wait_until(
            "the message in the results",
            SEARCHABLE_WITHIN,
            async || {
                ok_if(
                    hits(&search_now(&app, &who, "kumquat", "").await),
                    |found| found.first() == id.as_ref(),
                )
            },
        )
        .await;
        assert_eq!(found.len(), i + 1);
        assert!(acked.elapsed() < SEARCHABLE_WITHIN, "{:?}", acked.elapsed());
    }
}

#[tokio::test]
async fn the_indexer_catches_up_after_a_restart_with_a_backlog() {
    let mut app = TestApp::spawn(&[]).await;
    let site = app.add_site("Acme");
    app.server.take().expect("server").stop().await;
    // What the server never saw (a restore, an import): several batches of the indexer's.
    let bodies: Vec<String> = (0..350).map(|i| format!("backlog ocelot {i}")).collect();
    let refs: Vec<&str> = bodies.iter().map(String::as_str).collect();
    let (_, ids) = seed(&app.db(), &site, "open", &refs);
    let (done, newest) = watermark(&app);
    assert_eq!(
        (done, newest),
        (0, ids[349]),
        "nothing indexed while stopped"
    );
    let app = TestApp::spawn_in(app.data_dir, &[]).await;
    let who = admin(&app).await;
    let page = search(&app, &who, "ocelot", "").await;
    assert!(page.contains("Found 350 messages, showing 1–20."), "{page}");
    assert!(!page.contains("not indexed yet"), "{page}");
    assert_eq!(hits(&page).first(), ids.last());
    assert_indexes_consistent(&app);
}

#[tokio::test]
async fn search_shows_the_newest_matches_first_and_finds_word_forms() {
    let app = TestApp::spawn(&[]).await;
    let who = admin(&app).await;
    let site = app.add_site("Acme");
    let db = app.db();
    let (_, first) = seed(&db, &site, "open", &["invoice invoice, the invoice"]);
    let (_, second) = seed(&db, &site, "open", &["where are my invoices please"]);
    let (_, third) = seed(&db, &site, "open", &["Invoiced yesterday"]);
    let found = hits(&search(&app, &who, "invoice", "").await);
    assert_eq!(found, vec![third[0], second[0], first[0]]);
    // Stemming both ways, and nothing by a bare prefix.
    assert_eq!(hits(&search(&app, &who, "INVOICES", "").await), found);
    assert!(hits(&search(&app, &who, "invo", "").await).is_empty());
}

#[tokio::test]
async fn search_snippets_escape_hostile_text_and_mark_only_matches() {
    let app = TestApp::spawn(&[]).await;
    let who = admin(&app).await;
    let site = app.add_site("Acme");
    // A visitor can type private-use characters, which once marked matches in snippets: they
    // must not make other words look like a match.
    let hostile = "<script>x</script></mark><img onerror=y> refund &amp; <b>bold</b> \u{E000}APPROVED\u{E001} tail";
    seed(&app.db(), &site, "open", &[hostile]);
    let page = search(&app, &who, "refund", "").await;
    assert_eq!(hits(&page).len(), 1, "{page}");
    assert!(!page.contains("<script>x"), "{page}");
    assert!(!page.contains("<img"), "{page}");
    assert!(!page.contains("<b>bold"), "{page}");
    assert!(page.contains("&lt;script&gt;x&lt;/script&gt;"), "{page}");
    assert!(page.contains("&lt;/mark&gt;"), "{page}");
    assert!(page.contains("<mark>refund</mark>"), "{page}");
    assert!(page.contains("&amp;amp;"), "{page}");
    assert!(
        page.contains("\u{E000}APPROVED\u{E001}"),
        "shown as typed: {page}"
    );
    assert_eq!(page.matches("<mark>").count(), 1, "only the match: {page}");
    assert_eq!(page.matches("</mark>").count(), 1, "{page}");
}

#[tokio::test]
async fn search_treats_every_query_as_words_never_as_syntax() {
    let app = TestApp::spawn(&[]).await;
    let who = admin(&app).await;
    let site = app.add_site("Acme");
    let (_, ids) = seed(
        &app.db(),
        &site,
        "open",
        &["NEAR the body: price - \"quoted\" x*y"],
    );
    let nasty = [
        "\"",
        "\"\"",
        "\"unclosed",
        "*",
        "**",
        "price*",
        "-",
        "-price",
        "NOT",
        "NOT price",
        "price NOT",
        "AND",
        "OR",
        "price OR",
        "NEAR",
        "NEAR(",
        "NEAR(price body, 2)",
        "^price",
        "body:",
        "body:price",
        "{body}: price",
        ":",
        "(",
        ")",
        "((price",
        "price)",
        "+",
        "'",
        "'; DROP TABLE messages; --",
        "\\",
        "%",
        "_",
        "\u{0}",
        "\u{E000}",
        "ü",
        "🙂",
        "x*y",
        "price\"body",
        "\"price\" * *",
        "a b c d e f g h i j k l m n o p",
        "rowid:1",
        "rank",
        "message_search",
        "' OR 1=1 --",
        "%22",
        "price AND OR NOT NEAR",
    ];
    for query in nasty {
        let page = search(&app, &who, query, "").await;
        assert!(page.contains("class=\"inbox-count\""), "{query}: {page}");
    }
    let long = "price ".repeat(500);
    search(&app, &who, &long, "").await;
    // The words still mean what they say.
    assert_eq!(hits(&search(&app, &who, "NEAR", "").await), ids);
    assert_eq!(hits(&search(&app, &who, "\"quoted\"", "").await), ids);
    assert_eq!(hits(&search(&app, &who, "body: price", "").await), ids);
    // "-" is no NOT: both words are in the message.
    assert_eq!(hits(&search(&app, &who, "price -body", "").await), ids);
}

#[tokio::test]
async fn search_pages_through_matches_twenty_at_a_time() {
    let app = TestApp::spawn(&[]).await;
    let who = admin(&app).await;
    let site = app.add_site("Acme");
    let bodies: Vec<String> = (0..45).map(|i| format!("zebra crossing {i}")).collect();
    let refs: Vec<&str> = bodies.iter().map(String::as_str).collect();
    let (_, mut ids) = seed(&app.db(), &site, "open", &refs);
    let mut seen = Vec::new();
    for (page, size) in [(1, 20), (2, 20), (3, 5)] {
        let body = search(&app, &who, "zebra", &format!("&page={page}")).await;
        let found = hits(&body);
        assert_eq!(found.len(), size, "page {page}");
        assert_eq!(body.contains("rel=\"next\""), page < 3, "page {page}");
        assert_eq!(body.contains("rel=\"prev\""), page > 1, "page {page}");
        seen.extend(found);
    }
    assert!(
        search(&app, &who, "zebra", "&page=1")
            .await
            .contains("Found 45 messages, showing 1–20.")
    );
    // Past the last page: it says which is the last, and back goes there.
    let past = search(&app, &who, "zebra", "&page=9").await;
    assert!(hits(&past).is_empty());
    assert!(
        past.contains("Found 45 messages, none on this page (the last is page 3)."),
        "{past}"
    );
    assert!(past.contains("page=3\" rel=\"prev\""), "{past}");
    // Newest first, each exactly once.
    ids.reverse();
    assert_eq!(seen, ids);
}

#[tokio::test]
async fn search_filters_by_site_and_status() {
    let app = TestApp::spawn(&[]).await;
    let who = admin(&app).await;
    let acme = app.add_site("Acme");
    let other = app.add_site("Other");
    let db = app.db();
    let (_, open_acme) = seed(&db, &acme, "open", &["pelican open acme"]);
    let (_, closed_acme) = seed(&db, &acme, "closed", &["pelican closed acme"]);
    let (_, open_other) = seed(&db, &other, "open", &["pelican open other"]);
    let acme_only = format!("&site={acme}");
    assert_eq!(sorted_hits(&app, &who, &acme_only).await.len(), 2);
    let acme_open = format!("&site={acme}&status=open");
    assert_eq!(sorted_hits(&app, &who, &acme_open).await, open_acme);
    assert_eq!(sorted_hits(&app, &who, "&status=closed").await, closed_acme);
    let other_only = format!("&site={other}");
    assert_eq!(sorted_hits(&app, &who, &other_only).await, open_other);
    // An unknown site or status means "any".
    assert_eq!(
        sorted_hits(&app, &who, "&site=s_nope&status=maybe")
            .await
            .len(),
        3
    );
}

#[tokio::test]
async fn search_finds_conversations_by_visitor_name_and_email() {
    let app = TestApp::spawn(&[]).await;
    let who = admin(&app).await;
    let site = app.add_site("Acme");
    let db = app.db();
    let (conversation, _) = seed(&db, &site, "open", &["hello"]);
    db.execute(
        "UPDATE visitors SET name = 'Zoë Ångström', email = 'zoe.a@example.com' \
         WHERE id = (SELECT visitor_id FROM conversations WHERE id = ?1)",
        [conversation],
    )
    .expect("name and email");
    let href = format!("href=\"/conversations/{conversation}\"");
    for query in ["zoe", "ANGSTROM", "zoe.a@example.com", "example.com", "zoë"] {
        let page = search(&app, &who, query, "").await;
        assert!(page.contains(&href), "{query}: {page}");
        assert!(page.contains("<mark>"), "{query}");
    }
    assert!(
        !search(&app, &who, "other@example.com", "")
            .await
            .contains(&href)
    );
    // A changed email is found by its new value only.
    db.execute("UPDATE visitors SET email = 'new@example.org'", [])
        .expect("email");
    assert!(
        !search(&app, &who, "zoe.a@example.com", "")
            .await
            .contains(&href)
    );
    assert!(
        search(&app, &who, "new@example.org", "")
            .await
            .contains(&href)
    );
    assert_indexes_consistent(&app);
}

#[tokio::test]
async fn search_is_for_signed_in_agents_and_admins() {
    let app = TestApp::spawn(&[]).await;
    admin(&app).await;
    let site = app.add_site("Acme");
    let (_, ids) = seed(&app.db(), &site, "open", &["marmalade"]);
    let anonymous = send(&app, "GET", "/search?q=marmalade", "", None).await;
    assert_eq!(anonymous.status, 303);
    assert!(!anonymous.body.contains("marmalade"));
    add_user(&app, "bo@example.com", "agent");
    let agent = signed_in_from(&app, &sign_in(&app, "bo@example.com", PASSWORD).await).await;
    assert_eq!(hits(&search(&app, &agent, "marmalade", "").await), ids);
    // The inbox has the search box, with the id keyboard shortcuts look for.
    let inbox = send(&app, "GET", "/inbox", &agent.cookie, None).await;
    assert!(inbox.body.contains("id=\"inbox-search\""), "{}", inbox.body);
}

#[test]
fn search_benchmark_seeds_a_scratch_database_and_reports_percentiles() {
    let scratch = tempfile::tempdir().expect("scratch");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_porch"))
        .args([
            "loadtest-search",
            "--messages",
            "3000",
            "--repeat",
            "2",
            "--scratch",
        ])
        .arg(scratch.path())
        .output()
        .expect("run porch");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        report.starts_with("Search over 3000 messages in 150 conversations"),
        "{report}"
    );
    assert!(report.contains("| **all queries** |"), "{report}");
    // The planted rare word is found once; the absent one never.
    assert!(report.contains("`xylophone` | 1 messages"), "{report}");
    assert!(
        report.contains("`zzyzx` | 0 messages, 0 visitors"),
        "{report}"
    );
    // The email is in the visitor index: found as a visitor.
    assert!(
        report.contains("`visitor42@example.com` | 0 messages, 1 visitors"),
        "{report}"
    );
    // The indexing left the index consistent with its content, every message indexed.
    assert!(
        report.contains("Indexing them with the indexer's step, 100 a transaction"),
        "{report}"
    );
    let db = porch::store::open_write_connection(
        &scratch.path().join("search-bench.db"),
        porch::store::Synchronous::Normal,
    )
    .expect("open");
    db.execute_batch(
        "INSERT INTO message_search (message_search, rank) VALUES ('integrity-check', 1);",
    )
    .expect("consistent");
    let watermark: i64 = db
        .query_row("SELECT last_message_id FROM search_watermark", [], |r| {
            r.get(0)
        })
        .expect("watermark");
    assert_eq!(watermark, 3000);
}
