//! Files between the widget and Slack threads, against the Slack mock over loopback: a visitor's
//! file shared into the thread exactly once through retries, a token without `files:write`, an
//! agent's file in the thread reaching the visitor, files that become notes, and downloads
//! refused off Slack's file host.

use std::time::Duration;

use porch::loadtest::{Failure, SlackMock};
use serde_json::{Value, json};

use crate::attachments::{download, png_with_metadata, send_with, upload, visitor};
use crate::helpers::WAIT;
use crate::slack::{Fixture, SECRET, now_secs, reply_event};

/// Sends a visitor message with a PNG to a site whose Slack channel is C1; returns the
/// integration and the file's name as stored.
async fn visitor_sends_an_image(fx: &Fixture) -> (i64, String) {
    let (site, integration) = fx.site_with_slack("Shop", "C1", json!({})).await;
    let mut ann = visitor(&fx.app, &site).await;
    let (status, file) = upload(
        &fx.app,
        &site,
        &ann.token,
        "holiday.png",
        png_with_metadata(),
    )
    .await;
    assert_eq!(status, 201, "{file}");
    let id = file["id"].as_str().expect("id");
    let ack = send_with(&mut ann.widget, "m1", "look at this", &[id]).await;
    assert_eq!(ack["type"], "ack", "{ack}");
    (integration, file["name"].as_str().expect("name").to_owned())
}

async fn image_reaches_the_thread_once_after(failure: Failure) {
    let fx = Fixture::start().await;
    fx.mock
        .set_files_failure("files.completeUploadExternal", Some(failure));
    let (_, name) = visitor_sends_an_image(&fx).await;
    let shared = fx.mock.wait_for_shared_files(1, WAIT).await;
    fx.wait_until_settled().await;
    let posts = fx.mock.posts();
    assert_eq!(posts.len(), 2, "a header and the text, each once");
    assert!(
        posts[1].text.contains("look at this") && posts[1].text.contains(&name),
        "{}",
        posts[1].text
    );
    let shared_now = fx.mock.shared_files();
    assert_eq!(shared_now.len(), 1, "shared exactly once: {shared_now:?}");
    let file = &shared[0];
    assert_eq!(file.channel_id, "C1");
    assert_eq!(file.thread_ts.as_deref(), Some(posts[0].ts.as_str()));
    assert_eq!(file.filename, name);
    assert!(file.data.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(
        !String::from_utf8_lossy(&file.data).contains("Secret-Author"),
        "the stored (stripped) bytes are shared"
    );
    assert_eq!(
        fx.app
            .count("SELECT count(*) FROM jobs WHERE state = 'done' AND kind = 'slack.post'"),
        1
    );
}

#[tokio::test]
async fn a_visitors_image_reaches_the_thread_once_when_completing_first_answers_429() {
    image_reaches_the_thread_once_after(Failure::RateLimited {
        times: 1,
        retry_after_secs: 1,
    })
    .await;
}

#[tokio::test]
async fn a_visitors_image_reaches_the_thread_once_when_completing_first_answers_500() {
    image_reaches_the_thread_once_after(Failure::ServerError { times: 1 }).await;
}

#[tokio::test]
async fn without_files_write_the_text_names_the_files_and_the_integration_shows_blocked() {
    let fx = Fixture::start().await;
    fx.mock.set_files_failure(
        "files.getUploadURLExternal",
        Some(Failure::SlackError("missing_scope".into())),
    );
    let (integration, name) = visitor_sends_an_image(&fx).await;
    crate::helpers::wait_until("a blocked job", WAIT, async || {
        match fx
            .app
            .count("SELECT count(*) FROM jobs WHERE state = 'blocked'")
        {
            0 => Err(fx.job_states()),
            _ => Ok(()),
        }
    })
    .await;
    let posts = fx.mock.posts();
    assert_eq!(posts.len(), 2, "the header and the text");
    assert!(posts[1].text.contains(&name), "{}", posts[1].text);
    let status: String = fx
        .app
        .db()
        .query_row(
            "SELECT status || ': ' || last_error FROM integrations",
            [],
            |r| r.get(0),
        )
        .expect("row");
    assert!(
        status.starts_with("broken: ")
            && status.contains("missing_scope")
            && status.contains("files:write"),
        "{status}"
    );
    assert!(fx.mock.shared_files().is_empty());

    // Once the scope is granted (the app reinstalled, its token saved), the file follows alone.
    fx.mock
        .set_files_failure("files.getUploadURLExternal", None);
    let fixed = json!({"bot_token": "xoxb-fixed", "channel_id": "C1", "signing_secret": SECRET});
    let (status, answer) = fx
        .app
        .api(
            "PUT",
            &format!("/api/v1/integrations/{integration}/slack"),
            &fx.admin,
            Some(fixed),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(fx.mock.wait_for_shared_files(1, WAIT).await.len(), 1);
    fx.wait_until_settled().await;
    assert_eq!(fx.mock.posts().len(), 2, "the text was not posted again");
}

/// A conversation with a Slack thread and its visitor; returns (fixture, visitor, site,
/// integration, thread ts).
async fn thread_with_visitor() -> (Fixture, crate::attachments::Visitor, String, i64, String) {
    let fx = Fixture::start().await;
    let (site, integration) = fx.site_with_slack("Shop", "C1", json!({})).await;
    let mut ann = visitor(&fx.app, &site).await;
    ann.widget.say("q", "can you send a screenshot?").await;
    let posts = fx.mock.wait_for_posts(2, WAIT).await;
    let thread = posts[0].ts.clone();
    (fx, ann, site, integration, thread)
}

/// A thread reply with `files` (`file_share`), as Slack sends it.
fn file_share_event(event_id: &str, thread: &str, text: &str, files: Value) -> Value {
    let mut event = reply_event(event_id, "C1", thread, "U-ANA", text);
    event["event"]["subtype"] = json!("file_share");
    event["event"]["files"] = files;
    event
}

#[tokio::test]
async fn an_agents_file_in_the_thread_reaches_the_visitor_who_can_download_it() {
    let (fx, mut ann, site, integration, thread) = thread_with_visitor().await;
    let png = png_with_metadata();
    let url = fx.mock.serve_file("screen.png", &png);
    let files = json!([{"id": "F1", "name": "screen.png", "size": png.len(),
                        "url_private": url, "url_private_download": url}]);
    let event = file_share_event("EvF1", &thread, "here it is", files);
    assert_eq!(fx.send_event(integration, &event, now_secs()).await, 200);
    let pushed = ann.widget.recv().await;
    assert_eq!(pushed["type"], "message", "{pushed}");
    assert_eq!(pushed["body"], "here it is");
    let shown = &pushed["attachments"][0];
    assert_eq!(shown["name"], "screen.png", "{pushed}");
    let id = shown["id"].as_str().expect("id");
    let served = download(&fx.app, &site, &ann.token, id).await;
    assert_eq!(served.status(), 200);
    let bytes = served.bytes().await.expect("bytes");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(
        !String::from_utf8_lossy(&bytes).contains("Secret-Author"),
        "checked and stripped as a widget upload is"
    );
    // Slack resending the event stores nothing twice.
    assert_eq!(fx.send_event(integration, &event, now_secs()).await, 200);
    fx.wait_until_settled().await;
    assert_eq!(
        fx.app
            .count("SELECT count(*) FROM messages WHERE author = 'agent'"),
        1
    );
    assert_eq!(
        fx.app
            .count("SELECT count(*) FROM attachments WHERE message_id IS NOT NULL"),
        1
    );
}

#[tokio::test]
async fn an_oversize_or_refused_file_becomes_a_note_in_the_text() {
    let (fx, mut ann, _site, integration, thread) = thread_with_visitor().await;
    fx.app
        .db()
        .execute("UPDATE sites SET attachment_max_bytes = 1048576", [])
        .expect("limit");
    let exe = fx.mock.serve_file("tool.exe", b"MZ\x90\0\x03\0\0\0");
    // No `size` given: the download itself stops at the limit.
    let big = fx.mock.serve_file("big.txt", &vec![b'a'; 2 * 1024 * 1024]);
    let files = json!([
        {"id": "F1", "name": "tool.exe", "url_private_download": exe},
        {"id": "F2", "name": "big.txt", "url_private_download": big},
    ]);
    let event = file_share_event("EvF2", &thread, "", files);
    assert_eq!(fx.send_event(integration, &event, now_secs()).await, 200);
    let pushed = ann.widget.recv().await;
    assert_eq!(pushed["type"], "message", "{pushed}");
    assert_eq!(pushed["attachments"].as_array().map_or(0, Vec::len), 0);
    let body = pushed["body"].as_str().expect("body");
    assert!(
        body.contains("[file tool.exe not passed on: this type of file is not accepted]"),
        "{body}"
    );
    assert!(
        body.contains("[file big.txt not passed on: larger than this site's 1 MB limit]"),
        "{body}"
    );
}

#[tokio::test]
async fn a_file_url_off_slacks_file_host_is_never_fetched() {
    let (fx, mut ann, _site, integration, thread) = thread_with_visitor().await;
    let elsewhere = SlackMock::start(([127, 0, 0, 1], 0).into(), Duration::ZERO)
        .await
        .expect("second mock");
    let url = elsewhere.serve_file("secret.txt", b"internal");
    let files = json!([
        {"id": "F1", "name": "secret.txt", "url_private_download": url},
        {"id": "F2", "name": "meta.txt",
         "url_private_download": "http://169.254.169.254/latest/meta-data"},
    ]);
    let event = file_share_event("EvF3", &thread, "see attached", files);
    assert_eq!(fx.send_event(integration, &event, now_secs()).await, 200);
    let pushed = ann.widget.recv().await;
    let body = pushed["body"].as_str().expect("body");
    assert!(
        body.contains("[file secret.txt not passed on: it is not on Slack's file host]")
            && body.contains("[file meta.txt not passed on: it is not on Slack's file host]"),
        "{body}"
    );
    assert_eq!(
        elsewhere.download_count(),
        0,
        "the other host was never asked"
    );
    assert_eq!(fx.mock.download_count(), 0);
}
