//! The storage layer's error type. Callers map it to protocol and HTTP errors at the edge.

/// What can go wrong when reading or writing the database.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The writer's queue is full: admission control, the caller should ask the client to retry.
    #[error("the write queue is full")]
    Busy,
    /// The writer or reader pool has shut down.
    #[error("the database is shutting down")]
    Stopped,
    /// SQLite reported `SQLITE_FULL`; the transaction was rolled back.
    #[error("the disk is full")]
    DiskFull,
    /// The batch this write belonged to failed to commit; nothing of it was stored.
    #[error("the transaction could not be committed: {0}")]
    CommitFailed(String),
    #[error("migration {version} failed: {source}")]
    Migration {
        version: u32,
        source: rusqlite::Error,
    },
    #[error(transparent)]
    Sqlite(rusqlite::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl From<rusqlite::Error> for Error {
    /// A full disk is reported as such wherever SQLite notices it (a statement or COMMIT).
    fn from(err: rusqlite::Error) -> Self {
        Self::from_sqlite(err)
    }
}

impl Error {
    /// Classifies a rusqlite error so a full disk is reported as such, not as a generic failure.
    pub(crate) fn from_sqlite(err: rusqlite::Error) -> Self {
        if err.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) {
            Self::DiskFull
        } else {
            Self::Sqlite(err)
        }
    }

    /// True for errors where trying again later may succeed (full queue, full disk).
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Busy | Self::DiskFull | Self::CommitFailed(_))
    }
}
