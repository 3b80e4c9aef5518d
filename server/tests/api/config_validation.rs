//! `porch serve` refuses a setting that would break at run time before it touches anything:
//! exit status 2, one line on standard error naming the variable, and no database file.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use crate::helpers::wait_until;
use crate::process::Served;

/// How long a refused start may take; a server that starts instead is killed after this.
const DEADLINE: Duration = Duration::from_secs(20);

fn porch(data_dir: &std::path::Path, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_porch"));
    // Only the settings under test: nothing from the environment running the tests.
    for (name, _) in std::env::vars() {
        if name.starts_with("PORCH_") {
            cmd.env_remove(name);
        }
    }
    cmd.env_remove("PORCH_DATA_DIR")
        .env_remove("RUST_LOG")
        .arg("--data-dir")
        .arg(data_dir)
        .arg("serve")
        // Should the setting be accepted, the server must not collide with another test's.
        .env("PORCH_LISTEN", "127.0.0.1:0")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// Waits for `child` to exit; fails if it keeps running (its [`Served`] then kills it).
async fn wait_for_exit(child: &mut Child, what: &str) -> ExitStatus {
    let refusal = format!("porch to refuse {what} instead of starting");
    wait_until(&refusal, DEADLINE, async || {
        child.try_wait().expect("polling porch").ok_or("running")
    })
    .await
}

/// Runs `porch serve` with `env` and checks it was refused, naming `variable`; the refusal.
async fn assert_refused(env: &[(&str, &str)], variable: &str) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let what = format!("{env:?}");
    let mut child = Served(porch(dir.path(), env).spawn().expect("porch runs"));
    let mut stderr = String::new();
    let mut pipe = child.0.stderr.take().expect("stderr piped");
    let reader = std::thread::spawn(move || {
        let _ = pipe.read_to_string(&mut stderr);
        stderr
    });
    let status = wait_for_exit(&mut child.0, &what).await;
    let stderr = reader.join().expect("stderr reader");
    assert_eq!(
        status.code(),
        Some(2),
        "{what}: status {status}, stderr {stderr:?}"
    );
    let lines: Vec<_> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{what}: not one line on stderr: {stderr:?}");
    let flag = format!(
        "--{}",
        variable
            .trim_start_matches("PORCH_")
            .to_ascii_lowercase()
            .replace('_', "-")
    );
    assert!(
        lines[0].contains(&format!("{variable} ({flag})")),
        "{what}: {:?} does not name {variable} ({flag})",
        lines[0]
    );
    assert!(
        !dir.path().join("porch.db").exists(),
        "{what}: the database was created"
    );
    stderr
}

#[tokio::test]
async fn config_zero_ws_ping_interval_is_refused() {
    assert_refused(
        &[("PORCH_WS_PING_INTERVAL", "0s")],
        "PORCH_WS_PING_INTERVAL",
    )
    .await;
    assert_refused(
        &[
            ("PORCH_WS_PING_INTERVAL", "11m"),
            ("PORCH_WS_IDLE_TIMEOUT", "1h"),
        ],
        "PORCH_WS_PING_INTERVAL",
    )
    .await;
}

#[tokio::test]
async fn config_zero_ws_idle_timeout_is_refused() {
    assert_refused(&[("PORCH_WS_IDLE_TIMEOUT", "0s")], "PORCH_WS_IDLE_TIMEOUT").await;
    assert_refused(&[("PORCH_WS_IDLE_TIMEOUT", "2h")], "PORCH_WS_IDLE_TIMEOUT").await;
}

#[tokio::test]
async fn config_ws_ping_interval_not_shorter_than_idle_timeout_is_refused() {
    assert_refused(
        &[
            ("PORCH_WS_PING_INTERVAL", "30s"),
            ("PORCH_WS_IDLE_TIMEOUT", "30s"),
        ],
        "PORCH_WS_PING_INTERVAL",
    )
    .await;
}

#[tokio::test]
async fn config_ws_max_message_out_of_bounds_is_refused() {
    assert_refused(&[("PORCH_WS_MAX_MESSAGE", "0")], "PORCH_WS_MAX_MESSAGE").await;
    assert_refused(
        &[("PORCH_WS_MAX_MESSAGE", "1073741824")],
        "PORCH_WS_MAX_MESSAGE",
    )
    .await;
}

#[tokio::test]
async fn config_writer_settings_out_of_bounds_are_refused() {
    assert_refused(&[("PORCH_WRITER_QUEUE", "0")], "PORCH_WRITER_QUEUE").await;
    assert_refused(&[("PORCH_WRITER_QUEUE", "100000000")], "PORCH_WRITER_QUEUE").await;
    assert_refused(&[("PORCH_WRITER_BATCH", "0")], "PORCH_WRITER_BATCH").await;
    assert_refused(&[("PORCH_WRITER_BATCH", "1000000")], "PORCH_WRITER_BATCH").await;
    assert_refused(&[("PORCH_READERS", "0")], "PORCH_READERS").await;
    assert_refused(&[("PORCH_READERS", "1000")], "PORCH_READERS").await;
}

#[tokio::test]
async fn config_http_limits_out_of_bounds_are_refused() {
    assert_refused(&[("PORCH_HEADER_TIMEOUT", "0s")], "PORCH_HEADER_TIMEOUT").await;
    assert_refused(&[("PORCH_HEADER_TIMEOUT", "1h")], "PORCH_HEADER_TIMEOUT").await;
    assert_refused(&[("PORCH_REQUEST_TIMEOUT", "0s")], "PORCH_REQUEST_TIMEOUT").await;
    assert_refused(&[("PORCH_REQUEST_TIMEOUT", "2h")], "PORCH_REQUEST_TIMEOUT").await;
    assert_refused(&[("PORCH_BODY_LIMIT", "0")], "PORCH_BODY_LIMIT").await;
    assert_refused(&[("PORCH_BODY_LIMIT", "10000000000")], "PORCH_BODY_LIMIT").await;
    assert_refused(
        &[("PORCH_MAX_CONNECTIONS", "100000000")],
        "PORCH_MAX_CONNECTIONS",
    )
    .await;
}

#[tokio::test]
async fn config_brakes_and_jobs_out_of_bounds_are_refused() {
    assert_refused(
        &[("PORCH_IP_CONVERSATIONS_PER_HOUR", "0")],
        "PORCH_IP_CONVERSATIONS_PER_HOUR",
    )
    .await;
    assert_refused(
        &[("PORCH_IP_CONVERSATIONS_BURST", "0")],
        "PORCH_IP_CONVERSATIONS_BURST",
    )
    .await;
    assert_refused(
        &[("PORCH_TRUSTED_PROXIES", "0.0.0.0")],
        "PORCH_TRUSTED_PROXIES",
    )
    .await;
    assert_refused(&[("PORCH_CHAT_CONCURRENCY", "0")], "PORCH_CHAT_CONCURRENCY").await;
    assert_refused(
        &[("PORCH_CHAT_CONCURRENCY", "1000000")],
        "PORCH_CHAT_CONCURRENCY",
    )
    .await;
    assert_refused(&[("PORCH_JOB_RETENTION", "0s")], "PORCH_JOB_RETENTION").await;
    assert_refused(&[("PORCH_JOB_RETENTION", "400days")], "PORCH_JOB_RETENTION").await;
    // A year is humantime's (365.25 days), the bound the error names: one day more is refused.
    assert_refused(&[("PORCH_JOB_RETENTION", "366days")], "PORCH_JOB_RETENTION").await;
    assert_refused(
        &[("PORCH_AUDIT_RETENTION", "11years")],
        "PORCH_AUDIT_RETENTION",
    )
    .await;
    assert_refused(
        &[("PORCH_ALLOW_PRIVATE_NETWORKS", "maybe")],
        "PORCH_ALLOW_PRIVATE_NETWORKS",
    )
    .await;
    assert_refused(&[("PORCH_SHUTDOWN_GRACE", "1h")], "PORCH_SHUTDOWN_GRACE").await;
    assert_refused(&[("PORCH_SLACK_TIMEOUT", "0s")], "PORCH_SLACK_TIMEOUT").await;
}

/// A choice names what it takes (an operator found only "invalid value 'off'").
#[tokio::test]
async fn config_a_choice_that_is_not_one_names_the_choices() {
    let said = assert_refused(&[("PORCH_SYNCHRONOUS", "off")], "PORCH_SYNCHRONOUS").await;
    assert!(said.contains("(one of: full, normal)"), "{said}");
    let said = assert_refused(&[("PORCH_LOG_FORMAT", "xml")], "PORCH_LOG_FORMAT").await;
    assert!(said.contains("(one of: text, json)"), "{said}");
    let said = assert_refused(
        &[("PORCH_PAUSE_DELIVERIES", "maybe")],
        "PORCH_PAUSE_DELIVERIES",
    )
    .await;
    assert!(
        said.contains("(one of: true, yes, on, 1, false, no, off, 0)"),
        "{said}"
    );
}

#[tokio::test]
async fn config_log_filter_that_does_not_parse_is_refused() {
    assert_refused(&[("PORCH_LOG", "garbage[[")], "PORCH_LOG").await;
}

#[tokio::test]
async fn config_public_url_must_be_absolute_http_without_query_or_fragment() {
    for bad in [
        "not a url",
        "chat.example.com",
        "ftp://chat.example.com",
        "https://chat.example.com/?a=1",
        "https://chat.example.com/#top",
    ] {
        assert_refused(&[("PORCH_PUBLIC_URL", bad)], "PORCH_PUBLIC_URL").await;
    }
}

#[tokio::test]
async fn config_api_urls_must_be_absolute_http() {
    assert_refused(
        &[("PORCH_SLACK_API_URL", "slack.com/api")],
        "PORCH_SLACK_API_URL",
    )
    .await;
    assert_refused(
        &[("PORCH_DISCORD_API_URL", "not a url")],
        "PORCH_DISCORD_API_URL",
    )
    .await;
}

#[tokio::test]
async fn config_smtp_url_and_mail_from_go_together() {
    assert_refused(
        &[("PORCH_SMTP_URL", "smtp://127.0.0.1:25")],
        "PORCH_MAIL_FROM",
    )
    .await;
    assert_refused(&[("PORCH_MAIL_FROM", "chat@example.com")], "PORCH_SMTP_URL").await;
}

#[tokio::test]
async fn config_smtp_url_and_mail_from_must_parse() {
    let from = ("PORCH_MAIL_FROM", "Porch <chat@example.com>");
    assert_refused(
        &[("PORCH_SMTP_URL", "http://mail.example.com"), from],
        "PORCH_SMTP_URL",
    )
    .await;
    assert_refused(
        &[
            ("PORCH_SMTP_URL", "smtp://127.0.0.1:25"),
            ("PORCH_MAIL_FROM", "not an address"),
        ],
        "PORCH_MAIL_FROM",
    )
    .await;
    // A misspelt `tls` is named as such, and the URL (with its password) is never shown.
    let secret = "smtp://u:hunter2hunter2@mail.example.com:587?tls=requierd";
    let refusal = assert_refused(&[("PORCH_SMTP_URL", secret), from], "PORCH_SMTP_URL").await;
    assert!(
        refusal.contains("must leave out its `tls` parameter or set it to `required`"),
        "{refusal}"
    );
    assert!(!refusal.contains("hunter2"), "{refusal}");
}

/// A secret and its `_FILE` twin are one setting: both given is refused, naming both, whether
/// they came from the environment or flags.
#[tokio::test]
async fn config_a_secret_and_its_file_twin_together_are_refused_naming_both() {
    let refusal = assert_refused(
        &[
            ("PORCH_METRICS_TOKEN", "a-long-metrics-token"),
            ("PORCH_METRICS_TOKEN_FILE", "/nonexistent"),
        ],
        "PORCH_METRICS_TOKEN",
    )
    .await;
    assert!(
        refusal.contains(
            "and PORCH_METRICS_TOKEN_FILE (--metrics-token-file) cannot both be set: give one"
        ),
        "{refusal}"
    );
}

#[tokio::test]
async fn config_metrics_token_file_must_be_readable_and_not_empty() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("missing");
    let empty = dir.path().join("empty");
    std::fs::write(&empty, "\n").expect("write");
    for path in [&missing, &empty] {
        let path = path.to_str().expect("utf-8");
        assert_refused(
            &[("PORCH_METRICS_TOKEN_FILE", path)],
            "PORCH_METRICS_TOKEN_FILE",
        )
        .await;
    }
    assert_refused(
        &[("PORCH_METRICS_TOKEN", " padded ")],
        "PORCH_METRICS_TOKEN",
    )
    .await;
}

#[tokio::test]
async fn config_data_dir_that_is_a_file_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("file");
    std::fs::write(&file, "").expect("write");
    let mut child = Served(porch(&file, &[]).spawn().expect("porch runs"));
    let mut stderr = String::new();
    child
        .0
        .stderr
        .take()
        .expect("stderr piped")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    let status = wait_for_exit(&mut child.0, "a file as data dir").await;
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("PORCH_DATA_DIR (--data-dir)"), "{stderr}");
}

#[test]
fn config_wildcard_listen_without_public_url_warns_and_uses_loopback() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = porch(dir.path(), &[("PORCH_LISTEN", "0.0.0.0:0")])
        .spawn()
        .expect("porch runs");
    let stderr = child.stderr.take().expect("stderr piped");
    // Read until the warning appears or the server exits (EOF); the deadline guards a hang.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("WARN") && line.contains("PORCH_PUBLIC_URL") {
                let _ = tx.send(line);
                return;
            }
        }
    });
    let line = rx.recv_timeout(DEADLINE);
    let _ = child.kill();
    let _ = child.wait();
    let line = line.expect("a warning naming PORCH_PUBLIC_URL");
    assert!(line.contains("http://127.0.0.1:"), "{line}");
}

#[tokio::test]
async fn config_smtp_url_file_must_be_readable_and_not_empty() {
    let dir = tempfile::tempdir().expect("temp dir");
    let empty = dir.path().join("empty");
    std::fs::write(&empty, " \n").expect("write");
    assert_refused(
        &[
            ("PORCH_SMTP_URL_FILE", empty.to_str().expect("utf-8")),
            ("PORCH_MAIL_FROM", "chat@example.com"),
        ],
        "PORCH_SMTP_URL_FILE",
    )
    .await;
    // The file's content is held to the same rules as the variable, and a refusal names the
    // setting that was written: the file's.
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "smtp://mail.example.com?tls=bogus\n").expect("write");
    let said = assert_refused(
        &[
            ("PORCH_SMTP_URL_FILE", wrong.to_str().expect("utf-8")),
            ("PORCH_MAIL_FROM", "chat@example.com"),
        ],
        "PORCH_SMTP_URL_FILE",
    )
    .await;
    assert!(said.contains("`tls` parameter"), "{said}");
}

/// Runs `porch` with `args` alone and returns its exit code and stderr.
pub(crate) fn porch_args(args: &[&str]) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_porch"))
        .args(args)
        .env_remove("PORCH_DATA_DIR")
        .env_remove("PORCH_READERS")
        .env_remove("PORCH_LISTEN")
        .stdin(Stdio::null())
        .output()
        .expect("porch runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every command holds `--data-dir` to `serve`'s rule, with its words and exit code: a regular
/// file there sent `user list` to say there was no database, and `site add` to fail creating
/// the directory.
#[test]
fn config_a_data_dir_that_is_a_file_is_refused_by_every_command() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("afile");
    std::fs::write(&file, "").expect("write");
    let file = file.to_str().expect("utf-8");
    let said = format!("error: PORCH_DATA_DIR (--data-dir) must be a directory ({file} is not)\n");
    for command in [
        &["user", "list"][..],
        &[
            "site",
            "add",
            "--name",
            "A",
            "--origin",
            "https://a.example",
        ],
        &["export", "--all"],
    ] {
        let args = [&["--data-dir", file][..], command].concat();
        assert_eq!(porch_args(&args), (Some(2), said.clone()), "{command:?}");
    }
}

/// A flag given twice is said so, once: it read "`PORCH_READERS` (--readers) and
/// `PORCH_READERS` (--readers) cannot both be set".
#[test]
fn config_a_flag_given_twice_is_said_so() {
    let (code, said) = porch_args(&["serve", "--readers", "2", "--readers", "3"]);
    assert_eq!(code, Some(2), "{said}");
    assert_eq!(said, "error: --readers was given twice: give it once\n");
}

#[test]
fn config_a_flag_in_the_wrong_place_or_without_its_value_is_named_as_typed() {
    // Before the command: clap's text, with its tip on where the flag goes; no variable blamed.
    let (code, said) = porch_args(&["--listen", "127.0.0.1:1", "serve"]);
    assert_eq!(code, Some(2), "{said}");
    assert!(!said.contains("PORCH_LISTEN"), "{said}");
    assert!(said.contains("unexpected argument '--listen'"), "{said}");
    assert!(said.contains("Usage: porch"), "{said}");
    // Without its value: the flag, not its variable, and no empty list of choices.
    let (code, said) = porch_args(&["serve", "--readers"]);
    assert_eq!(code, Some(2), "{said}");
    assert_eq!(
        said.trim(),
        "error: --readers: a value is required for '--readers <READERS>' but none was supplied"
    );
}

/// Starts `porch serve` with `env` in `dir` and returns its log lines up to the one saying it
/// listens; fails if it exits or stays silent instead.
pub(crate) fn lines_until_listening(dir: &std::path::Path, env: &[(&str, &str)]) -> Vec<String> {
    let mut child = porch(dir, env).spawn().expect("porch runs");
    let stderr = child.stderr.take().expect("stderr piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let is_listening = line.contains("listening on");
            lines.push(line);
            if is_listening {
                break;
            }
        }
        let _ = tx.send(lines);
    });
    let lines = rx.recv_timeout(DEADLINE);
    let _ = child.kill();
    let _ = child.wait();
    let lines = lines.expect("the server logged that it listens");
    assert!(
        lines.last().is_some_and(|l| l.contains("listening on")),
        "{env:?}: {lines:?}"
    );
    lines
}

#[test]
fn json_logs_are_one_object_a_line_and_a_secret_file_is_accepted() {
    let dir = tempfile::tempdir().expect("temp dir");
    let secret = dir.path().join("smtp-url");
    std::fs::write(&secret, "smtp://127.0.0.1:2525\n").expect("write");
    let lines = lines_until_listening(
        dir.path(),
        &[
            ("PORCH_LOG_FORMAT", "json"),
            ("PORCH_SMTP_URL_FILE", secret.to_str().expect("utf-8")),
            ("PORCH_MAIL_FROM", "chat@example.com"),
        ],
    );
    for line in &lines {
        let object: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|err| panic!("{err}: {line}"));
        assert!(object["level"].is_string(), "{line}");
        assert!(object["fields"].is_object(), "{line}");
    }
}

/// `PORCH_SMTP_URL=` in a compose `.env` file means no SMTP, not a URL that does not parse.
#[test]
fn config_variables_set_to_nothing_count_as_unset() {
    let dir = tempfile::tempdir().expect("temp dir");
    let empty = [
        "PORCH_PUBLIC_URL",
        "PORCH_SMTP_URL",
        "PORCH_MAIL_FROM",
        "PORCH_IMAP_URL",
        "PORCH_METRICS_TOKEN",
        "PORCH_OIDC_ISSUER",
        "PORCH_READERS",
        "PORCH_WS_PING_INTERVAL",
        "PORCH_SYNCHRONOUS",
        "PORCH_LOG_FORMAT",
    ]
    .map(|name| (name, ""));
    let lines = lines_until_listening(dir.path(), &empty);
    // The default holds: the public URL is the bound address.
    let listening = lines.last().expect("a line");
    assert!(
        listening.contains("(public URL http://127.0.0.1:"),
        "{listening}"
    );
}

#[tokio::test]
async fn config_values_that_do_not_parse_are_refused_in_one_line_naming_the_variable() {
    assert_refused(&[("PORCH_READERS", "many")], "PORCH_READERS").await;
    assert_refused(
        &[("PORCH_WS_PING_INTERVAL", "soon")],
        "PORCH_WS_PING_INTERVAL",
    )
    .await;
    assert_refused(&[("PORCH_SYNCHRONOUS", "maybe")], "PORCH_SYNCHRONOUS").await;
    assert_refused(&[("PORCH_LOG_FORMAT", "xml")], "PORCH_LOG_FORMAT").await;
}

#[tokio::test]
async fn config_imap_url_needs_smtp_and_must_parse_without_being_quoted() {
    assert_refused(
        &[("PORCH_IMAP_URL", "imaps://chat:hunter2@imap.example.com")],
        "PORCH_IMAP_URL",
    )
    .await;
    let mail = [
        ("PORCH_SMTP_URL", "smtp://127.0.0.1:25"),
        ("PORCH_MAIL_FROM", "chat@example.com"),
    ];
    for bad in [
        "pop3://chat:hunter2@mail.example.com",
        "imaps://chat@imap.example.com",
    ] {
        assert_refused(
            &[mail[0], mail[1], ("PORCH_IMAP_URL", bad)],
            "PORCH_IMAP_URL",
        )
        .await;
    }
    assert_refused(&[("PORCH_IMAP_POLL", "0s")], "PORCH_IMAP_POLL").await;
}

#[test]
fn a_missing_argument_or_subcommand_is_named_with_the_usage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = crate::process::run(dir.path(), &["site", "add", "--name", "Shop"]);
    assert_eq!(missing.status.code(), Some(2));
    let said = String::from_utf8_lossy(&missing.stderr);
    assert!(said.contains("--origin <ORIGINS>"), "{said}");
    assert!(said.contains("Usage: porch site add"), "{said}");

    let no_subcommand = crate::process::run(dir.path(), &["site"]);
    assert_eq!(no_subcommand.status.code(), Some(2));
    let said = String::from_utf8_lossy(&no_subcommand.stderr);
    for command in ["add", "list", "snippet"] {
        assert!(said.contains(&format!("\n  {command} ")), "{said}");
    }
    assert!(
        !dir.path().join("porch.db").exists(),
        "refused before opening anything"
    );
}

#[test]
fn a_connection_cap_above_the_descriptor_limit_is_lowered_with_a_warning() {
    let dir = tempfile::tempdir().expect("temp dir");
    // An attainable cap is taken as it is, without a warning; the log says the limit.
    let lines = lines_until_listening(dir.path(), &[("PORCH_MAX_CONNECTIONS", "100")]);
    let budget = lines
        .iter()
        .find(|l| l.contains("connection budget"))
        .unwrap_or_else(|| panic!("the budget line: {lines:?}"));
    assert!(budget.contains("max_connections=100"), "{budget}");
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("WARN") && l.contains("PORCH_MAX")),
        "{lines:?}"
    );
    let fd_limit: u64 = budget
        .split("fd_limit=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("fd_limit in {budget}"));
    // The largest cap the setting takes, beyond a descriptor limit of this machine's kind; a
    // machine whose limit is higher still cannot be asked for more than it allows.
    let asked = 16_777_216;
    if fd_limit >= asked {
        eprintln!("skipped: the descriptor limit {fd_limit} allows any cap");
        return;
    }
    let lines = lines_until_listening(dir.path(), &[("PORCH_MAX_CONNECTIONS", "16777216")]);
    let warning = lines
        .iter()
        .find(|l| l.contains("WARN") && l.contains("PORCH_MAX_CONNECTIONS"))
        .unwrap_or_else(|| panic!("a warning: {lines:?}"));
    assert!(warning.contains(&format!("asked={asked}")), "{warning}");
    assert!(
        warning.contains(&format!("fd_limit={fd_limit}")),
        "{warning}"
    );
    assert!(
        !warning.contains(&format!("max_connections={asked}")),
        "{warning}"
    );
}
