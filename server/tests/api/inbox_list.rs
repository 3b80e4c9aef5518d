//! The inbox list over real HTTP: combinable filters, the count, both orders, keyset pages that
//! never skip or repeat a conversation, the waiting order kept by real messages and replies, and
//! a live stream that sends only what matches its filters.

use std::time::Duration;

use serde_json::json;

use crate::helpers::TestApp;
use crate::inbox::{Browser, send, setup_admin, signed_in_from};

/// What a list page shows: its rows' ids in order, the count line, the next page's link.
struct ListPage {
    ids: Vec<i64>,
    summary: String,
    next: Option<String>,
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let at = text.find(start)? + start.len();
    text[at..].split(end).next()
}

async fn list(app: &TestApp, who: &Browser, path: &str) -> ListPage {
    let page = send(app, "GET", path, &who.cookie, None).await;
    assert_eq!(page.status, 200, "{path}: {}", page.body);
    let list = between(&page.body, "id=\"conversations\"", "</ul>").expect("the list");
    let ids = list
        .split("<li id=\"conversation-")
        .skip(1)
        .map(|s| s.split('"').next().expect("id").parse().expect("a number"))
        .collect();
    ListPage {
        ids,
        summary: between(&page.body, "class=\"inbox-count\"", "</p>")
            .and_then(|p| p.split_once('>'))
            .expect("the count")
            .1
            .to_owned(),
        next: page.body.find("\" rel=\"next\"").map(|end| {
            let start = page.body[..end].rfind("href=\"").expect("a link") + 6;
            page.body[start..end].replace("&amp;", "&")
        }),
    }
}

/// Seeds an open conversation of a new visitor; returns its id.
fn seed(
    db: &rusqlite::Connection,
    site: &str,
    assignee: Option<i64>,
    last_message_at: i64,
    waiting_since: Option<i64>,
) -> i64 {
    db.execute(
        "INSERT INTO visitors (site_id, token_hash, first_seen_at, last_seen_at) \
         SELECT id, randomblob(32), 0, 0 FROM sites WHERE key = ?1",
        [site],
    )
    .expect("visitor");
    let visitor = db.last_insert_rowid();
    db.execute(
        "INSERT INTO conversations (site_id, visitor_id, assignee_id, created_at, \
         last_message_at, waiting_since) \
         SELECT id, ?2, ?3, ?4, ?4, ?5 FROM sites WHERE key = ?1",
        rusqlite::params![site, visitor, assignee, last_message_at, waiting_since],
    )
    .expect("conversation");
    db.last_insert_rowid()
}

async fn admin(app: &TestApp) -> Browser {
    signed_in_from(app, &setup_admin(app).await).await
}

/// Reads both pages of `first`; checks the counts and that every id comes exactly once, in
/// the `expected` order.
async fn assert_two_pages(app: &TestApp, who: &Browser, first: &str, expected: &[i64]) {
    let one = list(app, who, first).await;
    assert_eq!(one.summary, "230 open conversations, showing 1–200");
    assert_eq!(one.ids.len(), 200);
    let next = one.next.expect("a next page");
    assert!(next.contains("cursor="), "{next}");
    let two = list(app, who, &next).await;
    assert_eq!(two.summary, "230 open conversations, showing 201–230");
    assert_eq!(two.next, None, "page 2 is the last");
    let seen: Vec<i64> = one.ids.into_iter().chain(two.ids).collect();
    assert_eq!(seen, expected, "{first}: each conversation once, in order");
}

#[tokio::test]
async fn inbox_pages_230_conversations_each_exactly_once_in_order_for_both_orders() {
    let app = TestApp::spawn(&[]).await;
    let ana = admin(&app).await;
    let site = app.add_site("Acme");
    let db = app.db();
    // Three conversations share each timestamp, so ties must be broken by id at the boundary;
    // every third one has been answered (not waiting).
    let rows: Vec<(i64, i64, Option<i64>)> = (0..230)
        .map(|i| {
            let at = 1_000_000 + i / 3;
            let waiting = (i % 3 != 0).then_some(at - 100 + (i * 7) % 50);
            (seed(&db, &site, None, at, waiting), at, waiting)
        })
        .collect();

    let mut recent = rows.clone();
    recent.sort_by_key(|&(id, at, _)| std::cmp::Reverse((at, id)));
    let recent: Vec<i64> = recent.iter().map(|r| r.0).collect();
    assert_two_pages(&app, &ana, "/inbox", &recent).await;

    let mut waiting = rows;
    waiting.sort_by_key(|&(id, at, since)| (since.is_none(), since.unwrap_or(at), id));
    let waiting: Vec<i64> = waiting.iter().map(|r| r.0).collect();
    assert_two_pages(&app, &ana, "/inbox?sort=waiting", &waiting).await;
}

#[tokio::test]
async fn inbox_filters_combine_and_are_counted() {
    let app = TestApp::spawn(&[]).await;
    let ana = admin(&app).await;
    let acme = app.add_site("Acme");
    let zeta = app.add_site("Zeta <b>Shop</b>");
    let db = app.db();
    let ana_id = 1;
    let a_open = seed(&db, &acme, None, 10, Some(10));
    let a_mine = seed(&db, &acme, Some(ana_id), 20, None);
    let z_open = seed(&db, &zeta, None, 30, Some(30));
    let z_closed = seed(&db, &zeta, None, 40, None);
    db.execute(
        "UPDATE conversations SET status = 'closed' WHERE id = ?1",
        [z_closed],
    )
    .expect("close");

    let all = list(&app, &ana, "/inbox").await;
    assert_eq!(all.ids, [z_open, a_mine, a_open]);
    assert_eq!(all.summary, "3 open conversations, showing 1–3");

    let page = list(&app, &ana, &format!("/inbox?filter=unassigned&site={acme}")).await;
    assert_eq!(page.ids, [a_open]);
    assert_eq!(
        page.summary,
        "1 open conversation unassigned on Acme, showing 1–1"
    );

    let page = list(&app, &ana, &format!("/inbox?filter=mine&site={zeta}")).await;
    assert_eq!(page.ids, Vec::<i64>::new());
    // The site's name is escaped where it is shown.
    assert_eq!(
        page.summary,
        "0 open conversations assigned to you on Zeta &lt;b&gt;Shop&lt;/b&gt;."
    );

    let page = list(&app, &ana, &format!("/inbox?status=closed&site={zeta}")).await;
    assert_eq!(page.ids, [z_closed]);
    let page = list(&app, &ana, "/inbox?status=open&assignee=me&sort=waiting").await;
    assert_eq!(page.ids, [a_mine]);
    let page = list(&app, &ana, "/inbox?sort=waiting").await;
    assert_eq!(
        page.ids,
        [a_open, z_open, a_mine],
        "waiting first, oldest first"
    );

    // Unknown values mean the default list, never an error.
    let page = list(
        &app,
        &ana,
        "/inbox?filter=x&status=y&assignee=99&site=nope&sort=z&cursor=a.b.c",
    )
    .await;
    assert_eq!(page.ids, all.ids);
}

#[tokio::test]
async fn inbox_waiting_order_follows_visitor_messages_and_agent_replies() {
    let app = TestApp::spawn(&[]).await;
    let ana = admin(&app).await;
    let site = app.add_site("Acme");
    let token = app.add_agent_token("Bo");
    let (mut first, _) = app.visitor(&site, None, 0).await;
    first.say("a-1", "I wrote first").await;
    tokio::time::sleep(Duration::from_millis(5)).await; // distinct milliseconds
    let (mut second, _) = app.visitor(&site, None, 0).await;
    second.say("b-1", "I wrote second").await;
    let ids = list(&app, &ana, "/inbox?sort=waiting").await.ids;
    let (a, b) = (ids[0], ids[1]);
    assert_eq!(ids.len(), 2);

    // An answer ends the wait: the answered one goes after every waiting one.
    let (status, _) = app
        .api(
            "POST",
            &format!("/api/v1/conversations/{a}/messages"),
            &token,
            Some(json!({"body": "Hello!"})),
        )
        .await;
    assert_eq!(status, 201);
    assert_eq!(list(&app, &ana, "/inbox?sort=waiting").await.ids, [b, a]);

    // The visitor's next message starts a new wait, later than the other's.
    tokio::time::sleep(Duration::from_millis(5)).await;
    first.say("a-2", "Still there?").await;
    second.say("b-2", "Hello?").await;
    assert_eq!(list(&app, &ana, "/inbox?sort=waiting").await.ids, [b, a]);
    assert_eq!(list(&app, &ana, "/inbox").await.ids, [b, a]);
}

#[tokio::test]
async fn inbox_live_stream_sends_only_conversations_matching_its_filters() {
    let app = TestApp::spawn(&[]).await;
    let ana = admin(&app).await;
    let acme = app.add_site("Acme");
    let zeta = app.add_site("Zeta");
    let path = format!("/inbox/events?filter=unassigned&site={acme}&after=0");
    let mut live = crate::live_inbox::LiveInbox::open_at(&app, &ana, &path).await;

    let (mut other, _) = app.visitor(&zeta, None, 0).await;
    other.say("z-1", "From the other site").await;
    let (mut ours, _) = app.visitor(&acme, None, 0).await;
    ours.say("a-1", "From our site").await;
    let ours_row = live.item_with("From our site").await;
    // Everything the stream sent up to our row: the other site's would have come first.
    let seen = format!("{}{ours_row}", live.passed);
    // The agent's counts and alerts ride along for every site (docs/admin.md, "Never miss a
    // chat"); the list's own events follow its filters.
    let list: Vec<&str> = seen
        .split("\n\n")
        .filter(|e| !e.contains("event: counts") && !e.contains("event: alert"))
        .collect();
    let list = list.join("\n\n");
    assert!(!list.contains("From the other site"), "{seen}");
    assert!(list.contains("From our site"), "{seen}");
    assert!(
        list.contains("data-key=\"0."),
        "rows carry their sort key: {seen}"
    );
}

/// Before any site exists no chat can arrive: the empty inbox says what comes first (to an
/// admin, with the way to it), not "New chats appear here as they arrive".
#[tokio::test]
async fn an_empty_inbox_before_any_site_says_to_create_one() {
    let app = TestApp::spawn(&[]).await;
    let who = admin(&app).await;
    let before = send(&app, "GET", "/inbox", &who.cookie, None).await;
    assert!(
        before.body.contains("No site yet, so no chat can arrive.")
            && before
                .body
                .contains(r#"<a href="/sites/new">Create a site</a>"#),
        "{}",
        before.body
    );
    app.add_site("Shop");
    let after = send(&app, "GET", "/inbox", &who.cookie, None).await;
    assert!(after.body.contains("New chats appear here as they arrive."));
    assert!(!after.body.contains("No site yet"));
}

/// A tab with a tag that no conversation has: the list is empty because of the tag, not because
/// nothing is open.
#[tokio::test]
async fn an_empty_list_of_a_tag_says_the_filters_match_nothing() {
    let app = TestApp::spawn(&[]).await;
    let who = admin(&app).await;
    let site = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    widget.say("c1", "Hello").await;
    let page = send(&app, "GET", "/inbox?tag=nobody-has-it", &who.cookie, None).await;
    assert!(
        page.body.contains("No conversations match these filters.")
            && !page.body.contains("No open conversations."),
        "{}",
        page.body
    );
}
