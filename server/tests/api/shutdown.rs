//! Stopping a real `porch serve` with SIGTERM: during start-up it still stops cleanly (exit 0),
//! a client with half a request head cannot hold shutdown, and during the drain `/readyz` says
//! `shutting_down` while everything else keeps serving; widgets get 1012 only after it. A
//! delivery still running when `PORCH_SHUTDOWN_GRACE` ends is said to be abandoned, and the next
//! start sends it again with the same `webhook-id`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::{Exchange as _, Http, ORIGIN, TestDb, Widget, ok_if, wait_until};

/// Bound on any wait for the process (start-up, a log line, exit).
const WAIT: Duration = Duration::from_secs(20);

/// A `porch serve` process whose log is collected; killed when dropped.
pub(crate) struct Porch {
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
}

impl Porch {
    pub(crate) fn spawn(data_dir: &Path, drain: &str) -> Self {
        Self::spawn_with(data_dir, drain, &[])
    }

    /// As [`Porch::spawn`], with more environment variables.
    fn spawn_with(data_dir: &Path, drain: &str, env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_porch"))
            .arg("--data-dir")
            .arg(data_dir)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env_remove("PORCH_DATA_DIR")
            .env("PORCH_LOG", "info")
            .env("PORCH_DRAIN", drain)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("porch serve starts");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let lines = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        Self { child, log }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    fn lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Polls the log until `find` returns something.
    async fn wait_for<T>(&self, what: &str, find: impl Fn(&[String]) -> Option<T>) -> T {
        wait_until(&format!("the {what} in the log"), WAIT, async || {
            let found = find(&self.log.lock().unwrap());
            found.ok_or_else(|| self.lines())
        })
        .await
    }

    /// The bound address and a client for it, once `/readyz` answers 200.
    pub(crate) async fn wait_ready(&self) -> (SocketAddr, Http) {
        let addr: SocketAddr = self
            .wait_for("listening line", |lines| {
                lines.iter().find_map(|line| {
                    let rest = line.split("listening on http://").nth(1)?;
                    rest.split_whitespace().next()?.parse().ok()
                })
            })
            .await;
        let http = Http::new(addr);
        wait_until("readiness", WAIT, async || {
            match get(&http, "/readyz").await.map(|(status, _)| status) {
                Some(200) => Ok(()),
                _ => Err(self.lines()),
            }
        })
        .await;
        (addr, http)
    }

    fn sigterm(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    /// Waits (bounded) for the process to exit.
    async fn wait_exit(&mut self, bound: Duration) -> ExitStatus {
        wait_until("the process to exit", bound, async || {
            let status = self.child.try_wait().expect("try_wait");
            status.ok_or_else(|| self.lines())
        })
        .await
    }
}

impl Drop for Porch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One `GET` on a new connection: status and body, or `None` if the server does not answer
/// within a few seconds.
async fn get(http: &Http, path: &str) -> Option<(u16, String)> {
    let answer = http
        .get(path)
        .timeout(Duration::from_secs(5))
        .try_answer()
        .await
        .ok()?;
    Some((answer.status, answer.body))
}

#[tokio::test]
async fn a_sigterm_during_start_up_stops_cleanly_with_exit_0() {
    let dir = tempfile::tempdir().expect("dir");
    let mut porch = Porch::spawn(dir.path(), "0s");
    // The first line is the migration's, in the middle of start-up (on main the handler was
    // installed only once start-up had returned, so this SIGTERM killed the process).
    porch
        .wait_for("first line", |lines| lines.first().cloned())
        .await;
    porch.sigterm();
    let status = porch.wait_exit(Duration::from_secs(10)).await;
    assert!(status.success(), "{status:?}\n{}", porch.log());
    // The exit can be seen before the thread reading stderr has the last line.
    porch
        .wait_for("graceful stop line", |lines| {
            lines.iter().any(|l| l.contains("stopped")).then_some(())
        })
        .await;
}

#[tokio::test]
async fn a_half_sent_request_does_not_hold_shutdown() {
    let dir = tempfile::tempdir().expect("dir");
    let mut porch = Porch::spawn(dir.path(), "0s");
    let (addr, http) = porch.wait_ready().await;
    // Half of a first request head, and nothing more: raw TCP, as no HTTP client sends this.
    let mut half = TcpStream::connect(addr).expect("connect");
    half.write_all(b"GET /healthz HTTP/1.1\r\nHost: te")
        .expect("write half a head");
    // The accept loop takes connections in order: once a later one is answered, this one has
    // been accepted too (and its bytes were sent before).
    assert_eq!(get(&http, "/healthz").await.map(|(s, _)| s), Some(200));

    let started = Instant::now();
    porch.sigterm();
    let status = porch.wait_exit(Duration::from_secs(15)).await;
    let took = started.elapsed();
    assert!(status.success(), "{status:?}\n{}", porch.log());
    assert!(
        took < Duration::from_millis(1500),
        "stopping took {took:?} with a half-sent request open:\n{}",
        porch.log()
    );
}

#[tokio::test]
async fn during_the_drain_only_readiness_fails_and_widgets_get_1012_after_it() {
    const DRAIN: Duration = Duration::from_secs(4);
    let dir = tempfile::tempdir().expect("dir");
    let mut porch = Porch::spawn(dir.path(), "4s");
    let (addr, http) = porch.wait_ready().await;
    let site = TestDb::open(dir.path()).add_site("Shop");
    let mut before = Widget::connect(addr, &site, ORIGIN).await;
    before.hello(None, 0).await;

    let started = Instant::now();
    porch.sigterm();
    let (status, body) = wait_until("readiness to turn false", WAIT, async || {
        let answer = get(&http, "/readyz")
            .await
            .expect("still serving during the drain");
        ok_if(answer, |(status, _)| *status != 200)
    })
    .await;
    assert_eq!(status, 503, "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        body,
        serde_json::json!({"status": "not_ready", "reason": "shutting_down"})
    );
    assert_eq!(get(&http, "/healthz").await.map(|(s, _)| s), Some(200));
    // Open widget connections and new ones are served as before.
    let ack = before.say("during-drain-1", "still here").await;
    assert_eq!(ack["type"], "ack", "{ack}");
    let mut during = Widget::connect(addr, &site, ORIGIN).await;
    during.hello(None, 0).await;
    let ack = during.say("during-drain-2", "new after SIGTERM").await;
    assert_eq!(ack["type"], "ack", "{ack}");
    assert!(
        started.elapsed() < DRAIN,
        "the checks took longer than the drain ({:?}); the test proves nothing",
        started.elapsed()
    );

    assert_eq!(before.closed().await, Some(1012));
    assert!(
        started.elapsed() >= DRAIN,
        "widgets were closed {:?} after SIGTERM, before the drain ended",
        started.elapsed()
    );
    assert_eq!(during.closed().await, Some(1012));
    let status = porch.wait_exit(Duration::from_secs(10)).await;
    assert!(status.success(), "{status:?}\n{}", porch.log());
    assert!(porch.log().contains("stopped"), "{}", porch.log());
}

/// A client still sending when Porch closes its socket gets the close frame and its code: Porch
/// reads (and drops) what the client sent until the client's close, since a socket dropped with
/// unread bytes makes the kernel send a reset, which discards the close frame at the client. (An
/// operator's drill saw 1006 instead of 1012 on 3 of 300 busy sockets, once in seven stops; this
/// test did not reproduce it before the change, when Porch read one frame more: it guards the
/// behaviour, not that rare case.)
#[tokio::test]
async fn a_client_still_sending_at_shutdown_gets_1012() {
    use futures_util::SinkExt as _;
    use tokio_tungstenite::tungstenite::Message;
    let dir = tempfile::tempdir().expect("dir");
    let mut porch = Porch::spawn(dir.path(), "0s");
    let (addr, _http) = porch.wait_ready().await;
    let site = TestDb::open(dir.path()).add_site("Shop");
    let mut busy = Widget::connect(addr, &site, ORIGIN).await;
    busy.hello(None, 0).await;
    porch.sigterm();
    // Messages sent flat out for a second, reading nothing meanwhile, as a busy client: Porch stops
    // reading at the stop, so some are still unread in its socket when it sends its close.
    let sending = Instant::now();
    for n in 0_u32.. {
        let message = json!({"type": "message", "client_id": format!("busy-{n}"), "body": "x"});
        let sent = busy.ws.send(Message::Text(message.to_string().into()));
        let refused = !matches!(
            tokio::time::timeout(Duration::from_millis(100), sent).await,
            Ok(Ok(()))
        );
        if refused || sending.elapsed() > Duration::from_secs(1) {
            break;
        }
    }
    assert_eq!(busy.closed().await, Some(1012));
    let status = porch.wait_exit(Duration::from_secs(10)).await;
    assert!(status.success(), "{status:?}\n{}", porch.log());
}

#[tokio::test]
async fn a_drain_beyond_a_minute_is_refused_with_one_line() {
    let dir = tempfile::tempdir().expect("dir");
    let mut porch = Porch::spawn(dir.path(), "2m");
    let status = porch.wait_exit(WAIT).await;
    assert_eq!(status.code(), Some(2), "{}", porch.log());
    // The log reader may still be collecting the line after the exit.
    let line = porch
        .wait_for("error line", |lines| lines.first().cloned())
        .await;
    assert!(line.contains("PORCH_DRAIN"), "{line}");
    assert_eq!(porch.log().lines().count(), 1, "{}", porch.log());
}

/// A webhook receiver that reads each request's head and never answers, keeping the connection:
/// a delivery to it runs until the sender gives up. Keeps the `webhook-id` of every request.
pub(crate) struct SilentReceiver {
    pub(crate) port: u16,
    ids: Arc<Mutex<Vec<String>>>,
}

impl SilentReceiver {
    pub(crate) fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let ids = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&ids);
        std::thread::spawn(move || {
            let mut kept_open = Vec::new();
            for mut stream in listener.incoming().map_while(Result::ok) {
                let mut raw = Vec::new();
                let mut byte = [0; 1];
                while !raw.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    raw.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&raw).to_ascii_lowercase();
                let id = head.lines().find_map(|l| l.strip_prefix("webhook-id:"));
                seen.lock()
                    .unwrap()
                    .push(id.unwrap_or("").trim().to_owned());
                kept_open.push(stream);
            }
        });
        Self { port, ids }
    }

    /// How many requests have arrived so far.
    pub(crate) fn requests(&self) -> usize {
        self.ids.lock().unwrap().len()
    }

    async fn wait_for(&self, requests: usize) -> Vec<String> {
        wait_until("requests at the receiver", WAIT, async || {
            ok_if(self.ids.lock().unwrap().clone(), |ids| {
                ids.len() >= requests
            })
        })
        .await
    }
}

#[tokio::test]
async fn a_delivery_the_stop_cuts_off_is_said_and_sent_again_by_the_next_start() {
    let dir = tempfile::tempdir().expect("dir");
    let receiver = SilentReceiver::start();
    let env = [
        ("PORCH_ALLOW_PRIVATE_NETWORKS", "true"),
        ("PORCH_SHUTDOWN_GRACE", "1s"),
    ];
    let mut porch = Porch::spawn_with(dir.path(), "0s", &env);
    let (addr, http) = porch.wait_ready().await;
    let db = TestDb::open(dir.path());
    let site = db.add_site("Shop");
    let admin = db.add_user_token("Admin", "admin");
    let url = format!("http://127.0.0.1:{}/hook", receiver.port);
    let created = http
        .request(
            "POST",
            &format!("/api/v1/sites/{site}/integrations/webhooks"),
        )
        .bearer_auth(&admin)
        .json(&json!({"url": url, "events": ["message.created"]}))
        .answer()
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let mut widget = Widget::connect(addr, &site, ORIGIN).await;
    widget.hello(None, 0).await;
    assert_eq!(widget.say("cut-1", "hello").await["type"], "ack");
    let first = receiver.wait_for(1).await;
    assert!(first[0].starts_with("msg_"), "{first:?}");

    porch.sigterm();
    let status = porch.wait_exit(WAIT).await;
    assert!(status.success(), "{status:?}\n{}", porch.log());
    porch
        .wait_for("abandoned deliveries line", |lines| {
            lines.iter().find(|l| l.contains("were abandoned")).cloned()
        })
        .await;

    let again = Porch::spawn_with(dir.path(), "0s", &env);
    again
        .wait_for("requeue line", |lines| {
            let line = lines.iter().find(|l| l.contains("requeued deliveries"))?;
            line.contains("jobs=1").then_some(())
        })
        .await;
    let ids = receiver.wait_for(2).await;
    assert_eq!(ids[1], ids[0], "the same delivery, the same webhook-id");
}
