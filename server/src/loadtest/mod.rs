//! Tools for measuring and testing Porch against stand-ins of outside services: a Slack Web API
//! mock (`porch slack-mock`, used by the integration tests and the load test), a Discord webhook
//! mock and a webhook receiver (used by the delivery tests), the bare websocket echo baseline
//! (`porch loadtest-echo`), the load test itself (`porch loadtest`) and the search benchmark
//! (`porch loadtest-search`), which only ever run against scratch data or loopback.

mod agents;
mod args;
mod discord_mock;
mod drain;
mod echo;
mod generator;
mod pacer;
mod record;
mod report;
mod run;
mod scratch;
mod search;
mod served;
mod slack_mock;
mod target;
mod webhook_mock;

// The report's format lives with the capacity figures; `record_run` takes one, so it is named
// here too.
pub use crate::metrics::loadtest_report::Report;
pub use args::{EchoArgs, LoadtestArgs};
pub use discord_mock::{DiscordFailure, DiscordMock, DiscordPost, Refusal};
pub use echo::run_echo;
pub use record::{Summary, record_run, summarize};
pub use report::markdown;
pub use run::run;
pub use search::{SearchBenchArgs, run_search_bench};
pub use slack_mock::{
    BOT_ID, BOT_USER_ID, ChannelLimit, Failure, Post, SharedFile, SlackMock, TEAM_ID,
};
pub use webhook_mock::{Received, WebhookMock};

/// Prints a result: standard output is the command's interface.
fn write_stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    writeln!(std::io::stdout().lock(), "{text}")
        .map_err(|e| anyhow::anyhow!("writing to standard output: {e}"))
}
