//! What every mock shares: a router served on loopback until the mock is dropped, and locks that
//! survive a panicked test thread.

use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard, PoisonError};

use axum::Router;
use tokio::task::JoinHandle;

/// A router being served; dropping it stops the server.
pub struct Served {
    pub addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Served {
    /// Binds `addr` (port 0 for any) and serves `router` on it.
    pub async fn start(addr: SocketAddr, router: Router) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Ok(Self { addr, task })
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Locks a mock's state; a test that panicked while holding it must not wedge the others.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
