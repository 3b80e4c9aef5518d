//! An agent's open conversation page when its visitor is erased (docs/admin.md#live-updates):
//! told at once when the stream is listening, and told all the same when the erasure came
//! between the page's load and its stream.

use crate::helpers::{TestApp, WAIT};
use crate::inbox::{form, send, setup_admin, signed_in_from};
use crate::privacy::{person, scan};

/// Reads an event stream into `seen` until it holds `what`.
async fn read_stream_until(stream: &mut reqwest::Response, seen: &mut String, what: &str) {
    while !seen.contains(what) {
        let chunk = tokio::time::timeout(WAIT, stream.chunk())
            .await
            .unwrap_or_else(|_| panic!("{what} in time"))
            .expect("the stream")
            .expect("more of the stream");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
}

#[tokio::test]
async fn an_admin_finds_exports_and_erases_a_person_and_open_pages_are_told() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Shop");
    let api = app.add_user_token("Api", "admin");
    let ann = person(&app, &site, &api, "ann").await;

    let found = send(
        &app,
        "GET",
        "/privacy?q=ann%40example.org",
        &admin.cookie,
        None,
    )
    .await;
    assert_eq!(found.status, 200);
    assert!(
        found.body.contains(&format!("v{}", ann.chat.visitor)),
        "{}",
        found.body
    );
    let by_id = send(
        &app,
        "GET",
        &format!("/privacy?q=v{}", ann.chat.visitor),
        &admin.cookie,
        None,
    )
    .await;
    assert!(by_id.body.contains("ann@example.org"));

    let csrf = form(&[("csrf", &admin.csrf)]);
    let export_path = format!("/privacy/visitors/{}/export", ann.chat.visitor);
    let refused = send(
        &app,
        "POST",
        &export_path,
        &admin.cookie,
        Some("csrf=wrong"),
    )
    .await;
    assert_eq!(refused.status, 403);
    let download = send(&app, "POST", &export_path, &admin.cookie, Some(&csrf)).await;
    assert_eq!(download.status, 200);
    assert!(download.body.contains(&ann.body) && download.body.contains("a private note"));

    // Agents may not.
    let agent_email = "bo@example.com";
    crate::inbox::add_user(&app, agent_email, "agent");
    let agent = signed_in_from(
        &app,
        &crate::inbox::sign_in(&app, agent_email, crate::inbox::PASSWORD).await,
    )
    .await;
    let forbidden = send(&app, "GET", "/privacy", &agent.cookie, None).await;
    assert_eq!(forbidden.status, 403);

    // The confirmation shows what goes; an agent's open conversation page hears of it.
    let erase_path = format!("/privacy/visitors/{}/erase", ann.chat.visitor);
    let confirm = send(&app, "GET", &erase_path, &admin.cookie, None).await;
    assert!(
        confirm.body.contains("ann@example.org")
            && confirm.body.contains("4 messages")
            && confirm.body.contains("1 file in these conversations")
            && confirm
                .body
                .contains("uploaded by the visitor and not sent"),
        "{}",
        confirm.body
    );
    let mut stream = crate::inbox::request(
        &app,
        "GET",
        &format!("/conversations/{}/events", ann.chat.conversation),
        &agent.cookie,
        None,
    )
    .send()
    .await
    .expect("stream");
    // The stream subscribes to erasures before it replays the page's messages, and its headers
    // come before either: wait for the replay, or a loaded machine erases before it listens.
    let mut seen = String::new();
    read_stream_until(&mut stream, &mut seen, "event: entry").await;
    let erased = send(&app, "POST", &erase_path, &admin.cookie, Some(&csrf)).await;
    assert_eq!(
        (erased.status, erased.header("location")),
        (303, Some("/privacy?notice=erased"))
    );
    read_stream_until(&mut stream, &mut seen, "event: erased").await;
    assert!(
        seen.contains("This visitor&#x27;s data was erased.")
            || seen.contains("This visitor's data was erased.")
    );
    assert_eq!(scan(&app, &ann), Vec::new());
    let after = send(&app, "GET", &erase_path, &admin.cookie, None).await;
    assert_eq!(after.status, 404);
}

/// The page was loaded, then its visitor erased, then its stream opened: the erasure's live
/// event went out before anything listened, and nothing of the conversation is left to replay.
/// The stream says the conversation is gone, and ends.
#[tokio::test]
async fn a_stream_opened_after_the_erasure_says_the_conversation_is_gone() {
    let app = TestApp::spawn(&[]).await;
    let agent = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Shop");
    let api = app.add_user_token("Api", "admin");
    let ann = person(&app, &site, &api, "ann").await;
    let page_path = format!("/conversations/{}", ann.chat.conversation);
    let page = send(&app, "GET", &page_path, &agent.cookie, None).await;
    assert!(page.body.contains(&ann.body), "{}", page.body);
    let erase = format!("/api/v1/visitors/{}/erase", ann.chat.visitor);
    let (status, _) = app.api("POST", &erase, &api, None).await;
    assert_eq!(status, 200);

    let events = format!("{page_path}/events");
    let mut stream = crate::inbox::request(&app, "GET", &events, &agent.cookie, None)
        .send()
        .await
        .expect("stream");
    assert_eq!(stream.status(), 200);
    let mut seen = String::new();
    read_stream_until(&mut stream, &mut seen, "event: gone").await;
    assert!(
        seen.contains("This conversation no longer exists"),
        "{seen}"
    );
    assert!(
        !seen.contains("event: entry"),
        "nothing is replayed: {seen}"
    );
    let end = tokio::time::timeout(WAIT, async {
        while stream.chunk().await.expect("the stream").is_some() {}
    })
    .await;
    assert!(end.is_ok(), "the stream ends once it has said so");
    // Reloaded, the page is not found.
    let reloaded = send(&app, "GET", &page_path, &agent.cookie, None).await;
    assert_eq!(reloaded.status, 404);
}
