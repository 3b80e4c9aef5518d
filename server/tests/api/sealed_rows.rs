//! A sealed value that does not open in one integration's row while the others open (the row
//! edited by hand, or its value copied from another row): the start names that row and how to
//! clear it alone (docs/operations.md, "One integration's secrets do not open").

use crate::helpers::TestApp;
use crate::sealed_secrets::{add_webhook, refused_start, stop};

/// A start refused over one row whose sealed value was copied from another says the key is right
/// and how to clear that row alone; cleared, the start goes on and the other row still signs.
#[tokio::test]
async fn a_start_refused_over_one_altered_row_names_it_and_clearing_it_alone_fixes_it() {
    let app = TestApp::spawn(&["--allow-private-networks"]).await;
    let admin = app.add_user_token("Admin", "admin");
    let site = app.add_site("Shop");
    add_webhook(&app, &admin, &site, "http://127.0.0.1:9/a").await;
    add_webhook(&app, &admin, &site, "http://127.0.0.1:9/b").await;
    let dir = stop(app).await;
    let db = crate::helpers::TestDb::open(dir.path()).db();
    let (first, copy): (i64, i64) = db
        .query_row("SELECT min(id), max(id) FROM integrations", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("ids");
    db.execute(
        "UPDATE integrations SET secrets = (SELECT secrets FROM integrations WHERE id = ?1) \
         WHERE id = ?2",
        [first, copy],
    )
    .expect("copy");
    let said = refused_start(dir.path(), &[]).await;
    assert!(
        said.contains(&format!(
            "opens the secrets of 1 other integration(s) but not those of integration {copy}"
        )),
        "{said}"
    );
    assert!(said.contains(&format!("WHERE id = {copy}")), "{said}");
    db.execute(
        "UPDATE integrations SET secrets = '{}' WHERE id = ?1",
        [copy],
    )
    .expect("cleared");
    let app = TestApp::spawn_in(dir, &["--allow-private-networks"]).await;
    assert_eq!(app.count("SELECT count(*) FROM integrations"), 2);
}

/// A first start while another program holds the database's write lock (a `sqlite3` shell with
/// a transaction open) says so, and leaves no key behind: it generated one, but sealed nothing.
#[tokio::test]
async fn a_start_behind_another_programs_lock_says_so_and_removes_the_key_it_generated() {
    let dir = tempfile::tempdir().expect("temp dir");
    let migrated = crate::sealed_secrets::porch_cli(dir.path(), &["migrate"], &[]);
    assert!(migrated.status.success(), "{migrated:?}");
    let shell = rusqlite::Connection::open(dir.path().join("porch.db")).expect("db");
    shell.execute_batch("BEGIN EXCLUSIVE").expect("lock");
    let message = refused_start(dir.path(), &[]).await;
    drop(shell);
    assert!(
        message.contains("another program holds the database's write lock"),
        "{message}"
    );
    assert!(
        !dir.path().join("secret.key").exists(),
        "the generated key is gone"
    );
}
