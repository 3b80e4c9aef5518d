//! What account use cases can refuse, each with a message fit to show the person.

use std::time::Duration;

use crate::chat::Invalid;
use crate::store;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A submitted value was malformed; the text says what to fix.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// Unknown email, wrong password, or a user without a password: one answer for all, so the
    /// form does not reveal which accounts exist.
    #[error("wrong email or password")]
    BadCredentials,
    /// The right password of a disabled user: only someone who knows it learns the account is
    /// disabled, and is told whom to ask instead of hunting for a typo.
    #[error("this account is disabled")]
    Disabled,
    /// A one-time or recovery code was wrong, already used, or nothing waited for one.
    #[error("wrong code")]
    BadCode,
    /// A half-finished sign-in is unknown, finished or older than 5 minutes.
    #[error("the sign-in expired")]
    SignInExpired,
    /// Too many failed sign-ins lately (see `throttle`).
    #[error("too many failed sign-ins")]
    Throttled(Duration),
    /// The first admin exists: the setup page is closed for good.
    #[error("setup is already done")]
    SetupClosed,
    /// The setup token was wrong (or already used).
    #[error("wrong setup token")]
    BadSetupToken,
    /// An invitation or reset link is unknown, used or expired.
    #[error("this link is no longer valid")]
    LinkInvalid,
    /// What was asked needs a password and the user has none: they sign in through single
    /// sign-on. The text says so, for the account page.
    #[error("{0}")]
    NoPassword(&'static str),
    /// The request contradicts the current state ("email taken", "last admin").
    #[error("{0}")]
    Conflict(&'static str),
    #[error("{0} not found")]
    NotFound(&'static str),
    /// Hashing failed; a bug, not the user's fault.
    #[error("password hashing failed")]
    Hashing,
    #[error(transparent)]
    Store(#[from] store::Error),
}
