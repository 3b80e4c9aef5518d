//! Email over SMTP: the agents' digest of unanswered conversations, replies to visitors who are
//! away, transcripts on close, and account links.

mod deliver;
mod digest;
mod mailer;
mod setup;

pub use deliver::deliver;
pub use mailer::{AccountLink, Mailer, escape_html, mail_account_link};
pub use setup::{EmailSetup, email_config};
