//! Smaller trust defects: `next` with control characters, reset links surviving a disable, HSTS,
//! `nosniff` on the widget's scripts, and listing and revoking API tokens.

use std::process::Command;

use porch::accounts::LinkKind;

use crate::helpers::{Answer, TestApp, WAIT, ok_if, wait_until};
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
async fn next_with_a_tab_or_newline_goes_to_the_inbox() {
    let app = TestApp::spawn(&[]).await;
    setup_admin(&app).await;
    for next in [
        "/\t/evil.example",
        "/\n/evil.example",
        "/inbox\r\nSet-Cookie: x=1",
    ] {
        let answer = sign_in_with_next(&app, next).await;
        assert_eq!(answer.status, 303, "{next:?}");
        assert_eq!(answer.header("location"), Some("/inbox"), "{next:?}");
    }
    let fine = sign_in_with_next(&app, "/team").await;
    assert_eq!(fine.header("location"), Some("/team"));
}

#[tokio::test]
async fn a_reset_link_made_before_a_disable_is_dead_after_re_enabling() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let bo = add_user(&app, "bo@example.com", "agent");
    let accounts = &app.server.as_ref().expect("running").app.accounts;
    let me = porch::store::UserId(1);
    let token = accounts
        .create_link(me, bo, LinkKind::Reset)
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
    let plain = TestApp::spawn(&[]).await;
    let page = send(&plain, "GET", "/login", "", None).await;
    assert_eq!(page.header("strict-transport-security"), None);
}

#[tokio::test]
async fn the_widget_scripts_are_nosniff() {
    let app = TestApp::spawn(&[]).await;
    for path in ["/widget/panel.js", "/widget/panel.css"] {
        let answer = send(&app, "GET", path, "", None).await;
        assert_eq!(answer.status, 200);
        assert_eq!(
            answer.header("x-content-type-options"),
            Some("nosniff"),
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
    let (ok, listed) = porch_token(&app, &["list"]);
    assert!(ok, "{listed}");
    assert!(
        listed.contains("deploy-bot") && listed.contains("never"),
        "{listed}"
    );
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
    assert!(!listed.contains("never"), "{listed}");
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
