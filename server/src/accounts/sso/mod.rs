//! Single sign-on with OpenID Connect: the provider client (`provider`: discovery, PKCE, state,
//! nonce, ID token checks by the `openidconnect` crate), the attempts under way (`attempts`),
//! the mapping rules (`mapping`) and the use cases (`signin`). Knows the provider's HTTP, not
//! Porch's: cookies and pages are `admin::sso`'s.

mod attempts;
mod mapping;
mod provider;
mod signin;

pub use attempts::ATTEMPT_LIFETIME;
pub use mapping::{Claims, Refusal};
pub use provider::{CALLBACK_PATH, Callback, Sso, SsoSettings};
pub use signin::SsoUser;
