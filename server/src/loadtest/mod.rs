//! Tools for measuring and testing Porch against stand-ins of outside services: a Slack Web API
//! mock (`porch slack-mock`, used by the integration tests and the load test), a Discord webhook
//! mock and a webhook receiver (used by the delivery tests).

mod discord_mock;
mod slack_mock;
mod webhook_mock;

pub use discord_mock::{DiscordFailure, DiscordMock, DiscordPost, Refusal};
pub use slack_mock::{Failure, Post, SlackMock};
pub use webhook_mock::{Received, WebhookMock};
