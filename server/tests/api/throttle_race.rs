//! Password guessing stays throttled under parallel attempts, on the current-password check of
//! a password change, and a stranger's bad guesses do not lock the real user out.

use crate::helpers::{Answer, Exchange as _, TestApp};
use crate::inbox::{
    PASSWORD, csrf_in, form, form_cookie, request, send, setup_admin, signed_in_from,
};

const EMAIL: &str = "ana@example.com";

/// One sign-in from `address` (the server trusts 127.0.0.1 as a proxy in these tests).
async fn sign_in_from(app: &TestApp, address: &str, password: &str) -> Answer {
    let (cookie, csrf) = form_cookie(app, "/login").await;
    let body = form(&[("csrf", &csrf), ("email", EMAIL), ("password", password)]);
    request(app, "POST", "/login", &cookie, Some(&body))
        .header("X-Forwarded-For", address)
        .answer()
        .await
}

#[tokio::test]
async fn parallel_wrong_guesses_are_refused_past_the_limit() {
    let app = TestApp::spawn(&["--trusted-proxies", "127.0.0.1"]).await;
    setup_admin(&app).await;
    let guesses = (0..40).map(|i| {
        let app = &app;
        async move { sign_in_from(app, "203.0.113.9", &format!("wrong guess {i:03}")).await }
    });
    let answers = futures_util::future::join_all(guesses).await;
    let evaluated = answers.iter().filter(|a| a.status == 401).count();
    let refused = answers.iter().filter(|a| a.status == 429).count();
    assert_eq!(
        (evaluated, refused),
        (porch::accounts::ACCOUNT_FAILURES as usize, 40 - evaluated),
        "only the allowed guesses may reach argon2"
    );
    // Even the right password is refused from that address now ...
    assert_eq!(
        sign_in_from(&app, "203.0.113.9", PASSWORD).await.status,
        429
    );
    // ... but the real user elsewhere still gets in.
    let real = sign_in_from(&app, "198.51.100.20", PASSWORD).await;
    assert_eq!(real.status, 303, "{}", real.body);
}

#[tokio::test]
async fn a_burst_with_the_right_password_gets_no_more_than_the_limit_evaluated() {
    let app = TestApp::spawn(&["--trusted-proxies", "127.0.0.1"]).await;
    setup_admin(&app).await;
    let attempts = (0..31).map(|i| {
        let app = &app;
        let password = if i == 30 {
            PASSWORD.to_owned()
        } else {
            format!("wrong guess {i:03}")
        };
        async move { sign_in_from(app, "203.0.113.9", &password).await }
    });
    let answers = futures_util::future::join_all(attempts).await;
    let evaluated = answers.iter().filter(|a| a.status != 429).count();
    assert!(
        evaluated <= porch::accounts::ACCOUNT_FAILURES as usize,
        "{evaluated} attempts were checked"
    );
}

#[tokio::test]
async fn current_password_guesses_on_a_password_change_are_throttled() {
    let app = TestApp::spawn(&[]).await;
    let stolen = signed_in_from(&app, &setup_admin(&app).await).await;
    let mut statuses = Vec::new();
    let mut retry_after = None;
    for i in 0..30 {
        let body = form(&[
            ("csrf", &stolen.csrf),
            ("current", &format!("guess number {i:03}")),
            ("new", "the attacker's password"),
        ]);
        let answer = send(
            &app,
            "POST",
            "/account/password",
            &stolen.cookie,
            Some(&body),
        )
        .await;
        statuses.push(answer.status);
        if answer.status == 429 {
            retry_after = answer.header("retry-after").map(str::to_owned);
        }
    }
    // As sign-in's refusals: the browser and scripts learn when to try again.
    let seconds: u64 = retry_after.expect("Retry-After").parse().expect("seconds");
    assert!(seconds > 0, "{seconds}");
    let wrong = statuses.iter().filter(|s| **s == 422).count();
    assert_eq!(
        wrong,
        porch::accounts::ACCOUNT_FAILURES as usize,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().skip(wrong).all(|s| *s == 429),
        "{statuses:?}"
    );
    let page = send(&app, "GET", "/account", &stolen.cookie, None).await;
    assert!(!csrf_in(&page.body).is_empty());
}
