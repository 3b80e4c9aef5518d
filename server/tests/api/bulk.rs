//! Several conversations at once from the inbox list (docs/admin.md, "Several at once"): each
//! ticked row gets the action as its own button would give it; rows it does not change are
//! counted; the answer returns to the list it came from, and only to the inbox.

use crate::helpers::TestApp;
use crate::inbox::{Browser, form, send, setup_admin, signed_in_from};

/// Posts the bulk form as the browser does; returns the answer's status and `Location`.
async fn post(app: &TestApp, cookie: &str, fields: &[(&str, &str)]) -> (u16, String) {
    let answer = send(app, "POST", "/inbox/bulk", cookie, Some(&form(fields))).await;
    let location = answer.header("location").unwrap_or("").to_owned();
    (answer.status, location)
}

/// An admin signed in, and three conversations of three visitors (their ids, oldest first).
async fn three_conversations() -> (TestApp, Browser, [String; 3]) {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Acme");
    for n in 0..3 {
        let (mut widget, _) = app.visitor(&site, None, 0).await;
        widget.say(&format!("c{n}"), "Hello").await;
    }
    let ids: Vec<i64> = app.column("SELECT id FROM conversations ORDER BY id");
    (
        app,
        admin,
        [ids[0], ids[1], ids[2]].map(|id| id.to_string()),
    )
}

#[tokio::test]
async fn assign_to_me_takes_only_what_nobody_has() {
    let (app, admin, [one, two, _]) = three_conversations().await;
    let csrf = admin.csrf.as_str();
    // A colleague's stays theirs.
    let bo = crate::inbox::add_user(&app, "bo@example.com", "agent");
    app.db()
        .execute(
            "UPDATE conversations SET assignee_id = ?1 WHERE id = ?2",
            rusqlite::params![bo.0, two],
        )
        .expect("Bo has two");
    let mine = [
        ("csrf", csrf),
        ("action", "assign-me"),
        ("id", &one),
        ("id", &two),
    ];
    let (_, location) = post(&app, &admin.cookie, &mine).await;
    assert_eq!(location, "/inbox?bulk=assigned&done=1&skipped=1&failed=0");
    assert_eq!(
        app.count(&format!(
            "SELECT assignee_id FROM conversations WHERE id = {two}"
        )),
        bo.0
    );
}

#[tokio::test]
async fn ticked_conversations_get_the_action_and_the_list_says_how_many() {
    let (app, admin, [one, two, three]) = three_conversations().await;
    let csrf = admin.csrf.as_str();
    let back = "/inbox?status=open&assignee=anyone&sort=waiting";

    // The page offers it: the form, and a checkbox in it for each row.
    let page = send(&app, "GET", "/inbox", &admin.cookie, None).await;
    assert!(
        page.body.contains("action=\"/inbox/bulk\""),
        "{}",
        page.body
    );
    assert_eq!(page.body.matches("form=\"bulk\"").count(), 3);

    let (status, location) = post(
        &app,
        &admin.cookie,
        &[
            ("csrf", csrf),
            ("action", "snooze-60"),
            ("id", &one),
            ("id", &two),
            ("back", back),
        ],
    )
    .await;
    assert_eq!(status, 303);
    assert_eq!(
        location,
        format!("{back}&bulk=snoozed&done=2&skipped=0&failed=0")
    );
    assert_eq!(
        app.count("SELECT count(*) FROM conversations WHERE snoozed_until IS NOT NULL"),
        2
    );
    let listed = send(&app, "GET", &location, &admin.cookie, None).await;
    assert!(
        listed.body.contains("Snoozed 2 conversations."),
        "{}",
        listed.body
    );

    let (_, location) = post(
        &app,
        &admin.cookie,
        &[
            ("csrf", csrf),
            ("action", "close"),
            ("id", &three),
            ("back", "/inbox"),
        ],
    )
    .await;
    assert_eq!(location, "/inbox?bulk=closed&done=1&skipped=0&failed=0");
    // Closing all three: the closed one is left as it was, and said so.
    let (_, location) = post(
        &app,
        &admin.cookie,
        &[
            ("csrf", csrf),
            ("action", "close"),
            ("id", &one),
            ("id", &two),
            ("id", &three),
            ("id", "99999"),
            ("back", "/inbox"),
        ],
    )
    .await;
    assert_eq!(location, "/inbox?bulk=closed&done=2&skipped=2&failed=0");
    let listed = send(&app, "GET", &location, &admin.cookie, None).await;
    assert!(
        listed
            .body
            .contains("Closed 2 conversations. 2 were left as they were"),
        "{}",
        listed.body
    );
    assert_eq!(
        app.count("SELECT count(*) FROM conversations WHERE status = 'closed'"),
        3
    );
    let lines: Vec<String> = app.column(&format!(
        "SELECT body FROM messages WHERE conversation_id = {one} AND author = 'system' ORDER BY id"
    ));
    assert_eq!(
        lines.len(),
        2,
        "one status line per change (snoozed, closed), as its buttons write: {lines:?}"
    );
}

#[tokio::test]
async fn a_bulk_post_is_refused_or_sent_back_to_the_inbox_when_it_makes_no_sense() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let csrf = admin.csrf.as_str();
    // Nothing ticked: the list says so.
    let (status, location) = post(
        &app,
        &admin.cookie,
        &[("csrf", csrf), ("action", "close"), ("back", "/inbox")],
    )
    .await;
    assert_eq!(
        (status, location.as_str()),
        (303, "/inbox?bulk=closed&done=0&skipped=0&failed=0")
    );
    let listed = send(&app, "GET", &location, &admin.cookie, None).await;
    assert!(
        listed.body.contains("Nothing was selected"),
        "{}",
        listed.body
    );
    // Back goes to the inbox only.
    for elsewhere in ["https://evil.example/", "//evil.example/inbox", "/team"] {
        let (_, location) = post(
            &app,
            &admin.cookie,
            &[("csrf", csrf), ("action", "close"), ("back", elsewhere)],
        )
        .await;
        assert_eq!(
            location, "/inbox?bulk=closed&done=0&skipped=0&failed=0",
            "{elsewhere}"
        );
    }
    // An unknown action, and more rows than the form takes (500). A page watched live holds
    // more than its first 200 rows: 500 are taken (ids that name no conversation are skipped).
    let (status, _) = post(&app, &admin.cookie, &[("csrf", csrf), ("action", "delete")]).await;
    assert_eq!(status, 422);
    for (rows, expected) in [(500, 303), (501, 422)] {
        let many: Vec<(&str, String)> = (0..rows)
            .map(|n| ("id", (1_000_000 + n).to_string()))
            .collect();
        let mut fields: Vec<(&str, &str)> = vec![("csrf", csrf), ("action", "close")];
        fields.extend(many.iter().map(|(k, v)| (*k, v.as_str())));
        let (status, location) = post(&app, &admin.cookie, &fields).await;
        assert_eq!(status, expected, "{rows} rows: {location}");
        if expected == 303 {
            assert!(
                location.ends_with("done=0&skipped=500&failed=0"),
                "{location}"
            );
        }
    }
    // A body of a hundred thousand ids (just under the 1 MiB limit) is refused on reading the
    // 501st; each once before, it held the server for a minute.
    let flood = (0..100_000).map(|n| n.to_string()).collect::<Vec<_>>();
    let body = format!("csrf={csrf}&action=unread&id={}", flood.join("&id="));
    assert!(body.len() < 1 << 20);
    let answer = send(&app, "POST", "/inbox/bulk", &admin.cookie, Some(&body)).await;
    assert_eq!(answer.status, 422);
    // Without the session's CSRF token, nothing.
    let (status, _) = post(&app, &admin.cookie, &[("action", "close"), ("id", "1")]).await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn two_bulk_snoozes_at_once_snooze_each_row_once() {
    let (app, admin, ids) = three_conversations().await;
    let mut fields = vec![("csrf", admin.csrf.as_str()), ("action", "snooze-60")];
    fields.extend(ids.iter().map(|id| ("id", id.as_str())));
    let (first, second) = tokio::join!(
        post(&app, &admin.cookie, &fields),
        post(&app, &admin.cookie, &fields)
    );
    // Between them, each row was snoozed once and left as it was once.
    let done: usize = [&first.1, &second.1]
        .iter()
        .map(|location| {
            let done = location.split("done=").nth(1).expect("done");
            done.split('&')
                .next()
                .and_then(|n| n.parse::<usize>().ok())
                .expect("a count")
        })
        .sum();
    assert_eq!(done, 3, "{first:?} {second:?}");
    assert_eq!(
        app.count(
            "SELECT count(*) FROM messages WHERE author = 'system' AND body LIKE '%snoozed%'"
        ),
        3
    );
}
