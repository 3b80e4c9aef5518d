//! The storage layer's error type. Callers map it to protocol and HTTP errors at the edge.

/// What can go wrong when reading or writing the database.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The writer's queue is full: admission control, the caller should ask the client to retry.
    #[error("the write queue is full")]
    Busy,
    /// A message named an upload that is not the sender's, not complete, or already taken by
    /// another message; nothing of the message was stored.
    #[error("an attachment is unknown or already used")]
    UnknownAttachment,
    /// The writer or reader pool has shut down.
    #[error("the database is shutting down")]
    Stopped,
    /// SQLite reported `SQLITE_FULL`; the transaction was rolled back.
    #[error("the disk is full")]
    DiskFull,
    /// The batch this write belonged to failed to commit; nothing of it was stored.
    #[error("the transaction could not be committed: {0}")]
    CommitFailed(String),
    /// The file was migrated by a newer Porch; this binary must not touch it.
    #[error(
        "the database is at schema version {found}, newer than this porch ({supported}): \
         run a newer Porch or restore a backup"
    )]
    NewerSchema { found: u32, supported: u32 },
    /// A `-wal` lies beside the file without its `-shm`: reading it would create the `-shm`.
    #[error(
        "{p}-wal exists without {p}-shm (a database copied with its WAL, or not closed cleanly): \
         reading it would create {p}-shm beside it. To check it, copy the file (as porch.db) and \
         its -wal into an empty directory, run `porch --data-dir <that directory> migrate` once \
         (it takes the WAL into the copy), then check the copy",
        p = .0.display()
    )]
    WalWithoutShm(std::path::PathBuf),
    #[error("migration {version} failed: {}", migration_reason(.cause))]
    Migration {
        version: u32,
        /// Not `source`: the chain would print it again, whole.
        cause: rusqlite::Error,
    },
    #[error(transparent)]
    Sqlite(rusqlite::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A secret could not be sealed for storing (the cipher refused it).
    #[error("a secret could not be sealed: {0}")]
    Seal(#[from] crate::secrets::OpenError),
}

/// What SQLite said of a failed migration, without the migration's SQL, which its errors in a
/// statement quote whole (a 90-line file in an operator's terminal).
fn migration_reason(err: &rusqlite::Error) -> String {
    match err {
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        other => other.to_string(),
    }
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

    /// True when a write named a row that no longer exists (a foreign key): what it belonged to
    /// was deleted meanwhile, for example a visitor erased by `porch erase` while connected.
    pub fn names_a_missing_row(&self) -> bool {
        matches!(self, Self::Sqlite(err)
        if err.sqlite_error().is_some_and(|e| {
            e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY
        }))
    }

    /// True for errors where trying again later may succeed (full queue, full disk).
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Busy | Self::DiskFull | Self::CommitFailed(_))
    }
}
