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
    #[error(transparent)]
    Store(#[from] store::Error),
}
