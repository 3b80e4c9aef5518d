//! Tools for measuring and testing Porch against stand-ins of outside services. For now: a Slack
//! Web API mock (`porch slack-mock`), used by the integration tests and the load test.

mod slack_mock;

pub use slack_mock::{Failure, Post, SlackMock};
