//! The chat domain: sites, visitors, conversations and messages, and the use-case functions the
//! widget, the API and (later) the inbox call. It decides; `store` persists; `hub` fans out.

mod conversation;
mod error;
mod site;
mod text;
mod visitor_token;

pub use conversation::{Agent, Chat, InboundReply, VisitorHistory};
pub use error::Error;
pub use site::{Site, SiteDirectory, SiteLimits, is_site_key, new_site_key};
pub use text::{ClientId, Invalid, MAX_BODY_CHARS, MessageBody, Origin};
pub use visitor_token::{VisitorTokens, hash_token};
