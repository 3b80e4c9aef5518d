//! Visitors' replies by email: the IMAP reader (`reader`), the mailbox settings, and how a mail
//! is parsed, matched to its conversation and checked (`reply`), with quoted history stripped
//! (`text`). Posting goes through `Chat`, like a widget message.

mod reader;
mod reply;
mod settings;
mod text;

pub use reader::{MailReader, ReaderHealth};
pub use reply::MAX_MAIL_BYTES;
pub use settings::ImapSettings;
