//! The Slack mock: the Web API methods Porch calls (`server.rs`), Socket Mode (`socket.rs`),
//! and files shared into threads or served for download (`files.rs`).

mod files;
mod server;
mod socket;

pub use files::SharedFile;
pub use server::{BOT_ID, BOT_USER_ID, Failure, Post, SlackMock, TEAM_ID};
