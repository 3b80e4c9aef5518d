//! The team page's word for someone who has not joined: *Invited* while their invitation link
//! works, *Invitation expired* once it does not, and *Invited* again after a new link.
// Helpers outside #[test] functions: a failed expectation is a failed test.
#![allow(clippy::expect_used)]

use crate::helpers::TestApp;
use crate::inbox::{form, send, setup_admin, signed_in_from};

#[tokio::test]
async fn an_invitation_whose_link_expired_is_marked_so_until_a_new_link_is_made() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let post = async |path: &str, fields: &[(&str, &str)]| {
        let mut all = vec![("csrf", admin.csrf.as_str())];
        all.extend_from_slice(fields);
        send(&app, "POST", path, &admin.cookie, Some(&form(&all))).await
    };
    let invited = post(
        "/team/invite",
        &[
            ("email", "bo@example.com"),
            ("name", "Bo"),
            ("role", "agent"),
        ],
    )
    .await;
    assert_eq!(invited.status, 200, "{}", invited.body);
    let badge = async || {
        let page = send(&app, "GET", "/team", &admin.cookie, None).await;
        let bo = page.body.split("bo@example.com").next().unwrap_or_default();
        bo.rsplit("<li").next().unwrap_or_default().to_owned()
    };
    let row = badge().await;
    assert!(row.contains(">Invited</span>"), "{row}");
    assert!(row.contains("link works until <time"), "{row}");

    app.db()
        .execute("UPDATE account_links SET expires_at = 0", [])
        .expect("the link expires");
    let row = badge().await;
    assert!(row.contains(">Invitation expired</span>"), "{row}");
    assert!(!row.contains(">Invited</span>"), "{row}");

    let bo = app.count("SELECT id FROM users WHERE email = 'bo@example.com'");
    assert_eq!(post(&format!("/team/{bo}/link"), &[]).await.status, 200);
    let row = badge().await;
    assert!(row.contains(">Invited</span>"), "a new link works: {row}");

    // Added without a password and never sent a link: not invited, rather than expired.
    crate::privacy::cli(
        &app,
        &[
            "user",
            "add",
            "--email",
            "cy@example.com",
            "--name",
            "Cy",
            "--role",
            "agent",
        ],
    );
    let page = send(&app, "GET", "/team", &admin.cookie, None).await;
    let cy = page.body.split("cy@example.com").next().unwrap_or_default();
    let row = cy.rsplit("<li").next().unwrap_or_default();
    assert!(row.contains(">Not invited</span>"), "{row}");
}
