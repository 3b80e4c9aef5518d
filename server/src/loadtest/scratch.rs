//! What a load test must not leave behind: its scratch servers (child processes) and their data
//! directories in `/tmp`. Each is registered as it is made; dropping its handle stops and removes
//! it, and SIGINT or SIGTERM stops and removes them all before the load test exits, since a
//! signal would otherwise end the process without running any drop.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::Context;

/// Exit status of a load test stopped by SIGINT or SIGTERM: 128 + the signal, as a shell reports
/// a process the signal killed.
const EXIT_SIGINT: i32 = 130;
const EXIT_SIGTERM: i32 = 143;

/// One scratch server: its process (once started) and its data directory (if it has one).
#[derive(Debug, Default)]
struct Entry {
    child: Option<Child>,
    dir: Option<tempfile::TempDir>,
}

impl Entry {
    fn stop(mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
        // The directory goes only once the server writing into it is gone.
        drop(self.dir.take());
    }
}

#[derive(Debug, Default)]
struct Entries {
    next: u64,
    live: HashMap<u64, Entry>,
}

/// The run's scratch servers and directories, shared with the signal watcher.
#[derive(Debug, Clone, Default)]
pub struct Scratch(Arc<Mutex<Entries>>);

/// A registered scratch server; stopped and removed when dropped.
pub struct Registered {
    scratch: Scratch,
    key: u64,
    /// The scratch data directory, if it has one.
    pub dir: Option<PathBuf>,
}

impl Scratch {
    fn lock(&self) -> MutexGuard<'_, Entries> {
        // A panic while holding the lock leaves the entries as they were: still worth stopping.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Registers what `make` makes, under the lock: a signal either comes before (and nothing
    /// is made) or after (and finds it registered), never between.
    fn register(&self, make: impl FnOnce() -> anyhow::Result<Entry>) -> anyhow::Result<Registered> {
        let mut entries = self.lock();
        let entry = make()?;
        let dir = entry.dir.as_ref().map(|d| d.path().to_path_buf());
        entries.next += 1;
        let key = entries.next;
        entries.live.insert(key, entry);
        Ok(Registered {
            scratch: self.clone(),
            key,
            dir,
        })
    }

    /// A new scratch data directory in the system's temporary directory.
    pub fn dir(&self) -> anyhow::Result<Registered> {
        self.register(|| {
            let dir = tempfile::Builder::new()
                .prefix("porch-loadtest-")
                .tempdir()
                .context("creating the scratch data directory")?;
            Ok(Entry {
                child: None,
                dir: Some(dir),
            })
        })
    }

    /// A registration with no directory (the echo baseline's).
    pub fn server(&self) -> anyhow::Result<Registered> {
        self.register(|| Ok(Entry::default()))
    }

    /// Stops every scratch server, removes every scratch directory and exits. The lock is held
    /// until the exit, so the run cannot start another server meanwhile.
    fn stop_all_and_exit(&self, signal: &str, code: i32) -> ! {
        let mut entries = self.lock();
        // A run against `--url` has none to speak of.
        let stopped = if entries.live.is_empty() {
            ""
        } else {
            "stopped its scratch servers and removed their data directories; "
        };
        for (_, entry) in entries.live.drain() {
            entry.stop();
        }
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("porch loadtest: interrupted by {signal}; {stopped}no results were saved\n")
                .as_bytes(),
        );
        std::process::exit(code);
    }

    /// Watches for SIGINT and SIGTERM on a thread of its own; on either, stops everything
    /// registered, says so on standard error and exits with 130 or 143.
    pub fn stop_on_signal(&self) -> anyhow::Result<()> {
        use tokio::signal::unix::{SignalKind, signal};
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .context("starting the signal watcher")?;
        // Installed here, before the first scratch server starts, so no signal is missed.
        let (mut interrupt, mut terminate) = runtime
            .block_on(async {
                Ok::<_, std::io::Error>((
                    signal(SignalKind::interrupt())?,
                    signal(SignalKind::terminate())?,
                ))
            })
            .context("watching for SIGINT and SIGTERM")?;
        let scratch = self.clone();
        std::thread::spawn(move || {
            let (name, code) = runtime.block_on(async {
                tokio::select! {
                    _ = interrupt.recv() => ("SIGINT", EXIT_SIGINT),
                    _ = terminate.recv() => ("SIGTERM", EXIT_SIGTERM),
                }
            });
            scratch.stop_all_and_exit(name, code);
        });
        Ok(())
    }
}

impl Registered {
    /// Starts `command` as this registration's server. The registry's lock is held from the
    /// spawn until the child is recorded, so a signal cannot slip between and orphan it.
    pub fn spawn(&self, command: &mut Command) -> anyhow::Result<u32> {
        let mut entries = self.scratch.lock();
        let child = command.spawn()?;
        let pid = child.id();
        if let Some(entry) = entries.live.get_mut(&self.key) {
            entry.child = Some(child);
        }
        Ok(pid)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        // Stopped under the lock, so a signal meanwhile cannot exit with it half stopped.
        let mut entries = self.scratch.lock();
        if let Some(entry) = entries.live.remove(&self.key) {
            entry.stop();
        }
    }
}
