//! The transcript mail of a closing waits as a reply mail does (`reply_delay_secs`), so a close
//! undone at once (the inbox's *Undo*, a quick *Reopen*) mails nothing, and a close, reopen and
//! close again mails one transcript, the last closing's. Transcripts and digests name the files
//! of the messages they show. Against a real SMTP server.

use serde_json::{Value, json};

use crate::email::{Sink, header, site_with_email};
use crate::helpers::{TestApp, WAIT, ok_if, wait_until};

/// The done job of kind `email.transcript` with id `id`, once it is done.
async fn done_transcript(app: &TestApp, admin: &str, id: i64) -> Value {
    wait_until("the transcript job done", WAIT, async || {
        let (_, done) = app.api("GET", "/api/v1/jobs?state=done", admin, None).await;
        let job = done["jobs"]
            .as_array()
            .and_then(|jobs| jobs.iter().find(|j| j["id"] == id).cloned());
        ok_if(job, Option::is_some)
    })
    .await
    .unwrap_or_default()
}

#[tokio::test]
async fn a_close_undone_before_the_mail_is_due_mails_no_transcript() {
    let sink = Sink::start();
    let (app, admin, site) = site_with_email(&sink, json!({"reply_delay_secs": 2})).await;
    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("a1", "Is the jumper in stock?").await;
    visitor
        .send(json!({"type": "email", "email": "ana@example.org"}))
        .await;
    visitor.recv().await;
    let id = app.count("SELECT id FROM conversations");
    let act = async |action: &str| {
        let path = format!("/api/v1/conversations/{id}/{action}");
        let (status, answer) = app.api("POST", &path, &admin, None).await;
        assert_eq!(status, 200, "{action}: {answer}");
    };

    act("close").await;
    assert_eq!(
        app.count("SELECT run_at - created_at FROM jobs WHERE kind = 'email.transcript'"),
        2_000,
        "due reply_delay_secs after the closing"
    );
    act("reopen").await;
    let undone = app.count("SELECT max(id) FROM jobs WHERE kind = 'email.transcript'");
    let job = done_transcript(&app, &admin, undone).await;
    assert_eq!(
        job["external_ref"], "not sent: the conversation was reopened",
        "{job}"
    );

    act("close").await;
    act("reopen").await;
    act("close").await;
    let last = app.count("SELECT max(id) FROM jobs WHERE kind = 'email.transcript'");
    let mails = sink.wait_for(1).await;
    let job = done_transcript(&app, &admin, last).await;
    assert_eq!(job["state"], "done", "{job}");
    // Every closing before the last one is done without a mail by then: they were due first.
    assert_eq!(
        app.count(
            "SELECT count(*) FROM jobs WHERE kind = 'email.transcript' \
             AND external_ref = 'not sent: the conversation was reopened'"
        ),
        2
    );
    assert_eq!(mails.len(), 1, "{mails:?}");
    assert_eq!(mails[0]["rcpt_tos"], json!(["ana@example.org"]));
    assert!(
        header(&mails[0], "message-id").starts_with(&format!("<porch.transcript-{last}.")),
        "the last closing's transcript: {}",
        header(&mails[0], "message-id")
    );
}

/// A transcript names each message's files the way the reply mails and the chat posts do (the
/// mail carries no files): before 2026-12-07 it showed the text alone.
#[tokio::test]
async fn a_transcript_names_the_files_of_its_messages() {
    let sink = Sink::start();
    let (app, admin, site) = site_with_email(&sink, json!({"reply_delay_secs": 0})).await;
    let mut visitor = crate::attachments::visitor(&app, &site).await;
    visitor.widget.say("a1", "Hello").await;
    visitor
        .widget
        .send(json!({"type": "email", "email": "ana@example.org"}))
        .await;
    visitor.widget.recv().await;
    let (status, file) = crate::attachments::upload(
        &app,
        &site,
        &visitor.token,
        "invoice%20%3Cx%3E.txt",
        b"hello invoice\n".to_vec(),
    )
    .await;
    assert_eq!(status, 201, "{file}");
    visitor
        .widget
        .send(
            json!({"type": "message", "client_id": "a2", "body": "see attached",
                     "attachments": [file["id"]]}),
        )
        .await;
    let ack = visitor.widget.recv().await;
    assert_eq!(ack["type"], "ack", "{ack}");
    let id = app.count("SELECT id FROM conversations");
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/conversations/{id}/close"),
            &admin,
            None,
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let mails = sink.wait_for(1).await;
    let text = mails[0]["text"]
        .as_str()
        .unwrap_or_default()
        .replace("\r\n", "\n");
    assert!(
        text.contains("You:\n  see attached\n  [file: invoice <x>.txt, 14 bytes]\n"),
        "{text}"
    );
    let html = mails[0]["html"].as_str().unwrap_or_default();
    assert!(
        html.contains("see attached<br>[file: invoice &lt;x&gt;.txt, 14 bytes]"),
        "{html}"
    );
}

/// The agents' digest quotes a conversation opened with files only by its file lines, as the
/// other mails and posts name files: it showed an empty quote.
#[tokio::test]
async fn a_digest_names_the_files_of_a_first_message_with_files_only() {
    let sink = Sink::start();
    let (app, _admin, site) = site_with_email(&sink, json!({"unanswered_after_secs": 1})).await;
    let mut visitor = crate::attachments::visitor(&app, &site).await;
    let (status, file) = crate::attachments::upload(
        &app,
        &site,
        &visitor.token,
        "plan.txt",
        b"the plan\n".to_vec(),
    )
    .await;
    assert_eq!(status, 201, "{file}");
    visitor
        .widget
        .send(json!({"type": "message", "client_id": "f1", "body": "",
                     "attachments": [file["id"]]}))
        .await;
    let ack = visitor.widget.recv().await;
    assert_eq!(ack["type"], "ack", "{ack}");
    let mails = sink.wait_for(1).await;
    let text = mails[0]["text"]
        .as_str()
        .unwrap_or_default()
        .replace("\r\n", "\n");
    assert!(text.contains("> [file: plan.txt, 9 bytes]"), "{text}");
    let html = mails[0]["html"].as_str().unwrap_or_default();
    assert!(html.contains("[file: plan.txt, 9 bytes]"), "{html}");
}
