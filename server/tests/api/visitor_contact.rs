//! An agent sets the visitor's name and email on the conversation page: stored, said in a status
//! line, found by search, usable for mail; a bad address is refused and changes nothing; a save
//! from a page that showed older values does not overwrite a change made meanwhile; no save
//! without the CSRF token.

use porch::store::ConversationId;

use crate::helpers::TestApp;
use crate::inbox::{Browser, form, send, setup_admin, signed_in_from};

/// Where a redirect goes.
fn location(answer: &crate::helpers::Answer) -> &str {
    answer.header("location").unwrap_or_default()
}

struct Desk {
    app: TestApp,
    browser: Browser,
    conversation: ConversationId,
}

impl Desk {
    async fn start() -> Self {
        let app = TestApp::spawn(&[]).await;
        let browser = signed_in_from(&app, &setup_admin(&app).await).await;
        let site = app.add_site("Shop");
        let (mut visitor, _) = app.visitor(&site, None, 0).await;
        let ack = visitor
            .say("a1", "Hi, I'm Jane from Acme: jane@acme.example")
            .await;
        assert_eq!(ack["type"], "ack", "{ack}");
        let conversation = ConversationId(app.count("SELECT max(id) FROM conversations"));
        Self {
            app,
            browser,
            conversation,
        }
    }

    /// Posts the form as the page would, having shown `shown` (name, email).
    async fn save(&self, typed: (&str, &str), shown: (&str, &str)) -> crate::helpers::Answer {
        let body = form(&[
            ("csrf", &self.browser.csrf),
            ("name", typed.0),
            ("email", typed.1),
            ("shown_name", shown.0),
            ("shown_email", shown.1),
        ]);
        let path = format!("/conversations/{}/visitor", self.conversation.0);
        send(&self.app, "POST", &path, &self.browser.cookie, Some(&body)).await
    }

    fn stored(&self) -> (Option<String>, Option<String>) {
        self.app
            .db()
            .query_row("SELECT name, email FROM visitors", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .expect("one visitor")
    }

    fn lines(&self) -> Vec<String> {
        self.app
            .column("SELECT body FROM messages WHERE author = 'system' ORDER BY id")
    }
}

#[tokio::test]
async fn an_agent_sets_the_visitors_name_and_email_and_the_conversation_says_so() {
    let desk = Desk::start().await;
    let page = send(
        &desk.app,
        "GET",
        &format!("/conversations/{}", desk.conversation.0),
        &desk.browser.cookie,
        None,
    )
    .await;
    assert!(
        page.body.contains("id=\"visitor-name\""),
        "the form is on the page"
    );

    let saved = desk
        .save((" Jane\nDoe ", " jane@acme.example "), ("", ""))
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    assert!(
        location(&saved).ends_with("?notice=visitor-saved"),
        "{}",
        saved.body
    );
    assert_eq!(
        desk.stored(),
        (Some("Jane Doe".into()), Some("jane@acme.example".into()))
    );
    assert_eq!(
        desk.lines(),
        ["Ana set the visitor's name to Jane Doe and set the visitor's email to jane@acme.example"]
    );
    // The search index follows the visitors table in the same transaction.
    let found = send(
        &desk.app,
        "GET",
        "/search?q=jane+doe",
        &desk.browser.cookie,
        None,
    )
    .await;
    assert!(
        found.body.contains("<mark>Jane</mark> <mark>Doe</mark>"),
        "found by the new name: {}",
        found.body
    );

    // The same values again: nothing written, no second line.
    let again = desk
        .save(
            ("Jane Doe", "jane@acme.example"),
            ("Jane Doe", "jane@acme.example"),
        )
        .await;
    assert!(location(&again).ends_with("?notice=visitor-unchanged"));
    assert_eq!(desk.lines().len(), 1);

    // Clearing the email.
    let cleared = desk
        .save(("Jane Doe", ""), ("Jane Doe", "jane@acme.example"))
        .await;
    assert!(location(&cleared).ends_with("?notice=visitor-saved"));
    assert_eq!(desk.stored(), (Some("Jane Doe".into()), None));
    assert_eq!(desk.lines()[1], "Ana removed the visitor's email");
}

#[tokio::test]
async fn a_bad_address_a_stale_page_or_a_missing_token_changes_nothing() {
    let desk = Desk::start().await;
    let refused = desk.save(("Jane", "jane@localhost"), ("", "")).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(
        refused.body.contains("Please check the email address"),
        "{}",
        refused.body
    );
    // On the conversation's page, not a page of its own: the form open, what was typed in it,
    // the refused field marked and focused, the shown values still the stored ones.
    let page = &refused.body;
    assert!(page.contains(r#"id="reply-form""#), "{page}");
    assert!(page.contains(r#"id="edit-visitor" open"#), "{page}");
    let field = |id: &str| {
        page.split(&format!(r#"id="{id}""#))
            .nth(1)
            .and_then(|rest| rest.split('>').next())
            .unwrap_or_default()
            .to_owned()
    };
    assert!(field("visitor-name").contains(r#"value="Jane""#));
    let email = field("visitor-email");
    assert!(
        email.contains(r#"value="jane@localhost""#)
            && email.contains(r#"aria-invalid="true""#)
            && email.contains("autofocus"),
        "{email}"
    );
    assert!(!field("visitor-name").contains("aria-invalid"));
    assert!(page.contains(r#"name="shown_name" value="""#), "{page}");
    let blank = desk.save(("\u{200b}", ""), ("", "")).await;
    assert_eq!(blank.status, 422, "{}", blank.body);
    assert!(
        blank.body.contains("needs a visible character"),
        "{}",
        blank.body
    );
    assert_eq!(desk.stored(), (None, None));

    // Another agent named the visitor after this page was loaded (it showed no name).
    assert_eq!(desk.save(("Jane", ""), ("", "")).await.status, 303);
    let stale = desk.save(("J. Smith", ""), ("", "")).await;
    assert!(
        location(&stale).ends_with("?notice=visitor-changed-meanwhile"),
        "{}",
        stale.body
    );
    assert_eq!(desk.stored(), (Some("Jane".into()), None));

    let path = format!("/conversations/{}/visitor", desk.conversation.0);
    let body = form(&[("name", "Mallory"), ("email", ""), ("shown_name", "Jane")]);
    let forged = send(&desk.app, "POST", &path, &desk.browser.cookie, Some(&body)).await;
    assert_eq!(forged.status, 403);
    // A request that leaves a field out is refused, not taken as clearing it.
    let partial = form(&[
        ("csrf", &desk.browser.csrf),
        ("name", "Jane"),
        ("shown_name", "Jane"),
    ]);
    let refused = send(
        &desk.app,
        "POST",
        &path,
        &desk.browser.cookie,
        Some(&partial),
    )
    .await;
    assert!(
        refused.status >= 400,
        "{}: {}",
        refused.status,
        refused.body
    );
    assert_eq!(desk.stored(), (Some("Jane".into()), None));
    assert_eq!(desk.lines().len(), 1);
}
