//! Revoking a session ends its live streams at once: sign-out in another tab, a password change
//! ("other sessions signed out"), and disabling the user. Before, a stream checked its session
//! at connect only and keep-alives held it open for minutes.

use std::time::Duration;

use reqwest::Response;

use crate::helpers::{TestApp, WAIT};
use crate::inbox::{
    Browser, PASSWORD, add_user, form, request, send, setup_admin, sign_in, signed_in_from,
};

/// How soon a revoked session's stream must end.
const WITHIN: Duration = Duration::from_secs(1);

/// An open `GET path` event stream, read up to its first event, and what was read.
pub(crate) async fn open_stream(app: &TestApp, path: &str, cookie: &str) -> (Response, String) {
    let mut stream = request(app, "GET", path, cookie, None)
        .header(reqwest::header::ACCEPT, "text/event-stream")
        .send()
        .await
        .expect("an answer");
    assert_eq!(stream.status(), 200);
    let mut seen = Vec::new();
    tokio::time::timeout(WAIT, async {
        while !String::from_utf8_lossy(&seen).contains("retry:") {
            let chunk = stream.chunk().await.expect("read").unwrap_or_else(|| {
                panic!(
                    "the stream closed early: {}",
                    String::from_utf8_lossy(&seen)
                )
            });
            seen.extend_from_slice(&chunk);
        }
    })
    .await
    .expect("the first event");
    // The first event is sent after the stream registered with its session. Events written
    // with it may share its chunk: they are handed back, not lost.
    (stream, String::from_utf8_lossy(&seen).into_owned())
}

/// The stream ends (the server closes it) within `WITHIN`.
async fn assert_ends(stream: Response, what: &str) {
    assert_ends_within(stream, what, WITHIN).await;
}

/// The stream ends (the server closes it) within `within`.
async fn assert_ends_within(mut stream: Response, what: &str, within: Duration) {
    let ended = tokio::time::timeout(within, async {
        // Until the end of the body (`None`) or of the connection (an error).
        while let Ok(Some(_)) = stream.chunk().await {}
    })
    .await;
    assert!(ended.is_ok(), "{what}: the live stream kept going");
}

async fn agent(app: &TestApp) -> Browser {
    signed_in_from(app, &sign_in(app, "bo@example.com", PASSWORD).await).await
}

#[tokio::test]
async fn signing_out_ends_the_sessions_live_streams() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let (stream, _) = open_stream(&app, "/inbox/events", &admin.cookie).await;
    let out = send(
        &app,
        "POST",
        "/logout",
        &admin.cookie,
        Some(&form(&[("csrf", &admin.csrf)])),
    )
    .await;
    assert_eq!(out.status, 303, "{}", out.body);
    assert_ends(stream, "sign-out").await;
}

#[tokio::test]
async fn a_password_change_ends_the_other_sessions_live_streams() {
    let app = TestApp::spawn(&[]).await;
    setup_admin(&app).await;
    add_user(&app, "bo@example.com", "agent");
    let old_tab = agent(&app).await;
    let new_tab = agent(&app).await;
    let (stream, _) = open_stream(&app, "/inbox/events", &old_tab.cookie).await;
    let changed = send(
        &app,
        "POST",
        "/account/password",
        &new_tab.cookie,
        Some(&form(&[
            ("csrf", &new_tab.csrf),
            ("current", PASSWORD),
            ("new", "another long password"),
        ])),
    )
    .await;
    assert_eq!(changed.status, 303, "{}", changed.body);
    assert_ends(stream, "password change").await;
}

#[tokio::test]
async fn signing_out_everywhere_else_ends_the_other_sessions_and_keeps_this_one() {
    let app = TestApp::spawn(&[]).await;
    setup_admin(&app).await;
    add_user(&app, "bo@example.com", "agent");
    let old_tab = agent(&app).await;
    let this_tab = agent(&app).await;
    let (stream, _) = open_stream(&app, "/inbox/events", &old_tab.cookie).await;
    let path = "/account/sessions/sign-out-others";
    let forged = send(&app, "POST", path, &this_tab.cookie, Some(&form(&[]))).await;
    assert_eq!(forged.status, 403, "no CSRF token, no sign-out");
    let out = send(
        &app,
        "POST",
        path,
        &this_tab.cookie,
        Some(&form(&[("csrf", &this_tab.csrf)])),
    )
    .await;
    assert_eq!(out.status, 303, "{}", out.body);
    assert_ends(stream, "sign-out everywhere else").await;
    let there = send(&app, "GET", "/inbox", &old_tab.cookie, None).await;
    assert_eq!(there.status, 303, "the other session is signed out");
    let here = send(
        &app,
        "GET",
        "/account?notice=signed-out-elsewhere",
        &this_tab.cookie,
        None,
    )
    .await;
    assert_eq!(here.status, 200, "this one stays");
    assert!(here.body.contains("Your other sessions were signed out"));
    assert_eq!(
        app.count(
            "SELECT count(*) FROM audit_events WHERE action = 'session.signed_out_elsewhere' \
             AND actor = 'bo@example.com'"
        ),
        1
    );
}

/// Runs `porch user ARGS` on the app's data directory with `stdin`; its exit status and output.
fn porch_user(app: &TestApp, args: &[&str], stdin: &str) -> (bool, String) {
    use std::io::Write as _;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_porch"))
        .arg("--data-dir")
        .arg(app.data_dir.path())
        .arg("user")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run porch");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write the password");
    let out = child.wait_with_output().expect("porch ends");
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text.into_owned())
}

#[tokio::test]
async fn the_command_line_sets_a_forgotten_password_and_ends_every_session() {
    let app = TestApp::spawn(&[]).await;
    setup_admin(&app).await;
    add_user(&app, "bo@example.com", "agent");
    let tab = agent(&app).await;
    let (listed, list) = porch_user(&app, &["list"], "");
    assert!(listed, "{list}");
    assert!(
        list.contains("bo@example.com\tBo\tagent\tenabled"),
        "{list}"
    );

    let (ok, out) = porch_user(&app, &["set-password", "BO@example.com"], "short\n");
    assert!(!ok && out.contains("at least 10"), "{out}");
    // Nothing piped in is said as such, not as a password too short.
    let (ok, out) = porch_user(&app, &["set-password", "BO@example.com"], "");
    assert!(
        !ok && out.contains("no password on standard input"),
        "{out}"
    );
    let (ok, out) = porch_user(
        &app,
        &["set-password", "cy@example.com"],
        "a new long password\n",
    );
    assert!(
        !ok && out.contains("no user has the email cy@example.com"),
        "{out}"
    );
    assert_eq!(
        send(&app, "GET", "/inbox", &tab.cookie, None).await.status,
        200,
        "untouched"
    );

    // A live stream of the session, as a stolen session's holder would keep open: the command
    // runs in another process, and the server finds the session gone at its next look (every
    // 5 s; it ran on until the stream reconnected, which its holder need never do).
    let (stream, _) = open_stream(&app, "/inbox/events", &tab.cookie).await;
    let (ok, out) = porch_user(
        &app,
        &["set-password", "BO@example.com"],
        "a new long password\n",
    );
    assert!(ok, "{out}");
    assert_eq!(
        send(&app, "GET", "/inbox", &tab.cookie, None).await.status,
        303,
        "signed out"
    );
    assert_ends_within(stream, "set-password", Duration::from_secs(8)).await;
    let old = sign_in(&app, "bo@example.com", PASSWORD).await;
    assert!(
        old.cookie("porch_session").is_none(),
        "the old password is refused"
    );
    let new = sign_in(&app, "bo@example.com", "a new long password").await;
    assert!(new.cookie("porch_session").is_some(), "{}", new.body);
    assert_eq!(
        app.count(
            "SELECT count(*) FROM audit_events WHERE action = 'user.password_changed' \
             AND actor = 'cli' AND detail = '{\"via\":\"cli\"}'"
        ),
        1
    );
    let (ok, out) = porch_user(
        &app,
        &["add", "--email", "Bo@example.com", "--name", "Bo again"],
        "",
    );
    assert!(
        !ok && out.contains("a user with the email Bo@example.com already exists"),
        "{out}"
    );
    let (ok, out) = porch_user(
        &app,
        &["add", "--email", "cy@example.com", "--name", " "],
        "",
    );
    assert!(!ok && out.contains("--name"), "a nameless user: {out}");
    // A user made without a password is told how they get one.
    let (ok, out) = porch_user(
        &app,
        &["add", "--email", "dee@example.com", "--name", "Dee"],
        "",
    );
    assert!(ok, "{out}");
    assert!(
        out.contains("without a password")
            && out.contains("porch user set-password dee@example.com"),
        "{out}"
    );

    // A mistyped data directory is not a new, empty team.
    let typo = tempfile::tempdir().expect("dir");
    let listed = std::process::Command::new(env!("CARGO_BIN_EXE_porch"))
        .arg("--data-dir")
        .arg(typo.path().join("dat"))
        .args(["user", "list"])
        .output()
        .expect("run porch");
    assert!(!listed.status.success());
    assert!(String::from_utf8_lossy(&listed.stderr).contains("there is no database"));
    assert!(!typo.path().join("dat").exists(), "nothing created");
}

#[tokio::test]
async fn disabling_a_user_ends_their_live_streams() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let bo = add_user(&app, "bo@example.com", "agent");
    let agent = agent(&app).await;
    let conversation = {
        let site = app.add_site("Shop");
        let (mut widget, _) = app.visitor(&site, None, 0).await;
        widget.say("c1", "hello").await;
        app.count("SELECT max(id) FROM conversations")
    };
    let (stream, _) = open_stream(
        &app,
        &format!("/conversations/{conversation}/events"),
        &agent.cookie,
    )
    .await;
    disable(&app, &admin, bo).await;
    assert_ends(stream, "disable").await;
}

#[tokio::test]
async fn a_stream_ends_when_its_session_expires() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    // The session's fixed lifetime runs out in a second (instead of in 14 days).
    let expires_at = porch::clock::now_ms() + 1_000;
    app.db()
        .execute("UPDATE sessions SET expires_at = ?1", [expires_at])
        .expect("shorten the session");
    let (stream, _) = open_stream(&app, "/inbox/events", &admin.cookie).await;
    let ended = tokio::time::timeout(Duration::from_secs(3), async move {
        let mut stream = stream;
        while let Ok(Some(_)) = stream.chunk().await {}
    })
    .await;
    assert!(ended.is_ok(), "the live stream outlived its session");
    assert!(
        porch::clock::now_ms() >= expires_at,
        "the stream ended before the session expired"
    );
}

/// A disabled agent answers nothing: their open conversations go back to the team, unassigned,
/// with the admin's line in each (a new user found them gone from every count and alert).
#[tokio::test]
async fn disabling_a_user_unassigns_their_open_conversations() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let bo = add_user(&app, "bo@example.com", "agent");
    let site = app.add_site("Shop");
    for n in 0..3 {
        let (mut widget, _) = app.visitor(&site, None, 0).await;
        widget.say(&format!("c{n}"), "hello").await;
    }
    // Bo has two open ones and a closed one; the third open one is nobody's.
    app.db()
        .execute_batch(&format!(
            "UPDATE conversations SET assignee_id = {bo} WHERE id IN (1, 2, 3); \
             UPDATE conversations SET assignee_id = NULL WHERE id = 3; \
             UPDATE conversations SET status = 'closed', closed_at = 1 WHERE id = 2;"
        ))
        .expect("assign");
    disable(&app, &admin, bo).await;
    assert_eq!(
        app.count(
            "SELECT count(*) FROM conversations WHERE status = 'open' AND assignee_id IS NOT NULL"
        ),
        0
    );
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM conversations WHERE id = 2 AND assignee_id = {bo}"
        )),
        1,
        "a closed conversation keeps who had it"
    );
    assert_eq!(
        app.count(
            "SELECT count(*) FROM messages WHERE author = 'system' \
             AND body = 'Ana unassigned this conversation: Bo was disabled'"
        ),
        1
    );
    // Reopened, the closed one comes back nobody's, and its line says why (the history read
    // as Bo's still).
    let reopened = send(
        &app,
        "POST",
        "/conversations/2/reopen",
        &admin.cookie,
        Some(&form(&[("csrf", &admin.csrf)])),
    )
    .await;
    assert_eq!(reopened.status, 303, "{}", reopened.body);
    assert_eq!(
        app.count(
            "SELECT count(*) FROM conversations WHERE id = 2 AND status = 'open' \
             AND assignee_id IS NULL"
        ),
        1
    );
    assert_eq!(
        app.count(
            "SELECT count(*) FROM messages WHERE conversation_id = 2 AND body = \
             'Ana reopened this conversation; Bo is disabled, so nobody has it'"
        ),
        1
    );
}

/// An admin disables user `id` on the team page.
async fn disable(app: &TestApp, admin: &Browser, id: porch::store::UserId) {
    let disabled = send(
        app,
        "POST",
        &format!("/team/{id}/disable"),
        &admin.cookie,
        Some(&form(&[("csrf", &admin.csrf)])),
    )
    .await;
    assert_eq!(disabled.status, 303, "{}", disabled.body);
}

/// A re-enable brings back none of what a disable ended: the API tokens are gone for good, as
/// the sessions and links are (an outside check found an old token working again).
#[tokio::test]
async fn a_re_enabled_users_old_api_tokens_stay_dead() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let token = app.add_user_token("Bo", "agent");
    let bo = porch::store::UserId(app.count("SELECT id FROM users WHERE email = 'bo@example.com'"));
    let status = async || {
        app.api("GET", "/api/v1/conversations", &token, None)
            .await
            .0
    };
    assert_eq!(status().await, 200);
    disable(&app, &admin, bo).await;
    assert_eq!(status().await, 401);
    // Nor can a new one be made for them meanwhile, to come alive at the re-enable.
    let made = crate::process::run(
        app.data_dir.path(),
        &["token", "add", "--user", "bo@example.com"],
    );
    let said = String::from_utf8_lossy(&made.stderr);
    assert!(
        !made.status.success() && said.contains("is disabled"),
        "{said}"
    );
    let enabled = send(
        &app,
        "POST",
        &format!("/team/{bo}/enable"),
        &admin.cookie,
        Some(&form(&[("csrf", &admin.csrf)])),
    )
    .await;
    assert_eq!(enabled.status, 303, "{}", enabled.body);
    assert_eq!(status().await, 401, "the old token works again");
    assert_eq!(
        app.count(&format!(
            "SELECT count(*) FROM api_tokens WHERE user_id = {bo}"
        )),
        0
    );
}

/// A disabled user signing in with the right password is told the account is disabled (not
/// "wrong password", which sent people hunting for a typo); a wrong password still gets the
/// answer that reveals nothing.
#[tokio::test]
async fn a_disabled_user_signing_in_is_told_so_only_with_the_right_password() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let bo = add_user(&app, "bo@example.com", "agent");
    disable(&app, &admin, bo).await;
    let right = crate::inbox::sign_in(&app, "bo@example.com", crate::inbox::PASSWORD).await;
    assert_eq!(right.status, 403, "{}", right.body);
    assert!(
        right.body.contains("This account is disabled."),
        "{}",
        right.body
    );
    assert!(
        right.cookie("porch_session").is_none(),
        "a disabled user got a session"
    );
    let wrong = crate::inbox::sign_in(&app, "bo@example.com", "not the password at all").await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.body.contains("Wrong email or password.") && !wrong.body.contains("disabled"));
}

/// A reset link stays good for days; someone who took the account over may have made it. Once the
/// owner changes their password, such a link must not set another one (an attacker found it did,
/// and signed in with it).
#[tokio::test]
async fn a_password_change_spends_the_reset_links_made_before() {
    use crate::two_factor::{link_in, post};
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let bo = add_user(&app, "bo@example.com", "agent");
    let reset = post(&app, &admin, &format!("/team/{}/link", bo.0), &[]).await;
    assert_eq!(reset.status, 200, "{}", reset.body);
    let link = link_in(&reset.body, "/password-resets/");

    let bo = signed_in_from(&app, &sign_in(&app, "bo@example.com", PASSWORD).await).await;
    let changed = post(
        &app,
        &bo,
        "/account/password",
        &[("current", PASSWORD), ("new", "another long password")],
    )
    .await;
    assert_eq!(changed.status, 303, "{}", changed.body);

    let spent = send(&app, "GET", &link, "", None).await;
    assert_eq!(spent.status, 410, "{}", spent.body);
    assert!(
        spent
            .body
            .contains("was replaced by a newer one, has expired, or is not whole")
    );
    // Opened signed out: the way on is signing in, not an inbox that would send there anyway.
    assert!(
        spent
            .body
            .contains(r#"<a href="/login" class="button">Sign in</a>"#),
        "{}",
        spent.body
    );
    assert_eq!(
        sign_in(&app, "bo@example.com", "another long password")
            .await
            .status,
        303,
        "the owner's password stands"
    );
}

/// A sign-in in a browser that is still signed in (a second tab's sign-in form, an invitation
/// link opened by whoever is signed in) ends the session the new cookie replaces: nobody could
/// sign it out afterwards.
#[tokio::test]
async fn a_sign_in_over_a_live_session_ends_the_session_it_replaces() {
    let app = TestApp::spawn(&[]).await;
    setup_admin(&app).await;
    add_user(&app, "bo@example.com", "agent");
    let old = agent(&app).await;
    let (stream, _) = open_stream(&app, "/inbox/events", &old.cookie).await;
    let (form_pair, csrf) = crate::inbox::form_cookie(&app, "/login").await;
    let body = form(&[
        ("csrf", &csrf),
        ("email", "ana@example.com"),
        ("password", PASSWORD),
    ]);
    let cookies = format!("{form_pair}; {}", old.cookie);
    let signed = send(&app, "POST", "/login", &cookies, Some(&body)).await;
    assert_eq!(signed.status, 303, "{}", signed.body);
    let new = signed_in_from(&app, &signed).await;
    assert_ne!(new.cookie, old.cookie);
    assert_ends(stream, "a sign-in over it").await;
    let there = send(&app, "GET", "/inbox", &old.cookie, None).await;
    assert_eq!(there.status, 303, "the replaced session is signed out");
    assert_eq!(
        send(&app, "GET", "/inbox", &new.cookie, None).await.status,
        200
    );
    assert_eq!(
        app.count(
            "SELECT count(*) FROM audit_events WHERE action = 'session.signed_out' \
             AND actor = 'bo@example.com' AND detail = '{\"replaced\":true}'"
        ),
        1
    );
}

/// An invitation link opened in a browser signed in as someone else says first that choosing the
/// password ends that session (an admin checking the link lost their own session unwarned).
#[tokio::test]
async fn a_link_opened_in_a_signed_in_browser_says_that_its_session_ends() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let fields = [
        ("csrf", admin.csrf.as_str()),
        ("email", "cy@example.com"),
        ("name", "Cy"),
        ("role", "agent"),
    ];
    let invited = send(
        &app,
        "POST",
        "/team/invite",
        &admin.cookie,
        Some(&form(&fields)),
    )
    .await;
    let token = invited
        .body
        .split("/invitations/")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .expect("the link");
    let path = format!("/invitations/{token}");
    let page = send(&app, "GET", &path, &admin.cookie, None).await;
    assert!(
        page.body.contains(
            "This browser is signed in as Ana: choosing this password ends that session, and \
             the browser is then signed in as Cy."
        ),
        "{}",
        page.body
    );
    let anonymous = send(&app, "GET", &path, "", None).await;
    assert!(
        !anonymous.body.contains("data-signed-in-as"),
        "{}",
        anonymous.body
    );
}
