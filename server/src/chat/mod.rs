//! The chat domain: sites, visitors, conversations and messages, and the use-case functions the
//! widget, the API and the inbox call. It decides; `store` persists; `hub` fans out.

mod agent_typing;
mod assignment;
mod canned;
mod conversation;
mod error;
mod hours;
mod identity;
mod inbox;
mod live_items;
mod live_summaries;
mod mail;
mod prechat;
mod receipts;
mod refused_origins;
mod search;
mod search_index;
mod site;
mod site_fields;
mod site_settings;
mod snooze;
mod tags;
mod visitor_contact;
mod visitor_token;
mod writes;

pub use canned::{
    CannedOutcome, CannedScope, FilledReply, MAX_SHORTCUT_CHARS, Placeholders, Shortcut,
    fill_placeholders,
};
pub use conversation::{
    Agent, Chat, ConversationsWanted, HistoryPage, InboundReply, PostedMessage,
};
pub use error::Error;
pub use hours::{
    Availability, SiteHoursInput, availability, find_site_hours, remove_site_hours, save_site_hours,
};
pub use identity::{
    IdentitySecretError, check_identity_secrets, find_identity_secret, open_identity_secret,
    remove_identity_secret, reseal_identity_secrets, rotate_identity_secret,
};
pub use inbox::{ConversationView, INBOX_PAGE_SIZE, InboxChoices, Via};
pub use live_items::LiveItem;
pub use mail::{MAX_SUBJECT_CHARS, MailReply, MailSubject};
pub use prechat::{SitePrechatInput, find_site_prechat, save_site_prechat};
pub use refused_origins::RefusedOrigin;
pub use search::{
    Fragment, MAX_QUERY_CHARS, MAX_QUERY_WORDS, SEARCH_PAGE_SIZE, SearchResults, SearchTerms,
    UNINDEXED_CAP, fragments, read_search_page,
};
pub use search_index::spawn_search_indexer;
pub use site::{Site, SiteChange, SiteDirectory, is_site_key, new_site_key};
pub use site_settings::{
    RefusedSettings, SiteSettingsInput, attachment_megabytes, create_site, delete_site,
    parse_attachment_megabytes, set_attachment_limit, update_site,
};
pub use visitor_contact::{ContactSaved, RefusedContact, VisitorContact};
pub use visitor_token::{VisitorTokens, hash_token};

// Parsed here, stored typed: these live in a leaf module that the store may import too.
pub use crate::values::{
    ClientId, Invalid, MAX_BODY_CHARS, MessageBody, Origin, SiteLimits, SiteSettings, Tag,
};
