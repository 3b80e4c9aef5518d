//! The domain's error type.

use crate::store;
use crate::values::Invalid;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The named thing does not exist (or the caller may not see it).
    #[error("{0} not found")]
    NotFound(&'static str),
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The agent's client id names an earlier message with another conversation, kind, text or
    /// files: a new message needs a new id.
    #[error("client id used for another message")]
    ClientIdReused,
    #[error(transparent)]
    Store(#[from] store::Error),
}

impl Error {
    /// A write into a conversation that was erased or purged meanwhile names a row that is gone:
    /// to the caller that conversation is not found, not a storage failure (an API reply posted
    /// during the visitor's erasure got 500).
    pub(super) fn conversation_write(err: store::Error) -> Self {
        if err.names_a_missing_row() {
            Self::NotFound("conversation")
        } else {
            Self::Store(err)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_naming_a_gone_row_is_not_found_and_other_failures_stay_storage_errors() {
        let conn = rusqlite::Connection::open_in_memory().expect("open");
        conn.execute_batch(
            "PRAGMA foreign_keys = ON; CREATE TABLE c (id INTEGER PRIMARY KEY); \
             CREATE TABLE m (c INTEGER NOT NULL REFERENCES c (id));",
        )
        .expect("schema");
        let gone = conn
            .execute("INSERT INTO m VALUES (7)", [])
            .expect_err("no conversation 7");
        assert!(matches!(
            Error::conversation_write(gone.into()),
            Error::NotFound("conversation")
        ));
        let other = conn
            .execute("INSERT INTO nowhere VALUES (1)", [])
            .expect_err("no table");
        assert!(matches!(
            Error::conversation_write(other.into()),
            Error::Store(_)
        ));
    }
}
