//! The real `porch` binary as a child process: set up through its command line as an operator
//! would, served on one loopback port over one data directory, killed with SIGKILL and started
//! again at random moments. Dropping [`Porch`] kills the child, also when the test fails.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long a (re)started server may take to answer `/readyz` with 200 (migrations, index rebuild).
const READY_WITHIN: Duration = Duration::from_secs(30);

/// Which server process ("epoch") is alive, and when each one was killed: the checker excuses
/// a duplicate Slack post only when a kill can explain it (at-least-once, docs/jobs.md).
#[derive(Default)]
pub struct Timeline {
    epoch: AtomicU64,
    /// `(epoch, when)` of every SIGKILL.
    kills: Mutex<Vec<(u64, Instant)>>,
}

impl Timeline {
    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// When the process of `epoch` was killed, if it was.
    pub fn killed_at(&self, epoch: u64) -> Option<Instant> {
        self.kills
            .lock()
            .unwrap()
            .iter()
            .find(|(e, _)| *e == epoch)
            .map(|(_, at)| *at)
    }

    pub fn kill_count(&self) -> usize {
        self.kills.lock().unwrap().len()
    }
}

/// Runs a `porch` management command on the data directory; returns its standard output.
pub fn cli(data_dir: &Path, args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_porch"))
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .output()
        .expect("porch runs");
    assert!(
        output.status.success(),
        "porch {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8 output")
}

/// A free loopback port, kept for every restart so clients reconnect to the same URL.
///
/// Picked below the kernel's ephemeral range (what binding port 0 gives): while the server is down,
/// a port from that range can be taken as the local port of a client's reconnect attempt, even the
/// client's own connection to itself, and the restart would then fail to bind.
pub fn free_addr() -> SocketAddr {
    let first = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let low = first.saturating_sub(10_000).max(1024);
    (0..200)
        .map(|_| rand::random_range(low..first))
        .find_map(|port| {
            std::net::TcpListener::bind(("127.0.0.1", port))
                .and_then(|l| l.local_addr())
                .ok()
        })
        .expect("a free port below the ephemeral range")
}

/// The server process and how to start it again.
pub struct Porch {
    pub addr: SocketAddr,
    data_dir: PathBuf,
    args: Vec<String>,
    child: Option<Child>,
    pub timeline: std::sync::Arc<Timeline>,
}

impl Porch {
    pub fn new(data_dir: &Path, addr: SocketAddr, args: Vec<String>) -> Self {
        Self {
            addr,
            data_dir: data_dir.to_owned(),
            args,
            child: None,
            timeline: std::sync::Arc::default(),
        }
    }

    /// The extra `serve` flags (they may name services that start after the guard).
    pub fn set_args(&mut self, args: Vec<String>) {
        self.args = args;
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Starts `porch serve` and waits until `/readyz` answers 200.
    pub async fn start(&mut self, http: &reqwest::Client) {
        assert!(self.child.is_none(), "already running");
        let epoch = self.timeline.epoch.fetch_add(1, Ordering::SeqCst) + 1;
        // Each process logs to its own file in the data directory, for a failed run's autopsy.
        let log = std::fs::File::create(self.data_dir.join(format!("porch-{epoch}.log")))
            .expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_porch"))
            .arg("--data-dir")
            .arg(&self.data_dir)
            .args(["serve", "--listen", &self.addr.to_string(), "--log", "warn"])
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("porch serve starts");
        self.child = Some(child);
        let deadline = Instant::now() + READY_WITHIN;
        let url = format!("http://{}/readyz", self.addr);
        loop {
            if let Ok(r) = http.get(&url).send().await
                && r.status() == 200
            {
                return;
            }
            if let Some(child) = &mut self.child
                && let Ok(Some(status)) = child.try_wait()
            {
                panic!("porch exited at start-up: {status}");
            }
            assert!(Instant::now() < deadline, "porch did not become ready");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// SIGKILL (what `Child::kill` sends on Unix), then reaps the process.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            self.timeline
                .kills
                .lock()
                .unwrap()
                .push((self.timeline.epoch(), Instant::now()));
        }
    }
}

impl Drop for Porch {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
