//! The chat domain: sites, visitors, conversations and messages, and the use-case functions the
//! widget, the API and the inbox call. It decides; `store` persists; `hub` fans out.

mod conversation;
mod error;
mod identity;
mod inbox;
mod live_items;
mod mail;
mod receipts;
mod site;
mod site_settings;
mod visitor_token;
mod writes;

pub use conversation::{Agent, Chat, HistoryPage, InboundReply};
pub use error::Error;
pub use identity::{
    find_identity_secret, open_identity_secret, remove_identity_secret, reseal_identity_secrets,
    rotate_identity_secret,
};
pub use inbox::{ConversationView, INBOX_PAGE_SIZE, InboxChoices, Via};
pub use live_items::LiveItem;
pub use mail::{MAX_SUBJECT_CHARS, MailReply, MailSubject};
pub use site::{Site, SiteDirectory, is_site_key, new_site_key};
pub use site_settings::{SiteSettingsInput, create_site, delete_site, update_site};
pub use visitor_token::{VisitorTokens, hash_token};

// Parsed here, stored typed: these live in a leaf module that the store may import too.
pub use crate::values::{
    ClientId, Invalid, MAX_BODY_CHARS, MessageBody, Origin, SiteLimits, SiteSettings,
};
