//! Durable delivery of messages to outside services. The planner decides which jobs a change
//! implies, written in the same transaction as the change; the runner keeps the ready set in
//! memory, runs deliveries in lanes (through [`Deliver`], implemented by `integrations`), and
//! records outcomes.

mod args;
mod blocked_log;
mod decision;
mod deliver;
mod dismiss;
mod erasure_notice;
mod index;
#[cfg(test)]
mod index_tests;
mod kind;
mod outcome;
mod pace;
mod plan;
mod policy;
mod requested;
mod retry;
mod round;
mod runner;
#[cfg(test)]
mod runner_tests;
mod stats;
mod tails;
mod window;

pub use args::{
    AccountLink, AccountLinkArgs, ConversationArgs, EmailArgs, ErasureNoticeArgs, MessageArgs,
    TestMailArgs, WebhookArgs, WebhookFacts, WebhookJobArgs,
};
pub use decision::MAX_DESTINATION_WAIT;
pub use deliver::{Deliver, Delivery};
pub use dismiss::{dismiss_failed_jobs, dismiss_job};
pub use erasure_notice::{Erased, plan_erasure_notices};
pub use index::Lane;
pub use kind::JobKind;
pub use outcome::{Attempt, Outcome};
pub use plan::{
    ConversationChange, EmailDelays, NewMessage, SlackChannel, WebhookEvent, plan_agent_email,
    plan_agent_message, plan_conversation_change, plan_visitor_message, plan_webhook_replay,
    webhook_id,
};
pub use requested::{plan_account_link_mail, plan_discord_test, plan_test_mail};
pub use retry::{
    Retried, resume_integration, retry_all_jobs, retry_job, spawn_interrupted_resumes,
};
// For destinations' tests: what the log keeps of an error they make.
#[cfg(test)]
pub(crate) use runner::loggable;
pub use runner::{JobQueue, Runner, RunnerConfig, SAFETY_POLL, WINDOW};
pub use stats::{Counted, JobStats};
