//! The real `porch` binary as a child process, for tests that need what only a process has: a
//! second instance, a signal, a kill -9, exit codes and standard error.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A child process, killed when dropped (also when the test fails midway).
pub struct Served(pub Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `porch --data-dir DIR ARGS…`, with nothing inherited from a `PORCH_DATA_DIR` or `PORCH_LOG`
/// of the environment running the tests.
pub fn porch(data_dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_porch"));
    command
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .env_remove("PORCH_DATA_DIR")
        .env_remove("PORCH_LOG")
        .stdin(Stdio::null());
    command
}

/// Runs `porch` to completion.
pub fn run(data_dir: &Path, args: &[&str]) -> Output {
    porch(data_dir, args).output().expect("porch runs")
}

/// Runs `porch` to completion within `limit`: a run that goes on (a `serve` that should have
/// refused to start) is killed and fails the test, rather than hanging it. For commands whose
/// output is a few lines (it is read once the process ends).
pub fn run_within(data_dir: &Path, args: &[&str], limit: Duration) -> Output {
    let mut child = porch(data_dir, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("porch runs");
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("waiting for porch").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("porch {args:?} still ran after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("porch's output")
}
