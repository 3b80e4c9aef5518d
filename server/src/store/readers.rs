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

    /// Runs `work` on a pooled connection on a blocking thread, inside one read transaction: every
    /// statement of `work` sees the same snapshot. Without it each statement would see the database
    /// as of its own start, and a page reading two things (an integration's state, then its latest
    /// test) could show a commit's second half without its first.
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
            let result = match conn.unchecked_transaction() {
                // Dropped after `work`, the transaction ends: nothing was written to keep.
                Ok(_snapshot) => work(&conn),
                Err(err) => Err(err.into()),
            };
            if let Ok(mut idle) = pool.idle.lock() {
                idle.push(conn);
            }
            result
        })
        .await
        .map_err(|_| Error::Stopped)?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Synchronous, open_write_connection};

    /// A commit made between two statements of one read is seen by neither.
    #[tokio::test]
    async fn every_statement_of_a_read_sees_one_snapshot() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("snapshot.db");
        let writer = open_write_connection(&path, Synchronous::Normal).expect("open");
        writer
            .execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);")
            .expect("table");
        let readers = Readers::open(&path, 1).expect("readers");
        let count = |c: &Connection| c.query_row("SELECT count(*) FROM t", [], |r| r.get(0));
        let (before, after): (i64, i64) = readers
            .read(move |c| {
                let before = count(c)?;
                writer.execute("INSERT INTO t VALUES (2)", [])?;
                Ok((before, count(c)?))
            })
            .await
            .expect("read");
        assert_eq!((before, after), (1, 1));
        let now: i64 = readers.read(move |c| Ok(count(c)?)).await.expect("read");
        assert_eq!(now, 2, "the next read sees the commit");
    }
}
