//! Attachments (issue #16, docs/widget.md "Attachments"): uploads over HTTP with the visitor
//! token, types from the bytes, metadata stripped, thumbnails and decompression bombs, limits
//! (and the site page's field for them), who may read a file, a message taking uploads exactly
//! once, agents' files, and the sweep of uploads no message took.

use serde_json::{Value, json};

use crate::audit::SITE_FIELDS;
use crate::helpers::{Answer, Exchange, ORIGIN, TestApp, Widget};
use crate::inbox::{Browser, form, request, send, setup_admin, signed_in_from};
use crate::metrics::value_of;

/// A PNG whose text chunk names its author and place (what must not leave the device).
pub(crate) fn png_with_metadata() -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, data) in [
        (&b"IHDR"[..], &b"\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0"[..]),
        (b"tEXt", b"Author\0Ann Secret-Author"),
        (b"eXIf", b"GPS 52.52N 13.40E"),
        (b"IDAT", b"x\x9cc\xf8\x0f\0\x01\x01\x01\0"),
        (b"IEND", b""),
    ] {
        png_chunk(&mut png, kind, data);
    }
    png
}

pub(crate) struct Visitor {
    pub widget: Widget,
    pub token: String,
}

pub(crate) async fn visitor(app: &TestApp, site: &str) -> Visitor {
    let (widget, welcome) = app.visitor(site, None, 0).await;
    Visitor {
        widget,
        token: welcome["token"].as_str().expect("token").to_owned(),
    }
}

/// `POST /widget/attachments` from the site's page with `token`; (status, JSON).
pub(crate) async fn upload(
    app: &TestApp,
    site: &str,
    token: &str,
    name: &str,
    data: Vec<u8>,
) -> (u16, Value) {
    let answer = app
        .http
        .request(
            "POST",
            &format!("/widget/attachments?site={site}&name={name}"),
        )
        .header("origin", ORIGIN)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/octet-stream")
        .body(data)
        .answer()
        .await;
    (answer.status, answer.json())
}

/// `GET /widget/attachments/{id}` as the widget would, with `token` (none if empty).
pub(crate) async fn download(
    app: &TestApp,
    site: &str,
    token: &str,
    id: &str,
) -> reqwest::Response {
    let mut request = app
        .http
        .get(&format!("/widget/attachments/{id}?site={site}"))
        .header("origin", ORIGIN);
    if !token.is_empty() {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    request.send().await.expect("an answer")
}

/// An agent's upload to `conversation`, as the reply box makes it; the answer's JSON.
pub(crate) async fn agent_upload(
    app: &TestApp,
    agent: &Browser,
    conversation: i64,
    name: &str,
    data: Vec<u8>,
) -> Value {
    let path = format!("/conversations/{conversation}/attachments?name={name}");
    let uploaded = request(app, "POST", &path, &agent.cookie, None)
        .header("x-porch-csrf", &agent.csrf)
        .body(data)
        .answer()
        .await;
    assert_eq!(uploaded.status, 201, "{}", uploaded.body);
    uploaded.json()
}

/// An agent's reply carrying the upload `id` and no text.
pub(crate) async fn agent_reply_with(app: &TestApp, agent: &Browser, conversation: i64, id: &str) {
    let reply = form(&[("csrf", &agent.csrf), ("body", ""), ("attachments", id)]);
    let path = format!("/conversations/{conversation}/reply");
    let posted = request(app, "POST", &path, &agent.cookie, Some(&reply))
        .answer()
        .await;
    assert_eq!(posted.status, 303, "{}", posted.body);
}

/// An upload of `pieces` chunks of `piece_len` bytes with `Transfer-Encoding: chunked` (no
/// `Content-Length`), over a raw connection; returns the answer's text.
async fn chunked_upload(
    app: &TestApp,
    site: &str,
    token: &str,
    pieces: usize,
    piece_len: usize,
) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(app.addr)
        .await
        .expect("connect");
    let head = format!(
        "POST /widget/attachments?site={site}&name=big.txt HTTP/1.1\r\nHost: x\r\n\
         Origin: {ORIGIN}\r\nAuthorization: Bearer {token}\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.expect("head");
    for _ in 0..pieces {
        let chunk = format!("{piece_len:x}\r\n{}\r\n", "a".repeat(piece_len));
        // The server may answer and close before the last piece: that is the point.
        if stream.write_all(chunk.as_bytes()).await.is_err() {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    String::from_utf8_lossy(&answer).into_owned()
}

pub(crate) async fn send_with(
    widget: &mut Widget,
    client_id: &str,
    body: &str,
    ids: &[&str],
) -> Value {
    widget
        .send(json!({"type": "message", "client_id": client_id, "body": body, "attachments": ids}))
        .await;
    widget.recv().await
}

#[tokio::test]
async fn an_image_loses_its_metadata_and_is_served_inline_to_its_visitor() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let mut ann = visitor(&app, &site).await;
    let (status, file) = upload(
        &app,
        &site,
        &ann.token,
        "..%2Fholiday.png",
        png_with_metadata(),
    )
    .await;
    assert_eq!(status, 201, "{file}");
    assert_eq!(file["type"], "image/png");
    assert_eq!(file["name"], "holiday.png");
    let id = file["id"].as_str().expect("id");

    let ack = send_with(&mut ann.widget, "c-1", "", &[id]).await;
    assert_eq!(ack["type"], "ack", "{ack}");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM attachments WHERE public_id = '{id}' AND message_id = {}",
            ack["id"]
        )),
        1
    );

    let served = download(&app, &site, &ann.token, id).await;
    assert_eq!(served.status(), 200);
    let headers = served.headers().clone();
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    assert_eq!(header("content-type"), "image/png");
    assert_eq!(header("x-content-type-options"), "nosniff");
    assert_eq!(
        header("content-security-policy"),
        "sandbox; default-src 'none'"
    );
    assert_eq!(header("access-control-allow-origin"), ORIGIN);
    assert!(
        header("content-disposition")
            .starts_with("inline; filename=\"holiday.png\"; filename*=UTF-8''holiday.png"),
        "{}",
        header("content-disposition")
    );
    let bytes = served.bytes().await.expect("bytes");
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        text.contains("IHDR") && text.contains("IDAT"),
        "the picture stays"
    );
    assert!(
        !text.contains("Secret-Author") && !text.contains("GPS"),
        "{text}"
    );
}

#[tokio::test]
async fn types_come_from_the_bytes_not_the_name() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let ann = visitor(&app, &site).await;
    let (status, text) = upload(
        &app,
        &site,
        &ann.token,
        "report.pdf",
        b"just text\n".to_vec(),
    )
    .await;
    assert_eq!(status, 201, "{text}");
    assert_eq!(text["type"], "text/plain; charset=utf-8");
    assert_eq!(text["name"], "report.pdf.txt");
    let served = download(&app, &site, &ann.token, text["id"].as_str().unwrap()).await;
    assert!(
        served.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment; "),
        "only images are inline"
    );

    let program = b"MZ\x90\0\x03\0\0\0\x04\0\0\0\xff\xff".to_vec();
    let (status, refused) = upload(&app, &site, &ann.token, "photo.png", program).await;
    assert_eq!(status, 415, "{refused}");
    assert_eq!(refused["error"]["code"], "unsupported_type");
    let (status, refused) = upload(
        &app,
        &site,
        &ann.token,
        "broken.png",
        b"\x89PNG\r\n\x1a\n\0\0".to_vec(),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["error"]["code"], "damaged_image");
    // Well-formed chunks but no header: nothing says how large a browser would find it.
    let iend = b"\0\0\0\0IEND\xaeB`\x82";
    let headless = [&b"\x89PNG\r\n\x1a\n"[..], iend].concat();
    let (status, refused) = upload(&app, &site, &ann.token, "headless.png", headless).await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["error"]["code"], "damaged_image");
    assert_eq!(app.count("SELECT count(*) FROM attachments"), 1);
}

#[tokio::test]
async fn uploads_over_the_sites_limit_are_refused_early() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let admin = app.add_user_token("Ana", "admin");
    let ann = visitor(&app, &site).await;
    let path = format!("/api/v1/sites/{site}/attachments");
    let (status, body) = app.api("GET", &path, &admin, None).await;
    assert_eq!(
        (status, body["max_bytes"].clone()),
        (200, json!(10_485_760))
    );
    // Set, then set again: the second changes nothing and is not recorded.
    for _ in 0..2 {
        let (status, body) = app
            .api("PUT", &path, &admin, Some(json!({"max_bytes": 1000})))
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, _) = app
        .api("PUT", &path, &admin, Some(json!({"max_bytes": 30_000_000})))
        .await;
    assert_eq!(status, 422);
    // A value of the wrong kind names its field and what it takes, in words.
    let (status, negative) = app
        .api("PUT", &path, &admin, Some(json!({"max_bytes": -1})))
        .await;
    assert_eq!(status, 422);
    assert_eq!(
        negative["error"]["message"],
        "Field `max_bytes`: invalid value: integer `-1`, expected a whole number of 0 or more \
         (docs/api.md)."
    );
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE action = 'site.updated'"),
        1
    );

    // Refused on its Content-Length, and a body of unknown length once it passes the limit.
    let (status, refused) = upload(&app, &site, &ann.token, "big.txt", vec![b'a'; 1001]).await;
    assert_eq!(status, 413, "{refused}");
    assert_eq!(refused["error"]["code"], "too_large");
    assert_eq!(refused["error"]["max_bytes"], 1000);
    let streamed = chunked_upload(&app, &site, &ann.token, 4, 400).await;
    assert!(streamed.starts_with("HTTP/1.1 413"), "{streamed}");
    let (status, _) = upload(&app, &site, &ann.token, "small.txt", vec![b'a'; 1000]).await;
    assert_eq!(status, 201);
    assert_eq!(app.count("SELECT count(*) FROM attachments"), 1);

    app.api("PUT", &path, &admin, Some(json!({"max_bytes": 0})))
        .await;
    let (status, off) = upload(&app, &site, &ann.token, "a.txt", b"a".to_vec()).await;
    assert_eq!(
        (status, off["error"]["code"].clone()),
        (403, json!("attachments_off"))
    );
}

#[tokio::test]
async fn only_the_conversations_visitor_and_signed_in_agents_read_a_file() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let mut ann = visitor(&app, &site).await;
    let bob = visitor(&app, &site).await;
    let (_, file) = upload(
        &app,
        &site,
        &ann.token,
        "a.txt",
        b"for agents only".to_vec(),
    )
    .await;
    let id = file["id"].as_str().expect("id");
    let ack = send_with(&mut ann.widget, "c-1", "see file", &[id]).await;
    assert_eq!(ack["type"], "ack", "{ack}");

    assert_eq!(download(&app, &site, &ann.token, id).await.status(), 200);
    assert_eq!(download(&app, &site, &bob.token, id).await.status(), 404);
    assert_eq!(download(&app, &site, "", id).await.status(), 401);
    assert_eq!(
        download(&app, &site, &ann.token, "att_nosuchfile")
            .await
            .status(),
        404
    );
    let elsewhere = app
        .http
        .get(&format!("/widget/attachments/{id}?site={site}"))
        .header("origin", "https://evil.example")
        .header("authorization", format!("Bearer {}", ann.token))
        .answer()
        .await;
    assert_eq!(elsewhere.status, 403);

    let conversation = app.count(&format!(
        "SELECT conversation_id FROM messages WHERE id = {}",
        ack["id"]
    ));
    let agent_path = format!("/conversations/{conversation}/attachments/{id}");
    let signed_out = request(&app, "GET", &agent_path, "", None).answer().await;
    assert_eq!(signed_out.status, 303, "to the sign-in page");
    let agent = signed_in_from(&app, &setup_admin(&app).await).await;
    let read = request(&app, "GET", &agent_path, &agent.cookie, None)
        .answer()
        .await;
    assert_eq!((read.status, read.body.as_str()), (200, "for agents only"));
    let wrong = format!("/conversations/{}/attachments/{id}", conversation + 1);
    let read = request(&app, "GET", &wrong, &agent.cookie, None)
        .answer()
        .await;
    // Opened in a browser tab, a missing file gets the page people read, with a way on.
    assert_eq!(
        (read.status, read.header("content-type")),
        (404, Some("text/html; charset=utf-8"))
    );
    assert!(
        read.body.contains("There is no such attachment"),
        "{}",
        read.body
    );

    // The API lists the file with its message and serves it to a token.
    let token = app.add_user_token("Bo", "agent");
    let path = format!("/api/v1/conversations/{conversation}/messages");
    let (status, listed) = app.api("GET", &path, &token, None).await;
    assert_eq!(status, 200);
    let files = &listed["messages"][0]["attachments"];
    assert_eq!(files[0]["id"], id, "{listed}");
    assert_eq!(
        (files[0]["name"].as_str(), files[0]["size"].as_i64()),
        (Some("a.txt"), Some(15))
    );
    let url = files[0]["url"].as_str().expect("url");
    assert_eq!(
        url,
        format!("/api/v1/conversations/{conversation}/attachments/{id}")
    );
    let read = app.http.get(url).bearer_auth(&token).answer().await;
    assert_eq!((read.status, read.body.as_str()), (200, "for agents only"));
    assert_eq!(read.header("x-content-type-options"), Some("nosniff"));
    let wrong = format!(
        "/api/v1/conversations/{}/attachments/{id}",
        conversation + 1
    );
    let missing = app.http.get(&wrong).bearer_auth(&token).answer().await;
    assert_eq!(missing.status, 404);
    assert!(
        missing.body.contains(r#""code":"not_found""#),
        "{}",
        missing.body
    );
    assert_eq!(app.http.get(url).answer().await.status, 401);
}

#[tokio::test]
async fn a_message_takes_its_uploads_once_and_a_resend_is_not_duplicated() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let mut ann = visitor(&app, &site).await;
    let bob = visitor(&app, &site).await;
    let (_, mine) = upload(&app, &site, &ann.token, "a.txt", b"one".to_vec()).await;
    let (_, theirs) = upload(&app, &site, &bob.token, "b.txt", b"two".to_vec()).await;
    let (mine, theirs) = (mine["id"].as_str().unwrap(), theirs["id"].as_str().unwrap());

    for ids in [vec![theirs], vec!["att_unknown"], vec![mine, theirs]] {
        let refused = send_with(&mut ann.widget, "c-x", "", &ids).await;
        assert_eq!(refused["type"], "error", "{refused}");
        assert_eq!(refused["code"], "unknown_attachment");
        assert_eq!(refused["client_id"], "c-x");
    }
    let twice = send_with(&mut ann.widget, "c-z", "", &[mine, mine]).await;
    assert_eq!(twice["code"], "unknown_attachment", "{twice}");
    assert_eq!(app.count("SELECT count(*) FROM messages"), 0);
    // Refused by a read before the write: none of them cost its writer batch a second pass.
    let metrics = app.http.get("/metrics").answer().await;
    assert_eq!(
        value_of(&metrics.body, "porch_writer_reruns_total"),
        Some(0.0),
        "{}",
        metrics.body
    );
    let too_many = send_with(&mut ann.widget, "c-y", "", &[mine; 11]).await;
    assert_eq!(too_many["code"], "invalid_message", "{too_many}");

    let ack = send_with(&mut ann.widget, "c-1", "", &[mine]).await;
    assert_eq!(ack["type"], "ack", "{ack}");
    // After a reconnect the widget resends what was not acked, with the same client_id.
    drop(ann.widget);
    let (mut again, _) = app
        .visitor(&site, Some(&ann.token), ack["id"].as_i64().unwrap())
        .await;
    let resent = send_with(&mut again, "c-1", "", &[mine]).await;
    assert_eq!(
        (resent["type"].clone(), resent["id"].clone()),
        (json!("ack"), ack["id"].clone())
    );
    let reused = send_with(&mut again, "c-2", "", &[mine]).await;
    assert_eq!(reused["code"], "unknown_attachment", "{reused}");
    assert_eq!(app.count("SELECT count(*) FROM messages"), 1);
    assert_eq!(
        app.count("SELECT count(*) FROM attachments WHERE message_id IS NOT NULL"),
        1
    );
}

#[tokio::test]
async fn an_agent_replies_with_a_file_and_the_visitor_sees_it_live() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let mut ann = visitor(&app, &site).await;
    let ack = ann.widget.say("c-1", "can you send the invoice?").await;
    let conversation = app.count(&format!(
        "SELECT conversation_id FROM messages WHERE id = {}",
        ack["id"]
    ));
    let agent: Browser = signed_in_from(&app, &setup_admin(&app).await).await;
    let upload_path = format!("/conversations/{conversation}/attachments?name=invoice.pdf");
    let pdf = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n".to_vec();
    let forged = request(&app, "POST", &upload_path, &agent.cookie, None)
        .body(pdf.clone())
        .answer()
        .await;
    assert_eq!(forged.status, 403, "no CSRF token");
    let file = agent_upload(&app, &agent, conversation, "invoice.pdf", pdf.clone()).await;
    let id = file["id"].as_str().expect("id");
    assert_eq!(file["type"], "application/pdf");

    // A note carries no files, so naming some does not excuse its empty text.
    let note = form(&[
        ("csrf", &agent.csrf),
        ("body", ""),
        ("kind", "note"),
        ("attachments", id),
    ]);
    let refused = request(
        &app,
        "POST",
        &format!("/conversations/{conversation}/reply"),
        &agent.cookie,
        Some(&note),
    )
    .answer()
    .await;
    assert_eq!(
        refused.header("location"),
        Some(format!("/conversations/{conversation}?error=empty").as_str())
    );
    assert_eq!(
        app.count("SELECT count(*) FROM messages WHERE author = 'note'"),
        0
    );

    agent_reply_with(&app, &agent, conversation, id).await;
    let pushed = ann.widget.recv().await;
    assert_eq!(pushed["type"], "message", "{pushed}");
    assert_eq!(pushed["author"], "agent");
    let shown = &pushed["attachments"][0];
    assert_eq!(
        (
            shown["id"].as_str(),
            shown["name"].as_str(),
            shown["size"].as_u64()
        ),
        (Some(id), Some("invoice.pdf"), Some(pdf.len() as u64))
    );
    // The inbox row previews a reply of files alone by their number.
    let list = request(&app, "GET", "/inbox", &agent.cookie, None)
        .answer()
        .await;
    assert!(list.body.contains(": </span>1 file</p>"), "{}", list.body);
    let served = download(&app, &site, &ann.token, id).await;
    assert_eq!(served.status(), 200);
    assert!(
        served.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment; filename=\"invoice.pdf\"")
    );
    assert_eq!(served.bytes().await.unwrap().as_ref(), &pdf[..]);

    // A returning widget gets the file in its history too.
    let (_, welcome) = app.visitor(&site, Some(&ann.token), 0).await;
    assert_eq!(
        welcome["messages"][1]["attachments"][0]["id"], id,
        "{welcome}"
    );
}

#[tokio::test]
async fn uploads_no_message_took_are_swept_after_an_hour() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let mut ann = visitor(&app, &site).await;
    let (_, kept) = upload(&app, &site, &ann.token, "a.txt", b"sent".to_vec()).await;
    let (_, left) = upload(&app, &site, &ann.token, "b.txt", b"never sent".to_vec()).await;
    let ack = send_with(&mut ann.widget, "c-1", "", &[kept["id"].as_str().unwrap()]).await;
    assert_eq!(ack["type"], "ack");
    let writer = &app.server.as_ref().expect("running").app.writer;
    let now = porch::clock::now_ms();
    assert_eq!(
        porch::attachments::sweep_unattached(writer, now)
            .await
            .unwrap(),
        0
    );
    let later = now + 61 * 60 * 1000;
    assert_eq!(
        porch::attachments::sweep_unattached(writer, later)
            .await
            .unwrap(),
        1
    );
    assert_eq!(app.count("SELECT count(*) FROM attachments"), 1);
    assert_eq!(app.count("SELECT count(*) FROM attachment_chunks"), 1);
    let gone = download(&app, &site, &ann.token, left["id"].as_str().unwrap()).await;
    assert_eq!(gone.status(), 404);
}

/// Acks of `count` text messages sent one after another, in milliseconds.
async fn ack_times(widget: &mut Widget, tag: &str, count: usize) -> Vec<f64> {
    let mut times = Vec::with_capacity(count);
    for n in 0..count {
        let started = std::time::Instant::now();
        let ack = widget.say(&format!("{tag}-{n}"), "plain text").await;
        assert_eq!(ack["type"], "ack", "{ack}");
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    times
}

/// The figure docs/capacity.md ("Attachments") quotes: a 10 MB upload's time, and text acks
/// before and while it is stored. Chunked writes keep each ack waiting for one 256 KiB chunk
/// at most, so no ack may wait as long as half the upload (one big write would hold them all).
#[tokio::test]
async fn a_text_message_is_not_held_behind_a_large_upload() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    app.set_site_limits(&site, 6000, 1000, 60_000, 600);
    let ann = visitor(&app, &site).await;
    let mut bob = visitor(&app, &site).await;
    let before = ack_times(&mut bob.widget, "before", 20).await;

    let (addr_app, site_key, token) = (app.http.clone(), site.clone(), ann.token.clone());
    let started = std::time::Instant::now();
    let upload = tokio::spawn(async move {
        let answer = addr_app
            .request(
                "POST",
                &format!("/widget/attachments?site={site_key}&name=big.txt"),
            )
            .header("origin", ORIGIN)
            .header("authorization", format!("Bearer {token}"))
            .body(vec![b'a'; 10_000_000])
            .answer()
            .await;
        (answer.status, started.elapsed().as_secs_f64() * 1000.0)
    });
    let mut during = Vec::new();
    while !upload.is_finished() {
        during.extend(ack_times(&mut bob.widget, &format!("during{}", during.len()), 1).await);
    }
    let (status, upload_ms) = upload.await.expect("upload task");
    assert_eq!(status, 201);
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    let median = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        s[s.len() / 2]
    };
    eprintln!(
        "10 MB upload {upload_ms:.0} ms; text acks before: median {:.1} ms, max {:.1} ms; \
         during ({} acks): median {:.1} ms, max {:.1} ms",
        median(&before),
        max(&before),
        during.len(),
        median(&during),
        max(&during),
    );
    assert!(
        !during.is_empty(),
        "no message was sent while the upload ran"
    );
    assert!(
        max(&during) < upload_ms / 2.0,
        "an ack waited {:.0} ms of a {upload_ms:.0} ms upload",
        max(&during)
    );
}

/// A PNG chunk with its CRC (the decoder checks it).
fn png_chunk(png: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
    png.extend(u32::try_from(data.len()).unwrap().to_be_bytes());
    png.extend_from_slice(kind);
    png.extend_from_slice(data);
    let mut crc = flate2::Crc::new();
    crc.update(kind);
    crc.update(data);
    png.extend(crc.sum().to_be_bytes());
}

/// A valid PNG of `width`×`height` black pixels, 1 bit each, whatever its size compressed.
pub(crate) fn black_png(width: u32, height: u32) -> Vec<u8> {
    use std::io::Write;
    let mut header = Vec::new();
    header.extend(width.to_be_bytes());
    header.extend(height.to_be_bytes());
    header.extend([1, 0, 0, 0, 0]); // 1 bit grey, no interlace
    let row = 1 + width.div_ceil(8) as usize; // a filter byte, then the bits
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; row * 64];
    for _ in 0..height / 64 {
        zlib.write_all(&zeros).unwrap();
    }
    zlib.write_all(&zeros[..row * (height % 64) as usize])
        .unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png_chunk(&mut png, b"IHDR", &header);
    png_chunk(&mut png, b"IDAT", &zlib.finish().unwrap());
    png_chunk(&mut png, b"IEND", b"");
    png
}

#[tokio::test]
async fn an_images_thumbnail_is_served_to_the_same_people_with_the_same_headers() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let mut ann = visitor(&app, &site).await;
    let bob = visitor(&app, &site).await;
    let (status, file) = upload(&app, &site, &ann.token, "wide.png", black_png(1000, 500)).await;
    assert_eq!(status, 201, "{file}");
    let id = file["id"].as_str().expect("id");
    let (_, text) = upload(&app, &site, &ann.token, "a.txt", b"words".to_vec()).await;
    let text_id = text["id"].as_str().expect("id");
    let ack = send_with(&mut ann.widget, "c-1", "", &[id, text_id]).await;
    assert_eq!(ack["type"], "ack", "{ack}");

    let thumb = format!("{id}/thumbnail");
    let served = download(&app, &site, &ann.token, &thumb).await;
    assert_eq!(served.status(), 200);
    let headers = served.headers().clone();
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    assert_eq!(header("content-type"), "image/png");
    assert_eq!(header("x-content-type-options"), "nosniff");
    assert_eq!(
        header("content-security-policy"),
        "sandbox; default-src 'none'"
    );
    let file = download(&app, &site, &ann.token, id).await;
    for same in ["cache-control", "vary"] {
        assert_eq!(
            Some(header(same)),
            file.headers().get(same).and_then(|v| v.to_str().ok())
        );
    }
    assert_eq!(header("access-control-allow-origin"), ORIGIN);
    assert!(header("content-disposition").starts_with("inline; filename=\"wide.png\""));
    let image = image::load_from_memory(&served.bytes().await.expect("bytes")).expect("an image");
    assert_eq!(
        (image.width(), image.height()),
        (320, 160),
        "scaled to fit 320 px"
    );

    assert_eq!(
        download(&app, &site, &bob.token, &thumb).await.status(),
        404
    );
    assert_eq!(download(&app, &site, "", &thumb).await.status(), 401);
    let not_an_image = format!("{text_id}/thumbnail");
    assert_eq!(
        download(&app, &site, &ann.token, &not_an_image)
            .await
            .status(),
        404
    );

    let conversation = app.count(&format!(
        "SELECT conversation_id FROM messages WHERE id = {}",
        ack["id"]
    ));
    let agent_path = format!("/conversations/{conversation}/attachments/{thumb}");
    let signed_out = request(&app, "GET", &agent_path, "", None).answer().await;
    assert_eq!(signed_out.status, 303, "to the sign-in page");
    let agent = signed_in_from(&app, &setup_admin(&app).await).await;
    let read = request(&app, "GET", &agent_path, &agent.cookie, None)
        .answer()
        .await;
    assert_eq!(read.status, 200);
    assert_eq!(read.header("content-type"), Some("image/png"));
    assert_eq!(read.header("x-content-type-options"), Some("nosniff"));
    let wrong = format!("/conversations/{}/attachments/{thumb}", conversation + 1);
    let read = request(&app, "GET", &wrong, &agent.cookie, None)
        .answer()
        .await;
    assert_eq!(read.status, 404);
}

#[tokio::test]
async fn a_decompression_bomb_is_refused_and_nothing_is_stored() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let ann = visitor(&app, &site).await;
    // 10,000 × 10,000 pixels (100 megapixels, 400 MB decoded as RGBA) in a file of a few KB.
    let bomb = black_png(10_000, 10_000);
    assert!(bomb.len() < 100_000, "{} bytes", bomb.len());
    let (status, answer) = upload(&app, &site, &ann.token, "bomb.png", bomb).await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(answer["error"]["code"], "image_too_large");
    // A side over 20,000 pixels, however few pixels in all (60,000 × 1), or 3.6 gigapixels
    // declared in a header with no pixel data at all.
    let mut header_only = b"\x89PNG\r\n\x1a\n".to_vec();
    let ihdr = [
        &60_000u32.to_be_bytes()[..],
        &60_000u32.to_be_bytes(),
        &[8, 6, 0, 0, 0],
    ];
    png_chunk(&mut header_only, b"IHDR", &ihdr.concat());
    png_chunk(&mut header_only, b"IDAT", b"x\x9c\x03\x00\x00\x00\x00\x01");
    png_chunk(&mut header_only, b"IEND", b"");
    for bomb in [black_png(60_000, 1), header_only] {
        let (status, answer) = upload(&app, &site, &ann.token, "wide.png", bomb).await;
        assert_eq!(status, 422, "{answer}");
        assert_eq!(answer["error"]["code"], "image_too_large");
        // The words name both limits: a panorama of 60,000 pixels in all broke the side's.
        assert_eq!(
            answer["error"]["message"],
            "Images can be at most 50 megapixels, and 20,000 pixels a side."
        );
    }
    assert_eq!(app.count("SELECT count(*) FROM attachments"), 0);
    // Just under the limit (7,000 × 7,000 = 49 megapixels) is accepted, with a thumbnail.
    let (status, answer) =
        upload(&app, &site, &ann.token, "big.png", black_png(7_000, 7_000)).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(app.count("SELECT count(*) FROM attachment_thumbnails"), 1);
}

/// The `value` of the input with `id` on a page.
fn field_value(page: &str, id: &str) -> String {
    let tag = &page[page
        .find(&format!("<input id=\"{id}\""))
        .expect("the field")..];
    let tag = &tag[..tag.find('>').expect("the tag's end")];
    let value = &tag[tag.find("value=\"").expect("a value") + 7..];
    value[..value.find('"').expect("the value's end")].to_owned()
}

/// Saves the site form with `attachment_max_mb` (the other fields as they were).
async fn save_limit(app: &TestApp, admin: &Browser, site: &str, megabytes: &str) -> Answer {
    let mut fields = vec![
        ("csrf", admin.csrf.as_str()),
        ("name", "Shop"),
        ("origins", ORIGIN),
        ("attachment_max_mb", megabytes),
    ];
    fields.extend_from_slice(&SITE_FIELDS);
    send(
        app,
        "POST",
        &format!("/sites/{site}"),
        &admin.cookie,
        Some(&form(&fields)),
    )
    .await
}

#[tokio::test]
async fn the_site_page_sets_the_attachment_limit_and_uploads_obey_it() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let ann = visitor(&app, &site).await;
    let page = send(&app, "GET", &format!("/sites/{site}"), &admin.cookie, None).await;
    assert_eq!(
        field_value(&page.body, "attachment_max_mb"),
        "10",
        "the default, 10 MiB"
    );

    assert_eq!(save_limit(&app, &admin, &site, "0.5").await.status, 303);
    let limit = format!("SELECT attachment_max_bytes FROM sites WHERE key = '{site}'");
    assert_eq!(app.count(&limit), 524_288);
    let audited = "SELECT count(*) FROM audit_events WHERE action = 'site.updated' \
                   AND detail LIKE '%\"attachment_max_bytes\":524288%'";
    assert_eq!(app.count(audited), 1);
    let page = send(&app, "GET", &format!("/sites/{site}"), &admin.cookie, None).await;
    assert_eq!(field_value(&page.body, "attachment_max_mb"), "0.50");
    let (status, answer) = upload(&app, &site, &ann.token, "a.txt", vec![b'a'; 600_000]).await;
    assert_eq!(
        (status, answer["error"]["max_bytes"].as_u64()),
        (413, Some(524_288)),
        "{answer}"
    );

    // Saving the form unchanged records no new limit; out of range is refused and changes nothing.
    assert_eq!(save_limit(&app, &admin, &site, "0.50").await.status, 303);
    assert_eq!(app.count(audited), 1);
    let refused = save_limit(&app, &admin, &site, "25.01").await;
    assert_eq!(refused.status, 422);
    assert!(
        refused.body.contains("from 0 (no attachments) to 25"),
        "{}",
        refused.body
    );
    assert_eq!(
        field_value(&refused.body, "attachment_max_mb"),
        "25.01",
        "kept to correct"
    );
    assert_eq!(app.count(&limit), 524_288);

    assert_eq!(save_limit(&app, &admin, &site, "0").await.status, 303);
    let (status, answer) = upload(&app, &site, &ann.token, "a.txt", b"hi".to_vec()).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (403, Some("attachments_off"))
    );
    assert_eq!(save_limit(&app, &admin, &site, "25").await.status, 303);
    assert_eq!(app.count(&limit), 26_214_400);
}
