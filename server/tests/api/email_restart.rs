//! Email blocked because SMTP was not configured (or its login refused) is the server's own
//! settings: a restart with SMTP configured resumes the site's email (docs/integrations/email.md,
//! "Failures"), and the mails that waited go out, without anyone saving the site's settings.

use serde_json::{Value, json};

use crate::email::{Sink, site_with_email};
use crate::helpers::{TestApp, WAIT, ok_if, wait_until};
use crate::sealed_secrets::stop;

/// The site's email integration as `GET /api/v1/sites/{key}/integrations` lists it.
async fn email_integration(app: &TestApp, admin: &str, site: &str) -> Value {
    let path = format!("/api/v1/sites/{site}/integrations");
    let (status, list) = app.api("GET", &path, admin, None).await;
    assert_eq!(status, 200, "{list}");
    let list = list["integrations"].as_array().cloned().unwrap_or_default();
    let email = list.into_iter().find(|i| i["kind"] == "email");
    email.expect("the email integration")
}

#[tokio::test]
async fn a_restart_with_smtp_configured_sends_the_mails_that_waited_for_it() {
    let sink = Sink::start();
    let smtp = format!("smtp://127.0.0.1:{}", sink.port);
    let with_smtp = ["--smtp-url", &smtp, "--mail-from", "chat@porch.test"];
    let (app, admin, site) = site_with_email(&sink, json!({"unanswered_after_secs": 1})).await;

    // Started once without SMTP: the site's digest is blocked and the integration broken.
    let app = TestApp::spawn_in(stop(app).await, &[]).await;
    let (mut widget, _) = app.visitor(&site, None, 0).await;
    assert_eq!(widget.say("c-1", "anyone there?").await["type"], "ack");
    wait_until("the digest blocked", WAIT, async || {
        let blocked =
            "SELECT count(*) FROM jobs WHERE kind = 'email.unanswered' AND state = 'blocked'";
        ok_if(app.count(blocked), |n| *n == 1)
    })
    .await;
    let broken = email_integration(&app, &admin, &site).await;
    assert_eq!(broken["status"], "broken", "{broken}");
    drop(widget);

    // Started again with SMTP: the digest goes out and the integration is healthy.
    let app = TestApp::spawn_in(stop(app).await, &with_smtp).await;
    let mails = sink.wait_for(1).await;
    assert!(
        mails[0].to_string().contains("anyone there?"),
        "{}",
        mails[0]
    );
    wait_until("the email healthy", WAIT, async || {
        let email = email_integration(&app, &admin, &site).await;
        ok_if(email["status"].as_str().map(str::to_owned), |s| {
            s.as_deref() == Some("ok")
        })
    })
    .await;
}
