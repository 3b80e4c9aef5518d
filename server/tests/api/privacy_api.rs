//! A person's data over the API (docs/api.md, "A person's data"), for a script that answers
//! access and erasure requests: found by address (as a request names it) or id, exported and
//! erased, each recorded as the privacy page's are.

use crate::helpers::{Exchange as _, TestApp};
use crate::privacy::person;

/// The same over the API, for a script that answers access and erasure requests: an admin
/// token finds a person by address or id, downloads their export and erases them, each
/// recorded as the privacy page's are (`via: api`); an agent's token may do none of it.
#[tokio::test]
async fn an_admin_token_finds_exports_and_erases_a_person() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let admin = app.add_user_token("Api", "admin");
    let agent = app.add_agent_token("Bo");
    let ann = person(&app, &site, &admin, "ann").await;
    let visitor = ann.chat.visitor;

    let (status, found) = app
        .api("GET", "/api/v1/visitors?q=ANN%40example.org", &admin, None)
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["visitors"][0]["id"], visitor, "{found}");
    assert_eq!(found["visitors"][0]["site"], site.as_str());
    assert_eq!(found["visitors"][0]["email"], "ann@example.org");
    let (status, by_id) = app
        .api(
            "GET",
            &format!("/api/v1/visitors?q=v{visitor}"),
            &admin,
            None,
        )
        .await;
    assert_eq!(
        (status, &by_id["visitors"][0]["id"]),
        (200, &visitor.into())
    );
    for path in [
        "/api/v1/visitors?q=nobody",
        "/api/v1/visitors",
        "/api/v1/visitors?q=ann%40",
        "/api/v1/visitors?q=ann%40%40example.org",
        "/api/v1/visitors?q=a%20nn%40example.org",
    ] {
        let (status, refused) = app.api("GET", path, &admin, None).await;
        assert_eq!(
            (status, &refused["error"]["code"]),
            (422, &"invalid".into()),
            "{path}"
        );
    }
    for path in [
        "/api/v1/visitors?q=ann%40example.org".to_owned(),
        format!("/api/v1/visitors/{visitor}/export"),
    ] {
        assert_eq!(app.api("GET", &path, &agent, None).await.0, 403, "{path}");
    }

    // A HEAD (a monitor, a link checker) is answered with the download's headers, without the
    // data, and is no export.
    let export_path = format!("/api/v1/visitors/{visitor}/export");
    let ask = |method: &'static str| {
        app.http
            .request(method, &export_path)
            .header("authorization", format!("Bearer {admin}"))
            .answer()
    };
    let (head, get) = (ask("HEAD").await, ask("GET").await);
    assert_eq!((head.status, head.body.as_str()), (200, ""));
    for name in ["content-type", "content-disposition", "cache-control"] {
        assert_eq!(head.header(name), get.header(name), "{name}");
    }
    assert!(
        head.header("content-disposition")
            .is_some_and(|d| d.starts_with("attachment"))
    );
    let export = get.json();
    assert_eq!(get.status, 200, "{export}");
    assert_eq!(export["visitor"]["email"], "ann@example.org");
    assert!(export.to_string().contains(&ann.body), "{export}");

    let erase = format!("/api/v1/visitors/{visitor}/erase");
    assert_eq!(app.api("POST", &erase, &agent, None).await.0, 403);
    let (status, erased) = app.api("POST", &erase, &admin, None).await;
    assert_eq!(status, 200, "{erased}");
    assert_eq!(erased["erased"]["conversations"], 1, "{erased}");
    assert_eq!(app.api("POST", &erase, &admin, None).await.0, 404);
    assert_eq!(app.count("SELECT count(*) FROM visitors"), 0);
    let vias: Vec<String> = app
        .db()
        .prepare("SELECT action || ' ' || json_extract(detail, '$.via') FROM audit_events WHERE action LIKE 'privacy.%' ORDER BY id")
        .expect("query")
        .query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("read");
    assert_eq!(vias, ["privacy.exported api", "privacy.erased api"]);
}

/// The privacy page's search says a mistyped address is one, rather than "Nobody found".
#[tokio::test]
async fn the_privacy_page_says_a_mistyped_address_is_not_one() {
    use crate::inbox::{send, setup_admin, signed_in_from};
    let app = TestApp::spawn(&[]).await;
    let admin = signed_in_from(&app, &setup_admin(&app).await).await;
    for (q, refused) in [("ann%40", true), ("ann%40example.org", false)] {
        let page = send(&app, "GET", &format!("/privacy?q={q}"), &admin.cookie, None).await;
        assert_eq!(page.status, 200);
        assert_eq!(
            page.body
                .contains("That is neither an email address nor a visitor id"),
            refused,
            "{q}: {}",
            page.body
        );
        assert_eq!(page.body.contains("Nobody found."), !refused, "{q}");
    }
}

/// An address is found as a request names it, also one kept under an older, looser rule; a
/// mistyped one that finds nobody is refused, never answered "nobody".
#[tokio::test]
async fn an_address_is_found_as_a_request_names_it() {
    let app = TestApp::spawn(&[]).await;
    let site = app.add_site("Shop");
    let admin = app.add_user_token("Api", "admin");
    let ann = person(&app, &site, &admin, "ann").await;
    let visitor = ann.chat.visitor;
    for named in [
        "Ann%20One%20%3Cann%40example.org%3E",
        "mailto%3Aann%40example.org",
        "ann%40example.org.",
    ] {
        let (status, found) = app
            .api("GET", &format!("/api/v1/visitors?q={named}"), &admin, None)
            .await;
        assert_eq!(
            (status, &found["visitors"][0]["id"]),
            (200, &visitor.into()),
            "{named}: {found}"
        );
    }
    // An address kept under an older, looser rule (no dot in its domain) is still found.
    app.db()
        .execute(
            "UPDATE visitors SET email = 'ann@intranet' WHERE id = ?1",
            [visitor],
        )
        .expect("an older address");
    let (status, found) = app
        .api("GET", "/api/v1/visitors?q=ann%40intranet", &admin, None)
        .await;
    assert_eq!(
        (status, &found["visitors"][0]["id"]),
        (200, &visitor.into()),
        "{found}"
    );
    app.db()
        .execute(
            "UPDATE visitors SET email = 'ann@example.org' WHERE id = ?1",
            [visitor],
        )
        .expect("back");
}
