//! A small pool of read-only connections. Reads run on tokio's blocking threads so rusqlite never
//! stalls an async worker; the semaphore bounds how many run at once.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use tokio::sync::Semaphore;

use super::{Error, open_read_connection};

/// The reader pool. Clone the `Arc` to share it.
pub struct Readers {
    idle: Mutex<Vec<Connection>>,
    permits: Semaphore,
}

impl Readers {
    /// Opens `size` read-only connections to `path`.
    pub fn open(path: &Path, size: usize) -> Result<Arc<Self>, Error> {
        let size = size.max(1);
        let idle = (0..size)
            .map(|_| open_read_connection(path))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Arc::new(Self {
            idle: Mutex::new(idle),
            permits: Semaphore::new(size),
        }))
    }

    /// Runs `work` on a pooled connection on a blocking thread.
    pub async fn read<F, R>(self: &Arc<Self>, work: F) -> Result<R, Error>
    where
        F: FnOnce(&Connection) -> Result<R, Error> + Send + 'static,
        R: Send + 'static,
    {
        let _permit = self.permits.acquire().await.map_err(|_| Error::Stopped)?;
        let pool = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            // A permit guarantees an idle connection; the lock is held only to pop and push.
            let conn = pool
                .idle
                .lock()
                .map_err(|_| Error::Stopped)?
                .pop()
                .ok_or(Error::Stopped)?;
            let result = work(&conn);
            if let Ok(mut idle) = pool.idle.lock() {
                idle.push(conn);
            }
            result
        })
        .await
        .map_err(|_| Error::Stopped)?
    }
}
