//! The Slack mock: the Web API methods Porch calls (`server.rs`), Socket Mode (`socket.rs`),
//! files shared into threads or served for download (`files.rs`), and Slack's per-channel rate
//! limit on posts (`limit.rs`).

mod files;
mod limit;
mod server;
mod socket;

pub use files::SharedFile;
pub use limit::ChannelLimit;
pub use server::{BOT_ID, BOT_USER_ID, Failure, Post, SlackMock, TEAM_ID};
