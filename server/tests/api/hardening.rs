//! Smaller trust defects: `next` with control characters, reset links surviving a disable, HSTS,
//! `nosniff` on every answer, and listing and revoking API tokens.

use std::process::Command;

use porch::accounts::LinkKind;

use crate::helpers::{Answer, Exchange as _, TestApp, WAIT, ok_if, wait_until};
use crate::inbox::{PASSWORD, add_user, form, form_cookie, send, setup_admin, signed_in_from};

async fn sign_in_with_next(app: &TestApp, next: &str) -> Answer {
    let (cookie, csrf) = form_cookie(app, "/login").await;
    let body = form(&[
        ("csrf", &csrf),
        ("email", "ana@example.com"),
        ("password", PASSWORD),
        ("next", next),
    ]);
    send(app, "POST", "/login", &cookie, Some(&body)).await
}

#[tokio::test]
async fn next_with_a_tab_newline_or_raw_unicode_goes_to_the_inbox() {
    let app = TestApp::spawn(&[]).await;
    setup_admin(&app).await;
    for next in [
        "/\t/evil.example",
        "/\n/evil.example",
        "/inbox\r\nSet-Cookie: x=1",
        "/\u{3002}evil.example",
        "/search?q=a b",
    ] {
        let answer = sign_in_with_next(&app, next).await;
        assert_eq!(answer.status, 303, "{next:?}");
        assert_eq!(answer.header("location"), Some("/inbox"), "{next:?}");
    }
    let fine = sign_in_with_next(&app, "/team").await;
    assert_eq!(fine.header("location"), Some("/team"));
    let encoded = sign_in_with_next(&app, "/search?q=caf%C3%A9").await;
    assert_eq!(encoded.header("location"), Some("/search?q=caf%C3%A9"));
}

#[tokio::test]
async fn a_reset_link_made_before_a_disable_is_dead_after_re_enabling() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let bo = add_user(&app, "bo@example.com", "agent");
    let accounts = &app.server.as_ref().expect("running").app.accounts;
    let me = porch::store::find_user(&app.db(), porch::store::UserId(1))
        .expect("read")
        .expect("the admin");
    let token = accounts
        .create_link(
            &me,
            std::net::Ipv4Addr::LOCALHOST.into(),
            bo,
            LinkKind::Reset,
        )
        .await
        .expect("a reset link");
    for path in ["disable", "enable"] {
        let answer = send(
            &app,
            "POST",
            &format!("/team/{bo}/{path}"),
            &admin.cookie,
            Some(&form(&[("csrf", &admin.csrf)])),
        )
        .await;
        assert_eq!(answer.status, 303, "{path}: {}", answer.body);
    }
    assert_eq!(app.count("SELECT is_disabled FROM users WHERE id = 2"), 0);
    assert!(
        accounts.find_link(&token, LinkKind::Reset).await.is_err(),
        "the reset link works again"
    );
}

#[tokio::test]
async fn hsts_is_sent_when_the_public_url_is_https_only() {
    let https = TestApp::spawn(&["--public-url", "https://chat.example.com"]).await;
    let page = send(&https, "GET", "/login", "", None).await;
    let hsts = page.header("strict-transport-security").unwrap_or("");
    assert!(hsts.starts_with("max-age="), "{hsts:?}");
    // Also on a refusal the framework made and the API's error layer rewrote.
    let refused = send(&https, "DELETE", "/api/v1/conversations", "", None).await;
    assert_eq!(refused.status, 405);
    assert_eq!(refused.header("strict-transport-security"), Some(hsts));
    let plain = TestApp::spawn(&[]).await;
    let page = send(&plain, "GET", "/login", "", None).await;
    assert_eq!(page.header("strict-transport-security"), None);
    // A scheme is case-insensitive: an operator's `HTTPS://` gets the same protections.
    let shouted = TestApp::spawn(&["--public-url", "HTTPS://Chat.Example.com"]).await;
    let page = send(&shouted, "GET", "/setup", "", None).await;
    assert_eq!(page.header("strict-transport-security"), Some(hsts));
    let form = page.header("set-cookie").unwrap_or("");
    assert!(
        form.starts_with("__Host-") && form.contains("; Secure"),
        "{form}"
    );
}

#[tokio::test]
async fn every_answer_is_nosniff() {
    let app = TestApp::spawn(&[]).await;
    // Scripts, JSON, metrics, and refusals by the framework itself: an unknown widget language,
    // a websocket URL opened without an upgrade, an unknown API path.
    for (path, status) in [
        ("/widget/panel.js", 200),
        ("/widget/panel.css", 200),
        ("/assets/inbox.js", 200),
        ("/healthz", 200),
        ("/metrics", 200),
        ("/widget/locales/xx.json", 404),
        ("/widget/ws", 400),
        ("/api/v1/nothing", 404),
        ("/nothing", 404),
    ] {
        let answer = send(&app, "GET", path, "", None).await;
        assert_eq!(answer.status, status, "{path}");
        assert_eq!(
            answer.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
    }
}

/// The widget's files load in pages on other origins, cross-origin isolated ones too
/// (`Cross-Origin-Embedder-Policy: require-corp`, docs/widget.md).
#[tokio::test]
async fn the_widget_files_may_be_loaded_by_other_origins() {
    let app = TestApp::spawn(&[]).await;
    for path in [
        "/widget/panel.js",
        "/widget/panel.css",
        "/widget/locales/de.json",
    ] {
        let answer = send(&app, "GET", path, "", None).await;
        assert_eq!(answer.status, 200, "{path}");
        assert_eq!(
            answer.header("cross-origin-resource-policy"),
            Some("cross-origin"),
            "{path}"
        );
        assert_eq!(
            answer.header("access-control-allow-origin"),
            Some("*"),
            "{path}"
        );
    }
}

fn porch_token(app: &TestApp, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_porch"))
        .arg("--data-dir")
        .arg(app.data_dir.path())
        .arg("token")
        .args(args)
        .output()
        .expect("run porch");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[tokio::test]
async fn api_tokens_can_be_listed_with_their_last_use_and_revoked() {
    let app = TestApp::spawn(&[]).await;
    let token = app.add_user_token("deploy-bot", "admin");
    // The last column is when the token was last used.
    let last_used = |listed: &str| {
        let row = listed.lines().find(|l| l.contains("deploy-bot"));
        row.and_then(|r| r.rsplit('\t').next()).map(str::to_owned)
    };
    let (ok, listed) = porch_token(&app, &["list"]);
    assert!(ok, "{listed}");
    assert_eq!(last_used(&listed).as_deref(), Some("never"), "{listed}");
    assert!(!listed.contains(&token), "the token itself is never shown");

    assert_eq!(
        app.api("GET", "/api/v1/conversations", &token, None)
            .await
            .0,
        200
    );
    wait_until("the last use to be stored", WAIT, async || {
        ok_if(
            app.count("SELECT count(*) FROM api_tokens WHERE last_used_at IS NOT NULL"),
            |n| *n > 0,
        )
    })
    .await;
    let (_, listed) = porch_token(&app, &["list"]);
    let used = last_used(&listed).expect("the token is listed");
    assert_ne!(used, "never", "{listed}");
    let id = app.count("SELECT id FROM api_tokens").to_string();

    let (ok, revoked) = porch_token(&app, &["revoke", &id]);
    assert!(ok, "{revoked}");
    assert_eq!(
        app.api("GET", "/api/v1/conversations", &token, None)
            .await
            .0,
        401
    );
    let (ok, again) = porch_token(&app, &["revoke", &id]);
    assert!(!ok, "{again}");
}

/// A leaked token is revoked while the server writes all the time (a token's last use, agents'
/// replies): the command waits its turn for the write lock. It read the token and then wrote,
/// in a transaction begun as a read, and a commit between the two made it fail at once with
/// "database is locked", leaving the token working.
#[tokio::test]
async fn a_token_is_revoked_beside_a_server_that_keeps_writing() {
    let app = TestApp::spawn(&[]).await;
    let tokens: Vec<String> = (0..5)
        .map(|i| app.add_user_token(&format!("leaked-{i}"), "admin"))
        .collect();
    // Another connection committing as fast as it can, as the server's writer does under load.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, conn) = (stop.clone(), app.db());
        std::thread::spawn(move || {
            conn.busy_timeout(std::time::Duration::from_secs(5))
                .expect("timeout");
            let mut commits = 0_i64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                conn.execute("UPDATE api_tokens SET last_used_at = ?1", [commits])
                    .expect("a commit");
                commits += 1;
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            commits
        })
    };
    let ids: Vec<String> = tokens
        .iter()
        .enumerate()
        .map(|(i, _)| {
            app.count(&format!(
                "SELECT t.id FROM api_tokens t JOIN users u ON u.id = t.user_id \
                 WHERE u.email = 'leaked-{i}@example.com'"
            ))
            .to_string()
        })
        .collect();
    let outcomes: Vec<(bool, String)> = ids
        .iter()
        .map(|id| porch_token(&app, &["revoke", id]))
        .collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let commits = writer.join().expect("the writer");
    assert!(commits > 0);
    for (ok, said) in &outcomes {
        assert!(ok, "{said}");
    }
    for token in &tokens {
        let (status, _) = app.api("GET", "/api/v1/conversations", token, None).await;
        assert_eq!(status, 401);
    }
}

/// `porch token add` takes a name by the account page's rule (`api_tokens::token_name`): a blank,
/// a 101-character or a two-line name is refused and makes no token.
#[tokio::test]
async fn the_command_line_refuses_the_names_the_account_page_refuses() {
    let app = TestApp::spawn(&[]).await;
    app.add_user_token("ops", "admin");
    let long = "n".repeat(101);
    for name in [
        "",
        "   ",
        long.as_str(),
        "two\nlines",
        "line\u{2028}sep",
        "a\u{202E}b",
        "x\u{2066}y",
    ] {
        let add = ["add", "--user", "ops@example.com", "--name", name];
        let (ok, out) = porch_token(&app, &add);
        assert!(!ok, "{name:?} was taken: {out}");
        assert!(out.contains("--name:"), "{out}");
    }
    assert_eq!(
        app.count("SELECT count(*) FROM api_tokens WHERE name != 'test'"),
        0
    );
    let (ok, out) = porch_token(
        &app,
        &["add", "--user", "ops@example.com", "--name", " ci "],
    );
    assert!(ok, "{out}");
    assert_eq!(
        app.count("SELECT count(*) FROM api_tokens WHERE name = 'ci'"),
        1
    );
}

/// A token from `porch token add` with `args`, for the user `ops@example.com` (an admin).
fn ops_token(app: &TestApp, args: &[&str]) -> String {
    app.add_user_token("ops", "admin");
    let mut add = vec!["add", "--user", "ops@example.com", "--name", "dashboard"];
    add.extend_from_slice(args);
    let (ok, out) = porch_token(app, &add);
    assert!(ok, "{out}");
    out.trim().to_owned()
}

#[tokio::test]
async fn a_read_only_token_reads_and_is_refused_for_writes() {
    let app = TestApp::spawn(&[]).await;
    let token = ops_token(&app, &["--read-only"]);
    let (status, body) = app.api("GET", "/api/v1/conversations", &token, None).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = app.api("POST", "/api/v1/jobs/retry", &token, None).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "insufficient_scope", "{body}");
    let (_, listed) = porch_token(&app, &["list"]);
    let row = listed
        .lines()
        .find(|l| l.contains("dashboard"))
        .expect("listed");
    assert!(row.contains("\tread\t"), "{listed}");
}

#[tokio::test]
async fn an_expired_token_is_refused_and_says_so() {
    let app = TestApp::spawn(&[]).await;
    let token = ops_token(&app, &["--expires-in", "30d"]);
    assert_eq!(
        app.api("GET", "/api/v1/conversations", &token, None)
            .await
            .0,
        200
    );
    let (_, listed) = porch_token(&app, &["list"]);
    let row = listed
        .lines()
        .find(|l| l.contains("dashboard"))
        .expect("listed");
    assert!(row.contains("\tread-write\t"), "{listed}");
    assert_eq!(
        row.split('\t').nth(5).map(|e| e.starts_with("20")),
        Some(true),
        "the expiry is a date: {listed}"
    );
    // A month later (the token's expiry moved into the past).
    app.db()
        .execute(
            "UPDATE api_tokens SET expires_at = ?1 WHERE name = 'dashboard'",
            [porch::clock::now_ms() - 1],
        )
        .expect("expire");
    let answer = app
        .http
        .get("/api/v1/conversations")
        .bearer_auth(&token)
        .answer()
        .await;
    assert_eq!(answer.status, 401, "{}", answer.body);
    assert_eq!(answer.json()["error"]["code"], "token_expired");
    // The list says so: an expired token no longer reads as a live one.
    let (_, listed) = porch_token(&app, &["list"]);
    let row = listed
        .lines()
        .find(|l| l.contains("dashboard"))
        .expect("listed");
    assert!(
        row.split('\t')
            .nth(5)
            .is_some_and(|e| e.ends_with(" (expired)")),
        "{listed}"
    );
    // RFC 6750's challenge names the scheme and why the token was refused.
    assert_eq!(
        answer.headers["www-authenticate"],
        r#"Bearer realm="porch", error="invalid_token""#
    );
    let unknown = app.http.get("/api/v1/conversations").answer().await;
    assert_eq!(unknown.status, 401);
    assert_eq!(
        unknown.headers["www-authenticate"],
        r#"Bearer realm="porch""#
    );
    let (ok, refused) = porch_token(
        &app,
        &["add", "--user", "ops@example.com", "--expires-in", "soon"],
    );
    assert!(!ok, "a duration that does not parse is refused: {refused}");
    // Nor one dead before it is pasted anywhere (`1ms` typed for `1m`).
    let (ok, refused) = porch_token(
        &app,
        &["add", "--user", "ops@example.com", "--expires-in", "1ms"],
    );
    assert!(!ok && refused.contains("at least a minute"), "{refused}");
}

#[tokio::test]
async fn an_unknown_page_is_an_html_page_and_an_unknown_api_url_is_json() {
    let app = TestApp::spawn(&[]).await;
    let page = app.http.get("/no/such/page").answer().await;
    assert_eq!(page.status, 404);
    assert!(
        page.header("content-type")
            .is_some_and(|t| t.starts_with("text/html")),
        "{:?}",
        page.headers
    );
    assert!(page.body.contains("Not found"), "{}", page.body);
    let api = app.http.get("/api/v1/no-such-thing").answer().await;
    assert_eq!(api.status, 404);
    let body: serde_json::Value = serde_json::from_str(&api.body).expect("JSON");
    assert_eq!(body["error"]["code"], "not_found", "{body}");
}

#[tokio::test]
async fn the_sign_in_page_sends_someone_signed_in_on() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let again = send(&app, "GET", "/login", &admin.cookie, None).await;
    assert_eq!(again.status, 303, "{}", again.body);
    assert_eq!(again.header("location"), Some("/inbox"));
    let onward = send(&app, "GET", "/login?next=/team", &admin.cookie, None).await;
    assert_eq!(onward.header("location"), Some("/team"));
    // Not signed in: the form, as before.
    let form = app.http.get("/login").answer().await;
    assert_eq!(form.status, 200);
    assert!(form.body.contains("<form"), "{}", form.body);
}
