//! Login CSRF by cookie tossing: a page on a sibling origin of the same site can set cookies for
//! Porch's host. Over https the cookies are `__Host-` prefixed, which a sibling cannot set, and a
//! cookie name that arrives twice is trusted in neither copy.

use crate::helpers::TestApp;
use crate::inbox::{PASSWORD, form, form_cookie, send, setup_admin, sign_in, signed_in_from};

/// A form token the attacker got for themselves and planted in the victim's browser.
const TOSSED: &str = "attacker-chosen-form-token-0123456789abcdef";

fn attacker_login() -> String {
    form(&[
        ("csrf", TOSSED),
        ("email", "ana@example.com"),
        ("password", PASSWORD),
    ])
}

#[tokio::test]
async fn over_https_the_cookies_are_host_prefixed_and_a_tossed_plain_one_is_ignored() {
    let app = TestApp::spawn(&["--public-url", "https://chat.example.com"]).await;
    setup_admin(&app).await;
    let page = send(&app, "GET", "/login", "", None).await;
    let (pair, header) = page.cookie("porch_form").expect("a form cookie");
    assert!(pair.starts_with("__Host-porch_form="), "{header}");
    assert!(
        header.contains("; Secure") && header.contains("Path=/"),
        "{header}"
    );
    assert!(!header.to_lowercase().contains("domain="), "{header}");
    let signed_in = sign_in(&app, "ana@example.com", PASSWORD).await;
    let (pair, _) = signed_in.cookie("porch_session").expect("a session cookie");
    assert!(pair.starts_with("__Host-porch_session="), "{pair}");

    // A sibling origin can set `porch_form`, not `__Host-porch_form`.
    let tossed = format!("porch_form={TOSSED}");
    let posted = send(&app, "POST", "/login", &tossed, Some(&attacker_login())).await;
    assert_eq!(posted.status, 403, "a tossed cookie signed the browser in");
    assert!(posted.cookie("porch_session").is_none());
}

#[tokio::test]
async fn a_form_cookie_sent_twice_is_not_trusted() {
    let app = TestApp::spawn(&[]).await;
    setup_admin(&app).await;
    let (own, _) = form_cookie(&app, "/login").await;
    // The tossed cookie (a longer path) comes first; the browser's own second.
    let cookies = format!("porch_form={TOSSED}; {own}");
    let posted = send(&app, "POST", "/login", &cookies, Some(&attacker_login())).await;
    assert_eq!(posted.status, 403, "the first of two cookies was trusted");
    assert!(posted.cookie("porch_session").is_none());
}

#[tokio::test]
async fn a_session_cookie_sent_twice_is_not_trusted() {
    let app = TestApp::spawn(&[]).await;
    let victim = signed_in_from(&app, &setup_admin(&app).await).await;
    let attacker = sign_in(&app, "ana@example.com", PASSWORD).await;
    let (tossed, _) = attacker.cookie("porch_session").expect("session");
    let both = format!("{tossed}; {}", victim.cookie);
    // The `Set-Cookie` headers of the answer to `path` with both cookies.
    let set_cookies = async |path: &str| -> Vec<String> {
        let page = send(&app, "GET", path, &both, None).await;
        assert_eq!(page.status, 303, "one of two session cookies was trusted");
        page.headers
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect()
    };
    // The copy planted for the page's path is deleted there, or the sign-in page (which sees
    // only the browser's own, at `/`) would send the agent back to the page for ever.
    assert_eq!(
        set_cookies("/inbox").await,
        [
            "porch_session=; Path=/inbox; Max-Age=0",
            "porch_session=; Path=/inbox/; Max-Age=0"
        ]
    );
    assert_eq!(
        set_cookies("/conversations/7/events").await,
        [
            "porch_session=; Path=/conversations; Max-Age=0",
            "porch_session=; Path=/conversations/; Max-Age=0",
            "porch_session=; Path=/conversations/7; Max-Age=0",
            "porch_session=; Path=/conversations/7/; Max-Age=0",
            "porch_session=; Path=/conversations/7/events; Max-Age=0",
            "porch_session=; Path=/conversations/7/events/; Max-Age=0",
        ]
    );
    // A path that would add attributes to the cookie stops the list where it begins.
    assert_eq!(
        set_cookies("/sites/s_x;Path=%2F").await,
        [
            "porch_session=; Path=/sites; Max-Age=0",
            "porch_session=; Path=/sites/; Max-Age=0"
        ]
    );
    // The browser's own cookie alone still signs in.
    let page = send(&app, "GET", "/inbox", &victim.cookie, None).await;
    assert_eq!(page.status, 200);
}
