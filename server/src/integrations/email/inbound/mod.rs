//! Visitors' replies by email: the IMAP reader (`reader`), the mailbox settings (from the
//! environment, `settings`, or the email page, `mailbox`), and how a mail
//! is parsed, matched to its conversation and checked (`reply`), with quoted history stripped
//! (`text`). Posting goes through `Chat`, like a widget message.

mod mailbox;
mod reader;
mod reply;
mod settings;
mod text;

pub use mailbox::{
    MailboxError, MailboxInput, open_mailbox, record_mailbox_test, remove_mailbox,
    reseal_mailbox_password, resolve_mailbox, save_mailbox,
};
pub use reader::{MailReader, MailboxSource, MailboxTest, ReaderHealth};
pub use reply::MAX_MAIL_BYTES;
pub use settings::ImapSettings;
