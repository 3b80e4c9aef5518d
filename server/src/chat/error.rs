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
