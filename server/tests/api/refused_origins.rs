//! The site page names the origins whose pages were refused the chat (docs/widget.md,
//! "Embedding"), so a missing `www.` is found without reading logs, and says when its snippet
//! points where only this computer reaches.

use crate::helpers::{ORIGIN, TestApp};
use crate::inbox::{Browser, send, setup_admin, signed_in_from};
use crate::site_add::site_form;

const STRANGER: &str = "https://www.shop.example.com";

/// Opens the widget from `origin` and reads its first frame (the refusal, or nothing for `hello`).
async fn knock(app: &TestApp, site: &str, origin: &str) -> serde_json::Value {
    let mut widget = app.connect(site, origin).await;
    widget.recv().await
}

async fn page(app: &TestApp, admin: &Browser, path: &str) -> String {
    let page = send(app, "GET", path, &admin.cookie, None).await;
    assert_eq!(page.status, 200, "{}", page.body);
    // Without Leptos's `<!>` markers, which fall between text pieces.
    page.body.replace("<!>", "")
}

#[tokio::test]
async fn the_site_page_names_refused_origins_until_they_are_allowed() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let site = app.add_site("Shop");
    let edit = format!("/sites/{site}");
    assert!(
        !page(&app, &admin, &edit)
            .await
            .contains("Pages refused the chat")
    );

    for _ in 0..2 {
        assert_eq!(
            knock(&app, &site, STRANGER).await["code"],
            "origin_not_allowed"
        );
    }
    // Neither a connection without an origin (not a page) nor an allowed one is listed.
    assert_eq!(knock(&app, &site, "").await["code"], "origin_not_allowed");
    let mut allowed = app.connect(&site, ORIGIN).await;
    allowed.hello(None, 0).await;

    let body = page(&app, &admin, &edit).await;
    assert!(body.contains("Pages refused the chat"), "{body}");
    assert!(
        body.contains(&format!("<code>{STRANGER}</code> · 2 times")),
        "{body}"
    );
    assert!(!body.contains(&format!("<code>{ORIGIN}</code>")), "{body}");
    let list = page(&app, &admin, "/sites").await;
    assert!(list.contains("1 refused origin<"), "{list}");

    // What no browser sends as `Origin` (a program's junk, markup) is not listed at all; a
    // `null` origin (a page opened from a file) is.
    knock(&app, &site, "https://a.example/<b>x").await;
    knock(&app, &site, "null").await;
    let body = page(&app, &admin, &edit).await;
    assert!(
        !body.contains("<b>x") && !body.contains("&lt;b&gt;"),
        "{body}"
    );
    assert!(body.contains("<code>null</code>"), "{body}");
    // Which no allowed origin could let in: the card says what to do instead.
    assert!(
        body.contains("a page opened from a file (file://) or shown in a sandboxed frame"),
        "{body}"
    );
    assert!(
        page(&app, &admin, "/sites")
            .await
            .contains("2 refused origins<")
    );

    let origins = format!("{ORIGIN}\n{STRANGER}");
    let fields = site_form(&admin.csrf, "Shop", &origins);
    let saved = send(&app, "POST", &edit, &admin.cookie, Some(&fields)).await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    // The allowed one drops off; `null` stays.
    let body = page(&app, &admin, &edit).await;
    assert!(
        !body.contains(&format!("<code>{STRANGER}</code>")),
        "{body}"
    );
    assert!(body.contains("<code>null</code>"), "{body}");
    assert!(
        page(&app, &admin, "/sites")
            .await
            .contains("1 refused origin<")
    );
}

/// Without `PORCH_PUBLIC_URL` the snippet points to this computer, where no visitor's browser
/// reaches: the site page says so beside it (the command line warns too). With a public
/// address it says nothing.
#[tokio::test]
async fn a_snippet_only_this_computer_reaches_is_said_to_be_so() {
    for (flags, warned) in [
        (&[][..], true),
        (&["--public-url", "https://porch.shop.test"][..], false),
    ] {
        let app = TestApp::spawn(flags).await;
        let admin = signed_in_from(&app, &setup_admin(&app).await).await;
        let site = app.add_site("Shop");
        let body = page(&app, &admin, &format!("/sites/{site}")).await;
        assert_eq!(
            body.contains("which only this computer can reach"),
            warned,
            "{flags:?}: {body}"
        );
        assert_eq!(body.contains("porch.shop.test"), !warned, "{flags:?}");
    }
}
