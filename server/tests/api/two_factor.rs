//! Two-factor sign-in (TOTP), driven over real HTTP like a browser: setting it up from the page's
//! secret, the second step of signing in (codes, replay, recovery codes, throttling), the team's
//! requirement, an admin's reset and `porch user reset-2fa`. Codes are computed here from the
//! secret the page shows, with RFC 6238 written out again (not the server's code).

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use sha1::Sha1;

use crate::helpers::{Answer, Exchange as _, TestApp};
use crate::inbox::{
    Browser, PASSWORD, add_user, form, form_cookie, send, setup_admin, sign_in, signed_in_from,
};

const ADMIN: &str = "ana@example.com";

/// RFC 6238 with SHA-1, 6 digits, 30-second steps: the code of step `now + delta`.
fn code(secret: &[u8], delta: i64) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    code_at(secret, (now / 30).saturating_add_signed(delta))
}

/// RFC 4226 HOTP of counter `step`: HMAC-SHA-1, dynamic truncation, 6 digits.
fn code_at(secret: &[u8], step: u64) -> String {
    let mut mac = Hmac::<Sha1>::new_from_slice(secret).expect("any key length");
    mac.update(&step.to_be_bytes());
    let hash = mac.finalize().into_bytes();
    let at = usize::from(hash[19] & 0x0f);
    let value = u32::from_be_bytes([hash[at] & 0x7f, hash[at + 1], hash[at + 2], hash[at + 3]]);
    format!("{:06}", value % 1_000_000)
}

/// The secret a setup page shows for typing into an app (base32 in groups).
fn secret_in(page: &str) -> Vec<u8> {
    let at = page
        .find("id=\"totp-secret\"")
        .expect("the secret on the page");
    let text = page[at..]
        .split_once('>')
        .and_then(|(_, rest)| rest.split_once('<'))
        .expect("the secret's text")
        .0
        .replace(' ', "");
    data_encoding::BASE32_NOPAD
        .decode(text.as_bytes())
        .expect("base32")
}

/// The recovery codes a page shows once.
fn recovery_codes_in(page: &str) -> Vec<String> {
    let at = page
        .find("id=\"recovery-codes\"")
        .expect("the recovery codes");
    page[at..]
        .split("<code>")
        .skip(1)
        .filter_map(|c| c.split_once("</code>").map(|(code, _)| code.to_owned()))
        .collect()
}

/// An inline SVG QR code (drawn as one path of dark modules).
fn has_qr_code(page: &str) -> bool {
    page.contains("aria-label=\"QR code for your authenticator app\"")
        && page.contains("<path d=\"M")
}

pub(crate) async fn post(
    app: &TestApp,
    who: &Browser,
    path: &str,
    fields: &[(&str, &str)],
) -> Answer {
    let mut all = vec![("csrf", who.csrf.as_str())];
    all.extend_from_slice(fields);
    send(app, "POST", path, &who.cookie, Some(&form(&all))).await
}

/// Sets up two-factor for a signed-in user; returns the secret and the recovery codes.
async fn enrol(app: &TestApp, who: &Browser) -> (Vec<u8>, Vec<String>) {
    let started = post(app, who, "/account/two-factor/setup", &[]).await;
    assert_eq!(started.header("location"), Some("/account/two-factor"));
    let page = send(app, "GET", "/account/two-factor", &who.cookie, None).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let secret = secret_in(&page.body);
    let on = post(
        app,
        who,
        "/account/two-factor/confirm",
        &[("code", &code(&secret, 0))],
    )
    .await;
    assert_eq!(on.status, 200, "{}", on.body);
    (secret, recovery_codes_in(&on.body))
}

/// The password step: (cookie pairs the browser now holds, the answer).
async fn password_step(app: &TestApp, email: &str) -> (String, Answer) {
    let (form_pair, csrf) = form_cookie(app, "/login").await;
    let body = form(&[
        ("csrf", &csrf),
        ("email", email),
        ("password", PASSWORD),
        ("next", "/sites"),
    ]);
    let answer = send(app, "POST", "/login", &form_pair, Some(&body)).await;
    let pending = answer.cookie("porch_2fa").map(|(pair, _)| pair);
    let cookies = [Some(form_pair), pending]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    (cookies.join("; "), answer)
}

/// Posts `code` to the second step with the browser's cookies.
async fn second_step(app: &TestApp, cookies: &str, code: &str) -> Answer {
    let page = send(app, "GET", "/login/two-factor", cookies, None).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let csrf = crate::inbox::csrf_in(&page.body);
    let body = form(&[("csrf", &csrf), ("code", code)]);
    send(app, "POST", "/login/two-factor", cookies, Some(&body)).await
}

pub(crate) async fn admin_with_two_factor(app: &TestApp) -> (Browser, Vec<u8>, Vec<String>) {
    let admin = signed_in_from(app, &setup_admin(app).await).await;
    let (secret, codes) = enrol(app, &admin).await;
    (admin, secret, codes)
}

fn audit_count(app: &TestApp, action: &str, detail_like: &str) -> i64 {
    app.count(&format!(
        "SELECT count(*) FROM audit_events WHERE action = '{action}' AND detail LIKE '{detail_like}'"
    ))
}

#[tokio::test]
async fn setting_up_shows_a_qr_code_and_the_secret_and_the_first_code_switches_it_on() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    post(&app, &admin, "/account/two-factor/setup", &[]).await;
    let page = send(&app, "GET", "/account/two-factor", &admin.cookie, None).await;
    assert!(has_qr_code(&page.body), "an inline QR code");
    let secret = secret_in(&page.body);
    assert_eq!(secret.len(), 20);
    let uri = format!(
        "otpauth://totp/Porch:{ADMIN}?secret={}&amp;issuer=Porch",
        data_encoding::BASE32_NOPAD.encode(&secret)
    );
    assert!(page.body.contains(&uri), "{}", page.body);

    // Pending: sign-in does not ask for a code yet.
    let (_, answer) = password_step(&app, ADMIN).await;
    assert!(answer.cookie("porch_session").is_some(), "still one step");

    let wrong = post(
        &app,
        &admin,
        "/account/two-factor/confirm",
        &[("code", "000000")],
    )
    .await;
    assert_eq!(wrong.status, 422);
    let on = post(
        &app,
        &admin,
        "/account/two-factor/confirm",
        &[("code", &code(&secret, 0))],
    )
    .await;
    assert_eq!(on.status, 200);
    let codes = recovery_codes_in(&on.body);
    assert_eq!(codes.len(), 10);
    assert_eq!(
        app.count("SELECT count(*) FROM recovery_codes WHERE used_at IS NULL"),
        10
    );
    for code in &codes {
        let plain = app.count(&format!(
            "SELECT count(*) FROM recovery_codes WHERE CAST(code_hash AS TEXT) LIKE '%{code}%'"
        ));
        assert_eq!(plain, 0, "only hashes are stored");
    }
    assert_eq!(audit_count(&app, "two_factor.enabled", "%"), 1);
    let account = send(&app, "GET", "/account", &admin.cookie, None).await;
    let left = account.body.split("id=\"recovery-left\">").nth(1);
    assert!(left.is_some_and(|l| l.starts_with("10<")), "ten codes left");
}

#[tokio::test]
async fn signing_in_needs_a_code_after_the_password_and_sets_no_session_before() {
    let app = TestApp::spawn(&[]).await;
    let (_, secret, _) = admin_with_two_factor(&app).await;
    let (cookies, answer) = password_step(&app, ADMIN).await;
    assert_eq!(answer.header("location"), Some("/login/two-factor"));
    assert!(
        answer.cookie("porch_session").is_none(),
        "no session before the code"
    );
    // The half-finished sign-in is no session.
    let inbox = send(&app, "GET", "/inbox", &cookies, None).await;
    assert_eq!(inbox.status, 303);

    // The setup page of a sign-in that waits for a code sends it to the code, keeping it.
    let detour = send(&app, "GET", "/login/two-factor/setup", &cookies, None).await;
    assert_eq!(detour.header("location"), Some("/login/two-factor"));
    assert!(detour.cookie("porch_2fa").is_none(), "the sign-in is kept");

    let wrong = second_step(&app, &cookies, "123456").await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.cookie("porch_session").is_none());
    assert_eq!(audit_count(&app, "session.sign_in_failed", "%bad_code%"), 1);

    // The setup spent the current step's code; the next step's is good (one step of skew).
    let right = second_step(&app, &cookies, &code(&secret, 1)).await;
    assert_eq!(right.header("location"), Some("/sites"), "{}", right.body);
    let (session, _) = right.cookie("porch_session").expect("a session");
    assert_eq!(
        send(&app, "GET", "/inbox", &session, None).await.status,
        200
    );
    assert_eq!(
        audit_count(&app, "session.signed_in", "%\"second_factor\":\"totp\"%"),
        1
    );
    // The half-finished sign-in is spent.
    let again = second_step_post_only(&app, &cookies, "654321").await;
    assert_eq!(
        again.header("location"),
        Some("/login?notice=sign-in-expired")
    );
}

/// A post to the second step without loading its page first (the page would redirect).
async fn second_step_post_only(app: &TestApp, cookies: &str, code: &str) -> Answer {
    let csrf = cookies
        .split("; ")
        .find_map(|c| c.strip_prefix("porch_form="))
        .expect("the form cookie");
    let body = form(&[("csrf", csrf), ("code", code)]);
    send(app, "POST", "/login/two-factor", cookies, Some(&body)).await
}

#[tokio::test]
async fn a_code_that_was_used_is_refused_the_second_time() {
    let app = TestApp::spawn(&[]).await;
    let (_, secret, _) = admin_with_two_factor(&app).await;
    // The setup's code used its step: that code, or the one before, is refused (even within
    // the step's own 30 seconds); the next step's code (clock skew) works, once.
    let used = u64::try_from(app.count("SELECT last_step FROM user_totp")).expect("a step");
    let (cookies, _) = password_step(&app, ADMIN).await;
    assert_eq!(
        second_step(&app, &cookies, &code_at(&secret, used))
            .await
            .status,
        401
    );
    assert_eq!(
        second_step(&app, &cookies, &code_at(&secret, used - 1))
            .await
            .status,
        401
    );
    let next = second_step(&app, &cookies, &code_at(&secret, used + 1)).await;
    assert_eq!(next.status, 303, "{}", next.body);
    let (cookies, _) = password_step(&app, ADMIN).await;
    assert_eq!(
        second_step(&app, &cookies, &code_at(&secret, used + 1))
            .await
            .status,
        401
    );
}

#[tokio::test]
async fn a_recovery_code_signs_in_once() {
    let app = TestApp::spawn(&[]).await;
    let (_, _, codes) = admin_with_two_factor(&app).await;
    let (cookies, _) = password_step(&app, ADMIN).await;
    let typed = codes[3].to_uppercase().replace('-', " ");
    let used = second_step(&app, &cookies, &typed).await;
    assert_eq!(used.status, 303, "{}", used.body);
    assert!(used.cookie("porch_session").is_some());
    assert_eq!(
        audit_count(&app, "two_factor.recovery_used", "%\"left\":9%"),
        1
    );

    let (cookies, _) = password_step(&app, ADMIN).await;
    assert_eq!(second_step(&app, &cookies, &codes[3]).await.status, 401);
    assert_eq!(
        audit_count(&app, "session.sign_in_failed", "%bad_recovery_code%"),
        1
    );
    assert_eq!(second_step(&app, &cookies, &codes[4]).await.status, 303);
}

#[tokio::test]
async fn new_recovery_codes_replace_the_old_ones() {
    let app = TestApp::spawn(&[]).await;
    let (admin, secret, old) = admin_with_two_factor(&app).await;
    let fresh = post(
        &app,
        &admin,
        "/account/two-factor/recovery-codes",
        &[("code", &code(&secret, 1))],
    )
    .await;
    assert_eq!(fresh.status, 200, "{}", fresh.body);
    let new = recovery_codes_in(&fresh.body);
    assert_eq!(new.len(), 10);
    let (cookies, _) = password_step(&app, ADMIN).await;
    assert_eq!(second_step(&app, &cookies, &old[0]).await.status, 401);
    assert_eq!(second_step(&app, &cookies, &new[0]).await.status, 303);
}

#[tokio::test]
async fn code_guesses_are_throttled_and_a_right_password_does_not_reset_the_count() {
    let app = TestApp::spawn(&[]).await;
    let (_, secret, _) = admin_with_two_factor(&app).await;
    let (cookies, _) = password_step(&app, ADMIN).await;
    let guesses = (0..8).map(|i| {
        let (app, cookies) = (&app, &cookies);
        async move {
            second_step(app, cookies, &format!("{:06}", 100_000 + i))
                .await
                .status
        }
    });
    let statuses = futures_util::future::join_all(guesses).await;
    let checked = statuses.iter().filter(|s| **s == 401).count();
    assert_eq!(
        checked,
        porch::accounts::ACCOUNT_FAILURES as usize,
        "{statuses:?}"
    );
    assert!(statuses.iter().all(|s| *s == 401 || *s == 429));
    // The password again gives a new half-finished sign-in, not new guesses.
    let (cookies, _) = password_step(&app, ADMIN).await;
    let refused = second_step(&app, &cookies, &code(&secret, 1)).await;
    assert_eq!(refused.status, 429);
    assert!(refused.header("retry-after").is_some());
    // The refused guesses show in the audit log, as refused passwords do (a row a minute).
    assert!(audit_count(&app, "session.sign_in_throttled", "%") >= 1);
}

/// A double-click (or a retry on a slow link) sends the code twice for one half-finished sign-in,
/// and the browser shows the answer to the last: every answer with that code signs in, with the
/// one session the first made. Another code sent meanwhile finds the sign-in finished and spends
/// nothing.
#[tokio::test]
async fn codes_sent_together_sign_in_once_and_spend_one_code() {
    let app = TestApp::spawn(&[]).await;
    let (_, _, codes) = admin_with_two_factor(&app).await;
    let (cookies, _) = password_step(&app, ADMIN).await;
    let sessions_before = app.count("SELECT count(*) FROM sessions");
    let sent = [&codes[0], &codes[0], &codes[0], &codes[1], &codes[2]];
    let racers = sent.iter().map(|code| {
        let (app, cookies) = (&app, &cookies);
        async move { second_step_post_only(app, cookies, code).await }
    });
    let answers = futures_util::future::join_all(racers).await;
    let sessions: std::collections::HashSet<String> = answers
        .iter()
        .filter_map(|a| a.cookie("porch_session").map(|(pair, _)| pair))
        .collect();
    assert_eq!(
        sessions.len(),
        1,
        "one session, however many answers carry it"
    );
    for answer in &answers {
        let location = answer.header("location").unwrap_or_default();
        assert!(
            answer.cookie("porch_session").is_some() || location == "/login?notice=sign-in-expired",
            "{} {location}",
            answer.status
        );
    }
    assert_eq!(
        app.count("SELECT count(*) FROM recovery_codes WHERE used_at IS NOT NULL"),
        1
    );
    assert_eq!(audit_count(&app, "two_factor.recovery_used", "%"), 1);
    assert_eq!(
        app.count("SELECT count(*) FROM sessions"),
        sessions_before + 1
    );

    // In turn: the code that finished it, again, gets the same session; another does not.
    let (cookies, _) = password_step(&app, ADMIN).await;
    let first = second_step_post_only(&app, &cookies, &codes[5]).await;
    let again = second_step_post_only(&app, &cookies, &codes[5].to_uppercase()).await;
    assert_eq!(
        first.cookie("porch_session").map(|(pair, _)| pair),
        again.cookie("porch_session").map(|(pair, _)| pair)
    );
    assert!(again.cookie("porch_session").is_some());
    let other = second_step_post_only(&app, &cookies, &codes[6]).await;
    assert_eq!(
        other.header("location"),
        Some("/login?notice=sign-in-expired")
    );
    // That ended it: no more guessing at the code that finished it with this token.
    let after = second_step_post_only(&app, &cookies, &codes[5]).await;
    assert!(after.cookie("porch_session").is_none());
    assert_eq!(
        app.count("SELECT count(*) FROM recovery_codes WHERE used_at IS NOT NULL"),
        2
    );
}

/// Disabled between the password and the code: told so, recorded, and the sign-in ends.
#[tokio::test]
async fn a_user_disabled_after_the_password_step_is_told_so_at_the_code() {
    let app = TestApp::spawn(&[]).await;
    let (_, secret, _) = admin_with_two_factor(&app).await;
    let (cookies, _) = password_step(&app, ADMIN).await;
    let page = send(&app, "GET", "/login/two-factor", &cookies, None).await;
    let csrf = crate::inbox::csrf_in(&page.body);
    app.db()
        .execute("UPDATE users SET is_disabled = 1", [])
        .expect("disable");
    let body = form(&[("csrf", &csrf), ("code", &code(&secret, 1))]);
    let refused = send(&app, "POST", "/login/two-factor", &cookies, Some(&body)).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(
        refused.body.contains("This account is disabled."),
        "{}",
        refused.body
    );
    assert_eq!(audit_count(&app, "session.sign_in_failed", "%disabled%"), 1);
    let again = send(&app, "POST", "/login/two-factor", &cookies, Some(&body)).await;
    assert_eq!(
        again.header("location"),
        Some("/login?notice=sign-in-expired")
    );
}

#[tokio::test]
async fn turning_it_off_needs_the_password_and_a_code() {
    let app = TestApp::spawn(&[]).await;
    let (admin, secret, _) = admin_with_two_factor(&app).await;
    let no_code = post(
        &app,
        &admin,
        "/account/two-factor/disable",
        &[("password", PASSWORD), ("code", "000000")],
    )
    .await;
    assert_eq!(no_code.status, 422);
    let bad_password = post(
        &app,
        &admin,
        "/account/two-factor/disable",
        &[("password", "not my password"), ("code", &code(&secret, 1))],
    )
    .await;
    assert_eq!(bad_password.status, 422);
    let off = post(
        &app,
        &admin,
        "/account/two-factor/disable",
        &[("password", PASSWORD), ("code", &code(&secret, 1))],
    )
    .await;
    assert_eq!(
        off.header("location"),
        Some("/account?notice=two-factor-off")
    );
    assert_eq!(app.count("SELECT count(*) FROM user_totp"), 0);
    assert_eq!(app.count("SELECT count(*) FROM recovery_codes"), 0);
    assert_eq!(audit_count(&app, "two_factor.disabled", "%"), 1);
    let (_, answer) = password_step(&app, ADMIN).await;
    assert!(answer.cookie("porch_session").is_some());
}

/// A script's `required=false` is not a ticked box: refused, and nobody is signed out.
#[tokio::test]
async fn a_requirement_sent_as_anything_but_on_is_refused() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    add_user(&app, "bo@example.com", "agent");
    let bo = signed_in_from(&app, &sign_in(&app, "bo@example.com", PASSWORD).await).await;
    enrol(&app, &admin).await;
    for value in ["false", "off", "0", ""] {
        let refused = post(&app, &admin, "/team/two-factor", &[("required", value)]).await;
        assert_eq!(refused.status, 400, "required={value}");
    }
    assert_eq!(
        send(&app, "GET", "/inbox", &bo.cookie, None).await.status,
        200,
        "Bo is still signed in"
    );
}

#[tokio::test]
async fn a_team_requirement_sends_users_without_it_to_set_it_up_before_anything_else() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    add_user(&app, "bo@example.com", "agent");
    let bo = signed_in_from(&app, &sign_in(&app, "bo@example.com", PASSWORD).await).await;

    let early = post(&app, &admin, "/team/two-factor", &[("required", "on")]).await;
    assert_eq!(early.status, 409, "the admin sets it up first");
    enrol(&app, &admin).await;
    let saved = post(&app, &admin, "/team/two-factor", &[("required", "on")]).await;
    assert_eq!(
        saved.header("location"),
        Some("/team?notice=two-factor-saved")
    );
    assert_eq!(
        send(&app, "GET", "/inbox", &bo.cookie, None).await.status,
        303,
        "Bo was signed out"
    );
    assert_eq!(
        send(&app, "GET", "/inbox", &admin.cookie, None)
            .await
            .status,
        200
    );
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE action = 'team.two_factor_required'"),
        1
    );

    let (cookies, answer) = password_step(&app, "bo@example.com").await;
    assert_eq!(answer.header("location"), Some("/login/two-factor/setup"));
    assert!(answer.cookie("porch_session").is_none());
    assert_eq!(
        send(&app, "GET", "/inbox", &cookies, None).await.status,
        303
    );
    // The code form is not for them: setting up comes first.
    let code_page = send(&app, "GET", "/login/two-factor", &cookies, None).await;
    assert_eq!(
        code_page.header("location"),
        Some("/login/two-factor/setup")
    );
    let page = send(&app, "GET", "/login/two-factor/setup", &cookies, None).await;
    assert_eq!(page.status, 200);
    assert!(has_qr_code(&page.body));
    let secret = secret_in(&page.body);
    let csrf = crate::inbox::csrf_in(&page.body);
    let wrong = form(&[("csrf", &csrf), ("code", "000000")]);
    let refused = send(
        &app,
        "POST",
        "/login/two-factor/setup",
        &cookies,
        Some(&wrong),
    )
    .await;
    assert_eq!(refused.status, 401);
    let right = form(&[("csrf", &csrf), ("code", &code(&secret, 0))]);
    // Sent twice (a double-click): both answers sign in and show the same recovery codes,
    // and two-factor is switched on once.
    let setup = || {
        send(
            &app,
            "POST",
            "/login/two-factor/setup",
            &cookies,
            Some(&right),
        )
    };
    let (done, repeat) = tokio::join!(setup(), setup());
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(repeat.status, 200, "{}", repeat.body);
    assert_eq!(recovery_codes_in(&done.body).len(), 10);
    assert_eq!(
        recovery_codes_in(&done.body),
        recovery_codes_in(&repeat.body)
    );
    assert_eq!(
        done.cookie("porch_session").map(|(pair, _)| pair),
        repeat.cookie("porch_session").map(|(pair, _)| pair)
    );
    assert_eq!(
        audit_count(&app, "two_factor.enabled", "%"),
        2,
        "the admin's and Bo's"
    );
    assert!(
        done.body.contains("href=\"/sites\""),
        "continue where the sign-in led"
    );
    let (session, _) = done.cookie("porch_session").expect("signed in once set up");
    assert_eq!(
        send(&app, "GET", "/inbox", &session, None).await.status,
        200
    );

    // Required: it cannot be switched off.
    let bo = signed_in_from(&app, &done).await;
    let off = post(
        &app,
        &bo,
        "/account/two-factor/disable",
        &[("password", PASSWORD), ("code", &code(&secret, 1))],
    )
    .await;
    assert_eq!(off.status, 409);
}

#[tokio::test]
async fn an_admin_resets_a_lost_phone_and_an_agent_cannot() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let bo_id = add_user(&app, "bo@example.com", "agent");
    let bo = signed_in_from(&app, &sign_in(&app, "bo@example.com", PASSWORD).await).await;
    enrol(&app, &bo).await;
    let team = send(&app, "GET", "/team", &admin.cookie, None).await;
    let reset_path = format!("/team/{}/two-factor/reset", bo_id.0);
    assert!(team.body.contains(&reset_path));

    let by_agent = post(&app, &bo, &format!("/team/{}/two-factor/reset", 1), &[]).await;
    assert_eq!(by_agent.status, 403);
    let reset = post(&app, &admin, &reset_path, &[]).await;
    assert_eq!(
        reset.header("location"),
        Some("/team?notice=two-factor-reset")
    );
    assert_eq!(
        send(&app, "GET", "/inbox", &bo.cookie, None).await.status,
        303,
        "signed out"
    );
    assert_eq!(audit_count(&app, "two_factor.reset", "%"), 1);
    let (_, answer) = password_step(&app, "bo@example.com").await;
    assert!(
        answer.cookie("porch_session").is_some(),
        "the password alone again"
    );
}

/// `porch user reset-2fa ADMIN`: what it printed.
fn reset_from_the_command_line(app: &TestApp) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_porch"))
        .arg("--data-dir")
        .arg(app.data_dir.path())
        .args(["user", "reset-2fa", ADMIN])
        .output()
        .expect("run porch");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn the_command_line_resets_a_locked_out_admin() {
    let app = TestApp::spawn(&[]).await;
    admin_with_two_factor(&app).await;
    let said = reset_from_the_command_line(&app);
    assert!(
        said.contains("they sign in with their password alone"),
        "{said}"
    );
    assert_eq!(app.count("SELECT count(*) FROM user_totp"), 0);
    assert_eq!(
        app.count(
            "SELECT count(*) FROM audit_events WHERE action = 'two_factor.reset' AND actor = 'cli'"
        ),
        1
    );
    let (_, answer) = password_step(&app, ADMIN).await;
    assert!(answer.cookie("porch_session").is_some());
}

/// Under the team's requirement the reset leads to setting two-factor up again, as it says.
#[tokio::test]
async fn the_command_lines_reset_says_the_team_requirement_leads_to_setup() {
    let app = TestApp::spawn(&[]).await;
    let (admin, ..) = admin_with_two_factor(&app).await;
    let required = post(&app, &admin, "/team/two-factor", &[("required", "on")]).await;
    assert_eq!(required.status, 303);
    let said = reset_from_the_command_line(&app);
    assert!(
        said.contains("after their password they set it up again"),
        "{said}"
    );
    let (_, answer) = password_step(&app, ADMIN).await;
    assert_eq!(answer.header("location"), Some("/login/two-factor/setup"));
}

#[tokio::test]
async fn api_tokens_are_not_second_factored() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let token = app.add_user_token("Cy", "agent");
    enrol(&app, &admin).await;
    let required = post(&app, &admin, "/team/two-factor", &[("required", "on")]).await;
    assert_eq!(required.status, 303);
    let answer = app
        .http
        .get("/api/v1/conversations")
        .bearer_auth(&token)
        .answer()
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
}

#[tokio::test]
async fn over_https_the_second_step_cookie_is_host_prefixed_and_strict() {
    let app = TestApp::spawn(&["--public-url", "https://chat.example.com"]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    enrol(&app, &admin).await;
    let (_, answer) = password_step(&app, ADMIN).await;
    let (_, header) = answer.cookie("porch_2fa").expect("the second-step cookie");
    assert!(header.starts_with("__Host-porch_2fa="), "{header}");
    for attribute in [
        "HttpOnly",
        "SameSite=Strict",
        "Path=/",
        "Max-Age=300",
        "Secure",
    ] {
        assert!(header.contains(attribute), "{header}");
    }
    assert!(answer.cookie("porch_session").is_none());
}

/// Every byte of the database file and its WAL.
fn raw_database(dir: &std::path::Path) -> Vec<u8> {
    let mut bytes = std::fs::read(dir.join("porch.db")).expect("database file");
    if let Ok(wal) = std::fs::read(dir.join("porch.db-wal")) {
        bytes.extend(wal);
    }
    bytes
}

fn stored_secret(app: &TestApp) -> Vec<u8> {
    app.db()
        .query_row("SELECT secret FROM user_totp", [], |r| r.get(0))
        .expect("the factor's row")
}

#[tokio::test]
async fn the_secret_is_sealed_at_rest_through_an_upgrade_and_a_key_rotation() {
    use crate::sealed_secrets::{porch_cli, stop};
    let app = TestApp::spawn(&[]).await;
    let (_, secret, _) = admin_with_two_factor(&app).await;
    let is_in = |bytes: &[u8]| bytes.windows(secret.len()).any(|w| w == secret.as_slice());
    assert!(stored_secret(&app).starts_with(b"v1:"), "stored sealed");
    assert!(
        !is_in(&raw_database(app.data_dir.path())),
        "the secret in the file"
    );

    // A database from before sealing holds the raw secret: the next start seals it.
    app.db()
        .execute("UPDATE user_totp SET secret = ?1", [secret.as_slice()])
        .expect("downgrade");
    let app = TestApp::spawn_in(stop(app).await, &[]).await;
    assert!(stored_secret(&app).starts_with(b"v1:"), "sealed at start");
    assert!(!is_in(&raw_database(app.data_dir.path())), "scrubbed");

    // `porch secrets rotate` re-seals it under the new key; the old envelope no longer opens it.
    let before = stored_secret(&app);
    let dir = stop(app).await;
    let out = porch_cli(dir.path(), &["secrets", "rotate"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let app = TestApp::spawn_in(dir, &[]).await;
    assert_ne!(stored_secret(&app), before, "re-sealed");
    assert!(
        audit_count(&app, "secrets.rotated", "%\"two_factor_secrets\":1%") == 1,
        "the rotation counts the secret"
    );

    // And the factor still works: the setup spent this step's code, the next one signs in.
    let (cookies, _) = password_step(&app, ADMIN).await;
    let right = second_step(&app, &cookies, &code(&secret, 1)).await;
    assert_eq!(right.header("location"), Some("/sites"), "{}", right.body);
}

/// The token of the link (`/invitations/…` or `/password-resets/…`) shown on `page`.
pub(crate) fn link_in(page: &str, prefix: &str) -> String {
    let token = page
        .split(prefix)
        .nth(1)
        .and_then(|rest| rest.split(['"', '<']).next())
        .expect("a link on the page");
    format!("{prefix}{token}")
}

/// Opens a link's page and chooses `PASSWORD` there; the answer to that form.
async fn choose_password(app: &TestApp, link: &str) -> Answer {
    let (cookie, csrf) = form_cookie(app, link).await;
    let body = form(&[("csrf", &csrf), ("password", PASSWORD)]);
    send(app, "POST", link, &cookie, Some(&body)).await
}

/// Choosing a password from a link signs the person in, with the second step a sign-in would
/// ask: someone invited lands in the app; a reset of an account with two-factor asks its code.
#[tokio::test]
async fn a_password_chosen_from_a_link_signs_in_but_never_skips_two_factor() {
    let app = TestApp::spawn(&[]).await;
    let (admin, _, _) = admin_with_two_factor(&app).await;
    let invited = post(
        &app,
        &admin,
        "/team/invite",
        &[
            ("name", "Bo"),
            ("email", "bo@example.com"),
            ("role", "agent"),
        ],
    )
    .await;
    assert_eq!(invited.status, 200, "{}", invited.body);
    let joined = choose_password(&app, &link_in(&invited.body, "/invitations/")).await;
    assert_eq!((joined.status, joined.header("location")), (303, Some("/")));
    let bo = signed_in_from(&app, &joined).await;
    let account = send(&app, "GET", "/account", &bo.cookie, None).await;
    assert!(account.body.contains("bo@example.com"), "{}", account.body);

    let (secret, _) = enrol(&app, &bo).await;
    let bo_id = app.count("SELECT id FROM users WHERE email = 'bo@example.com'");
    let reset = post(&app, &admin, &format!("/team/{bo_id}/link"), &[]).await;
    assert_eq!(reset.status, 200, "{}", reset.body);
    let chosen = choose_password(&app, &link_in(&reset.body, "/password-resets/")).await;
    assert_eq!(
        (chosen.status, chosen.header("location")),
        (303, Some("/login/two-factor"))
    );
    assert!(chosen.cookie("porch_session").is_none(), "no session yet");
    let (pending, _) = chosen.cookie("porch_2fa").expect("the second step");
    let (form_pair, _) = form_cookie(&app, "/login").await;
    let done = second_step(&app, &format!("{form_pair}; {pending}"), &code(&secret, 1)).await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert!(
        done.cookie("porch_session").is_some(),
        "signed in with the code"
    );
}
