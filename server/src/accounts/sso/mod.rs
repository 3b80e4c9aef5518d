//! Single sign-on with OpenID Connect: the provider client (`provider`: PKCE, state, nonce, the
//! code exchange), reading the provider's configuration (`discovery`), the ID token's checks by
//! the `openidconnect` crate and the log's words for failures (`token`), the attempts under way
//! (`attempts`), the mapping rules (`mapping`) and the use cases (`signin`). Knows the provider's HTTP, not
//! Porch's: cookies and pages are `admin::sso`'s.

mod attempts;
mod discovery;
mod mapping;
mod provider;
mod signin;
mod token;

pub use attempts::ATTEMPT_LIFETIME;
pub use mapping::{Claims, Refusal};
pub use provider::{CALLBACK_PATH, Callback, Sso, SsoSettings};
pub use signin::SsoUser;
