//! Why an integration's settings were not saved, shared by every integration's setup so the API
//! and the admin pages map it the same way.

use crate::store;

/// Why the settings were not saved.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// What the admin entered is not valid; the message says what to change.
    #[error("{0}")]
    Invalid(String),
    /// The service refused or could not be reached; `code` is the API's stable error code.
    #[error("{message}")]
    Refused { code: &'static str, message: String },
    /// Another integration of the site already does what this one would (posts to the same
    /// Slack channel): with both, every message would arrive twice. The API answers 409.
    #[error("{0}")]
    Taken(String),
    #[error(transparent)]
    Store(#[from] store::Error),
}

impl SetupError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::Invalid(message.into())
    }
}
