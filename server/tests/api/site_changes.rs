//! An admin's save reaches the site's open widgets at once (docs/widget-protocol.md, "Session"):
//! a page whose origin is no longer allowed, or any page of a deleted site, is told so as a new
//! connection would be (`origin_not_allowed`, `site_not_found`, close 1008) instead of having
//! its messages kept or retried for ever; new brakes apply to the next message. Other sites'
//! widgets are untouched.

use serde_json::json;

use crate::audit::SITE_FIELDS;
use crate::helpers::{ORIGIN, TestApp, Widget};
use crate::identity::{browser_with, rotate_secret, user_hash};
use crate::inbox::{Browser, form, send, setup_admin, signed_in_from};
use crate::prechat_hours::save_prechat;

/// Saves the site form of `site` with these origins and fields (others at their defaults);
/// returns where the answer sends the browser.
async fn save_site(
    app: &TestApp,
    admin: &Browser,
    site: &str,
    origins: &str,
    extra: &[(&str, &str)],
) -> String {
    let mut fields = vec![
        ("csrf", admin.csrf.as_str()),
        ("name", "Shop"),
        ("origins", origins),
    ];
    let overridden: Vec<&str> = extra.iter().map(|(name, _)| *name).collect();
    fields.extend(
        SITE_FIELDS
            .iter()
            .filter(|(name, _)| !overridden.contains(name)),
    );
    fields.extend_from_slice(extra);
    let answer = send(
        app,
        "POST",
        &format!("/sites/{site}"),
        &admin.cookie,
        Some(&form(&fields)),
    )
    .await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    answer.header("location").expect("a location").to_owned()
}

/// The notice after a save asks for the snippet to be pasted again only when something it
/// carries changed (the colour, the corner, the widget language).
#[tokio::test]
async fn only_a_change_the_snippet_carries_asks_for_the_new_snippet() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let shop = app.add_site("Shop");
    save_site(&app, &admin, &shop, ORIGIN, &[]).await;
    let greeting = save_site(&app, &admin, &shop, ORIGIN, &[("greeting", "Hi again")]).await;
    assert!(greeting.ends_with("?notice=site-saved"), "{greeting}");
    let page = send(&app, "GET", &greeting, &admin.cookie, None).await;
    assert!(
        page.body
            .contains("Changes saved. New chat windows use them at once.")
    );
    for field in [("color", "#0f766e"), ("position", "left"), ("locale", "de")] {
        let carried = save_site(&app, &admin, &shop, ORIGIN, &[field]).await;
        assert!(
            carried.ends_with("?notice=site-saved-snippet"),
            "{field:?}: {carried}"
        );
    }
    let page = send(
        &app,
        "GET",
        &format!("/sites/{shop}?notice=site-saved-snippet"),
        &admin.cookie,
        None,
    )
    .await;
    assert!(
        page.body.contains("paste the new snippet below"),
        "{}",
        page.body
    );
}

/// A colour close to white, or to the panel's dark-mode background, is saved, with a warning
/// under it that what sits on the panel would be hard to see; an ordinary one gets none.
#[tokio::test]
async fn a_colour_close_to_white_or_to_the_dark_panel_is_warned_about() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let shop = app.add_site("Shop");
    let white = "This colour stands out little from white (1.1:1";
    let dark = "This colour stands out little from the dark panel visitors see when their device \
                is in dark mode (1.0:1";
    for (color, warning) in [
        ("#fef08a", Some(white)),
        ("#111111", Some(dark)),
        ("#0f766e", None),
    ] {
        let saved = save_site(&app, &admin, &shop, ORIGIN, &[("color", color)]).await;
        let page = send(&app, "GET", &saved, &admin.cookie, None).await;
        assert!(page.body.contains(&format!("value=\"{color}\"")), "{color}");
        if let Some(warning) = warning {
            assert!(page.body.contains(warning), "{color}: {}", page.body);
        }
        assert_eq!(
            page.body.contains("aria-describedby=\"color-hint\""),
            warning.is_some()
        );
    }
}

/// The next frame is the refusal `code`, then the close 1008.
async fn refused(widget: &mut Widget, code: &str) {
    let error = widget.recv().await;
    assert_eq!(error["type"], "error", "{error}");
    assert_eq!(error["code"], code, "{error}");
    assert_eq!(widget.closed().await, Some(1008));
}

/// A signed-in admin, the site "Shop" and three open widgets: one visitor of Shop who has
/// written, one who has only opened the panel, and one on another site.
struct Open {
    app: TestApp,
    admin: Browser,
    shop: String,
    talking: Widget,
    idle: Widget,
    elsewhere: Widget,
}

async fn open_widgets() -> Open {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let shop = app.add_site("Shop");
    let other = app.add_site("Other");
    let (mut talking, _) = app.visitor(&shop, None, 0).await;
    assert_eq!(talking.say("a1", "hello").await["type"], "ack");
    let (idle, _) = app.visitor(&shop, None, 0).await;
    let (elsewhere, _) = app.visitor(&other, None, 0).await;
    Open {
        app,
        admin,
        shop,
        talking,
        idle,
        elsewhere,
    }
}

#[tokio::test]
async fn removing_a_pages_origin_ends_its_open_widgets() {
    let Open {
        app,
        admin,
        shop,
        mut talking,
        mut idle,
        mut elsewhere,
    } = open_widgets().await;

    // A save that keeps the origin (another greeting) changes nothing for them.
    save_site(&app, &admin, &shop, ORIGIN, &[("greeting", "Hello again")]).await;
    assert_eq!(talking.say("a2", "still here").await["type"], "ack");

    save_site(&app, &admin, &shop, "https://new-shop.example.com", &[]).await;
    refused(&mut talking, "origin_not_allowed").await;
    refused(&mut idle, "origin_not_allowed").await;
    assert_eq!(elsewhere.say("b1", "hi").await["type"], "ack");
    assert_eq!(
        app.count("SELECT count(*) FROM messages WHERE body = 'still here'"),
        1
    );
    // The site page names the page that lost the chat, as it names pages refused at connecting.
    let page = send(&app, "GET", &format!("/sites/{shop}"), &admin.cookie, None).await;
    let card = &page.body[page.body.find("Pages refused the chat").expect("the card")..];
    assert!(
        card.contains(&format!("<code>{ORIGIN}</code>")),
        "{}",
        page.body
    );
}

#[tokio::test]
async fn deleting_a_site_ends_its_open_widgets() {
    let Open {
        app,
        admin,
        shop,
        mut talking,
        mut idle,
        mut elsewhere,
    } = open_widgets().await;

    let path = format!("/sites/{shop}/delete");
    let fields = form(&[("csrf", admin.csrf.as_str()), ("confirm", "Shop")]);
    let answer = send(&app, "POST", &path, &admin.cookie, Some(&fields)).await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    refused(&mut talking, "site_not_found").await;
    refused(&mut idle, "site_not_found").await;
    assert_eq!(elsewhere.say("b1", "hi").await["type"], "ack");
}

#[tokio::test]
async fn new_brakes_apply_to_an_open_widgets_next_message() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let shop = app.add_site("Shop");
    let (mut widget, _) = app.visitor(&shop, None, 0).await;
    assert_eq!(widget.say("a1", "one").await["type"], "ack");
    assert_eq!(widget.say("a2", "two").await["type"], "ack");

    // One message a minute and a bucket of one: the next message empties it, the one after is
    // refused (of the old burst of ten, eight were left).
    let brakes = [("visitor_messages_per_minute", "1"), ("visitor_burst", "1")];
    save_site(&app, &admin, &shop, ORIGIN, &brakes).await;
    // The news was sent before the save answered, so it is taken before the next frame.
    assert_eq!(widget.say("a3", "three").await["type"], "ack");
    let answer = widget.say("a4", "four").await;
    assert_eq!(answer["type"], "error", "{answer}");
    assert_eq!(answer["code"], "rate_limited", "{answer}");
}

/// A new pre-chat form, or a replaced secret for a known visitor, changes what `welcome` settled:
/// the open connection is closed with 1012 so the client connects again and is told anew. An
/// anonymous visitor's connection stays open when only the secret changes.
#[tokio::test]
async fn a_new_form_or_secret_makes_open_widgets_connect_again() {
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    let shop = app.add_site("Shop");
    let secret = rotate_secret(&app, &admin, &shop).await;
    let identity = json!({"id": "u1", "user_hash": user_hash(&secret, "u1")});
    let (mut known, _) = browser_with(&app, &shop, identity).await;
    let (mut anonymous, _) = app.visitor(&shop, None, 0).await;

    rotate_secret(&app, &admin, &shop).await;
    assert_eq!(known.closed().await, Some(1012));
    assert_eq!(anonymous.say("a1", "still here").await["type"], "ack");

    save_prechat(&app, &admin, &shop).await;
    assert_eq!(anonymous.closed().await, Some(1012));
}
