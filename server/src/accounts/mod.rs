//! Accounts of the admin UI: passwords (argon2id), the first-run setup token, sign-in with
//! throttling, two-factor sign-in (TOTP), sessions, single sign-on (`sso`), invitations and
//! reset links, roles and disabling. It decides; `store` persists; it knows nothing of Porch's
//! HTTP (only `sso` calls the provider), and of cookies only the session cookie's name.

mod api_tokens;
mod challenge;
mod error;
mod identity;
pub mod password;
mod reset_request;
mod revocation;
mod session;
pub mod sso;
mod team;
mod throttle;
mod totp;
mod totp_sealing;
mod two_factor;

pub use api_tokens::{
    TOKEN_PREFIX, TokenRequest, create_api_token, hash_api_token, new_api_token, revoke_api_token,
    token_name,
};
pub use challenge::{AfterPassword, FinishedSignIn, PendingSignIn, SECOND_STEP_LIFETIME};
pub use error::Error;
pub use identity::{DisplayName, EmailAddress, Role};
pub use password::{MIN_PASSWORD_CHARS, Password, hash_password, verify_password};
pub use reset_request::RequestedLink;
pub use revocation::{Revocations, SessionWatch};
pub use session::{Accounts, NewSessionSecret, SESSION_COOKIE, SESSION_LIFETIME, new_form_token};
pub(crate) use session::{hash_secret, new_secret};
pub use team::{INVITE_LIFETIME, LinkKind, RESET_LIFETIME, link_token};
pub use throttle::{
    ACCOUNT_FAILURES, ACCOUNT_FAILURES_ANYWHERE, IP_FAILURES, LoginThrottle, Throttled,
};
pub use totp::{DIGITS, SKEW_STEPS, STEP_SECONDS, TotpSecret};
pub use totp_sealing::{
    TotpSealingError, check_totp_secrets, reseal_all_totp_secrets, seal_clear_totp_secrets,
};
pub use two_factor::{Enrolment, SecondFactor, TwoFactorStatus, reset_two_factor_in};
