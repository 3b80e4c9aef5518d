//! API tokens on the account page: made and shown once, used, revoked only by their owner or
//! an admin (another user's token is "not found" to an agent), each change audited. Over real
//! HTTP and SQLite; the browser test `tests/browser/api-tokens.test.js` clicks through the same.

use crate::helpers::TestApp;
use crate::inbox::{PASSWORD, add_user, form, send, setup_admin, sign_in, signed_in_from};

#[tokio::test]
async fn an_agent_cannot_revoke_an_admins_token_but_the_admin_can() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let fields = form(&[
        ("csrf", admin.csrf.as_str()),
        ("name", "ci"),
        ("scope", "read-write"),
        ("expires", "never"),
    ]);
    let made = send(
        &app,
        "POST",
        "/account/tokens",
        &admin.cookie,
        Some(&fields),
    )
    .await;
    assert_eq!(made.status, 200);
    let token = made
        .body
        .split("pat_")
        .nth(1)
        .map(|rest| format!("pat_{}", &rest[..43]))
        .expect("the token, shown once");
    let id = app.count("SELECT id FROM api_tokens");
    let (status, _) = app.api("GET", "/api/v1/conversations", &token, None).await;
    assert_eq!(status, 200);
    // Once past its expiry a token is marked so in the list, not shown as a live one.
    let account = send(&app, "GET", "/account", &admin.cookie, None).await;
    assert!(!account.body.contains(">Expired<"), "{}", account.body);
    app.db()
        .execute("UPDATE api_tokens SET expires_at = 1 WHERE id = ?1", [id])
        .expect("expire");
    let account = send(&app, "GET", "/account", &admin.cookie, None).await;
    assert!(account.body.contains(">Expired<"), "{}", account.body);
    app.db()
        .execute(
            "UPDATE api_tokens SET expires_at = NULL WHERE id = ?1",
            [id],
        )
        .expect("unexpire");

    add_user(&app, "bo@example.com", "agent");
    let agent = signed_in_from(&app, &sign_in(&app, "bo@example.com", PASSWORD).await).await;
    let path = format!("/account/tokens/{id}/revoke");
    assert_eq!(
        send(&app, "GET", &path, &agent.cookie, None).await.status,
        404
    );
    let agent_post = form(&[("csrf", agent.csrf.as_str())]);
    let refused = send(&app, "POST", &path, &agent.cookie, Some(&agent_post)).await;
    assert_eq!(refused.status, 404);
    let account = send(&app, "GET", "/account", &agent.cookie, None).await;
    assert!(
        !account.body.contains("ci</td>"),
        "an agent lists only their own"
    );
    assert_eq!(
        app.api("GET", "/api/v1/conversations", &token, None)
            .await
            .0,
        200
    );

    let confirm = send(&app, "GET", &path, &admin.cookie, None).await;
    assert!(confirm.body.contains("Revoke token"), "{}", confirm.body);
    let admin_post = form(&[("csrf", admin.csrf.as_str())]);
    let revoked = send(&app, "POST", &path, &admin.cookie, Some(&admin_post)).await;
    assert_eq!(revoked.status, 303);
    assert_eq!(
        app.api("GET", "/api/v1/conversations", &token, None)
            .await
            .0,
        401
    );
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE action IN ('token.created', 'token.revoked') AND actor = 'ana@example.com' AND ip = '127.0.0.1'"),
        2
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM audit_events WHERE detail LIKE '%{token}%'"
        )),
        0
    );
}
