//! The audit log (issue #14): who did what, when and from where, for sign-ins, team changes,
//! site and integration edits and API tokens. Each use case records its event through `record`
//! inside its own writer transaction; this module decides the codes, the actor and what a detail
//! may hold. It knows nothing of HTTP; `store` persists.

mod action;
mod filter;
mod record;

pub use action::AuditAction;
pub use filter::{AuditQuery, PAGE_SIZE};
pub use record::{Actor, SsoAccount, Target, record, record_sign_in_attempt, record_sso_failure};
