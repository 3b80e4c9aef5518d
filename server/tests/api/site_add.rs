//! `porch site add` parses through the admin form's own parse: what the form refuses, the
//! command line refuses too, with the same reason.

use crate::helpers::TestApp;
use crate::inbox::{form, send, setup_admin, signed_in_from};
use crate::process::run;

/// The new-site form with this name and these origins, every other field at its default (also
/// the edit form: it takes the same fields).
pub(crate) fn site_form(csrf: &str, name: &str, origins: &str) -> String {
    form(&[
        ("csrf", csrf),
        ("name", name),
        ("origins", origins),
        ("greeting", "Hi! How can we help?"),
        ("color", "#2563eb"),
        ("position", "right"),
        ("visitor_messages_per_minute", "30"),
        ("visitor_burst", "10"),
        ("flood_messages_per_minute", "600"),
        ("flood_conversations_per_minute", "60"),
    ])
}

#[tokio::test]
async fn site_add_refuses_what_the_admin_form_refuses_with_the_same_reason() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let long_name = "x".repeat(81);
    for (name, origin, reason) in [
        (
            long_name.as_str(),
            "https://acme.example",
            "The name must have 1 to 80 characters.",
        ),
        (
            "Acme",
            "acme.example",
            "acme.example: An origin starts with http:// or https://.",
        ),
        // Every refused origin of a list is named at once, not one per try.
        (
            "Acme",
            "acme.example, https://ok.example, https://acme.example/checkout",
            "acme.example: An origin starts with http:// or https://. \
             https://acme.example/checkout: An origin is scheme://host[:port]",
        ),
    ] {
        let page = send(
            &app,
            "POST",
            "/sites",
            &admin.cookie,
            Some(&site_form(&admin.csrf, name, origin)),
        )
        .await;
        assert_eq!(page.status, 422, "{}", page.body);
        assert!(page.body.contains(reason), "{}", page.body);

        let added = run(
            app.data_dir.path(),
            &["site", "add", "--name", name, "--origin", origin],
        );
        let stderr = String::from_utf8_lossy(&added.stderr);
        assert!(!added.status.success(), "{name} {origin} was added");
        assert!(stderr.contains(reason), "{stderr}");
        // No snippet was made: nothing to warn about.
        assert!(!stderr.contains("--public-url"), "{stderr}");
    }
    assert_eq!(app.count("SELECT count(*) FROM sites"), 0);
    assert_eq!(
        app.count("SELECT count(*) FROM audit_events WHERE action = 'site.created'"),
        0
    );

    // A site the command adds is in the audit log, by `cli`, like one the page adds.
    let added = run(
        app.data_dir.path(),
        &[
            "site",
            "add",
            "--name",
            "Acme",
            "--origin",
            "https://acme.example",
        ],
    );
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let key: String = app
        .db()
        .query_row("SELECT key FROM sites", [], |r| r.get(0))
        .expect("the site");
    let (actor, target): (String, String) = app
        .db()
        .query_row(
            "SELECT actor, target_id FROM audit_events WHERE action = 'site.created'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("recorded");
    assert_eq!((actor.as_str(), target.as_str()), ("cli", key.as_str()));
    // Made without a public URL, the snippet is said to work on this machine only, by both
    // commands that print it.
    let warned = "no --public-url (PORCH_PUBLIC_URL) given";
    assert!(String::from_utf8_lossy(&added.stderr).contains(warned));
    let again = run(app.data_dir.path(), &["site", "snippet", &key]);
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stdout).contains("http://127.0.0.1:8080"));
    assert!(String::from_utf8_lossy(&again.stderr).contains(warned));
}

#[test]
fn commands_on_stored_data_refuse_a_data_directory_without_a_database() {
    let parent = tempfile::tempdir().expect("tempdir");
    let typo = parent.path().join("dtaa");
    for args in [
        &["export", "--all"][..],
        &["erase", "--email", "ann@example.org", "--yes"],
        &["token", "list"],
        &["vacuum"],
    ] {
        let out = crate::process::run(&typo, args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("there is no database at"),
            "{args:?}: {stderr}"
        );
        assert!(!typo.exists(), "{args:?} created {}", typo.display());
    }
}

/// A snippet carries the public URL browsers will load the widget from: `site add` and
/// `site snippet` hold it to `serve`'s rule instead of printing a snippet that cannot work.
#[tokio::test]
async fn snippet_commands_refuse_a_public_url_serve_would_refuse() {
    let app = TestApp::spawn(&[]).await;
    let dir = app.data_dir.path();
    let added = run(
        dir,
        &[
            "site",
            "add",
            "--name",
            "Ok",
            "--origin",
            "https://ok.example",
        ],
    );
    assert!(added.status.success());
    let key = app
        .db()
        .query_row("SELECT key FROM sites", [], |r| r.get::<_, String>(0))
        .expect("key");
    for (url, reason) in [
        ("ftp://x?y#z", "must be an absolute http:// or https:// URL"),
        ("", "must be an absolute http:// or https:// URL"),
        ("http://0.0.0.0:1", "must name a host browsers can reach"),
    ] {
        let add = [
            "site",
            "add",
            "--name",
            "Z",
            "--origin",
            "https://z.example",
            "--public-url",
            url,
        ];
        let snippet = ["site", "snippet", key.as_str(), "--public-url", url];
        for args in [&add[..], &snippet[..]] {
            let out = run(dir, args);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{args:?} was taken");
            assert!(
                stderr.contains("PORCH_PUBLIC_URL") && stderr.contains(reason),
                "{stderr}"
            );
        }
    }
    assert_eq!(app.count("SELECT count(*) FROM sites"), 1);
}
