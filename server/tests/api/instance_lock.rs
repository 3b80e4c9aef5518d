//! One server per data directory: a second `porch serve` or a `porch migrate` beside a running
//! server exits at once, naming the holder's PID; read-only and management commands still work.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::helpers::{TestApp, wait_until};
use crate::process::{Served, porch, run};

/// Starts `porch serve` and waits until it holds the lock (its PID is in the lock file) and
/// has finished migrating (`porch health --path /readyz` answers 200).
async fn serve(data_dir: &Path) -> Served {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let listen = format!("127.0.0.1:{port}");
    let child = porch(data_dir, &["serve", "--listen", &listen])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("porch serve starts");
    let pid = child.id().to_string();
    let served = Served(child);
    let lock = data_dir.join("porch.lock");
    wait_until(
        "porch serve to be ready",
        Duration::from_secs(20),
        async || {
            let holder = std::fs::read_to_string(&lock).ok();
            if holder.as_deref().map(str::trim) != Some(pid.as_str()) {
                return Err(format!("lock file holds {holder:?}"));
            }
            let health = run(
                data_dir,
                &["health", "--listen", &listen, "--path", "/readyz"],
            );
            if health.status.success() {
                Ok(())
            } else {
                Err(String::from_utf8_lossy(&health.stderr).into_owned())
            }
        },
    )
    .await;
    served
}

#[tokio::test]
async fn a_second_serve_and_a_migrate_on_a_served_directory_exit_naming_the_holder() {
    let dir = tempfile::tempdir().expect("dir");
    let first = serve(dir.path()).await;
    let pid = first.0.id();

    for args in [&["serve", "--listen", "127.0.0.1:0"][..], &["migrate"]] {
        let started = Instant::now();
        let output = run(dir.path(), args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} started beside a server");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{args:?} did not fail at once"
        );
        assert!(stderr.contains(&format!("PID {pid}")), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
    }

    // Reading and managing still work while the server runs.
    assert!(run(dir.path(), &["check"]).status.success());
    let added = run(
        dir.path(),
        &[
            "site",
            "add",
            "--name",
            "Shop",
            "--origin",
            "https://shop.example.com",
        ],
    );
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
}

#[tokio::test]
async fn the_lock_is_free_again_after_the_server_is_killed() {
    let dir = tempfile::tempdir().expect("dir");
    drop(serve(dir.path()).await);
    let migrated = run(dir.path(), &["migrate"]);
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
}

#[tokio::test]
async fn an_in_process_server_refuses_a_directory_in_use() {
    let app = TestApp::spawn(&[]).await;
    let config = crate::helpers::serve_config(app.data_dir.path(), &[]);
    let listener = porch::http::bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
    let err = porch::start(config, listener)
        .await
        .err()
        .expect("a second server on the same directory is refused");
    assert!(
        err.to_string().contains("in use by another porch process"),
        "{err:#}"
    );
}

/// A management command beside a server whose database is at another schema (the server still
/// migrating it, or a server of another version) is refused with what to do in either case.
#[tokio::test]
async fn a_command_beside_a_server_at_another_schema_says_to_wait_or_use_its_binary() {
    let app = TestApp::spawn(&[]).await;
    app.db()
        .pragma_update(None, "user_version", porch::store::LATEST_SCHEMA - 1)
        .expect("as if still migrating");
    let output = run(app.data_dir.path(), &["site", "list"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("retry once its /readyz answers 200")
            && stderr.contains("run this command with the server's own binary"),
        "{stderr}"
    );
}
