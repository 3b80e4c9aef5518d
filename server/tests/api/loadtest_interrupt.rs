//! `porch loadtest` stopped by a signal mid-stair (the real binary): it stops its scratch server
//! and removes its scratch data directory before exiting, rather than leaving them to init and
//! `/tmp`.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_mins(1);

/// Pids whose parent is `pid`, from `/proc`.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| {
            // `pid (comm) state ppid …`: the command may hold spaces, so count from its `)`.
            std::fs::read_to_string(format!("/proc/{child}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(pid)
            })
        })
        .collect()
}

fn scratch_dirs(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .expect("read the temporary directory")
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().map(ToOwned::to_owned))
        .filter(|name| name.starts_with("porch-loadtest-"))
        .collect()
}

/// Waits for `check` to hold, polling; panics with `what` past [`WAIT`].
fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < WAIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts a long stair, waits until its scratch server serves, sends `signal`, and checks that
/// the load test exits with `code`, saying so, leaving no server and no directory.
fn interrupted_loadtest_cleans_up(signal: &str, code: i32) {
    let tmp = tempfile::tempdir().expect("temporary directory");
    let out = tempfile::tempdir().expect("out dir");
    let live = tempfile::tempdir().expect("live data dir");
    let loadtest: Child = Command::new(env!("CARGO_BIN_EXE_porch"))
        .arg("--data-dir")
        .arg(live.path())
        .args(["loadtest", "--stairs", "50", "--warmup", "1s"])
        .args(["--duration", "5m", "--sites", "1", "--visitors", "5"])
        .args(["--no-echo", "--normal-priority", "--out"])
        .arg(out.path())
        .env("TMPDIR", tmp.path())
        .env_remove("PORCH_DATA_DIR")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start porch loadtest");
    let pid = loadtest.id();
    // The scratch server is up once its directory holds a database and it is a child.
    let mut server = None;
    wait_for("the scratch server", || {
        server = children_of(pid).first().copied();
        server.is_some() && !scratch_dirs(tmp.path()).is_empty()
    });
    let server = server.expect("a scratch server");
    std::thread::sleep(Duration::from_secs(2));

    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success());
    let output = loadtest.wait_with_output().expect("the load test exits");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    assert!(
        stderr.contains(&format!("interrupted by SIG{signal}")),
        "{stderr}"
    );
    assert!(
        !Path::new(&format!("/proc/{server}")).exists(),
        "the scratch server {server} outlived the load test"
    );
    assert_eq!(scratch_dirs(tmp.path()), Vec::<String>::new());
    assert_eq!(std::fs::read_dir(out.path()).expect("out").count(), 0);
}

#[test]
fn sigint_stops_the_scratch_server_and_removes_its_directory() {
    interrupted_loadtest_cleans_up("INT", 130);
}

#[test]
fn sigterm_stops_the_scratch_server_and_removes_its_directory() {
    interrupted_loadtest_cleans_up("TERM", 143);
}
