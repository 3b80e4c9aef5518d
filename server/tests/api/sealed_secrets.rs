//! Integration secrets sealed at rest (issue #14): set up through the API, none of them is in
//! the database file or its WAL, deliveries still sign and post; a database from before sealing
//! is sealed at start, once; `porch secrets rotate` re-seals and a restart with the new key still
//! signs; a wrong key stops the start with a message naming the variable.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use porch::integrations::webhook::sign;
use porch::loadtest::{DiscordMock, Received, SlackMock, WebhookMock};
use porch::store;
use serde_json::json;

use crate::helpers::{TestApp, WAIT, ok_if, wait_until};

const SLACK_BOT_TOKEN: &str = "xoxb-sealed-bot-token-4711";
const SLACK_SIGNING_SECRET: &str = "sealed-signing-secret-0815";
const LEGACY_WEBHOOK_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// Every byte of the database file and its WAL.
pub(crate) fn raw_database(dir: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(dir.join("porch.db")).expect("database file");
    if let Ok(wal) = std::fs::read(dir.join("porch.db-wal")) {
        bytes.extend(wal);
    }
    bytes
}

pub(crate) fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

/// Checks a delivery's `webhook-signature` against `secret`.
fn is_signed_with(received: &Received, secret: &str) -> bool {
    let header = |name: &str| received.headers.get(name).cloned().unwrap_or_default();
    let timestamp: i64 = header("webhook-timestamp").parse().expect("timestamp");
    let expected = sign(
        secret,
        &header("webhook-id"),
        timestamp,
        received.body.as_bytes(),
    )
    .expect("sign");
    header("webhook-signature")
        .split(' ')
        .any(|signature| signature == expected)
}

pub(crate) async fn add_webhook(app: &TestApp, admin: &str, site: &str, url: &str) -> String {
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/sites/{site}/integrations/webhooks"),
            admin,
            Some(json!({"url": url, "events": ["message.created"]})),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    answer["secret"].as_str().expect("secret").to_owned()
}

pub(crate) async fn stop(mut app: TestApp) -> tempfile::TempDir {
    app.server.take().expect("running").stop().await;
    app.data_dir
}

pub(crate) fn porch_cli(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_porch"))
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .env_remove("PORCH_SECRET_KEY")
        .env_remove("PORCH_SECRET_KEY_FILE")
        .envs(env.iter().copied())
        .output()
        .expect("run porch")
}

#[tokio::test]
async fn no_integration_secret_is_in_the_database_file_or_its_wal_and_deliveries_still_work() {
    let slack = SlackMock::start(([127, 0, 0, 1], 0).into(), Duration::ZERO)
        .await
        .expect("slack mock");
    let discord = DiscordMock::start(([127, 0, 0, 1], 0).into())
        .await
        .expect("discord mock");
    let hooks = WebhookMock::start(([127, 0, 0, 1], 0).into())
        .await
        .expect("receiver");
    let (slack_url, discord_url) = (slack.api_url(), discord.api_url());
    let app = TestApp::spawn(&[
        "--slack-api-url",
        &slack_url,
        "--discord-api-url",
        &discord_url,
        "--allow-private-networks",
    ])
    .await;
    let admin = app.add_user_token("Admin", "admin");
    let site = app.add_site("Shop");
    let setup = json!({"bot_token": SLACK_BOT_TOKEN, "channel_id": "C1", "signing_secret": SLACK_SIGNING_SECRET});
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/sites/{site}/integrations/slack"),
            &admin,
            Some(setup),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let discord_webhook = discord.add_webhook("H1", false);
    let (status, answer) = app
        .api(
            "POST",
            &format!("/api/v1/sites/{site}/integrations/discord"),
            &admin,
            Some(json!({"webhook_url": discord_webhook, "forum": false})),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let webhook_secret = add_webhook(&app, &admin, &site, &hooks.url("/hook")).await;

    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("m1", "hello").await;
    let received = hooks.wait_for(1, WAIT).await;
    assert!(is_signed_with(&received[0], &webhook_secret));
    slack.wait_for_posts(1, WAIT).await;
    discord.wait_for_posts(1, WAIT).await;

    let raw = raw_database(app.data_dir.path());
    let discord_token = discord_webhook.rsplit('/').next().expect("token");
    let secrets = [
        SLACK_BOT_TOKEN,
        SLACK_SIGNING_SECRET,
        discord_webhook.as_str(),
        discord_token,
        webhook_secret.as_str(),
    ];
    for secret in secrets {
        assert!(!contains(&raw, secret), "{secret} is in the database file");
    }
    // Nor are they shown back: the API's list of the site's integrations has settings only.
    let (status, list) = app
        .api(
            "GET",
            &format!("/api/v1/sites/{site}/integrations"),
            &admin,
            None,
        )
        .await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["integrations"].as_array().map(Vec::len), Some(3));
    for secret in secrets {
        assert!(!list.to_string().contains(secret), "{secret} in {list}");
    }
    assert_eq!(
        app.count("SELECT count(*) FROM integrations WHERE secrets NOT LIKE 'v1:%'"),
        0
    );
}

#[tokio::test]
async fn a_database_from_before_sealing_is_sealed_at_start_once_and_still_signs() {
    let hooks = WebhookMock::start(([127, 0, 0, 1], 0).into())
        .await
        .expect("receiver");
    let dir = tempfile::tempdir().expect("dir");
    // The previous version's database: the migrations, and secrets in clear text as it wrote them.
    {
        let mut conn =
            store::open_write_connection(&dir.path().join("porch.db"), store::Synchronous::Full)
                .expect("open");
        store::apply_migrations(&mut conn).expect("migrate");
    }
    let site = crate::helpers::TestDb::open(dir.path()).add_site("Shop");
    let legacy = crate::helpers::TestDb::open(dir.path()).db();
    legacy
        .execute(
            "INSERT INTO integrations (site_id, kind, name, config, secrets, created_at, updated_at) \
             SELECT id, 'webhook', 'Webhook', json_object('url', ?1, 'events', json_array('message.created')), \
                    json_object('secret', ?2), 0, 0 FROM sites",
            [hooks.url("/hook"), LEGACY_WEBHOOK_SECRET.to_owned()],
        )
        .expect("insert");
    drop(legacy);

    let app = TestApp::spawn_in(dir, &["--allow-private-networks"]).await;
    let sealed: String = app
        .db()
        .query_row("SELECT secrets FROM integrations", [], |r| r.get(0))
        .expect("row");
    assert!(sealed.starts_with("v1:"), "{sealed}");
    assert!(!contains(
        &raw_database(app.data_dir.path()),
        LEGACY_WEBHOOK_SECRET
    ));

    // A second start seals nothing again: the stored envelope is unchanged.
    let app = TestApp::spawn_in(stop(app).await, &["--allow-private-networks"]).await;
    let again: String = app
        .db()
        .query_row("SELECT secrets FROM integrations", [], |r| r.get(0))
        .expect("row");
    assert_eq!(again, sealed);

    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("m1", "hello").await;
    let received = hooks.wait_for(1, WAIT).await;
    assert!(is_signed_with(&received[0], LEGACY_WEBHOOK_SECRET));
}

#[tokio::test]
async fn after_a_rotation_a_restart_with_the_new_key_still_signs_and_the_old_key_is_refused() {
    let hooks = WebhookMock::start(([127, 0, 0, 1], 0).into())
        .await
        .expect("receiver");
    let old_key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    let new_key = "f0e1d2c3b4a5968778695a4b3c2d1e0ff0e1d2c3b4a5968778695a4b3c2d1e0f";
    let flags = ["--allow-private-networks", "--secret-key", old_key];
    let app = TestApp::spawn(&flags).await;
    let admin = app.add_user_token("Admin", "admin");
    let site = app.add_site("Shop");
    let secret = add_webhook(&app, &admin, &site, &hooks.url("/hook")).await;
    let dir = stop(app).await;

    let out = porch_cli(
        dir.path(),
        &["secrets", "rotate"],
        &[
            ("PORCH_SECRET_KEY", old_key),
            ("PORCH_SECRET_KEY_NEW", new_key),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(
            "Re-sealed 1 integration's secrets, 0 site identity secrets, 0 two-factor secrets:"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("PORCH_SECRET_KEY"), "{stdout}");

    // The old key no longer opens them: a clear start-up error naming the variable.
    let message = refused_start(dir.path(), &flags).await;
    assert!(
        message.contains("PORCH_SECRET_KEY does not open"),
        "{message}"
    );

    let app = TestApp::spawn_in(dir, &["--allow-private-networks", "--secret-key", new_key]).await;
    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("m1", "hello").await;
    let received = hooks.wait_for(1, WAIT).await;
    assert!(is_signed_with(&received[0], &secret));
    let rotated = app
        .count("SELECT count(*) FROM audit_events WHERE action = 'secrets.rotated' AND ip = 'cli'");
    assert_eq!(rotated, 1);
}

#[tokio::test]
async fn rotating_the_generated_key_replaces_the_key_file_and_restarts_with_it() {
    let hooks = WebhookMock::start(([127, 0, 0, 1], 0).into())
        .await
        .expect("receiver");
    let app = TestApp::spawn(&["--allow-private-networks"]).await;
    let admin = app.add_user_token("Admin", "admin");
    let site = app.add_site("Shop");
    let secret = add_webhook(&app, &admin, &site, &hooks.url("/hook")).await;
    let dir = stop(app).await;
    let key_file = dir.path().join("secret.key");
    let before = std::fs::read_to_string(&key_file).expect("generated key");

    let out = porch_cli(dir.path(), &["secrets", "rotate"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = std::fs::read_to_string(&key_file).expect("new key");
    assert_ne!(before, after);
    assert!(!dir.path().join("secret.key.new").exists());

    let app = TestApp::spawn_in(dir, &["--allow-private-networks"]).await;
    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("m1", "hello").await;
    let received = hooks.wait_for(1, WAIT).await;
    assert!(is_signed_with(&received[0], &secret));
}

/// A secret that does not open blocks its endpoint (as a lost key would), and rotating it sends
/// the waiting delivery, signed with the new secret alone.
#[tokio::test]
async fn a_sealed_value_copied_to_another_integration_does_not_open_and_a_rotation_fixes_it() {
    let hooks = WebhookMock::start(([127, 0, 0, 1], 0).into())
        .await
        .expect("receiver");
    let app = TestApp::spawn(&["--allow-private-networks"]).await;
    let admin = app.add_user_token("Admin", "admin");
    let site = app.add_site("Shop");
    add_webhook(&app, &admin, &site, &hooks.url("/a")).await;
    add_webhook(&app, &admin, &site, &hooks.url("/b")).await;
    app.db()
        .execute(
            "UPDATE integrations SET secrets = (SELECT secrets FROM integrations WHERE id = \
             (SELECT min(id) FROM integrations)) WHERE id = (SELECT max(id) FROM integrations)",
            [],
        )
        .expect("copy");
    let (mut visitor, _) = app.visitor(&site, None, 0).await;
    visitor.say("m1", "hello").await;
    wait_until("the copy's delivery to wait blocked", WAIT, async || {
        ok_if(
            app.count(
                "SELECT count(*) FROM jobs WHERE state = 'blocked' \
                 AND last_error = 'the endpoint''s signing secret does not open (rotate it)'",
            ),
            |n| *n == 1,
        )
    })
    .await;
    let paths: Vec<String> = hooks.received().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/a"]);
    let copy = app.count("SELECT max(id) FROM integrations");
    let log = async || {
        let path = format!("/api/v1/integrations/{copy}/deliveries");
        app.api("GET", &path, &admin, None).await.1
    };
    let deliveries = log().await;
    assert_eq!(deliveries["status"], "broken", "{deliveries}");
    assert_eq!(deliveries["health"]["state"], "blocked", "{deliveries}");
    let (status, rotated) = app
        .api(
            "POST",
            &format!("/api/v1/integrations/{copy}/webhook/rotate"),
            &admin,
            None,
        )
        .await;
    assert_eq!(status, 200, "{rotated}");
    assert!(rotated["previous_valid_until"].is_null(), "{rotated}");
    wait_until("the waiting delivery to reach /b", WAIT, async || {
        ok_if(hooks.received(), |r| r.len() == 2)
    })
    .await;
    let received = hooks.received();
    assert_eq!(received[1].path, "/b");
    assert!(is_signed_with(
        &received[1],
        rotated["secret"].as_str().expect("secret")
    ));
    let deliveries = log().await;
    assert_eq!(deliveries["status"], "ok", "{deliveries}");
}

/// A key no test database is sealed with.
const OTHER_KEY: &str = "f0e1d2c3b4a5968778695a4b3c2d1e0ff0e1d2c3b4a5968778695a4b3c2d1e0f";

/// Starts a server on `dir` with `flags`, which must fail; the error as `porch serve` shows it.
pub(crate) async fn refused_start(dir: &std::path::Path, flags: &[&str]) -> String {
    let config = crate::helpers::serve_config(dir, flags);
    let listener = porch::http::bind(config.listen).expect("bind");
    let err = porch::start(config, listener)
        .await
        .err()
        .expect("the start is refused");
    format!("{err:#}")
}

/// A stopped server's data directory whose only sealed value is a site's identity secret, and
/// the key it is sealed with.
async fn stopped_with_an_identity_secret() -> (&'static str, tempfile::TempDir) {
    let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    let app = TestApp::spawn(&["--secret-key", key]).await;
    let admin = crate::inbox::signed_in_from(&app, &crate::inbox::setup_admin(&app).await).await;
    let site = app.add_site("Shop");
    crate::identity::rotate_secret(&app, &admin, &site).await;
    (key, stop(app).await)
}

/// A site's identity secret is checked at start like an integration's: with another key the
/// start fails, instead of every known visitor silently turning unverified.
#[tokio::test]
async fn a_key_that_does_not_open_a_sites_identity_secret_stops_the_start() {
    let (key, dir) = stopped_with_an_identity_secret().await;

    let message = refused_start(dir.path(), &["--secret-key", OTHER_KEY]).await;
    assert!(
        message.contains("the identity secret of site 1 does not open")
            && message.contains("start with the key it was sealed with (PORCH_SECRET_KEY"),
        "{message}"
    );
    TestApp::spawn_in(dir, &["--secret-key", key]).await;
}

/// A rotation needs the key the database is sealed with: without one it generates none, and
/// with the wrong one it leaves no new key file behind to refuse the next try.
#[tokio::test]
async fn a_rotation_without_the_right_key_changes_nothing_and_leaves_no_key_files() {
    let (key, dir) = stopped_with_an_identity_secret().await;
    let files = |dir: &Path| ["secret.key", "secret.key.new"].map(|name| dir.join(name).exists());

    let none = porch_cli(dir.path(), &["secrets", "rotate"], &[]);
    let said = String::from_utf8_lossy(&none.stderr);
    assert_eq!(none.status.code(), Some(1), "{said}");
    assert!(said.contains("there is no sealing key"), "{said}");
    assert_eq!(files(dir.path()), [false, false], "{said}");

    // A malformed key setting is refused as `serve` refuses it: exit 2, before anything.
    for (name, value) in [
        ("PORCH_SECRET_KEY", "not-a-key"),
        ("PORCH_SECRET_KEY_FILE", "/nonexistent/secret.key"),
        ("PORCH_SECRET_KEY_NEW", "not-a-key"),
        ("PORCH_SECRET_KEY_NEW_FILE", "/nonexistent/new.key"),
    ] {
        let bad = porch_cli(dir.path(), &["secrets", "rotate"], &[(name, value)]);
        let said = String::from_utf8_lossy(&bad.stderr);
        assert_eq!(bad.status.code(), Some(2), "{name}: {said}");
        // The variable itself, followed by its flag: not one whose name it begins.
        assert!(said.starts_with(&format!("error: {name} (")), "{said}");
        assert_eq!(files(dir.path()), [false, false], "{said}");
    }

    let wrong = porch_cli(
        dir.path(),
        &["secrets", "rotate"],
        &[("PORCH_SECRET_KEY", OTHER_KEY)],
    );
    let said = String::from_utf8_lossy(&wrong.stderr);
    assert!(!wrong.status.success());
    assert!(
        said.contains("PORCH_SECRET_KEY is not the key this database was sealed with")
            && !said.contains("could not be sealed"),
        "{said}"
    );
    assert_eq!(files(dir.path()), [false, false], "{said}");

    // With the right key it goes through, and says what it re-sealed.
    let right = porch_cli(
        dir.path(),
        &["secrets", "rotate"],
        &[("PORCH_SECRET_KEY", key)],
    );
    let said = String::from_utf8_lossy(&right.stdout);
    assert!(
        right.status.success(),
        "{}",
        String::from_utf8_lossy(&right.stderr)
    );
    assert!(
        said.contains("0 integrations' secrets, 1 site identity secret,"),
        "{said}"
    );
}

/// Every sealed value is checked before anything is sealed: a wrong key that does not open a
/// two-factor secret leaves clear integration secrets in clear, not sealed with the wrong key
/// (no single key would then open the database).
#[tokio::test]
async fn a_wrong_key_seals_nothing_when_a_two_factor_secret_does_not_open() {
    let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    let app = TestApp::spawn(&["--secret-key", key]).await;
    crate::two_factor::admin_with_two_factor(&app).await;
    let site = app.add_site("Shop");
    let dir = stop(app).await;
    // An integration from before sealing, its secrets in clear text.
    crate::helpers::TestDb::open(dir.path())
        .db()
        .execute(
            "INSERT INTO integrations (site_id, kind, name, config, secrets, created_at, updated_at) \
             SELECT id, 'webhook', 'Webhook', '{}', json_object('secret', ?1), 0, 0 \
               FROM sites WHERE key = ?2",
            [LEGACY_WEBHOOK_SECRET, site.as_str()],
        )
        .expect("insert");

    let message = refused_start(dir.path(), &["--secret-key", OTHER_KEY]).await;
    assert!(
        message.contains("two-factor secret of user 1 does not open"),
        "{message}"
    );
    let clear = "SELECT count(*) FROM integrations WHERE secrets NOT LIKE 'v1:%'";
    assert_eq!(crate::helpers::TestDb::open(dir.path()).count(clear), 1);

    // The right key opens everything, and seals what was clear.
    let app = TestApp::spawn_in(dir, &["--secret-key", key]).await;
    assert_eq!(app.count(clear), 0);
}

/// A start that generated the key file and then found sealed values it does not open removes
/// the key again: nothing was sealed with it.
#[tokio::test]
async fn a_generated_key_that_opens_nothing_is_removed_again() {
    let (_, dir) = stopped_with_an_identity_secret().await;
    let message = refused_start(dir.path(), &[]).await;
    assert!(message.contains("does not open"), "{message}");
    assert!(
        message.contains("the key this start generated, since no key was given"),
        "{message}"
    );
    assert!(
        !dir.path().join("secret.key").exists(),
        "the generated key is gone"
    );
}

/// A rotation's new key left in `secret.key.new` (never moved into place) is named when it is
/// the key the database is sealed with: the refusal's other advice leads to the lost-key steps,
/// which delete every secret.
#[tokio::test]
async fn a_start_without_the_key_a_rotation_left_beside_it_names_that_file() {
    let (key, dir) = stopped_with_an_identity_secret().await;
    let left = dir.path().join("secret.key.new");
    std::fs::write(&left, format!("{key}\n")).expect("key file");
    let message = refused_start(dir.path(), &["--secret-key", OTHER_KEY]).await;
    assert!(
        message.contains(&format!("{} holds key ", left.display()))
            && message.contains("the one this database is sealed with")
            && message.contains("copy it to where PORCH_SECRET_KEY_FILE points"),
        "{message}"
    );
    // With the data directory's key file in use, that file is where it goes.
    std::fs::write(dir.path().join("secret.key"), format!("{OTHER_KEY}\n")).expect("key file");
    let message = refused_start(dir.path(), &[]).await;
    assert!(message.contains("move it over"), "{message}");
    std::fs::remove_file(dir.path().join("secret.key")).expect("remove");
    // Another key there is not named: it would not help.
    std::fs::write(&left, format!("{OTHER_KEY}\n")).expect("key file");
    let message = refused_start(dir.path(), &[]).await;
    assert!(!message.contains("holds key"), "{message}");
    // A rotation without a key points at the file too.
    let rotate = porch_cli(dir.path(), &["secrets", "rotate"], &[]);
    let said = String::from_utf8_lossy(&rotate.stderr);
    assert!(said.contains("secret.key.new is there"), "{said}");
    // Given a key, it goes no further beside the file, and never calls it a leftover.
    let rotate = porch_cli(
        dir.path(),
        &["secrets", "rotate"],
        &[("PORCH_SECRET_KEY", OTHER_KEY)],
    );
    let said = String::from_utf8_lossy(&rotate.stderr);
    assert_eq!(rotate.status.code(), Some(1), "{said}");
    assert!(
        said.contains("holds the key this database is sealed with now"),
        "{said}"
    );
    assert!(left.exists(), "the file stays");
}

/// A first start refused for a database from a newer Porch leaves no key behind either: it
/// generated one, but sealed nothing with it.
#[tokio::test]
async fn a_start_refused_for_a_newer_schema_removes_the_key_it_generated() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = rusqlite::Connection::open(dir.path().join("porch.db")).expect("db");
    db.pragma_update(None, "user_version", porch::store::LATEST_SCHEMA + 1)
        .expect("version");
    drop(db);
    let message = refused_start(dir.path(), &[]).await;
    assert!(message.contains("newer"), "{message}");
    assert!(
        !dir.path().join("secret.key").exists(),
        "the generated key is gone"
    );
}
