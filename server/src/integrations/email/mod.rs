//! Email over SMTP: the agents' digest of unanswered conversations, replies to visitors who are
//! away, transcripts on close, mails agents write to a visitor (`agent_mail`), and account links; and visitors' replies read back from an IMAP
//! mailbox (`inbound`).

mod agent_mail;
mod deliver;
mod digest;
pub mod inbound;
mod mailer;
mod setup;
mod team;

pub use deliver::deliver;
pub use mailer::{Mailer, SmtpSummary, escape_html};
pub use setup::{
    EmailSetup, MAX_DELAY_SECS, Saved, checked_delay, delay_rule, email_config, save_email,
};
pub use team::{deliver_team_mail, queue_account_link, queue_test_mail};
